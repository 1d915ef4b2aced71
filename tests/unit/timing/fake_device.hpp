// A scripted device for the timing tests: a simulated device clock that kernels, flushes and graph
// replays advance; events read that clock; capture and launches can be made to throw chosen native
// codes. A FakeBackend classifies codes as CUDA does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "caliber/context.hpp"
#include "timing/timer.hpp"

namespace caliber::timing::test {

class FakeDevice : public backends::Device {
 public:
  FakeDevice() {
    desc_.name = "fake";
    props_.name = "fake";
    caps_.graph_capture = true;
    caps_.graph_timer_default = true;
    caps_.default_rng = true;
    caps_.l2_known = true;
    caps_.graph_event_nodes = true;
    caps_.stream_hold = true;
  }

  // --- the script ---
  // Duration (ms) of the n-th kernel execution on the device (direct or inside a replay).
  std::function<double(long n)> kernel_ms = [](long) { return 1.0; };
  double flush_ms = 0;
  // A kernel that runs with no kernel since the last flush (a cold L2) takes this much longer.
  double cold_extra_ms = 0;
  // The host's gap between recording an event and the launch reaching the device; a sample
  // enqueued behind a stream hold does not see it.
  double launch_gap_ms = 0;
  bool hold_gives_up = false;    // every hold gives up before its release (a synchronizing launch)
  int throw_in_capture = 0;      // native code a launch throws while capturing (0: none)
  int throw_at_captured = 0;     // ... once this many launches were captured
  int throw_at_end_capture = 0;  // native code end_capture throws
  int throw_on_launch = 0;       // native code uncaptured launches throw once `throw_after` ran
  long throw_after = 0;
  bool unhealthy_after_abort = false;
  int poison_code_after_abort = 0;  // uncaptured launches throw this after an abort
  // A launch refused under capture leaves its code in the op's own copy of the runtime's
  // last-error state (an op library linked with its own runtime), which the device's
  // take_last_error cannot reach: the next uncaptured launch whose own error check reads that
  // state (kernel(f, true)) throws it, and that read clears it, as cudaGetLastError does.
  bool refusal_leaves_op_error = false;
  int op_runtime_error = 0;  // what that state holds now
  std::function<std::optional<backends::ClockSample>(int call)> clock_script;
  // The kernel trace (caps_.kernel_trace turns it on): every kernel execution, direct or in a
  // replay, leaves a record of its own start and end; flushes and boundaries leave own records.
  // What events read beyond the kernel: each recorded event adds this much device time (the
  // event floor the trace does not see).
  double event_floor_ms = 0;
  std::string trace_refusal;  // non-empty: trace_open fails with this (no library, a subscriber)
  // The refusal is an idle subscriber's (a profiler that ran and stopped): the trace opens beside
  // it when the options vouch for it (TraceShare).
  bool idle_subscriber = false;
  // Beside an idle subscriber, the records' ticks per ns (its timestamp clock: torch's Kineto
  // registers TSC ticks, 2.09 per ns on the H200 of 2026-12-04).
  double beside_ticks_per_ns = 1.0;
  long drop_records_after = -1;  // >= 0: kernel records stop after this many (records go missing)
  // A launcher that enqueues work of its own before each replay, outside the graph (torch's
  // replay of a graph that captured RNG ops fills the generator's seed and offset first): a
  // kernel this long, then this much idle device time before the graph's first node.
  double replay_prologue_ms = 0;
  double replay_prologue_gap_ms = 0;
  bool graph_ids = true;  // the records of a replay's work carry the graph's id (CUPTI's graphId)
  bool has_generator = true;

  // --- what happened ---
  double now_ms = 0;
  long executions = 0;
  long uncaptured_launches = 0;
  long captured_launches = 0;
  int captures = 0, aborts = 0, replays = 0, flushes = 0, clock_calls = 0, events_created = 0;
  int holds = 0, graph_event_records = 0;
  int stale_errors_read = 0;  // launches that threw op_runtime_error
  int trace_opens = 0, trace_closes = 0, trace_collects = 0, boundaries = 0;
  long kernel_records = 0;
  bool tracing = false;
  double slept_s = 0;
  long allocs = 0, frees = 0;
  GeneratorState gen{42, 0};

