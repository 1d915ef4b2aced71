// fft: batched complex64 forward FFT over the last dimension with cuFFT (plan made in prepare,
// bound to the stream). A baseline-only op: it reports cuFFT's latency, with no candidate and so
// no speedup.
// Its skip guard reproduces the old runner's test_fft.py guard, which required
// torch.cuda.is_available() although the code under test dispatches through the vendor layer:
// off the cuda backend it skips with exactly that reason, and a backend's compat rule (musa)
// lifts it. The guard is wrong on purpose; it is the fixture of that compat rule.
#include <cufft.h>

#include <cmath>
#include <complex>
#include <memory>

#include "common/cuda_common.cuh"
#include "common/fft_reference.hpp"
#include "common/rowwise.cuh"

namespace caliber::ops::cuda::fft {
namespace {

#define CALIBER_CUFFT_CHECK(expr)                                           \
  do {                                                                      \
    const cufftResult st_ = (expr);                                         \
    if (st_ != CUFFT_SUCCESS) {                                             \
      throw NativeError(static_cast<int>(st_), #expr, "cuFFT call failed"); \
    }                                                                       \
  } while (0)

constexpr const char* kGuardReason =
    "fft: skipped because the guard requires torch.cuda.is_available()";

class FftWorkload final : public Workload {
 public:
  FftWorkload(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), case_(c), rs_(rowwise::row_shape(c)), s_(stream_of(ctx)) {
    const auto n = static_cast<std::size_t>(rs_.numel());
    x_ = Buffer(ctx, n * sizeof(cufftComplex));
    y_ = Buffer(ctx, n * sizeof(cufftComplex));
    // Real and imaginary parts uniform in [-1, 1): filled as 2n floats.
    ctx.fill_uniform(x_.get(), DType::f32, 2 * n, -1.0, 1.0, ctx.seed());
  }
  ~FftWorkload() override {
    if (planned_) cufftDestroy(plan_);
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "cufft";
    base.role = Role::baseline;
    base.label = "cufftExecC2C forward, batched plan (baseline only: no candidate)";
    return {base};
  }

  void prepare(std::size_t, const Config&) override {
    if (!planned_) {
      CALIBER_CUFFT_CHECK(cufftCreate(&plan_));
      planned_ = true;
      long long len = rs_.cols;
      std::size_t work = 0;
      CALIBER_CUFFT_CHECK(cufftMakePlanMany64(plan_, 1, &len, nullptr, 1, len, nullptr, 1, len,
                                              CUFFT_C2C, rs_.rows, &work));
    }
    CALIBER_CUFFT_CHECK(cufftSetStream(plan_, s_));
  }

  void launch(std::size_t) override {
    CALIBER_CUFFT_CHECK(
        cufftExecC2C(plan_, x_.as<cufftComplex>(), y_.as<cufftComplex>(), CUFFT_FORWARD));
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    check::poison(ctx_, y_.get(), y_.bytes());
    launch(p);
    sync(s_);
    // A few rows: an O(n log n) host transform where the length is a power of two, otherwise a
    // direct DFT of 64 sampled bins.
    const auto rows = rowwise::sample_rows(rs_, ctx_.seed() ^ 0xff7, std::int64_t{1} << 21);
    const bool pow2 = fftref::is_pow2(rs_.cols);
    std::vector<double> out, ref;
    double max_in = 0;
    for (auto r : rows) {
      const auto xin = check::download_rows(ctx_, x_.get(), DType::c64, {r}, rs_.cols);
      const auto yout = check::download_rows(ctx_, y_.get(), DType::c64, {r}, rs_.cols);
      std::vector<fftref::cd> a(static_cast<std::size_t>(rs_.cols));
      for (std::size_t j = 0; j < a.size(); ++j) {
        a[j] = {xin[2 * j], xin[2 * j + 1]};
        max_in = std::max(max_in, std::abs(a[j]));
      }
      std::vector<std::int64_t> bins;
      if (pow2) {
        std::vector<fftref::cd> f = a;
        fftref::fft_pow2(f);
        for (std::size_t k = 0; k < f.size(); ++k) {
          ref.push_back(f[k].real());
          ref.push_back(f[k].imag());
          out.push_back(yout[2 * k]);
          out.push_back(yout[2 * k + 1]);
        }
      } else {
        for (auto k : check::sample_indices(rs_.cols, 64, static_cast<std::uint64_t>(r))) {
          const auto f = fftref::dft_bin(a, k);
          ref.push_back(f.real());
          ref.push_back(f.imag());
          out.push_back(yout[static_cast<std::size_t>(2 * k)]);
          out.push_back(yout[static_cast<std::size_t>(2 * k + 1)]);
        }
      }
    }
    // fp32 FFT error grows like log2(n) roundings of values of size ~sqrt(n) * |x|.
    const double lg = std::max(1.0, std::log2(static_cast<double>(rs_.cols)));
    check::Tolerance tol;
    tol.rtol = 0;
    tol.atol =
        16.0 * 0x1p-24 * lg * std::sqrt(static_cast<double>(rs_.cols)) * std::max(max_in, 1.0);
    tol.norm_rel = std::max(1e-5, 8.0 * 0x1p-24 * lg);
    return check::compare(
        out, ref, tol,
        "fft on " + rowwise::rows_detail(rs_, rows.size()) +
            (pow2 ? " vs host float64 radix-2 FFT" : " (64 bins each) vs host DFT"));
  }

  [[nodiscard]] double flops() const override {
    return 5.0 * static_cast<double>(rs_.numel()) * std::log2(static_cast<double>(rs_.cols));
  }
  [[nodiscard]] double bytes() const override {
    return 2.0 * static_cast<double>(rs_.numel()) * sizeof(cufftComplex);
  }

 private:
  DeviceContext& ctx_;
  Case case_;
  rowwise::RowShape rs_;
  cudaStream_t s_;
  Buffer x_, y_;
  cufftHandle plan_{};
  bool planned_ = false;
};

class FftOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "fft";
    i.family = "fft";
    i.dtypes = {DType::c64};
    i.description = "batched complex64 forward FFT over the last dimension (cuFFT, baseline only)";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(c.numel(), 1));
    return 3 * n * sizeof(cufftComplex) + (std::size_t{64} << 20);  // in, out, plan workspace
  }
  [[nodiscard]] std::optional<std::string> skip_reason(const Case&,
                                                       const DeviceContext& ctx) const override {
    if (ctx.backend() != "cuda") return std::string(kGuardReason);
    return std::nullopt;
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<FftWorkload>(ctx, c);
  }
};

}  // namespace
}  // namespace caliber::ops::cuda::fft

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::fft::FftOp);
