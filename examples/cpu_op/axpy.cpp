// my_axpy: out = alpha * x + y on the host. The baseline is a plain loop; the candidate a loop of
// `unroll` independent lanes over restrict pointers, tuned over unroll in {1, 4, 8, 16}.
#include <cmath>

#include <caliber/caliber.hpp>
#include <caliber/check.hpp>

namespace {
using namespace caliber;
constexpr float kAlpha = 1.5f;

class Axpy final : public Workload {
 public:
  Axpy(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), n_(c.numel()), x_(ctx, n_ * 4), y_(ctx, n_ * 4), out_(ctx, n_ * 4) {
    check::fill_random(ctx, x_.get(), DType::f32, n_, -1, 1, 0);  // fresh inputs per case
    check::fill_random(ctx, y_.get(), DType::f32, n_, -1, 1, 1);
  }
  std::vector<ProviderInfo> providers() const override {
    ConfigSpace space;
    for (int u : {1, 4, 8, 16}) space.configs.push_back(Config{{{"unroll", u}}});
    space.default_config = space.configs[1];
    space.key = {{"n", static_cast<std::int64_t>(n_), KeyStrategy::log2}};
    return {{"loop", Role::baseline, "1", "plain loop", {}},
            {"unrolled", Role::candidate, "1", "restrict, unrolled lanes", space}};
  }
  void prepare(std::size_t p, const Config& c) override {  // never timed
    if (p == 0) return;                                    // the baseline has no config
    const std::int64_t u = c.get("unroll", 4);
    if (u < 1) throw ConfigRejected("unroll must be positive: " + c.str());  // skipped by the tuner
    unroll_ = static_cast<std::size_t>(u);
  }
  void launch(std::size_t p) override {
    const float* __restrict x = x_.as<float>();
    const float* __restrict y = y_.as<float>();
    float* __restrict o = out_.as<float>();
    std::size_t i = 0;
    if (p == 1)
      for (; i + unroll_ <= n_; i += unroll_)
        for (std::size_t l = 0; l < unroll_; ++l) o[i + l] = kAlpha * x[i + l] + y[i + l];
    for (; i < n_; ++i) o[i] = kAlpha * x[i] + y[i];
  }
  Accuracy check(std::size_t p) override {
    check::poison(ctx_, out_.get(), out_.bytes());  // an unwritten element reads NaN
    launch(p);
    auto x = check::download(ctx_, x_.get(), DType::f32, n_);
    auto y = check::download(ctx_, y_.get(), DType::f32, n_);
    // float64 reference; the error scale of one rounding of each term (y can cancel alpha x)
    std::vector<double> ref(n_), scale(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      ref[i] = double{kAlpha} * x[i] + y[i];
      scale[i] = std::fabs(double{kAlpha} * x[i]) + std::fabs(y[i]);
    }
    return check::compare_device(ctx_, out_.get(), DType::f32, n_, ref,
                                 check::pointwise_tolerance(DType::f32), "axpy vs float64", &scale);
  }
  double flops() const override { return 2.0 * n_; }
  double bytes() const override { return 12.0 * n_; }  // read x and y, write out

 private:
  DeviceContext& ctx_;
  std::size_t n_, unroll_ = 4;
  Buffer x_, y_, out_;
};

class AxpyOp final : public Op {
 public:
  OpInfo info() const override {
    return {"my_axpy", "pointwise", {DType::f32}, {}, false, false, "alpha * x + y"};
  }
  std::size_t bytes_needed(const Case& c) const override { return 12 * c.numel(); }
  std::optional<std::string> skip_reason(const Case& c, const DeviceContext& ctx) const override {
    if (!ctx.props().host) return "my_axpy runs on the host (cpu backend) only";
    if (c.dtype != DType::f32) return "my_axpy: f32 only";
    return std::nullopt;
  }
  std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<Axpy>(ctx, c);
  }
};

CALIBER_REGISTER_OP("cpu", AxpyOp);
}  // namespace