  // What a test's launch function calls: one kernel launch on the stream, `factor` times as long
  // as kernel_ms says (two builds of one op: the same script, one of them slower).
  // `checks_error`: the launch reads its runtime's last error afterwards (the op's own
  // cudaGetLastError idiom).
  void kernel(double factor = 1.0, bool checks_error = true) {
    if (capturing_) {
      if (has_generator) gen.advance(1);  // a captured RNG op reserves offsets at capture time
      ++pending_;
      nodes_.push_back({Node::kernel, nullptr, factor});
      ++captured_launches;
      if (throw_in_capture != 0 && pending_ >= std::max(1, throw_at_captured)) {
        if (refusal_leaves_op_error) op_runtime_error = throw_in_capture;
        throw NativeError(throw_in_capture, "fakeLaunch", "operation not permitted when capturing");
      }
      return;
    }
    if (checks_error && op_runtime_error != 0) {
      const int code = op_runtime_error;
      op_runtime_error = 0;
      ++stale_errors_read;
      throw NativeError(code, "fakeLaunch", "operation not permitted when stream is capturing");
    }
    if (poison_code_after_abort != 0 && aborts > 0) {
      throw NativeError(poison_code_after_abort, "fakeLaunch", "context is dead");
    }
    if (throw_on_launch != 0 && uncaptured_launches >= throw_after) {
      throw NativeError(throw_on_launch, "fakeLaunch", "scripted launch failure");
    }
    if (has_generator) gen.advance(1);
    ++uncaptured_launches;
    if (!held_) now_ms += launch_gap_ms;
    run_kernel(factor);
  }
  void run_kernel(double factor = 1.0) {
    const double t0 = now_ms;
    now_ms += factor * kernel_ms(executions++) + (l2_cold_ ? cold_extra_ms : 0);
    l2_cold_ = false;
    if (tracing && (drop_records_after < 0 || kernel_records < drop_records_after)) {
      ++kernel_records;
      trace_record(t0, now_ms, false);
    }
  }
  void trace_record(double t0_ms, double t1_ms, bool own) {
    backends::TraceRecord r;
    const double scale = beside_ ? beside_ticks_per_ns : 1.0;
    r.start_ns = static_cast<std::uint64_t>(t0_ms * 1e6 * scale + 0.5);
    r.end_ns = static_cast<std::uint64_t>(t1_ms * 1e6 * scale + 0.5);
    r.own = own;
    r.graph = graph_ids ? in_graph_ : 0;
    records_.push_back(r);
  }
  void run_flush() {
    ++flushes;
    const double t0 = now_ms;
    now_ms += flush_ms;
    l2_cold_ = true;
    if (tracing) trace_record(t0, now_ms, true);
  }
  [[nodiscard]] double wall_s() const { return now_ms * 1e-3; }

