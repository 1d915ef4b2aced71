// Row normalizations over the last dimension: softmax, log_softmax, layer_norm (weight, bias,
// eps 1e-5), rms_norm (weight, eps 1e-6).
// Baseline: cuDNN's softmax (ACCURATE / LOG, INSTANCE mode on an N x C x 1 x 1 tensor) where
// cuDNN is built in and has the dtype; otherwise, and for layer_norm / rms_norm which cuDNN's
// legacy API lacks, a plain two-kernel reference (statistics pass, then a normalizing pass that
// reads the row again). Candidate: single-pass statistics (online softmax, Welford) with the row
// kept in shared memory, so it is read from device memory once; rows too long for shared memory
// or too few to fill the device are split over blocks.
#include <cuda_runtime.h>

#include <cmath>
#include <memory>

#include "common/cuda_common.cuh"
#include "common/rows_b.cuh"

#ifdef CALIBER_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace caliber::ops::cuda::normb {
namespace {

using rowsb::RowShape;

enum class Kind { softmax, log_softmax, layer_norm, rms_norm };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::softmax:
      return "softmax";
    case Kind::log_softmax:
      return "log_softmax";
    case Kind::layer_norm:
      return "layer_norm";
    default:
      return "rms_norm";
  }
}

constexpr float kLayerEps = 1e-5f;
constexpr float kRmsEps = 1e-6f;

// Running statistics of part of a row. softmax: (max, sum of exp(x - max)); layer_norm:
// Welford (count, mean, M2); rms_norm: (sum of squares).
struct Stats {
  float a, b, c;
};

template <Kind K>
struct StatOps {
  __device__ static Stats identity() {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) return {-INFINITY, 0.f, 0.f};
    return {0.f, 0.f, 0.f};
  }
  __device__ static Stats one(float x) {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) return {x, 1.f, 0.f};
    if constexpr (K == Kind::layer_norm) return {1.f, x, 0.f};
    return {x * x, 0.f, 0.f};
  }
  __device__ Stats operator()(Stats p, Stats q) const {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) {
      if (p.b == 0.f) return q;
      if (q.b == 0.f) return p;
      const float m = fmaxf(p.a, q.a);
      return {m, p.b * expf(p.a - m) + q.b * expf(q.a - m), 0.f};
    } else if constexpr (K == Kind::layer_norm) {
      if (p.a == 0.f) return q;
      if (q.a == 0.f) return p;
      const float n = p.a + q.a;
      const float d = q.b - p.b;
      return {n, p.b + d * (q.a / n), p.c + q.c + d * d * (p.a * q.a / n)};
    } else {
      return {p.a + q.a, 0.f, 0.f};
    }
  }
};

// What the normalizing pass needs, from the row's final statistics.
struct Fin {
  float shift, scale;
};

template <Kind K>
__device__ __forceinline__ Fin finish(Stats s, long long cols) {
  if constexpr (K == Kind::softmax) return {s.a, 1.f / s.b};
  if constexpr (K == Kind::log_softmax) return {s.a + logf(s.b), 0.f};
  if constexpr (K == Kind::layer_norm) return {s.b, rsqrtf(s.c / s.a + kLayerEps)};
  return {0.f, rsqrtf(s.a / static_cast<float>(cols) + kRmsEps)};
}

template <Kind K, class T>
__device__ __forceinline__ T apply(float x, Fin f, const T* w, const T* b, long long j) {
  if constexpr (K == Kind::softmax) return from_float<T>(expf(x - f.shift) * f.scale);
  if constexpr (K == Kind::log_softmax) return from_float<T>(x - f.shift);
  if constexpr (K == Kind::layer_norm)
    return from_float<T>((x - f.shift) * f.scale * to_float(w[j]) + to_float(b[j]));
  return from_float<T>(x * f.scale * to_float(w[j]));
}

