// caliber_ground_truth: the kernels caliber's timers are checked against, in two modes (issue 13).
//
// The kernels: copies of 1, 4 and 16 MiB (their data fits in the L2) and of 1 GiB (it does not),
// an add of 1M f32, a bf16 mm 384x384x384 through cuBLAS, a softmax over 64x64 f32 (one block per
// row), and spins on %globaltimer of 10, 100 and 1000 us whose true length is known. Inputs are
// random and non-zero; every runtime and cuBLAS call is checked. For the kernel trace (issue 27):
// spins of 3, 37 and 333 us, a bf16 mm 4096^3, and a provider of three kernels (multi3: a copy of
// 1 MiB, the add, the softmax) whose truth is the sum of its kernels' durations.
//
//   --launch-only KERNEL --count N   sets the kernel up, launches it once outside the profiler
//                                    range (lazy loading, cuBLAS heuristics), then N times between
//                                    cudaProfilerStart and cudaProfilerStop, synchronizes, checks,
//                                    exits. This is what ncu profiles (--profile-from-start off).
//   (default: timing mode)           times each kernel with caliber's public timing API for every
//                                    timer {graph, direct} x L2 {cold, warm} and prints one JSON
//                                    line per measurement; with --processes N it re-executes
//                                    itself N times and adds one summary line per kernel, timer
//                                    and L2 policy with the spread (max/min - 1) over processes.
//   --list                           one JSON line per kernel (name, true length, bytes, fits L2).
//
// scripts/timer-truth drives both modes and compares them; docs/ground-truth.md says how.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <unistd.h>
#include "spin_kernel.cuh"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "core/stats.hpp"
#include "timing/timer.hpp"

namespace {

using caliber::backends::Device;
using caliber::timing::L2Policy;
using caliber::timing::Measurement;
using caliber::timing::TimerKind;
using caliber::timing::TimingOptions;
using nlohmann::json;

// ---- kernels ---------------------------------------------------------------------------------

using caliber::known_kernels::spin_kernel;

// Grid-stride copy with 16-byte loads and stores.
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = src[i];
}

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Reduction over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. `scratch` holds 32 floats and may be reused right after the call returns.
template <class Op>
__device__ float block_reduce(float v, float* scratch, Op op) {
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // the previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < warps; ++w) v = op(v, scratch[w]);
  return v;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Softmax over each row of a rows x cols matrix: one block per row, blockDim.x threads.
__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float scratch[32];
  const float* in = x + static_cast<size_t>(blockIdx.x) * cols;
  float* out = y + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  m = block_reduce(m, scratch, MaxOp{});
  float s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(in[c] - m);
  s = block_reduce(s, scratch, SumOp{});
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(in[c] - m) * inv;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw caliber::NativeError(static_cast<int>(e), what, cudaGetErrorString(e));
}

// A cuBLAS status is not a runtime error code: it must not reach the backend's classifier, so it
// ends the program as a plain error.
void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s) + " (status " +
                             std::to_string(static_cast<int>(s)) + ")");
}

// ---- cases -----------------------------------------------------------------------------------

struct KernelInfo {
  std::string name;
  double true_us = 0;  // > 0: the spin target, the truth without a profiler
  double bytes = 0;    // bytes read + written by one launch (0: not a memory kernel)
  bool fits_l2 = true;
};

const std::vector<KernelInfo>& kernel_infos() {
  constexpr double MiB = 1024.0 * 1024.0;
  static const std::vector<KernelInfo> infos = {
      {"empty", 0, 0, true},
      {"spin10us", 10, 0, true},
      {"spin100us", 100, 0, true},
      {"spin1000us", 1000, 0, true},
      {"copy1MiB", 0, 2 * MiB, true},
      {"copy4MiB", 0, 8 * MiB, true},
      {"copy16MiB", 0, 32 * MiB, true},
      {"copy1GiB", 0, 2 * 1024 * MiB, false},
      {"add1M_f32", 0, 3.0 * (1 << 20) * 4, true},
      {"mm_bf16_384", 0, 4.0 * 384 * 384 * 2, true},
      {"softmax_64x64_f32", 0, 2.0 * 64 * 64 * 4, true},
      {"spin3us", 3, 0, true},
      {"spin37us", 37, 0, true},
      {"spin333us", 333, 0, true},
      {"mm_bf16_4096", 0, 4.0 * 4096 * 4096 * 2, false},
      {"multi3", 0, 2 * MiB + 3.0 * (1 << 20) * 4 + 2.0 * 64 * 64 * 4, true},
  };
  return infos;
}

