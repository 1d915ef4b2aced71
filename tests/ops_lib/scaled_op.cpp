// test_scaled: an f32 add whose candidate does a chosen multiple of the baseline's work, for the
// sensitivity self-test of `caliber ab` / `caliber compare` (tests/cli/test_ab_power.sh,
// docs/ab.md). The multiple is CALIBER_TEST_SCALE (default 1) times the build's own
// CALIBER_TEST_BUILD_SCALE (a compile definition, default 1), so one source gives "two builds of
// the same op" that differ by a planted amount. A test op library only: never in the corpus.
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "caliber/caliber.hpp"
#include "caliber/check.hpp"

#ifndef CALIBER_TEST_BUILD_SCALE
#define CALIBER_TEST_BUILD_SCALE 1.0
#endif

namespace caliber::testops {
namespace {

double planted_scale() {
  double s = 1.0;
  if (const char* v = std::getenv("CALIBER_TEST_SCALE"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(s) || s < 0.01 || s > 100)
      throw std::invalid_argument(std::string("CALIBER_TEST_SCALE: '") + v +
                                  "' is not allowed (a number from 0.01 to 100)");
  }
  return s * CALIBER_TEST_BUILD_SCALE;
}

class ScaledWorkload final : public Workload {
 public:
  ScaledWorkload(DeviceContext& ctx, const Case& c)
      : ctx_(ctx),
        n_(static_cast<std::size_t>(c.numel())),
        a_(ctx, n_ * sizeof(float)),
        x_(ctx, n_ * sizeof(float)),
        out_(ctx, n_ * sizeof(float)) {
    check::fill_random(ctx, a_.get(), DType::f32, n_, -1.0, 1.0, 0);
    check::fill_random(ctx, x_.get(), DType::f32, n_, -1.0, 1.0, 1);
    // The candidate's element count: n times the scale, wrapping around (every element is written
    // at least once when the scale is 1 or more).
    work_ = static_cast<std::size_t>(std::llround(static_cast<double>(n_) * planted_scale()));
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {
        {"loop", Role::baseline, "1", "plain loop", {}},
        {"scaled", Role::candidate, "1", "the add over CALIBER_TEST_SCALE times the elements", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    const float* a = a_.as<float>();
    const float* x = x_.as<float>();
    float* out = out_.as<float>();
    const std::size_t work = p == 1 ? std::max(work_, n_) : n_;
    for (std::size_t done = 0; done < work;) {
      const std::size_t len = std::min(n_, work - done);
      for (std::size_t i = 0; i < len; ++i) out[i] = a[i] + x[i];
      asm volatile("" ::: "memory");  // every pass really runs
      done += len;
    }
  }
  [[nodiscard]] Accuracy check(std::size_t p) override {
    check::poison(ctx_, out_.get(), out_.bytes());
    launch(p);
    const auto a = check::download(ctx_, a_.get(), DType::f32, n_);
    const auto x = check::download(ctx_, x_.get(), DType::f32, n_);
    std::vector<double> ref(n_);
    for (std::size_t i = 0; i < n_; ++i) ref[i] = a[i] + x[i];
    return check::compare_device(ctx_, out_.get(), DType::f32, n_, ref,
                                 check::pointwise_tolerance(DType::f32), "add vs host float64");
  }
  [[nodiscard]] double flops() const override { return static_cast<double>(n_); }
  [[nodiscard]] double bytes() const override {
    return 3.0 * static_cast<double>(n_ * sizeof(float));
  }

 private:
  DeviceContext& ctx_;
  std::size_t n_;
  Buffer a_, x_, out_;
  std::size_t work_ = 0;
};

class ScaledOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {"test_scaled",
            "test",
            {DType::f32},
            {},
            false,
            false,
            "an add whose candidate does CALIBER_TEST_SCALE times the work: a planted change"};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return 3 * static_cast<std::size_t>(c.numel()) * sizeof(float);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    if (!ctx.props().host) throw CaseSkipped(c.op + ": a host op needs the cpu backend");
    if (c.numel() <= 0) throw CaseSkipped(c.op + ": empty shape " + c.size_detail());
    if (c.dtype != DType::f32) throw CaseSkipped("test_scaled: only f32");
    return std::make_unique<ScaledWorkload>(ctx, c);
  }
};

[[maybe_unused]] const bool registered =
    (register_op("cpu", [] { return std::make_unique<ScaledOp>(); }), true);

}  // namespace
}  // namespace caliber::testops
