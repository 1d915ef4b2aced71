#include "capi/host_device.hpp"

#include <utility>

#include "timing/timer.hpp"

namespace caliber::capi {

namespace {

constexpr std::int64_t kBegin = 1, kEnd = 2, kReplay = 3, kRelease = 4, kAbort = 5,
                       kProfilerIdle = 6;

// One hook call; a failure becomes NativeError (the runtime's code) or `host_error(message)`.
template <class HostError>
std::int64_t call_hook(caliber_c_capture_fn hooks, std::int64_t what, std::int64_t graph,
                       const char* api) {
  std::int64_t code = 0;
  char msg[2048] = {0};
  const std::int64_t r = hooks(what, graph, &code, msg, sizeof msg);
  if (r >= 0) return r;
  if (code != 0) throw NativeError(static_cast<int>(code), api, msg);
  throw HostError(std::string(api) + ": " + msg);
}

class HostGraph final : public backends::Graph {
 public:
  HostGraph(caliber_c_capture_fn hooks, std::int64_t id) : hooks_(hooks), id_(id) {}
  ~HostGraph() override {
    std::int64_t code = 0;
    char msg[512] = {0};
    (void)hooks_(kRelease, id_, &code, msg, sizeof msg);
  }
  void launch() override { (void)call_hook<HostRaised>(hooks_, kReplay, id_, "graph replay"); }

 private:
  caliber_c_capture_fn hooks_;
  std::int64_t id_;
};

class HostCaptureDevice final : public backends::Device {
 public:
  HostCaptureDevice(std::unique_ptr<backends::Device> inner, caliber_c_capture_fn hooks)
      : in_(std::move(inner)), hooks_(hooks) {}
  ~HostCaptureDevice() override {
    if (capturing_) abort_capture();
  }

  // DeviceContext
  std::string_view backend() const override { return in_->backend(); }
  const DeviceProps& props() const override { return in_->props(); }
  void* stream() const override { return in_->stream(); }
  void* alloc(std::size_t bytes) override { return in_->alloc(bytes); }
  void free(void* p) noexcept override { in_->free(p); }
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) override {
    in_->copy(dst, src, bytes, kind);
  }
  void memset(void* p, int value, std::size_t bytes) override { in_->memset(p, value, bytes); }
  void fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                    std::uint64_t seed) override {
    in_->fill_uniform(p, t, n, lo, hi, seed);
  }
  void synchronize() override { in_->synchronize(); }
  std::size_t free_bytes() const override { return in_->free_bytes(); }
  std::uint64_t seed() const override { return in_->seed(); }
  bool capturing() const override { return capturing_ || in_->capturing(); }
  GeneratorState* default_generator() noexcept override { return in_->default_generator(); }
  std::uint64_t seeds_drawn() const noexcept override { return in_->seeds_drawn(); }
  void rewind_seeds(std::uint64_t drawn) noexcept override { in_->rewind_seeds(drawn); }

  // Device
  const backends::DeviceDesc& desc() const override { return in_->desc(); }
  backends::Capabilities capabilities() const override { return in_->capabilities(); }
  std::unique_ptr<backends::Event> create_event() override { return in_->create_event(); }
  void record(backends::Event& e) override { in_->record(e); }
  double elapsed_ms(backends::Event& a, backends::Event& b) override {
    return in_->elapsed_ms(a, b);
  }
  void begin_capture() override {
    (void)call_hook<timing::CaptureRefused>(hooks_, kBegin, 0, "graph capture begin");
    capturing_ = true;
  }
  std::unique_ptr<backends::Graph> end_capture() override {
    capturing_ = false;
    const std::int64_t id = call_hook<timing::CaptureRefused>(hooks_, kEnd, 0, "graph capture end");
    return std::make_unique<HostGraph>(hooks_, id);
  }
  void abort_capture() noexcept override {
    std::int64_t code = 0;
    char msg[512] = {0};
    (void)hooks_(kAbort, 0, &code, msg, sizeof msg);
    capturing_ = false;
    in_->abort_capture();  // a capture the host left open on the stream, and the error state
  }
  void record_in_graph(backends::Event& e) override { in_->record_in_graph(e); }
  void flush_l2() override { in_->flush_l2(); }
  bool hold_stream() override { return in_->hold_stream(); }
  void release_stream() override { in_->release_stream(); }
  bool hold_gave_up() override { return in_->hold_gave_up(); }
  void launch_empty() override { in_->launch_empty(); }
  double timer_resolution_us() const override { return in_->timer_resolution_us(); }
  // The host's profiler (torch.profiler) keeps its activity subscription after it stops: the
  // host says whether it is idle, and the trace may then open beside it (backends::TraceShare).
  backends::TraceOpen trace_open(const backends::TraceShare& share) override {
    backends::TraceShare s = share;
    if (!s.beside_idle_subscriber) {
      std::int64_t code = 0;
      char msg[512] = {0};
      s.beside_idle_subscriber = hooks_(kProfilerIdle, 0, &code, msg, sizeof msg) == 1;
    }
    return in_->trace_open(s);
  }
  std::vector<backends::TraceRecord> trace_collect() override { return in_->trace_collect(); }
  void trace_close() override { in_->trace_close(); }
  void trace_boundary() override { in_->trace_boundary(); }
  double trace_resolution_us() const override { return in_->trace_resolution_us(); }
  std::optional<backends::ClockSample> clocks() override { return in_->clocks(); }
  bool healthy() noexcept override { return !capturing_ && in_->healthy(); }
  int take_last_error() noexcept override { return in_->take_last_error(); }
  void range_push(const std::string& name) override { in_->range_push(name); }
  void range_pop() override { in_->range_pop(); }

 private:
  std::unique_ptr<backends::Device> in_;
  caliber_c_capture_fn hooks_;
  bool capturing_ = false;
};

}  // namespace

void invoke_launch(caliber_c_launch_fn launch, std::int64_t target, std::int64_t provider,
                   const DeviceContext& ctx) {
  std::int64_t code = 0;
  char msg[4096] = {0};
  const int status = launch(target, provider, &code, msg, sizeof msg);
  if (status == CALIBER_C_OK) return;
  if (status == CALIBER_C_NATIVE_ERROR && code != 0)
    throw NativeError(static_cast<int>(code), "launch", msg);
  if (ctx.capturing()) throw timing::CaptureRefused(std::string("raised under capture: ") + msg);
  throw HostRaised(msg);
}

std::unique_ptr<backends::Device> wrap_device(std::unique_ptr<backends::Device> inner,
                                              caliber_c_capture_fn hooks) {
  if (hooks == nullptr || !inner || inner->props().host) return inner;
  return std::make_unique<HostCaptureDevice>(std::move(inner), hooks);
}

}  // namespace caliber::capi