const KernelInfo* find_info(const std::string& name) {
  for (const KernelInfo& k : kernel_infos())
    if (k.name == name) return &k;
  return nullptr;
}

std::string kernel_names_text() {
  std::string s;
  for (const KernelInfo& k : kernel_infos()) s += (s.empty() ? "" : ", ") + k.name;
  return s;
}

// One kernel set up on a device: its buffers, its cuBLAS handle where it has one, its launch.
struct Case {
  KernelInfo info;
  std::vector<caliber::Buffer> buffers;
  cublasHandle_t blas = nullptr;
  std::function<void()> launch;

  Case() = default;
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;
  ~Case() {
    if (blas != nullptr) (void)cublasDestroy(blas);
  }
  void* add_buffer(Device& dev, std::size_t bytes) {
    buffers.emplace_back(dev, bytes);
    return buffers.back().get();
  }
};

std::unique_ptr<Case> make_case(Device& dev, const KernelInfo& info) {
  auto c = std::make_unique<Case>();
  c->info = info;
  cudaStream_t stream = static_cast<cudaStream_t>(dev.stream());
  int sms = 0, device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute(multiProcessorCount)");
  const std::string& n = info.name;
  if (info.true_us > 0) {
    const auto ns = static_cast<unsigned long long>(info.true_us * 1e3);
    c->launch = [stream, ns] {
      spin_kernel<<<1, 1, 0, stream>>>(ns);
      check(cudaGetLastError(), "spin_kernel launch");
    };
  } else if (n == "empty") {
    // The timers' floor: what they read for a kernel that does nothing.
    c->launch = [&dev] { dev.launch_empty(); };
  } else if (n.rfind("copy", 0) == 0) {
    const std::size_t bytes = static_cast<std::size_t>(info.bytes / 2);
    auto* src = static_cast<uint4*>(c->add_buffer(dev, bytes));
    auto* dst = static_cast<uint4*>(c->add_buffer(dev, bytes));
    dev.fill_uniform(src, caliber::DType::f32, bytes / 4, 1, 2, dev.seed());
    dev.fill_uniform(dst, caliber::DType::f32, bytes / 4, 1, 2, dev.seed());
    const std::size_t vecs = bytes / sizeof(uint4);
    // One element per thread up to four waves of full occupancy, grid-stride beyond.
    const std::size_t blocks =
        std::min<std::size_t>((vecs + 255) / 256, static_cast<std::size_t>(sms) * 8 * 4);
    c->launch = [=] {
      copy_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(src, dst, vecs);
      check(cudaGetLastError(), "copy_kernel launch");
    };
  } else if (n == "add1M_f32") {
    constexpr int count = 1 << 20;
    auto* a = static_cast<float*>(c->add_buffer(dev, count * sizeof(float)));
    auto* b = static_cast<float*>(c->add_buffer(dev, count * sizeof(float)));
    auto* out = static_cast<float*>(c->add_buffer(dev, count * sizeof(float)));
    for (float* p : {a, b, out}) dev.fill_uniform(p, caliber::DType::f32, count, -1, 1, dev.seed());
    c->launch = [=] {
      add_kernel<<<(count + 255) / 256, 256, 0, stream>>>(a, b, out, count);
      check(cudaGetLastError(), "add_kernel launch");
    };
  } else if (n == "mm_bf16_384" || n == "mm_bf16_4096") {
    const int m = n == "mm_bf16_384" ? 384 : 4096;
    const std::size_t elems = static_cast<std::size_t>(m) * m;
    constexpr std::size_t workspace_bytes = 32u << 20;
    void* a = c->add_buffer(dev, elems * sizeof(__nv_bfloat16));
    void* b = c->add_buffer(dev, elems * sizeof(__nv_bfloat16));
    void* out = c->add_buffer(dev, elems * sizeof(__nv_bfloat16));
    void* ws = c->add_buffer(dev, workspace_bytes);
    for (void* p : {a, b, out}) dev.fill_uniform(p, caliber::DType::bf16, elems, -1, 1, dev.seed());
    check_blas(cublasCreate(&c->blas), "cublasCreate");
    check_blas(cublasSetStream(c->blas, stream), "cublasSetStream");
    // A workspace of our own: cuBLAS then allocates nothing during graph capture.
    check_blas(cublasSetWorkspace(c->blas, ws, workspace_bytes), "cublasSetWorkspace");
    cublasHandle_t h = c->blas;
    c->launch = [=] {
      const float alpha = 1, beta = 0;
      check_blas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a, CUDA_R_16BF, m, b,
                              CUDA_R_16BF, m, &beta, out, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (bf16 mm)");
    };
  } else if (n == "multi3") {
    // Three kernels a launch: the trace's span covers them all, its kernel sum is ncu's sum.
    constexpr int count = 1 << 20, rows = 64, cols = 64;
    constexpr std::size_t bytes = 1u << 20;
    auto* src = static_cast<uint4*>(c->add_buffer(dev, bytes));
    auto* dst = static_cast<uint4*>(c->add_buffer(dev, bytes));
    auto* a = static_cast<float*>(c->add_buffer(dev, count * sizeof(float)));
    auto* b = static_cast<float*>(c->add_buffer(dev, count * sizeof(float)));
    auto* out = static_cast<float*>(c->add_buffer(dev, count * sizeof(float)));
    auto* x = static_cast<float*>(c->add_buffer(dev, rows * cols * sizeof(float)));
    auto* y = static_cast<float*>(c->add_buffer(dev, rows * cols * sizeof(float)));
    dev.fill_uniform(src, caliber::DType::f32, bytes / 4, 1, 2, dev.seed());
    for (float* p : {a, b, out}) dev.fill_uniform(p, caliber::DType::f32, count, -1, 1, dev.seed());
    dev.fill_uniform(x, caliber::DType::f32, rows * cols, -4, 4, dev.seed());
    const std::size_t vecs = bytes / sizeof(uint4);
    c->launch = [=] {
      copy_kernel<<<static_cast<unsigned>((vecs + 255) / 256), 256, 0, stream>>>(src, dst, vecs);
      add_kernel<<<(count + 255) / 256, 256, 0, stream>>>(a, b, out, count);
      softmax_rows_kernel<<<rows, cols, 0, stream>>>(x, y, cols);
      check(cudaGetLastError(), "multi3 launch");
    };
  } else if (n == "softmax_64x64_f32") {
    constexpr int rows = 64, cols = 64;
    auto* x = static_cast<float*>(c->add_buffer(dev, rows * cols * sizeof(float)));
    auto* y = static_cast<float*>(c->add_buffer(dev, rows * cols * sizeof(float)));
    dev.fill_uniform(x, caliber::DType::f32, rows * cols, -4, 4, dev.seed());
    dev.fill_uniform(y, caliber::DType::f32, rows * cols, -1, 1, dev.seed());
    c->launch = [=] {
      softmax_rows_kernel<<<rows, cols, 0, stream>>>(x, y, cols);
      check(cudaGetLastError(), "softmax_rows_kernel launch");
    };
  } else {
    throw std::logic_error("no set-up for kernel " + n);
  }
  dev.synchronize();
  check(cudaGetLastError(), ("set-up of " + n).c_str());
  return c;
}

