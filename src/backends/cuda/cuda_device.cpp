#include "backends/cuda/cuda_device.hpp"

// NVTX ships with the CUDA toolkit; the HIP and MUSA builds have no ranges (docs/run-log.md,
// --profile).
#if !defined(CALIBER_USE_HIP) && !defined(CALIBER_USE_MUSA)
#include <nvtx3/nvToolsExt.h>
#define CALIBER_HAVE_NVTX 1
#endif

#include "backends/cuda/cuda_common.hpp"
#if !defined(CALIBER_USE_HIP) && !defined(CALIBER_USE_MUSA)
#include "backends/cuda/cupti_trace.hpp"
#define CALIBER_HAVE_CUPTI 1
#endif
#include "backends/cuda/cuda_kernels.hpp"
#include "backends/cuda/nvml.hpp"
#include "proc/process.hpp"

#include <unistd.h>

#include <chrono>
#include <utility>
#include <vector>

namespace caliber::backends::cuda {

void check(cudaError_t code, const char* api) {
  if (code != cudaSuccess) {
    throw NativeError(static_cast<int>(code), api, cudaGetErrorString(code));
  }
}

namespace {

class CudaEvent final : public Event {
 public:
  CudaEvent() { check(cudaEventCreate(&event), "cudaEventCreate"); }
  ~CudaEvent() override { (void)cudaEventDestroy(event); }
  cudaEvent_t event = nullptr;
};

class CudaGraph final : public Graph {
 public:
  CudaGraph(cudaGraph_t graph, cudaGraphExec_t exec, cudaStream_t stream)
      : graph_(graph), exec_(exec), stream_(stream) {}
  ~CudaGraph() override {
    // The exec goes first: MUSA requires the graph to outlive its exec.
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
  }
  void launch() override { check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

cudaEvent_t native(Event& e) {
  return static_cast<CudaEvent&>(e).event;
}

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

CudaDevice::CudaDevice(int ordinal, DeviceDesc desc, std::uint64_t seed)
    : ordinal_(ordinal), desc_(std::move(desc)), base_seed_(seed) {
  generator_.seed = seed;
  activate();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal_), "cudaGetDeviceProperties");
  props_.name = prop.name;
  props_.sm_count = prop.multiProcessorCount;
  props_.l2_bytes = static_cast<std::uint64_t>(prop.l2CacheSize);
  props_.total_bytes = prop.totalGlobalMem;
  props_.cc_major = prop.major;
  props_.cc_minor = prop.minor;
  props_.host = false;
  // Non-blocking: work other libraries put on the legacy default stream does not serialise
  // with (or leak into) what is timed here.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  // One flush buffer for the device's life: reallocating it per sample would cost more than the
  // kernels it isolates. Twice the L2, read rather than written: the L2 maps addresses to its
  // slices by a hash, so reading exactly its size leaves some of the previous data behind, and a
  // written buffer would leave dirty lines whose write-back the timed work would pay
  // (docs/timing.md).
  l2_bytes_ = props_.l2_bytes;
  if (l2_bytes_ > 0) {
    flush_bytes_ = 2 * l2_bytes_;
    check(cudaMalloc(&l2_buffer_, flush_bytes_), "cudaMalloc (L2 flush buffer)");
    check(cudaMemsetAsync(l2_buffer_, 0x5a, flush_bytes_, stream_), "cudaMemsetAsync (L2 flush)");
    void* sink = nullptr;
    check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc (L2 flush sink)");
    flush_sink_ = static_cast<unsigned*>(sink);
  }
#if !defined(CALIBER_USE_HIP) && !defined(CALIBER_USE_MUSA)
  void* words = nullptr;
  check(cudaHostAlloc(&words, 2 * sizeof(int), cudaHostAllocMapped), "cudaHostAlloc (hold)");
  hold_words_ = static_cast<volatile int*>(words);
  hold_words_[0] = 0;
  hold_words_[1] = 0;
  void* dev_words = nullptr;
  check(cudaHostGetDevicePointer(&dev_words, words, 0), "cudaHostGetDevicePointer (hold)");
  hold_words_dev_ = static_cast<volatile int*>(dev_words);
#endif
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  Nvml& nvml = Nvml::get();
  if (!desc_.uuid.empty()) nvml_handle_ = nvml.handle_by_uuid(desc_.uuid);
  if (nvml_handle_ == nullptr && desc_.extra.count("pci_bus_id") != 0) {
    nvml_handle_ = nvml.handle_by_pci(desc_.extra.at("pci_bus_id"));
  }
}

CudaDevice::~CudaDevice() {
  if (capturing_) abort_capture();
  if (tracing_) trace_close();
  (void)cudaStreamSynchronize(stream_);
  if (l2_buffer_ != nullptr) (void)cudaFree(l2_buffer_);
  if (flush_sink_ != nullptr) (void)cudaFree(flush_sink_);
#if !defined(CALIBER_USE_HIP) && !defined(CALIBER_USE_MUSA)
  if (hold_words_ != nullptr) (void)cudaFreeHost(const_cast<int*>(hold_words_));
#endif
  (void)cudaStreamDestroy(stream_);
}

void CudaDevice::activate() const {
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
}

void* CudaDevice::alloc(std::size_t bytes) {
  activate();
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    throw NativeError(
        static_cast<int>(e), "cudaMalloc",
        std::string(cudaGetErrorString(e)) + " (" + std::to_string(bytes) + " bytes)");
  }
  return p;
}

void CudaDevice::free(void* p) noexcept {
  if (p != nullptr) (void)cudaFree(p);
}

void CudaDevice::copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
  cudaMemcpyKind k = cudaMemcpyDeviceToDevice;
  if (kind == CopyKind::host_to_device) k = cudaMemcpyHostToDevice;
  if (kind == CopyKind::device_to_host) k = cudaMemcpyDeviceToHost;
  check(cudaMemcpyAsync(dst, src, bytes, k, stream_), "cudaMemcpyAsync");
  // Host memory must be safe to use (or reuse) when copy() returns.
  if (kind != CopyKind::device_to_device && !capturing_) {
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
}

void CudaDevice::memset(void* p, int value, std::size_t bytes) {
  check(cudaMemsetAsync(p, value, bytes, stream_), "cudaMemsetAsync");
}

void CudaDevice::fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                              std::uint64_t seed) {
  activate();
  check(launch_fill_uniform(p, t, n, lo, hi, seed, stream_), "fill_uniform launch");
}

