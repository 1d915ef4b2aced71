// A second test op library, for the tests of several --ops-lib (tests/cli/test_ops_lib.sh): one
// correct op, test_scale (out = 2 x), whose name can be changed at load time with
// CALIBER_TEST_SECOND_NAME so that a test can make it collide with a built-in op or another
// library's (or carry a name no op may have). With CALIBER_TEST_SECOND_ABORT=1 its constructor
// calls abort() as the library loads (tests/cli/test_adversarial.sh).
#include <cstdlib>
#include <string>

#include "caliber/caliber.hpp"
#include "caliber/check.hpp"

namespace {

using namespace caliber;

[[maybe_unused]] const bool aborts_on_load = [] {
  const char* v = std::getenv("CALIBER_TEST_SECOND_ABORT");
  if (v != nullptr && std::string(v) == "1") std::abort();
  return false;
}();

std::string op_name() {
  const char* v = std::getenv("CALIBER_TEST_SECOND_NAME");
  return v != nullptr && *v != '\0' ? v : "test_scale";
}

class ScaleWorkload final : public Workload {
 public:
  ScaleWorkload(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), n_(static_cast<std::size_t>(c.numel())), x_(ctx, n_ * 4), y_(ctx, n_ * 4) {
    check::fill_random(ctx, x_.get(), DType::f32, n_, -1.0, 1.0, 0);
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"loop", Role::baseline, "1", "plain loop", {}},
            {"add", Role::candidate, "1", "x + x", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    const float* x = x_.as<float>();
    float* y = y_.as<float>();
    for (std::size_t i = 0; i < n_; ++i) y[i] = p == 0 ? 2.0f * x[i] : x[i] + x[i];
  }
  [[nodiscard]] Accuracy check(std::size_t p) override {
    check::poison(ctx_, y_.get(), y_.bytes());
    launch(p);
    auto ref = check::download(ctx_, x_.get(), DType::f32, n_);
    for (auto& v : ref) v *= 2.0;
    return check::compare_device(ctx_, y_.get(), DType::f32, n_, ref,
                                 check::pointwise_tolerance(DType::f32), "2x vs host float64");
  }
  [[nodiscard]] double bytes() const override { return 8.0 * static_cast<double>(n_); }

 private:
  DeviceContext& ctx_;
  std::size_t n_;
  Buffer x_, y_;
};

class ScaleOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {op_name(), "pointwise", {DType::f32}, {}, false, false, "out = 2 x (a test op)"};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return 8 * static_cast<std::size_t>(c.numel());
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    if (!ctx.props().host) throw CaseSkipped(c.op + ": a host op needs the cpu backend");
    if (c.dtype != DType::f32) throw CaseSkipped(c.op + ": only f32");
    return std::make_unique<ScaleWorkload>(ctx, c);
  }
};

CALIBER_REGISTER_OP("cpu", ScaleOp);

}  // namespace