// ---- launch-only mode ------------------------------------------------------------------------

int launch_only(const std::string& name, int count) {
  const caliber::backends::Backend* backend = caliber::backends::find_backend("cuda");
  if (backend == nullptr) throw std::runtime_error("no cuda backend in this build");
  auto dev = backend->open(0, 1);
  auto c = make_case(*dev, *find_info(name));
  c->launch();  // outside the profiled range: lazy loading, cuBLAS's first-call work
  dev->synchronize();
  check(cudaProfilerStart(), "cudaProfilerStart");
  for (int i = 0; i < count; ++i) c->launch();
  dev->synchronize();
  check(cudaProfilerStop(), "cudaProfilerStop");
  check(cudaGetLastError(), "after the launches");
  std::fprintf(stderr, "caliber_ground_truth: %d launches of %s done\n", count, name.c_str());
  return 0;
}

// ---- timing mode -----------------------------------------------------------------------------

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

json measure_one(Device& dev, const caliber::backends::Backend& backend, const Case& c,
                 TimerKind timer, L2Policy l2, const TimingOptions& base) {
  TimingOptions opt = base;
  opt.timer = timer;
  opt.l2 = l2;
  opt.op = c.info.name;
  const double t0 = now_s();
  const Measurement m = caliber::timing::measure(dev, backend, c.launch, opt);
  const double outer_s = now_s() - t0;
  json r = {{"type", "row"},
            {"kernel", c.info.name},
            {"timer", timer == TimerKind::graph ? "graph" : "direct"},
            {"l2", l2 == L2Policy::cold ? "cold" : "warm"},
            {"ok", m.ok},
            {"timer_used", caliber::core::spelled(m.timer)},
            {"latency_us", m.latency_ms * 1e3},
            {"noise", m.noise},
            {"samples", m.total_samples},
            {"wall_s", m.wall_s},
            {"outer_wall_s", outer_s},
            {"l2_method", caliber::core::spelled(m.l2_method)},
            {"launches_per_sample", m.launches_per_sample},
            {"stop_reason", m.stop_reason},
            {"throttled_discarded", m.throttled_discarded},
            {"power_capped", m.power_capped},
            {"estimate_us", m.estimate_ms * 1e3},
            {"markers", m.markers},
            {"note", m.note},
            {"true_us", c.info.true_us},
            {"bytes", c.info.bytes},
            {"fits_l2", c.info.fits_l2},
            {"sample_method", caliber::core::spelled(m.sample_method)},
            {"event_latency_us", m.event_latency_ms * 1e3},
            {"kernel_count", m.kernel_count},
            {"kernel_sum_us", m.kernel_sum_ms * 1e3},
            {"record_resolution_us", m.record_resolution_us},
            {"trace_host_us", m.trace_host_us},
            {"settle_s", m.settle_s},
            {"settle", m.settle},
            {"regime", caliber::core::spelled(m.regime)}};
  if (!m.ok) r["error"] = m.error;
  return r;
}