// NVTX ranges (the header-only NVTX 3 of the CUDA toolkit): no-ops unless a profiler is attached.
void CudaDevice::range_push(const std::string& name) {
#if defined(CALIBER_HAVE_NVTX)
  nvtxRangePushA(name.c_str());
#else
  (void)name;
#endif
}

void CudaDevice::range_pop() {
#if defined(CALIBER_HAVE_NVTX)
  nvtxRangePop();
#endif
}

void CudaDevice::synchronize() {
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::size_t CudaDevice::free_bytes() const {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return free;
}

std::uint64_t CudaDevice::seed() const {
  return mix64(base_seed_ ^ mix64(seeds_drawn_++));
}

Capabilities CudaDevice::capabilities() const {
  Capabilities c;
  c.graph_capture = true;
  c.graph_timer_default = true;
  c.clusters = props_.cc_major >= 9;  // thread-block clusters arrived with sm_90
  c.max_cluster = c.clusters ? kPortableMaxCluster : 0;
  c.default_rng = true;
  c.l2_known = l2_bytes_ > 0;
#if !defined(CALIBER_USE_HIP) && !defined(CALIBER_USE_MUSA)
  c.graph_event_nodes = true;
  c.stream_hold = hold_words_ != nullptr;
#endif
#if defined(CALIBER_HAVE_CUPTI)
  c.kernel_trace = true;  // whether libcupti is there is found out when a trace opens
#endif
  return c;
}

std::unique_ptr<Event> CudaDevice::create_event() {
  activate();
  return std::make_unique<CudaEvent>();
}

void CudaDevice::record(Event& e) {
  check(cudaEventRecord(native(e), stream_), "cudaEventRecord");
}

double CudaDevice::elapsed_ms(Event& start, Event& end) {
  check(cudaEventSynchronize(native(end)), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, native(start), native(end)), "cudaEventElapsedTime");
  return static_cast<double>(ms);
}