  // --- backends::Device ---
  [[nodiscard]] const backends::DeviceDesc& desc() const override { return desc_; }
  [[nodiscard]] backends::Capabilities capabilities() const override { return caps_; }
  [[nodiscard]] std::unique_ptr<backends::Event> create_event() override {
    ++events_created;
    return std::make_unique<FakeEvent>();
  }
  void record(backends::Event& e) override {
    now_ms += event_floor_ms;
    static_cast<FakeEvent&>(e).t = now_ms;
  }
  void record_in_graph(backends::Event& e) override {
    if (!capturing_ || !caps_.graph_event_nodes) return record(e);
    ++graph_event_records;
    nodes_.push_back({Node::event, &static_cast<FakeEvent&>(e), 1.0});
  }
  bool hold_stream() override {
    if (!caps_.stream_hold) return false;
    ++holds;
    held_ = true;
    return true;
  }
  void release_stream() override { held_ = false; }
  bool hold_gave_up() override { return hold_gives_up; }
  [[nodiscard]] double timer_resolution_us() const override { return 0.5; }
  [[nodiscard]] double elapsed_ms(backends::Event& s, backends::Event& e) override {
    return static_cast<FakeEvent&>(e).t - static_cast<FakeEvent&>(s).t;
  }
  void begin_capture() override {
    capturing_ = true;
    pending_ = 0;
    nodes_.clear();
    ++captures;
  }
  [[nodiscard]] std::unique_ptr<backends::Graph> end_capture() override {
    capturing_ = false;
    if (throw_at_end_capture != 0) {
      throw NativeError(throw_at_end_capture, "fakeEndCapture", "capture invalidated");
    }
    return std::make_unique<FakeGraph>(*this, nodes_);
  }
  void abort_capture() noexcept override {
    capturing_ = false;
    ++aborts;
  }
  void flush_l2() override {
    if (capturing_) {
      nodes_.push_back({Node::flush, nullptr, 1.0});
      return;
    }
    run_flush();
  }
  [[nodiscard]] backends::TraceOpen trace_open(const backends::TraceShare& share) override {
    const bool beside = idle_subscriber && share.beside_idle_subscriber;
    if (!trace_refusal.empty() && !beside) return {false, trace_refusal, false};
    ++trace_opens;
    tracing = true;
    beside_ = beside;
    return {true, "", beside};
  }
  [[nodiscard]] std::vector<backends::TraceRecord> trace_collect() override {
    ++trace_collects;
    std::vector<backends::TraceRecord> out;
    out.swap(records_);
    return out;
  }
  void trace_close() override {
    ++trace_closes;
    tracing = false;
  }
  void trace_boundary() override {
    ++boundaries;
    if (capturing_) {
      nodes_.push_back({Node::boundary, nullptr, 1.0});
      return;
    }
    if (tracing) trace_record(now_ms, now_ms, true);
  }
  [[nodiscard]] double trace_resolution_us() const override { return 0.001; }
  [[nodiscard]] std::optional<backends::ClockSample> clocks() override {
    const int call = clock_calls++;
    if (clock_script) return clock_script(call);
    return std::nullopt;
  }
  [[nodiscard]] bool healthy() noexcept override { return !(unhealthy_after_abort && aborts > 0); }
  [[nodiscard]] int take_last_error() noexcept override { return 0; }

  // --- DeviceContext ---
  [[nodiscard]] std::string_view backend() const override { return "fake"; }
  [[nodiscard]] const DeviceProps& props() const override { return props_; }
  [[nodiscard]] void* stream() const override { return nullptr; }
  // Distinct addresses that point nowhere (the fake never touches memory), each alloc and free
  // counted.
  [[nodiscard]] void* alloc(std::size_t) override {
    ++allocs;
    return reinterpret_cast<void*>(std::uintptr_t{0x1000} * static_cast<std::uintptr_t>(allocs));
  }
  void free(void* p) noexcept override {
    if (p != nullptr) ++frees;
  }
  void copy(void*, const void*, std::size_t, CopyKind) override {}
  void memset(void*, int, std::size_t) override {}
  void fill_uniform(void*, DType, std::size_t, double, double, std::uint64_t) override {}
  void synchronize() override {}
  [[nodiscard]] std::size_t free_bytes() const override { return 0; }
  [[nodiscard]] std::uint64_t seed() const override { return 1; }
  [[nodiscard]] bool capturing() const override { return capturing_; }
  [[nodiscard]] GeneratorState* default_generator() noexcept override {
    return has_generator ? &gen : nullptr;
  }

  backends::Capabilities caps_;

