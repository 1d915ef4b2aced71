// my_axpy_cuda: y = alpha * x + y in place, f32, written with the op builder
// (caliber/builder.hpp). Baseline: cublasSaxpy. Candidate: a grid-stride kernel tuned over block
// size and vector width (float4 loads where the config asks for them).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include <caliber/builder.hpp>

namespace {
using namespace caliber;
constexpr float kAlpha = 1.5f;

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

struct Axpy {  // one case: x, y0 (y's fresh values) and y, the cuBLAS handle, the launch geometry
  Axpy(DeviceContext& ctx, const Case& c)
      : n(c.numel()), x(ctx, n * 4), y0(ctx, n * 4), y(ctx, n * 4) {
    check::fill_random(ctx, x.get(), DType::f32, n, -1, 1, 0);
    check::fill_random(ctx, y0.get(), DType::f32, n, -1, 1, 1);
    ctx.copy(y.get(), y0.get(), n * 4, CopyKind::device_to_device);
  }
  Axpy(Axpy&& o) noexcept
      : n(o.n), x(std::move(o.x)), y0(std::move(o.y0)), y(std::move(o.y)), handle(o.handle) {
    o.handle = nullptr;
  }
  ~Axpy() {
    if (handle != nullptr) cublasDestroy(handle);
  }
  long long n;
  Buffer x, y0, y;
  cublasHandle_t handle = nullptr;
  int block = 256, vec = 4;
  unsigned grid = 1;
};

void prepare_cublas(Run<Axpy>& r) {  // never timed
  if (r.data.handle != nullptr) return;
  native_ok(cublasCreate(&r.data.handle), "cublasCreate", cublasGetStatusString);
  native_ok(cublasSetStream(r.data.handle, r.stream<cudaStream_t>()), "cublasSetStream",
            cublasGetStatusString);
}

void prepare_grid(Run<Axpy>& r) {  // never timed; a config without a kernel is rejected
  auto& d = r.data;
  d.block = r.config.get<int>("block");
  d.vec = r.config.get<int>("vec");
  if (d.block < 32 || d.block > 1024 || (d.vec != 1 && d.vec != 4))
    throw ConfigRejected("my_axpy_cuda: no kernel for " + r.config.str());
  const long long per_block = static_cast<long long>(d.block) * d.vec;
  d.grid = static_cast<unsigned>(std::clamp<long long>(
      (d.n + per_block - 1) / per_block, 1, 8LL * std::max(r.ctx.props().sm_count, 1)));
}

void launch_grid_stride(Run<Axpy>& r) {  // enqueue only, on the context's stream
  auto& d = r.data;
  if (d.vec == 4)
    axpy_kernel<4><<<d.grid, d.block, 0, r.stream<cudaStream_t>()>>>(d.x.as<float>(),
                                                                     d.y.as<float>(), d.n);
  else
    axpy_kernel<1><<<d.grid, d.block, 0, r.stream<cudaStream_t>()>>>(d.x.as<float>(),
                                                                     d.y.as<float>(), d.n);
  native_ok(cudaGetLastError(), "axpy launch", cudaGetErrorString);
}

Accuracy check_axpy(Run<Axpy>& r) {  // y = y0 again, one launch, against float64
  r.ctx.copy(r.data.y.get(), r.data.y0.get(), r.data.n * 4, CopyKind::device_to_device);
  r.launch();
  const auto x = r.download(r.data.x), y0 = r.download(r.data.y0);
  // float64 reference; the error scale of one rounding of each term (y can cancel alpha x)
  std::vector<double> ref(x.size()), scale(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ref[i] = double{kAlpha} * x[i] + y0[i];
    scale[i] = std::fabs(double{kAlpha} * x[i]) + std::fabs(y0[i]);
  }
  return r.compare(r.data.y, ref, "axpy vs float64", std::nullopt, &scale);
}

[[maybe_unused]] const bool registered =
    op_builder<Axpy>("my_axpy_cuda")
        .family("pointwise")
        .dtypes({DType::f32})
        .description("y = alpha x + y")
        .shapes({{1 << 20}, {1 << 24}})  // a --shapes file with an entry for my_axpy_cuda wins
        .baseline("cublas",
                  [](Run<Axpy>& r) {
                    native_ok(cublasSaxpy(r.data.handle, static_cast<int>(r.data.n), &kAlpha,
                                          r.data.x.as<float>(), 1, r.data.y.as<float>(), 1),
                              "cublasSaxpy", cublasGetStatusString);
                  })
        .prepare("cublas", prepare_cublas)
        .candidate("grid_stride",
                   Tunable{{{"block", {128, 256, 512}}, {"vec", {1, 4}}},
                           Config{{{"block", 256}, {"vec", 4}}}},
                   launch_grid_stride)
        .prepare("grid_stride", prepare_grid)
        .check(check_axpy)
        .flops([](const Case& c) { return 2.0 * c.numel(); })
        .bytes([](const Case& c) { return 12.0 * c.numel(); })  // read x and y, write y
        .skip_if([](const Case& c, const DeviceContext&) -> std::optional<std::string> {
          if (c.numel() > (1LL << 31) - 1) return "cublasSaxpy takes an int length";
          return std::nullopt;
        })
        .register_for("cuda");
}  // namespace
