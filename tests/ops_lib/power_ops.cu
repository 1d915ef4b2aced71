// The detection-power test ops of scripts/ab-power (docs/ab.md): a copy and a bf16 GEMM whose work
// grows by a planted percentage, one op per percentage (abp_copy_p0 .. p10, abp_gemm_p0 .. p5),
// so that one `caliber ab --env CALIBER_TEST_PLANT=0 --env CALIBER_TEST_PLANT=1` measures every
// planted change at once. With CALIBER_TEST_PLANT=1 the op's percentage applies; with it unset or
// 0 every op does its plain work (p0 is the same code on both sides: the false-alarm rows).
// Built with CALIBER_TEST_PLANT_BUILD=1 (caliber_test_power_planted) the percentages apply whatever
// the environment says: two builds of the same ops for a paired A/B in one process, where an
// environment switch cannot differ between the sides.
// CALIBER_TEST_SCALE (default 1) multiplies the work of every op, for trying one change by hand.
// The copy reads and writes n * scale floats. The GEMM adds K in multiples of 64 (K' = K +
// 64 * round(K * pct / 6400)), which keeps cuBLAS on aligned shapes; the true ratio that planted
// is what ab-power measures over many rounds. A test op library only: never in the corpus.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include <caliber/caliber.hpp>
#include <caliber/check.hpp>

namespace {
using namespace caliber;

void cuda_ok(cudaError_t e, const char* api) {
  if (e != cudaSuccess) throw NativeError(static_cast<int>(e), api, cudaGetErrorString(e));
}
void cublas_ok(cublasStatus_t s, const char* api) {
  if (s != CUBLAS_STATUS_SUCCESS) throw NativeError(static_cast<int>(s), api, "cuBLAS failed");
}

// The multiple of the plain work this process does for an op planted at `pct` percent.
double work_scale(int pct) {
  double s = 1.0;
  if (const char* v = std::getenv("CALIBER_TEST_SCALE"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(s) || s < 0.5 || s > 2)
      throw std::invalid_argument(std::string("CALIBER_TEST_SCALE: '") + v +
                                  "' is not allowed (a number from 0.5 to 2)");
  }
#ifndef CALIBER_TEST_PLANT_BUILD
#define CALIBER_TEST_PLANT_BUILD 0
#endif
  const char* p = std::getenv("CALIBER_TEST_PLANT");
  if (CALIBER_TEST_PLANT_BUILD == 1 || (p != nullptr && std::string(p) == "1"))
    s *= 1.0 + pct / 100.0;
  return s;
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += stride)
    out[i] = in[i];
}