 private:
  struct FakeEvent : backends::Event {
    double t = 0;
  };
  struct Node {
    enum Kind { kernel, flush, event, boundary } kind;
    FakeEvent* ev;
    double factor = 1.0;
  };
  struct FakeGraph : backends::Graph {
    FakeGraph(FakeDevice& d, std::vector<Node> n) : dev(d), nodes(std::move(n)) {}
    void launch() override {
      ++dev.replays;
      if (!dev.held_) dev.now_ms += dev.launch_gap_ms;  // one gap per replay, not per node
      if (dev.replay_prologue_ms > 0) {
        const double t0 = dev.now_ms;
        dev.now_ms += dev.replay_prologue_ms;
        if (dev.tracing) dev.trace_record(t0, dev.now_ms, false);
        dev.now_ms += dev.replay_prologue_gap_ms;
      }
      dev.in_graph_ = 1;
      for (const Node& n : nodes) {
        if (n.kind == Node::kernel) dev.run_kernel(n.factor);
        if (n.kind == Node::flush) dev.run_flush();
        if (n.kind == Node::boundary && dev.tracing) dev.trace_record(dev.now_ms, dev.now_ms, true);
        if (n.kind == Node::event) {
          dev.now_ms += dev.event_floor_ms;
          n.ev->t = dev.now_ms;
        }
      }
      dev.in_graph_ = 0;
    }
    FakeDevice& dev;
    std::vector<Node> nodes;
  };
  std::vector<Node> nodes_;
  bool l2_cold_ = false;
  bool held_ = false;
  std::uint64_t in_graph_ = 0;  // the id the records of a replay's nodes carry
  std::vector<backends::TraceRecord> records_;
  bool beside_ = false;

  backends::DeviceDesc desc_;
  DeviceProps props_;
  bool capturing_ = false;
  long pending_ = 0;
};

// Classifies native codes as the CUDA runtime's: 900-908 refuse capture, sticky errors are fatal.
class FakeBackend : public backends::Backend {
 public:
  backends::Capabilities caps;
  FakeBackend() {
    caps.graph_capture = true;
    caps.graph_timer_default = true;
    caps.default_rng = true;
  }
  [[nodiscard]] std::string name() const override { return "fake"; }
  [[nodiscard]] std::vector<std::string> aliases() const override { return {}; }
  [[nodiscard]] std::vector<std::string> visibility_vars() const override { return {}; }
  [[nodiscard]] backends::Capabilities capabilities() const override { return caps; }
  [[nodiscard]] backends::Availability availability() const override { return {true, "", ""}; }
  [[nodiscard]] std::vector<backends::DeviceDesc> enumerate() const override { return {}; }
  [[nodiscard]] std::unique_ptr<backends::Device> open(int, std::uint64_t) const override {
    return std::make_unique<FakeDevice>();
  }
  [[nodiscard]] backends::Failure classify(int code) const override {
    if (code == 0) return backends::Failure::ok;
    if (code >= 900 && code <= 908) return backends::Failure::refused_capture;
    if (code == 700 || code == 710 || (code >= 714 && code <= 719)) {
      return backends::Failure::fatal_on_device;
    }
    return backends::Failure::other;
  }
  [[nodiscard]] std::map<std::string, std::string> child_env(int) const override { return {}; }
  [[nodiscard]] std::vector<std::string> capture_deny_ops() const override { return deny; }
  [[nodiscard]] std::vector<backends::CompatRule> compat_rules() const override { return rules; }
  std::vector<std::string> deny;
  std::vector<backends::CompatRule> rules;
};

// Options whose wall clock is the fake device's clock, so that timeouts are deterministic.
inline TimingOptions fake_options(FakeDevice& dev) {
  TimingOptions o;
  // The tests choose their regime: burst unless a test says sustained (the default is sustained).
  o.regime.regime = ClockRegime::burst;
  o.now = [&dev] { return dev.wall_s(); };
  o.sleep = [&dev](double s) {
    dev.slept_s += s;
    dev.now_ms += s * 1e3;
  };
  return o;
}

}  // namespace caliber::timing::test