// Candidate: a block per row; the row is read once into shared memory (as float) while the
// statistics accumulate, then normalized from there. Without shared memory (SMEM false) the
// second pass reads the row again (from L2 for moderate rows).
template <Kind K, class T, bool SMEM>
__global__ void fused_rows_kernel(const T* __restrict__ x, T* __restrict__ y,
                                  const T* __restrict__ w, const T* __restrict__ bias,
                                  long long rows, long long cols) {
  extern __shared__ float row_buf[];
  __shared__ Stats scratch[33];
  const StatOps<K> comb;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    Stats s = StatOps<K>::identity();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = to_float(xr[j]);
      if constexpr (SMEM) row_buf[j] = v;
      s = comb(s, StatOps<K>::one(v));
    }
    s = rowsb::block_reduce(s, comb, StatOps<K>::identity(), scratch);
    const Fin f = finish<K>(s, cols);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = SMEM ? row_buf[j] : to_float(xr[j]);
      yr[j] = apply<K, T>(v, f, w, bias, j);
    }
    __syncthreads();  // row_buf is rewritten by the next row
  }
}

// Split path, pass 1: statistics of chunk `task % splits` of row `task / splits`.
template <Kind K, class T>
__global__ void partial_stats_kernel(const T* __restrict__ x, long long rows, long long cols,
                                     long long chunk, long long splits,
                                     Stats* __restrict__ partial) {
  __shared__ Stats scratch[33];
  const StatOps<K> comb;
  for (long long task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const long long row = task / splits;
    const long long begin = (task % splits) * chunk;
    const long long end = min(cols, begin + chunk);
    Stats s = StatOps<K>::identity();
    for (long long j = begin + threadIdx.x; j < end; j += blockDim.x) {
      s = comb(s, StatOps<K>::one(to_float(x[row * cols + j])));
    }
    s = rowsb::block_reduce(s, comb, StatOps<K>::identity(), scratch);
    if (threadIdx.x == 0) partial[task] = s;
  }
}

// Split path, pass 2: combine the row's partials, then normalize this block's chunk.
template <Kind K, class T>
__global__ void apply_split_kernel(const T* __restrict__ x, T* __restrict__ y,
                                   const T* __restrict__ w, const T* __restrict__ bias,
                                   long long rows, long long cols, long long chunk,
                                   long long splits, const Stats* __restrict__ partial) {
  __shared__ Stats scratch[33];
  const StatOps<K> comb;
  for (long long task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const long long row = task / splits;
    const long long begin = (task % splits) * chunk;
    const long long end = min(cols, begin + chunk);
    Stats s = StatOps<K>::identity();
    for (long long q = threadIdx.x; q < splits; q += blockDim.x)
      s = comb(s, partial[row * splits + q]);
    s = rowsb::block_reduce(s, comb, StatOps<K>::identity(), scratch);
    const Fin f = finish<K>(s, cols);
    for (long long j = begin + threadIdx.x; j < end; j += blockDim.x) {
      y[row * cols + j] = apply<K, T>(to_float(x[row * cols + j]), f, w, bias, j);
    }
  }
}

