// Elementwise ops: add, mul, gelu (exact erf form), silu, exp.
// Baseline: thrust::transform on the case stream with the par_nosync policy (no allocation, no
// synchronization, so launch() only enqueues). Candidate "vec": caliber's own grid-stride kernel
// with 16-byte vector loads and a tunable launch (block, vec, waves).
#include <thrust/execution_policy.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>
#include <thrust/transform.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "caliber/caliber.hpp"
#include "caliber/reference.hpp"
#include "common/check_kernels.cuh"
#include "common/cuda_common.cuh"

namespace caliber::ops::cuda {
namespace {

enum class EwKind { add, mul, gelu, silu, exp };

constexpr bool is_binary(EwKind k) {
  return k == EwKind::add || k == EwKind::mul;
}

// fp32 math for every dtype (fp16/bf16 are converted in and rounded out once).
template <EwKind K>
struct EwMath {
  __host__ __device__ __forceinline__ float operator()(float a, float b) const {
    if constexpr (K == EwKind::add) {
      return a + b;
    } else if constexpr (K == EwKind::mul) {
      return a * b;
    } else if constexpr (K == EwKind::gelu) {
      (void)b;
      // Exact form 0.5*x*(1+erf(x/sqrt(2))) (torch's approximate="none"), written with erfc so
      // that negative x does not lose its digits to the cancellation in 1+erf.
      return 0.5f * a * erfcf(-a * 0.70710678118654752f);
    } else if constexpr (K == EwKind::silu) {
      (void)b;
      return a / (1.0f + expf(-a));
    } else {
      (void)b;
      return expf(a);
    }
  }
};

// Thrust's functors see T and convert through float, like the candidate.
template <class T, EwKind K>
struct ThrustUnary {
  __host__ __device__ T operator()(T a) const {
    return from_float<T>(EwMath<K>{}(to_float(a), 0.f));
  }
};
template <class T, EwKind K>
struct ThrustBinary {
  __host__ __device__ T operator()(T a, T b) const {
    return from_float<T>(EwMath<K>{}(to_float(a), to_float(b)));
  }
};

double host_math(EwKind k, double a, double b) {
  switch (k) {
    case EwKind::add:
      return a + b;
    case EwKind::mul:
      return a * b;
    case EwKind::gelu:
      return ref::gelu_erf(a);
    case EwKind::silu:
      return ref::silu(a);
    case EwKind::exp:
      return std::exp(a);
  }
  return 0;
}

// The candidate's math. fp16/bf16 gelu uses erfc of Abramowitz & Stegun 7.1.26 (absolute error
// <= 1.5e-7, one reciprocal and one exp2 on the special-function unit) instead of erfcf, whose
// instruction count made the 16-bit gelu compute-bound at ~55% of the copy bandwidth (H200,
// 2026-11-29). Its error is under 2% of the fp16 tolerance on [-4, 4]; fp32 keeps erfcf, whose
// relative accuracy for negative x the fp32 tolerance needs.
template <class T, EwKind K>
struct CandMath {
  __device__ __forceinline__ float operator()(float a, float b) const {
    if constexpr (K == EwKind::gelu && !std::is_same_v<T, float>) {
      (void)b;
      const float z = fabsf(a) * 0.70710678118654752f;
      const float t = __frcp_rn(1.f + 0.3275911f * z);
      const float ec =
          t *
          (0.254829592f +
           t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f)))) *
          __expf(-z * z);
      return a >= 0.f ? a * (1.f - 0.5f * ec) : 0.5f * a * ec;
    } else {
      return EwMath<K>{}(a, b);
    }
  }
};

// The candidate: each thread handles V contiguous elements per step (one 16-byte access when
// sizeof(T)*V == 16); the tail past the last full vector is covered element-wise.
template <class T, int V, EwKind K>
__global__ void __launch_bounds__(1024)
    ew_vec_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                  std::int64_t n) {
  const std::int64_t nvec = n / V;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const CandMath<T, K> f;
  for (std::int64_t i = tid; i < nvec; i += stride) {
    const Vec<T, V> va = load_vec<T, V>(a + i * V);
    Vec<T, V> vo;
    if constexpr (is_binary(K)) {
      const Vec<T, V> vb = load_vec<T, V>(b + i * V);
#pragma unroll
      for (int j = 0; j < V; ++j) vo.v[j] = from_float<T>(f(to_float(va.v[j]), to_float(vb.v[j])));
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) vo.v[j] = from_float<T>(f(to_float(va.v[j]), 0.f));
    }
    store_vec<T, V>(out + i * V, vo);
  }
  for (std::int64_t i = nvec * V + tid; i < n; i += stride) {
    const float bv = is_binary(K) ? to_float(b[i]) : 0.f;
    out[i] = from_float<T>(f(to_float(a[i]), bv));
  }
}

