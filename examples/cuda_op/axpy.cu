// my_axpy_cuda: y = alpha * x + y in place, f32. Baseline: cublasSaxpy. Candidate: a grid-stride
// kernel tuned over block size and vector width (float4 loads where the config asks for them).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include <caliber/caliber.hpp>
#include <caliber/check.hpp>

namespace {
using namespace caliber;
constexpr float kAlpha = 1.5f;

void cuda_ok(cudaError_t e, const char* api) {
  if (e != cudaSuccess) throw NativeError(static_cast<int>(e), api, cudaGetErrorString(e));
}

template <int V>
__global__ void axpy_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x * V;
  for (long long i = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * V; i < n;
       i += stride) {
    if (V == 4 && i + 4 <= n) {
      float4 a = *reinterpret_cast<const float4*>(x + i), b = *reinterpret_cast<float4*>(y + i);
      *reinterpret_cast<float4*>(y + i) = make_float4(kAlpha * a.x + b.x, kAlpha * a.y + b.y,
                                                      kAlpha * a.z + b.z, kAlpha * a.w + b.w);
    } else {
      for (long long k = i; k < i + V && k < n; ++k) y[k] = kAlpha * x[k] + y[k];
    }
  }
}

class Axpy final : public Workload {
 public:
  Axpy(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), n_(c.numel()), x_(ctx, n_ * 4), y0_(ctx, n_ * 4), y_(ctx, n_ * 4) {
    check::fill_random(ctx, x_.get(), DType::f32, n_, -1, 1, 0);
    check::fill_random(ctx, y0_.get(), DType::f32, n_, -1, 1, 1);
    ctx.copy(y_.get(), y0_.get(), n_ * 4, CopyKind::device_to_device);
  }
  ~Axpy() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  std::vector<ProviderInfo> providers() const override {
    ConfigSpace space;
    for (int block : {128, 256, 512})
      for (int vec : {1, 4}) space.configs.push_back(Config{{{"block", block}, {"vec", vec}}});
    space.default_config = Config{{{"block", 256}, {"vec", 4}}};
    space.key = {{"n", n_, KeyStrategy::log2}};
    return {{"cublas", Role::baseline, "1", "cublasSaxpy", {}},
            {"grid_stride", Role::candidate, "1", "grid-stride, float4", space}};
  }
  void prepare(std::size_t p, const Config& c) override {  // never timed
    if (p == 0 && handle_ == nullptr) {
      if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS)
        throw NativeError(1, "cublasCreate", "failed");
      cublasSetStream(handle_, static_cast<cudaStream_t>(ctx_.stream()));
    }
    if (p == 0) return;  // the baseline has no config
    block_ = static_cast<int>(c.get("block", 256));
    vec_ = static_cast<int>(c.get("vec", 4));
    if (block_ < 32 || block_ > 1024 || (vec_ != 1 && vec_ != 4))
      throw ConfigRejected("my_axpy_cuda: no kernel for " + c.str());
    const long long per_block = static_cast<long long>(block_) * vec_;
    grid_ = static_cast<unsigned>(std::clamp<long long>((n_ + per_block - 1) / per_block, 1,
                                                        8LL * std::max(ctx_.props().sm_count, 1)));
  }
  void launch(std::size_t p) override {  // enqueue only, on the context's stream
    auto s = static_cast<cudaStream_t>(ctx_.stream());
    if (p == 0) {
      const cublasStatus_t st =
          cublasSaxpy(handle_, static_cast<int>(n_), &kAlpha, x_.as<float>(), 1, y_.as<float>(), 1);
      if (st != CUBLAS_STATUS_SUCCESS) throw NativeError(st, "cublasSaxpy", "failed");
    } else if (vec_ == 4) {
      axpy_kernel<4><<<grid_, block_, 0, s>>>(x_.as<float>(), y_.as<float>(), n_);
    } else {
      axpy_kernel<1><<<grid_, block_, 0, s>>>(x_.as<float>(), y_.as<float>(), n_);
    }
    cuda_ok(cudaGetLastError(), "axpy launch");
  }
  Accuracy check(std::size_t p) override {  // y = y0 again, one launch, against float64
    ctx_.copy(y_.get(), y0_.get(), n_ * 4, CopyKind::device_to_device);
    launch(p);
    auto x = check::download(ctx_, x_.get(), DType::f32, n_);
    auto y0 = check::download(ctx_, y0_.get(), DType::f32, n_);
    // float64 reference; the error scale of one rounding of each term (y can cancel alpha x)
    std::vector<double> ref(n_), scale(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      ref[i] = double{kAlpha} * x[i] + y0[i];
      scale[i] = std::fabs(double{kAlpha} * x[i]) + std::fabs(y0[i]);
    }
    return check::compare_device(ctx_, y_.get(), DType::f32, n_, ref,
                                 check::pointwise_tolerance(DType::f32), "axpy vs float64", &scale);
  }
  double flops() const override { return 2.0 * n_; }
  double bytes() const override { return 12.0 * n_; }  // read x and y, write y

 private:
  DeviceContext& ctx_;
  long long n_;
  Buffer x_, y0_, y_;
  cublasHandle_t handle_ = nullptr;
  int block_ = 256, vec_ = 4;
  unsigned grid_ = 1;
};

class AxpyOp final : public Op {
 public:
  OpInfo info() const override {
    return {"my_axpy_cuda", "pointwise", {DType::f32}, {}, false, false, "y = alpha x + y"};
  }
  std::size_t bytes_needed(const Case& c) const override { return 12 * c.numel(); }
  std::optional<std::string> skip_reason(const Case& c, const DeviceContext&) const override {
    if (c.numel() > (1LL << 31) - 1) return "cublasSaxpy takes an int length";
    return std::nullopt;
  }
  std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<Axpy>(ctx, c);
  }
};

CALIBER_REGISTER_OP("cuda", AxpyOp);
}  // namespace