#ifdef CALIBER_HAVE_CUDNN
#define CALIBER_CUDNN_CHECK(expr)                                                \
  do {                                                                           \
    const cudnnStatus_t st_ = (expr);                                            \
    if (st_ != CUDNN_STATUS_SUCCESS) {                                           \
      throw NativeError(static_cast<int>(st_), #expr, cudnnGetErrorString(st_)); \
    }                                                                            \
  } while (0)
#endif

class NormWorkload final : public Workload {
 public:
  NormWorkload(DeviceContext& ctx, const Case& c, Kind kind)
      : ctx_(ctx), case_(c), kind_(kind), rs_(rowsb::row_shape(c)), s_(stream_of(ctx)) {
    const std::size_t es = size_of(c.dtype);
    const auto n = static_cast<std::size_t>(rs_.numel());
    x_ = Buffer(ctx, n * es);
    y_ = Buffer(ctx, n * es);
    w_ = Buffer(ctx, static_cast<std::size_t>(rs_.cols) * es);
    b_ = Buffer(ctx, static_cast<std::size_t>(rs_.cols) * es);
    const std::uint64_t seed = ctx.seed();
    // Softmax inputs span a few units so that exp() varies; norms get a shifted mean.
    const bool sm = kind == Kind::softmax || kind == Kind::log_softmax;
    ctx.fill_uniform(x_.get(), c.dtype, n, sm ? -4.0 : -1.0, sm ? 4.0 : 3.0, seed);
    ctx.fill_uniform(w_.get(), c.dtype, static_cast<std::size_t>(rs_.cols), 0.5, 1.5, seed + 1);
    ctx.fill_uniform(b_.get(), c.dtype, static_cast<std::size_t>(rs_.cols), -0.5, 0.5, seed + 2);
  }

  ~NormWorkload() override {
#ifdef CALIBER_HAVE_CUDNN
    if (desc_ != nullptr) cudnnDestroyTensorDescriptor(desc_);
    if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
#endif
  }

  [[nodiscard]] bool use_cudnn() const {
#ifdef CALIBER_HAVE_CUDNN
    // bf16 is left to the reference: the legacy softmax API does not promise it.
    return (kind_ == Kind::softmax || kind_ == Kind::log_softmax) && case_.dtype != DType::bf16;
#else
    return false;
#endif
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.role = Role::baseline;
    if (use_cudnn()) {
      base.name = "cudnn";
      base.label = kind_ == Kind::softmax ? "cudnnSoftmaxForward ACCURATE, INSTANCE mode"
                                          : "cudnnSoftmaxForward LOG, INSTANCE mode";
    } else {
      base.name = "reference";
      base.label = "plain reference kernel, no vendor baseline";
    }
    ProviderInfo cand;
    cand.name = "caliber";
    cand.role = Role::candidate;
    cand.label = kind_ == Kind::layer_norm ? "own single-pass Welford kernel, row in shared memory"
                                           : "own single-pass kernel, row in shared memory";
    cand.space = rowsb::block_space(rs_);
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) {
      if (use_cudnn()) {
        prepare_cudnn();
      } else {
        plan_split(ref_plan_, 256, /*force_split=*/true);
      }
      return;
    }
    plan_split(own_plan_, rowsb::block_of(c), false);
  }

  void launch(std::size_t p) override {
    if (p == 0) {
      if (use_cudnn()) {
        run_cudnn();
      } else {
        run_plan(ref_plan_, y_.get());
      }
      return;
    }
    run_plan(own_plan_, y_.get());
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    poison(y_.get(), y_.bytes(), s_);
    launch(p);
    sync(s_);
    if (rs_.cols > (std::int64_t{1} << 24)) return check_against_device_reference();
    const auto rows = rowsb::sample_rows(rs_, ctx_.seed() ^ 0x40f3);
    const auto x = download_rows(x_.get(), case_.dtype, rows, rs_.cols, s_);
    const auto y = download_rows(y_.get(), case_.dtype, rows, rs_.cols, s_);
    const auto nr = static_cast<std::int64_t>(rows.size());
    std::vector<double> ref;
    if (kind_ == Kind::softmax) ref = ref::row_softmax(x, nr, rs_.cols);
    if (kind_ == Kind::log_softmax) ref = ref::row_log_softmax(x, nr, rs_.cols);
    if (kind_ == Kind::layer_norm || kind_ == Kind::rms_norm) {
      const auto w = download(w_.get(), case_.dtype, static_cast<std::size_t>(rs_.cols), s_);
      const auto b = download(b_.get(), case_.dtype, static_cast<std::size_t>(rs_.cols), s_);
      ref = kind_ == Kind::layer_norm ? ref::row_layer_norm(x, nr, rs_.cols, kLayerEps, w, b)
                                      : ref::row_rms_norm(x, nr, rs_.cols, kRmsEps, w);
    }
    return ref::compare(y, ref, ref::reduction_tolerance(case_.dtype, rs_.cols),
                        std::string(kind_name(kind_)) + " on " +
                            rowsb::rows_detail(rs_, rows.size()) + " vs host float64");
  }

  [[nodiscard]] double bytes() const override {
    const double es = static_cast<double>(size_of(case_.dtype));
    const double params = kind_ == Kind::layer_norm ? 2 : kind_ == Kind::rms_norm ? 1 : 0;
    return es * (2.0 * static_cast<double>(rs_.numel()) + params * static_cast<double>(rs_.cols));
  }
  [[nodiscard]] double flops() const override {
    return 5.0 * static_cast<double>(rs_.numel());
  }

 private:
  struct Plan {
    int block = 256;
    bool split = false;
    bool smem = false;
    std::int64_t chunk = 1, splits = 1;
    Buffer partial;
  };

  void plan_split(Plan& plan, int block, bool force_split) {
    plan.block = block;
    const std::int64_t target = rowsb::fill_blocks(ctx_.props(), block);
    const std::size_t smem_bytes = static_cast<std::size_t>(rs_.cols) * sizeof(float);
    plan.smem = !force_split && smem_bytes <= 96 * 1024;
    plan.split = force_split || (rs_.rows < target / 2 && rs_.cols >= 16 * block) || !plan.smem;
    if (plan.split) {
      plan.smem = false;
      const std::int64_t min_chunk = static_cast<std::int64_t>(block) * 8;
      const std::int64_t want = ceil_div(target, rs_.rows);
      const std::int64_t most = std::max<std::int64_t>(1, rs_.cols / min_chunk);
      plan.splits = std::min(want, most);
      plan.chunk = ceil_div(rs_.cols, plan.splits);
      plan.splits = ceil_div(rs_.cols, plan.chunk);
      plan.partial = Buffer(ctx_, static_cast<std::size_t>(rs_.rows * plan.splits) * sizeof(Stats));
    }
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_kind([&](auto kc) {
        constexpr Kind K = decltype(kc)::value;
        if (plan.smem) {
          require_launchable(fused_rows_kernel<K, T, true>, block, smem_bytes, "fused_rows_kernel");
        } else {
          require_launchable(fused_rows_kernel<K, T, false>, block, 0, "fused_rows_kernel");
        }
      });
    });
  }

  template <class F>
  void with_kind(F&& f) {
    switch (kind_) {
      case Kind::softmax:
        f(std::integral_constant<Kind, Kind::softmax>{});
        break;
      case Kind::log_softmax:
        f(std::integral_constant<Kind, Kind::log_softmax>{});
        break;
      case Kind::layer_norm:
        f(std::integral_constant<Kind, Kind::layer_norm>{});
        break;
      case Kind::rms_norm:
        f(std::integral_constant<Kind, Kind::rms_norm>{});
        break;
    }
  }

  void run_plan(Plan& plan, void* out) {
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_kind([&](auto kc) {
        constexpr Kind K = decltype(kc)::value;
        const T* x = x_.as<const T>();
        const T* w = w_.as<const T>();
        const T* b = b_.as<const T>();
        T* y = static_cast<T*>(out);
        if (plan.split) {
          const std::int64_t tasks = rs_.rows * plan.splits;
          const unsigned grid = grid_for(tasks, 1, ctx_.props(), 4, std::max(1, 2048 / plan.block));
          partial_stats_kernel<K, T><<<grid, plan.block, 0, s_>>>(
              x, rs_.rows, rs_.cols, plan.chunk, plan.splits, plan.partial.as<Stats>());
          CALIBER_LAUNCH_CHECK("partial_stats_kernel");
          apply_split_kernel<K, T><<<grid, plan.block, 0, s_>>>(x, y, w, b, rs_.rows, rs_.cols,
                                                                plan.chunk, plan.splits,
                                                                plan.partial.as<const Stats>());
          CALIBER_LAUNCH_CHECK("apply_split_kernel");
          return;
        }
        const unsigned grid =
            grid_for(rs_.rows, 1, ctx_.props(), 4, std::max(1, 2048 / plan.block));
        if (plan.smem) {
          const std::size_t smem = static_cast<std::size_t>(rs_.cols) * sizeof(float);
          fused_rows_kernel<K, T, true>
              <<<grid, plan.block, smem, s_>>>(x, y, w, b, rs_.rows, rs_.cols);
        } else {
          fused_rows_kernel<K, T, false>
              <<<grid, plan.block, 0, s_>>>(x, y, w, b, rs_.rows, rs_.cols);
        }
        CALIBER_LAUNCH_CHECK("fused_rows_kernel");
      });
    });
  }

  // Rows longer than 16M elements: the host float64 reference would take minutes, so the output
  // is compared with the plain reference kernel (fp32 statistics) on a strided sample, and every
  // element is checked for NaN.
  [[nodiscard]] Accuracy check_against_device_reference() {
    Plan plan;
    plan_split(plan, 256, true);
    Buffer ref_out(ctx_, y_.bytes());
    run_plan(plan, ref_out.get());
    sync(s_);
    const std::int64_t stride = std::max<std::int64_t>(1, rs_.numel() / (1 << 20));
    std::vector<double> out_s, ref_s;
    std::size_t nonfinite = 0;
    rowsb::stream_back(y_.get(), case_.dtype, 0, rs_.numel(), s_,
                       [&](const std::vector<double>& v, std::int64_t off) {
                         for (std::size_t k = 0; k < v.size(); ++k) {
                           if (!std::isfinite(v[k])) ++nonfinite;
                           if ((off + static_cast<std::int64_t>(k)) % stride == 0)
                             out_s.push_back(v[k]);
                         }
                       });
    rowsb::stream_back(ref_out.get(), case_.dtype, 0, rs_.numel(), s_,
                       [&](const std::vector<double>& v, std::int64_t off) {
                         for (std::size_t k = 0; k < v.size(); ++k) {
                           if ((off + static_cast<std::int64_t>(k)) % stride == 0)
                             ref_s.push_back(v[k]);
                         }
                       });
    Accuracy a = ref::compare(out_s, ref_s, ref::reduction_tolerance(case_.dtype, rs_.cols),
                              std::string(kind_name(kind_)) + ": every " + std::to_string(stride) +
                                  "th element vs the plain reference kernel (host float64 "
                                  "unaffordable for this row length), all NaN-checked");
    if (nonfinite > 0) {
      a.passed = false;
      a.detail += "; " + std::to_string(nonfinite) + " NaN/unwritten elements";
    }
    return a;
  }

  void prepare_cudnn() {
#ifdef CALIBER_HAVE_CUDNN
    if (cudnn_ == nullptr) CALIBER_CUDNN_CHECK(cudnnCreate(&cudnn_));
    CALIBER_CUDNN_CHECK(cudnnSetStream(cudnn_, s_));
    if (desc_ == nullptr) CALIBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    const cudnnDataType_t dt = case_.dtype == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    if (rs_.rows > INT32_MAX || rs_.cols > INT32_MAX) {
      throw CaseSkipped("cuDNN tensor dimensions are 32-bit");
    }
    CALIBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, dt,
                                                   static_cast<int>(rs_.rows),
                                                   static_cast<int>(rs_.cols), 1, 1));