class Copy final : public Workload {
 public:
  Copy(DeviceContext& ctx, const Case& c, int pct)
      : ctx_(ctx),
        n_(c.numel()),
        cap_(static_cast<long long>(std::ceil(n_ * 2.0 * 1.11 / 4.0)) * 4),
        in_(ctx, cap_ * 4),
        out_(ctx, cap_ * 4) {
    check::fill_random(ctx, in_.get(), DType::f32, cap_, -1, 1, 0);
    work_ =
        std::min(cap_, (static_cast<long long>(std::llround(n_ * work_scale(pct))) + 3) / 4 * 4);
  }
  std::vector<ProviderInfo> providers() const override {
    return {{"copy", Role::baseline, "1", "grid-stride float4 copy of n x the planted scale", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t) override {
    const long long n4 = work_ / 4;
    const unsigned grid = static_cast<unsigned>(
        std::clamp<long long>((n4 + 255) / 256, 1, 8LL * std::max(ctx_.props().sm_count, 1)));
    copy_kernel<<<grid, 256, 0, static_cast<cudaStream_t>(ctx_.stream())>>>(in_.as<float4>(),
                                                                            out_.as<float4>(), n4);
    cuda_ok(cudaGetLastError(), "copy_kernel launch");
  }
  Accuracy check(std::size_t p) override {  // 4096 sampled elements of [0, n), exactly
    check::poison(ctx_, out_.get(), out_.bytes());
    launch(p);
    const auto idx = check::sample_indices(n_, 4096, 7);
    const auto got = check::download_rows(ctx_, out_.get(), DType::f32, idx, 1);
    const auto want = check::download_rows(ctx_, in_.get(), DType::f32, idx, 1);
    Accuracy a;
    a.passed = got == want;
    a.detail = std::to_string(idx.size()) + " sampled elements of the copy, exact";
    return a;
  }
  double flops() const override { return 0; }
  double bytes() const override { return 8.0 * static_cast<double>(n_); }

 private:
  DeviceContext& ctx_;
  long long n_, cap_;
  Buffer in_, out_;
  long long work_ = 0;
};

// C (M x N, column major) = A^T B with A stored K x M and B K x N (leading dimension kmax_), bf16
// in and out, fp32 accumulation: cuBLAS's "TN" GEMM.
class Gemm final : public Workload {
 public:
  Gemm(DeviceContext& ctx, const Case& c, int pct)
      : ctx_(ctx),
        m_(c.shape.at(0)),
        n_(c.shape.at(1)),
        k_(c.shape.at(2)),
        kmax_(k_ + 64 * ((k_ * 11 / 100 + 63) / 64)),
        a_(ctx, m_ * kmax_ * 2),
        b_(ctx, n_ * kmax_ * 2),
        c_(ctx, m_ * n_ * 2) {
    check::fill_random(ctx, a_.get(), DType::bf16, m_ * kmax_, -1, 1, 0);
    check::fill_random(ctx, b_.get(), DType::bf16, n_ * kmax_, -1, 1, 1);
    const double extra = static_cast<double>(k_) * (work_scale(pct) - 1.0);
    kwork_ = std::clamp<long long>(k_ + 64 * std::llround(extra / 64.0), 64, kmax_);
  }
  ~Gemm() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  std::vector<ProviderInfo> providers() const override {
    return {
        {"cublas", Role::baseline, "1", "cublasGemmEx bf16 TN, K grown by the planted share", {}}};
  }
  void prepare(std::size_t, const Config&) override {
    if (handle_ != nullptr) return;
    cublas_ok(cublasCreate(&handle_), "cublasCreate");
    cublas_ok(cublasSetStream(handle_, static_cast<cudaStream_t>(ctx_.stream())),
              "cublasSetStream");
  }
  void launch(std::size_t) override {
    const float one = 1.0f, zero = 0.0f;
    cublas_ok(
        cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m_), static_cast<int>(n_),
                     static_cast<int>(kwork_), &one, a_.get(), CUDA_R_16BF, static_cast<int>(kmax_),
                     b_.get(), CUDA_R_16BF, static_cast<int>(kmax_), &zero, c_.get(), CUDA_R_16BF,
                     static_cast<int>(m_), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
  }
  // 8 sampled columns x 64 sampled rows of C against float64 dot products of the bf16 inputs.
  Accuracy check(std::size_t p) override {
    check::poison(ctx_, c_.get(), c_.bytes());
    launch(p);
    const auto cols = check::sample_indices(n_, 8, 11);
    const auto rows = check::sample_indices(m_, 64, 13);
    const auto cc = check::download_rows(ctx_, c_.get(), DType::bf16, cols, m_);
    const auto bc = check::download_rows(ctx_, b_.get(), DType::bf16, cols, kmax_);
    const auto ar = check::download_rows(ctx_, a_.get(), DType::bf16, rows, kmax_);
    const auto tol = check::gemm_tolerance(DType::bf16, kwork_);
    Accuracy acc;
    acc.passed = true;
    for (std::size_t j = 0; j < cols.size(); ++j)
      for (std::size_t i = 0; i < rows.size(); ++i) {
        double ref = 0, s = 0;
        for (long long k = 0; k < kwork_; ++k) {
          const double t = ar[i * kmax_ + k] * bc[j * kmax_ + k];
          ref += t;
          s += std::fabs(t);
        }
        const double got = cc[j * m_ + rows[i]];
        const double err = std::fabs(got - ref);
        acc.max_abs_err = std::max(acc.max_abs_err, std::isfinite(got) ? err : INFINITY);
        if (!std::isfinite(got) || err > tol.out_rel * std::fabs(ref) + (tol.acc_rel + 1e-4) * s)
          acc.passed = false;
      }
    acc.detail =
        "512 sampled elements (8 columns x 64 rows) vs host float64, K=" + std::to_string(kwork_);
    return acc;
  }
  double flops() const override { return 2.0 * m_ * n_ * kwork_; }
  double bytes() const override { return 2.0 * (m_ * kwork_ + n_ * kwork_ + m_ * n_); }

 private:
  DeviceContext& ctx_;
  long long m_, n_, k_, kmax_;
  Buffer a_, b_, c_;
  long long kwork_ = 0;
  cublasHandle_t handle_ = nullptr;
};

class PowerOp final : public Op {
 public:
  PowerOp(bool gemm, int pct) : gemm_(gemm), pct_(pct) {}
  OpInfo info() const override {
    const std::string name =
        std::string(gemm_ ? "abp_gemm_p" : "abp_copy_p") + std::to_string(pct_);
    if (gemm_)
      return {name,
              "blas",
              {DType::bf16},
              {"M", "N", "K"},
              false,
              false,
              "bf16 GEMM, K grown by the planted share under CALIBER_TEST_PLANT=1"};
    return {name,
            "copy",
            {DType::f32},
            {},
            false,
            false,
            "f32 copy, n grown by the planted share under CALIBER_TEST_PLANT=1"};
  }
  std::size_t bytes_needed(const Case& c) const override {
    if (!gemm_) return static_cast<std::size_t>(c.numel()) * 4 * 2 * 223 / 100 + 64;
    const auto m = c.shape.at(0), n = c.shape.at(1), k = c.shape.at(2);
    return static_cast<std::size_t>((m + n) * (k * 112 / 100 + 64) * 2 + m * n * 2);
  }
  std::optional<std::string> skip_reason(const Case& c, const DeviceContext&) const override {
    if (gemm_ && c.shape.size() != 3) return std::string("abp_gemm: a shape is M x N x K");
    // A GEMM's dimensions are bounded; a copy's one dimension is its element count (up to 2^30).
    for (const auto d : c.shape)
      if (d <= 0 || (gemm_ && d > 65536))
        return std::string(gemm_ ? "abp_gemm: each dimension from 1 to 65536"
                                 : "abp_copy: a positive element count");
    if (!gemm_ && c.numel() > (1LL << 30)) return std::string("abp_copy: at most 2^30 floats");
    return std::nullopt;
  }
  std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    if (gemm_) return std::make_unique<Gemm>(ctx, c, pct_);
    return std::make_unique<Copy>(ctx, c, pct_);
  }

 private:
  bool gemm_;
  int pct_;
};

[[maybe_unused]] const bool registered = [] {
  for (int pct : {0, 1, 2, 3, 5, 10}) {
    register_op("cuda", [pct] { return std::make_unique<PowerOp>(false, pct); });
    if (pct <= 5) register_op("cuda", [pct] { return std::make_unique<PowerOp>(true, pct); });
  }
  return true;
}();

}  // namespace