void CudaDevice::begin_capture() {
  activate();
  // Global mode: an unsafe call anywhere in the process during capture (an allocation, a
  // synchronize) fails loudly, so an op that cannot live in a graph refuses instead of
  // producing a graph that replays something else.
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  capturing_ = true;
}

std::unique_ptr<Graph> CudaDevice::end_capture() {
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &graph);
  capturing_ = false;
  if (e != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // the code travels in the exception; later checks must not see it
    throw NativeError(static_cast<int>(e), "cudaStreamEndCapture", cudaGetErrorString(e));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
  if (ie != cudaSuccess) {
    (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw NativeError(static_cast<int>(ie), "cudaGraphInstantiate", cudaGetErrorString(ie));
  }
  return std::make_unique<CudaGraph>(graph, exec, stream_);
}

void CudaDevice::abort_capture() noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
  capturing_ = false;
  (void)cudaGetLastError();
}

void CudaDevice::record_in_graph(Event& e) {
#if !defined(CALIBER_USE_HIP) && !defined(CALIBER_USE_MUSA)
  // A capture begun by another library on this stream counts too: the Python package captures
  // through torch's graph API and memory pool (docs/python.md), not through begin_capture.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (capturing_ || (cudaStreamIsCapturing(stream_, &status) == cudaSuccess &&
                     status == cudaStreamCaptureStatusActive)) {
    // External: a node of its own that each replay executes, with a timestamp elapsed_ms reads.
    check(cudaEventRecordWithFlags(native(e), stream_, cudaEventRecordExternal),
          "cudaEventRecordWithFlags (graph node)");
    return;
  }
#endif
  record(e);
}

void CudaDevice::flush_l2() {
  if (l2_buffer_ == nullptr) return;
  check(launch_l2_evict(l2_buffer_, flush_bytes_, flush_sink_, props_.sm_count, stream_),
        "L2 flush launch");
}