// Every kernel of `names`, every timer and L2 policy; one JSON line each as it is measured.
bool settle_carry = true;  // --settle

std::vector<json> run_once(const std::vector<std::string>& names, const TimingOptions& base,
                           bool print) {
  const caliber::backends::Backend* backend = caliber::backends::find_backend("cuda");
  if (backend == nullptr) throw std::runtime_error("no cuda backend in this build");
  auto dev = backend->open(0, 1);
  std::vector<json> rows;
  // As a run does (--settle carry, its default): one regime state per process, carried from one
  // measurement to the next while the power class holds, so a row's cost is what a run pays.
  caliber::timing::RegimeCarry carry;
  TimingOptions opts = base;
  if (settle_carry) opts.carry = &carry;
  for (const std::string& name : names) {
    auto c = make_case(*dev, *find_info(name));
    for (TimerKind t : {TimerKind::graph, TimerKind::direct}) {
      for (L2Policy l2 : {L2Policy::cold, L2Policy::warm}) {
        json r = measure_one(*dev, *backend, *c, t, l2, opts);
        if (print) std::printf("%s\n", r.dump().c_str());
        std::fflush(stdout);
        const bool ok = r["ok"];
        rows.push_back(std::move(r));
        if (!ok) return rows;  // the device may be unusable: time nothing more in this process
      }
    }
  }
  return rows;
}