#endif
  }

  void run_cudnn() {
#ifdef CALIBER_HAVE_CUDNN
    const float alpha = 1.f, beta = 0.f;
    CALIBER_CUDNN_CHECK(cudnnSoftmaxForward(
        cudnn_, kind_ == Kind::softmax ? CUDNN_SOFTMAX_ACCURATE : CUDNN_SOFTMAX_LOG,
        CUDNN_SOFTMAX_MODE_INSTANCE, &alpha, desc_, x_.get(), &beta, desc_, y_.get()));
#endif
  }

  DeviceContext& ctx_;
  Case case_;
  Kind kind_;
  RowShape rs_;
  cudaStream_t s_;
  Buffer x_, y_, w_, b_;
  Plan ref_plan_, own_plan_;
#ifdef CALIBER_HAVE_CUDNN
  cudnnHandle_t cudnn_ = nullptr;
  cudnnTensorDescriptor_t desc_ = nullptr;
#endif
};

class NormOp : public Op {
 public:
  explicit NormOp(Kind k) : kind_(k) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = kind_name(kind_);
    i.family = "norm";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.description = std::string(kind_name(kind_)) + " over the last dimension";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto rs = rowsb::row_shape(c);
    const auto n = static_cast<std::size_t>(rs.numel()) * size_of(c.dtype);
    // Input, output, a reference output for the check of huge rows, parameters, partials.
    return 3 * n + (std::size_t{64} << 20);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<NormWorkload>(ctx, c, kind_);
  }

 private:
  Kind kind_;
};

struct SoftmaxOp final : NormOp {
  SoftmaxOp() : NormOp(Kind::softmax) {}
};
struct LogSoftmaxOp final : NormOp {
  LogSoftmaxOp() : NormOp(Kind::log_softmax) {}
};
struct LayerNormOp final : NormOp {
  LayerNormOp() : NormOp(Kind::layer_norm) {}
};
struct RmsNormOp final : NormOp {
  RmsNormOp() : NormOp(Kind::rms_norm) {}
};

}  // namespace
}  // namespace caliber::ops::cuda::normb

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::normb::SoftmaxOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::normb::LogSoftmaxOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::normb::LayerNormOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::normb::RmsNormOp);