bool CudaDevice::hold_stream() {
  if (hold_words_ == nullptr || capturing_) return false;
  hold_words_[0] = 0;
  hold_words_[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // 20 ms: far longer than enqueueing a flush, two events and a launch takes; a launch that
  // waits on the device meanwhile gets the stream back after that.
  check(launch_hold(hold_words_dev_, hold_words_dev_ + 1, 0.02, stream_), "stream hold launch");
  return true;
}

void CudaDevice::release_stream() {
  if (hold_words_ == nullptr) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  hold_words_[0] = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool CudaDevice::hold_gave_up() {
  return hold_words_ != nullptr && hold_words_[1] != 0;
}

void CudaDevice::launch_empty() {
  check(launch_probe(stream_), "empty kernel launch");
}

// The kernel trace: CUPTI's activity records (cupti_trace.cpp). The boundary is a kernel of the
// backend's own, enqueued or, inside a capture, captured as a node each replay runs.
TraceOpen CudaDevice::trace_open(const TraceShare& share) {
#if defined(CALIBER_HAVE_CUPTI)
  if (tracing_) return {true, "", false};
  activate();
  const TraceOpen o = CuptiTrace::get().open(ordinal_, share);
  tracing_ = o.ok;
  return o;
#else
  (void)share;
  return {false, "this runtime has no kernel trace", false};
#endif
}

std::vector<TraceRecord> CudaDevice::trace_collect() {
#if defined(CALIBER_HAVE_CUPTI)
  if (tracing_) return CuptiTrace::get().collect();
#endif
  return {};
}

void CudaDevice::trace_close() {
#if defined(CALIBER_HAVE_CUPTI)
  if (tracing_) CuptiTrace::get().close();
#endif
  tracing_ = false;
}

void CudaDevice::trace_boundary() {
  check(launch_trace_mark(stream_), "trace boundary launch");
}

double CudaDevice::trace_resolution_us() const {
  // CUPTI's timestamps are in nanoseconds; the device's timer behind them may tick more coarsely.
  return 0.001;
}

double CudaDevice::timer_resolution_us() const {
  // The CUDA runtime documents event timing "with a resolution of around 0.5 microseconds".
  return 0.5;
}

std::optional<ClockSample> CudaDevice::clocks() {
  // The maximum clock and the power limit are read once; each later reading asks only what moves.
  auto c = Nvml::get().clocks(nvml_handle_, !static_read_);
  if (!c) return std::nullopt;
  if (!static_read_) {
    static_read_ = true;
    sm_max_mhz_ = c->sm_max_mhz;
    power_limit_mw_ = c->power_limit_mw;
  }
  c->sm_max_mhz = sm_max_mhz_;
  c->power_limit_mw = power_limit_mw_;
  // NVML clock event reasons: 0x1 idle, 0x4 software power cap, 0x8 hardware slowdown,
  // 0x20 / 0x40 software / hardware thermal slowdown, 0x80 hardware power brake.
  constexpr std::uint64_t kPowerCap = 0x4, kNotTheWork = 0x1 | 0x8 | 0x20 | 0x40 | 0x80;
  const std::uint64_t r = c->throttle_reasons;
  ClockSample out;
  out.sm_mhz = c->sm_mhz;
  out.sm_max_mhz = c->sm_max_mhz;
  out.throttle_reasons = r;
  out.power_cap_only = (r & kPowerCap) != 0 && (r & kNotTheWork) == 0;
  out.power_w = c->power_mw * 1e-3;
  out.power_limit_w = c->power_limit_mw * 1e-3;
  static constexpr std::pair<std::uint64_t, const char*> kNames[] = {
      {0x1, "idle"},        {0x2, "app_clock_setting"}, {0x4, "power_cap"},
      {0x8, "hw_slowdown"}, {0x10, "sync_boost"},       {0x20, "sw_thermal"},
      {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},   {0x100, "display_clock_setting"}};
  for (const auto& [bit, name] : kNames)
    if ((r & bit) != 0) out.reasons.emplace_back(name);
  out.other_processes = other_processes();
  return out;
}

int CudaDevice::other_processes() {
  // The process list costs more than a clock reading, and a process that shares the device
  // for less than this is not the steady drain it looks for (docs/timing.md, "Another process
  // on the device").
  constexpr double kOthersEvery = 0.5;
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now - others_read_at_ < kOthersEvery) return other_processes_;
  others_read_at_ = now;
  static const std::vector<pid_t> kAncestors = run::ancestors();
  const auto pids = Nvml::get().compute_pids(nvml_handle_);
  other_processes_ = pids ? run::other_processes(*pids, ::getpid(), kAncestors) : -1;
  return other_processes_;
}

bool CudaDevice::healthy() noexcept {
  if (capturing_) return false;
  // A sticky error means the context is dead whatever the probe says; a non-sticky one is
  // kept for take_last_error, since the probe's own check clears it.
  const int pending = static_cast<int>(cudaPeekAtLastError());
  if (classify_cuda_error(pending) == Failure::fatal_on_device) return false;
  if (pending != 0) {
    pending_error_ = pending;
    (void)cudaGetLastError();
  }
  if (launch_probe(stream_) != cudaSuccess) return false;
  return cudaStreamSynchronize(stream_) == cudaSuccess;
}

int CudaDevice::take_last_error() noexcept {
  const int now = static_cast<int>(cudaGetLastError());
  const int kept = pending_error_;
  pending_error_ = 0;
  return kept != 0 ? kept : now;
}

}  // namespace caliber::backends::cuda