json summarize(const std::vector<json>& rows, const std::string& kernel, const std::string& timer,
               const std::string& l2, int processes) {
  std::vector<double> us, cost, sums, events;
  std::set<std::string> stops, methods, samples;
  int ok = 0;
  json first;
  for (const json& r : rows) {
    if (r["kernel"] != kernel || r["timer"] != timer || r["l2"] != l2) continue;
    if (first.is_null()) first = r;
    cost.push_back(r["wall_s"]);
    stops.insert(r["stop_reason"].get<std::string>());
    methods.insert(r["l2_method"].get<std::string>());
    samples.insert(r.value("sample_method", std::string()));
    if (r["ok"].get<bool>()) {
      ++ok;
      us.push_back(r["latency_us"]);
      if (r.value("kernel_sum_us", 0.0) > 0) sums.push_back(r["kernel_sum_us"]);
      if (r.value("event_latency_us", 0.0) > 0) events.push_back(r["event_latency_us"]);
    }
  }
  json s = {{"type", "summary"},        {"kernel", kernel},
            {"timer", timer},           {"l2", l2},
            {"processes", processes},   {"ok_processes", ok},
            {"stop_reasons", stops},    {"l2_methods", methods},
            {"sample_methods", samples}};
  if (!sums.empty()) {
    s["kernel_sum_us"] = caliber::core::median(sums);
    if (sums.size() > 1)
      s["kernel_sum_spread"] = caliber::core::max_of(sums) / caliber::core::min_of(sums) - 1;
  }
  if (!events.empty()) s["event_latency_us"] = caliber::core::median(events);
  if (!first.is_null()) {
    s["true_us"] = first["true_us"];
    s["bytes"] = first["bytes"];
    s["fits_l2"] = first["fits_l2"];
    s["launches_per_sample"] = first["launches_per_sample"];
  }
  if (!us.empty()) {
    s["latency_us"] = caliber::core::median(us);
    s["min_us"] = caliber::core::min_of(us);
    s["max_us"] = caliber::core::max_of(us);
    s["latencies_us"] = us;
    if (us.size() > 1) s["spread"] = caliber::core::max_of(us) / caliber::core::min_of(us) - 1;
  }
  if (!cost.empty()) {
    s["cost_s"] = caliber::core::mean(cost);
    s["cost_max_s"] = caliber::core::max_of(cost);
  }
  return s;
}

void print_table(const std::vector<json>& summaries) {
  std::printf("\n%-18s %-6s %-4s %11s %9s %8s %5s  %s\n", "kernel", "timer", "l2", "latency_us",
              "spread", "cost_s", "K", "l2_method / stop");
  for (const json& s : summaries) {
    char lat[32] = "FAILED", spread[32] = "n/a", cost[32] = "-";
    if (s.contains("latency_us"))
      std::snprintf(lat, sizeof lat, "%.3f", s["latency_us"].get<double>());
    if (s.contains("spread"))
      std::snprintf(spread, sizeof spread, "%.2f%%", s["spread"].get<double>() * 100);
    if (s.contains("cost_s")) std::snprintf(cost, sizeof cost, "%.4f", s["cost_s"].get<double>());
    std::string how;
    for (const auto& m : s["l2_methods"]) how += m.get<std::string>() + " ";
    for (const auto& r : s["stop_reasons"]) how += "/ " + r.get<std::string>() + " ";
    std::printf("%-18s %-6s %-4s %11s %9s %8s %5d  %s\n", s["kernel"].get<std::string>().c_str(),
                s["timer"].get<std::string>().c_str(), s["l2"].get<std::string>().c_str(), lat,
                spread, cost, s.value("launches_per_sample", 0), how.c_str());
  }
}