const char* kind_name(EwKind k) {
  switch (k) {
    case EwKind::add:
      return "add";
    case EwKind::mul:
      return "mul";
    case EwKind::gelu:
      return "gelu";
    case EwKind::silu:
      return "silu";
    case EwKind::exp:
      return "exp";
  }
  return "?";
}

// CALIBER_EW_NOVEC=1 forces the candidate to scalar accesses: the A/B demo's switch.
bool novec_forced() {
  const char* e = std::getenv("CALIBER_EW_NOVEC");
  return e != nullptr && std::strcmp(e, "1") == 0;
}

constexpr std::int64_t kFullCheckLimit = std::int64_t{1} << 24;
constexpr std::int64_t kSampleCount = std::int64_t{1} << 16;

template <class T, EwKind K>
class EwWorkload final : public Workload {
 public:
  EwWorkload(DeviceContext& ctx, const Case& c) : ctx_(ctx), n_(c.numel()) {
    const std::size_t bytes = static_cast<std::size_t>(n_) * sizeof(T);
    a_ = Buffer(ctx, bytes);
    if (is_binary(K)) b_ = Buffer(ctx, bytes);
    out_ = Buffer(ctx, bytes);
    // Ranges keep every output finite in fp16 (exp(4) = 54.6) and exercise both signs.
    const double lo = is_binary(K) ? -2.0 : -4.0, hi = -lo;
    const std::uint64_t seed = ctx.seed();
    ctx.fill_uniform(a_.get(), dtype_of<T>(), static_cast<std::size_t>(n_), lo, hi, seed);
    if (is_binary(K)) {
      ctx.fill_uniform(b_.get(), dtype_of<T>(), static_cast<std::size_t>(n_), lo, hi, seed + 1);
    }
    ctx.synchronize();
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "thrust";
    base.role = Role::baseline;
    base.label = "thrust::transform, par_nosync on the case stream";
    ProviderInfo cand;
    cand.name = "vec";
    cand.role = Role::candidate;
    cand.version = "1";
    cand.label = novec_forced() ? "own grid-stride kernel, vec forced to 1 (CALIBER_EW_NOVEC=1)"
                                : "own grid-stride kernel, 16-byte vector accesses";
    if (K == EwKind::gelu && !std::is_same_v<T, float>) cand.label += "; erfc by A&S 7.1.26";
    for (std::int64_t block : {128, 256, 512, 1024}) {
      for (std::int64_t vec = 1; vec <= max_vec<T>(); vec *= 2) {
        for (std::int64_t waves : {1, 4, 32}) {
          cand.space.configs.push_back(Config{{{"block", block}, {"vec", vec}, {"waves", waves}}});
        }
      }
    }
    cand.space.default_config = Config{{{"block", 256}, {"vec", max_vec<T>()}, {"waves", 4}}};
    cand.space.key = {KeyArg{"N", n_, KeyStrategy::log2}};
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) return;
    if (p != 1) throw std::out_of_range("elementwise: provider index");
    block_ = static_cast<int>(c.get("block", 256));
    vec_ = static_cast<int>(c.get("vec", max_vec<T>()));
    const int waves = static_cast<int>(c.get("waves", 4));
    if (novec_forced()) vec_ = 1;
    if (vec_ != 1 && vec_ != 2 && vec_ != 4 && vec_ != 8) {
      throw ConfigRejected("elementwise: vec must be 1, 2, 4 or 8");
    }
    if (static_cast<int>(sizeof(T)) * vec_ > 16) {
      throw ConfigRejected("elementwise: vec " + std::to_string(vec_) + " exceeds 16 bytes");
    }
    if (waves <= 0) throw ConfigRejected("elementwise: waves must be positive");
    const std::size_t vbytes = sizeof(T) * static_cast<std::size_t>(vec_);
    if (!aligned_to(a_.get(), vbytes) || !aligned_to(out_.get(), vbytes) ||
        (is_binary(K) && !aligned_to(b_.get(), vbytes))) {
      throw ConfigRejected("elementwise: buffers not aligned for vec " + std::to_string(vec_));
    }
    require_launchable(kernel_for(vec_), block_, 0, "elementwise vec kernel");
    // Resident blocks per SM for this block size bound one wave; waves scale it.
    const int per_sm = block_ > 0 ? 2048 / block_ : 1;
    const std::int64_t work = (n_ / vec_) > 0 ? n_ / vec_ : 1;
    grid_ = grid_for(work, block_, ctx_.props(), waves, per_sm);
  }

  void launch(std::size_t p) override {
    const cudaStream_t s = stream_of(ctx_);
    const T* a = a_.as<T>();
    const T* b = b_.as<T>();
    T* out = out_.as<T>();
    if (p == 0) {
      try {
        auto policy = thrust::cuda::par_nosync.on(s);
        if constexpr (is_binary(K)) {
          thrust::transform(policy, a, a + n_, b, out, ThrustBinary<T, K>{});
        } else {
          thrust::transform(policy, a, a + n_, out, ThrustUnary<T, K>{});
        }
      } catch (const thrust::system_error& e) {
        throw NativeError(e.code().value(), "thrust::transform", e.what());
      }
      CALIBER_LAUNCH_CHECK("thrust::transform");
      return;
    }
    kernel_for(vec_)<<<grid_, block_, 0, s>>>(a, b, out, n_);
    CALIBER_LAUNCH_CHECK("ew_vec_kernel");
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    const cudaStream_t s = stream_of(ctx_);
    check::poison(ctx_, out_.get(), static_cast<std::size_t>(n_) * sizeof(T));
    launch(p);
    sync(s);
    const auto tol = check::pointwise_tolerance(dtype_of<T>());
    std::vector<double> a, b, out;
    std::string what;
    std::uint64_t unwritten = 0;
    if (n_ <= kFullCheckLimit) {
      a = check::download(ctx_, a_.get(), dtype_of<T>(), static_cast<std::size_t>(n_));
      if (is_binary(K))
        b = check::download(ctx_, b_.get(), dtype_of<T>(), static_cast<std::size_t>(n_));
      out = check::download(ctx_, out_.get(), dtype_of<T>(), static_cast<std::size_t>(n_));
      what =
          std::string(kind_name(K)) + ": all " + std::to_string(n_) + " elements vs host float64";
    } else {
      // Every element is checked for poison on the device; values on a deterministic sample.
      unwritten = count_nonfinite(ctx_, out_.as<T>(), n_);
      const auto idx = check::sample_indices(n_, kSampleCount, 0x5EED0000u + n_);
      a = gather_to_host(ctx_, a_.as<T>(), idx);
      if (is_binary(K)) b = gather_to_host(ctx_, b_.as<T>(), idx);
      out = gather_to_host(ctx_, out_.as<T>(), idx);
      what = std::string(kind_name(K)) + ": " + std::to_string(idx.size()) + " sampled of " +
             std::to_string(n_) + " elements vs host float64, all checked for NaN on device";
    }
    // The float64 reference on the host's threads (docs/writing-ops.md, "The gate's cost").
    const std::vector<double> r =
        is_binary(K) ? ref::zip(a, b, [](double x, double y) { return host_math(K, x, y); })
                     : ref::map(a, [](double x) { return host_math(K, x, 0.0); });
    Accuracy acc = check::compare(out, r, tol, what);
    check::covered(acc,
                   n_ <= kFullCheckLimit ? check::method::host_full : check::method::host_sampled,
                   static_cast<std::int64_t>(out.size()), n_);
    if (unwritten > 0) {
      acc.passed = false;
      acc.detail += "; " + std::to_string(unwritten) + " unwritten/NaN elements on device";
    }
    return acc;
  }

  [[nodiscard]] double flops() const override {
    // One op for add/mul; the transcendental ones are counted as one too (FLOP counts of erf/exp
    // are implementation-defined, and the ops are memory-bound: GB/s is the metric).
    return static_cast<double>(n_);
  }
  [[nodiscard]] double bytes() const override {
    return static_cast<double>(n_) * sizeof(T) * (is_binary(K) ? 3.0 : 2.0);
  }

 private:
  using KernelFn = void (*)(const T*, const T*, T*, std::int64_t);
  static KernelFn kernel_for(int vec) {
    if constexpr (sizeof(T) <= 2) {
      if (vec == 8) return ew_vec_kernel<T, 8, K>;
    }
    switch (vec) {
      case 2:
        return ew_vec_kernel<T, 2, K>;
      case 4:
        return ew_vec_kernel<T, 4, K>;
      default:
        return ew_vec_kernel<T, 1, K>;
    }
  }

  DeviceContext& ctx_;
  std::int64_t n_;
  Buffer a_, b_, out_;
  int block_ = 256, vec_ = 1;
  unsigned grid_ = 1;
};

template <EwKind K>
class EwOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = kind_name(K);
    i.family = "pointwise";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.description = K == EwKind::gelu ? "gelu, exact erf form (torch approximate='none')"
                    : is_binary(K) ? std::string("elementwise ") + kind_name(K) + " of two tensors"
                                   : std::string("elementwise ") + kind_name(K);
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return static_cast<std::size_t>(c.numel()) * size_of(c.dtype) * (is_binary(K) ? 3 : 2);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return dispatch_float(c.dtype, [&](auto t) -> std::unique_ptr<Workload> {
      return std::make_unique<EwWorkload<decltype(t), K>>(ctx, c);
    });
  }
};

using AddOp = EwOp<EwKind::add>;
using MulOp = EwOp<EwKind::mul>;
using GeluOp = EwOp<EwKind::gelu>;
using SiluOp = EwOp<EwKind::silu>;
using ExpOp = EwOp<EwKind::exp>;

}  // namespace
}  // namespace caliber::ops::cuda

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::AddOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::MulOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::GeluOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::SiluOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::ExpOp);