std::string self_exe() {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw std::runtime_error("cannot find my own executable");
  self[len] = '\0';
  return self;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"caliber_ground_truth: kernels for checking caliber's timers against ncu"};
  int processes = 1, count = 20;
  bool child = false, list = false;
  std::string launch_name, kernels_arg;
  TimingOptions base;
  app.add_flag("--list", list, "print the kernels as JSON lines and exit");
  app.add_option("--launch-only", launch_name,
                 "launch this kernel --count times between cudaProfilerStart/Stop (for ncu)");
  app.add_option("--count", count, "launches in --launch-only mode")->check(CLI::Range(1, 100000));
  app.add_option("--kernels", kernels_arg, "timing mode: comma list of kernels (default: all)");
  app.add_option("--processes", processes, "timing mode: re-execute in N separate processes")
      ->check(CLI::Range(1, 100));
  app.add_flag("--child", child, "internal: one process's rows as JSON lines");
  app.add_option("--warmup", base.stop.warmup_s, "StopRule::warmup_s");
  app.add_option("--max-noise", base.stop.max_noise, "StopRule::max_noise");
  app.add_option("--min-time", base.stop.min_time_s, "StopRule::min_time_s");
  app.add_option("--min-samples", base.stop.min_samples, "StopRule::min_samples");
  app.add_option("--timeout", base.stop.timeout_s, "StopRule::timeout_s");
  app.add_option("--replay-ms", base.graph_replay_ms, "graph timer: target replay length");
  std::string settle = "carry";
  app.add_option("--settle", settle, "carry (as a run does) or each (every measurement settles)")
      ->check(CLI::IsMember({"carry", "each"}));
  std::string sample_method = "auto";
  app.add_option("--sample-method", sample_method, "auto, trace or events (TimingOptions)")
      ->check(CLI::IsMember({"auto", "trace", "events"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  base.sample_method = *caliber::core::parse_word<caliber::core::SampleMethod>(sample_method);
  settle_carry = settle == "carry";
  std::vector<std::string> names;
  if (!launch_name.empty()) {
    if (find_info(launch_name) == nullptr) {
      std::fprintf(stderr, "caliber_ground_truth: --launch-only '%s' is not a kernel; one of: %s\n",
                   launch_name.c_str(), kernel_names_text().c_str());
      return 2;
    }
  } else if (!kernels_arg.empty()) {
    std::stringstream ss(kernels_arg);
    std::string k;
    while (std::getline(ss, k, ',')) {
      if (find_info(k) == nullptr) {
        std::fprintf(stderr, "caliber_ground_truth: --kernels '%s' is not a kernel; one of: %s\n",
                     k.c_str(), kernel_names_text().c_str());
        return 2;
      }
      names.push_back(k);
    }
  } else {
    for (const KernelInfo& k : kernel_infos()) names.push_back(k.name);
  }
  if (list) {
    for (const KernelInfo& k : kernel_infos())
      std::printf("%s\n", json({{"kernel", k.name},
                                {"true_us", k.true_us},
                                {"bytes", k.bytes},
                                {"fits_l2", k.fits_l2}})
                              .dump()
                              .c_str());
    return 0;
  }

  try {
    if (!launch_name.empty()) return launch_only(launch_name, count);
    if (child || processes == 1) {
      const std::vector<json> rows = run_once(names, base, true);
      if (child) return 0;
      std::vector<json> summaries;
      for (const std::string& k : names)
        for (const char* t : {"graph", "direct"})
          for (const char* l2 : {"cold", "warm"}) summaries.push_back(summarize(rows, k, t, l2, 1));
      for (const json& s : summaries) std::printf("%s\n", s.dump().c_str());
      print_table(summaries);
      for (const json& r : rows)
        if (!r["ok"].get<bool>()) return 1;
      return 0;
    }
    // Separate processes: each pays its own context creation, clock ramp and module load, as a
    // real run does; the spread across them is what a user sees between two runs.
    std::string cmd = quote(self_exe()) + " --child";
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--processes") {
        ++i;
        continue;
      }
      if (a.rfind("--processes=", 0) == 0) continue;
      cmd += " " + quote(a);
    }
    std::vector<json> all;
    bool failed = false;
    for (int p = 0; p < processes; ++p) {
      FILE* f = popen(cmd.c_str(), "r");
      if (f == nullptr) throw std::runtime_error("popen failed");
      char line[16384];
      while (std::fgets(line, sizeof line, f) != nullptr) {
        if (line[0] != '{') continue;
        json r = json::parse(line);
        r["process"] = p + 1;
        std::printf("%s\n", r.dump().c_str());
        std::fflush(stdout);
        if (!r["ok"].get<bool>()) failed = true;
        all.push_back(std::move(r));
      }
      const int rc = pclose(f);
      if (rc != 0) {
        std::fprintf(stderr, "caliber_ground_truth: process %d exited with status %d\n", p + 1, rc);
        failed = true;
      }
    }
    std::vector<json> summaries;
    for (const std::string& k : names)
      for (const char* t : {"graph", "direct"})
        for (const char* l2 : {"cold", "warm"})
          summaries.push_back(summarize(all, k, t, l2, processes));
    for (const json& s : summaries) std::printf("%s\n", s.dump().c_str());
    print_table(summaries);
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "caliber_ground_truth: %s\n", e.what());
    return 1;
  }
}
