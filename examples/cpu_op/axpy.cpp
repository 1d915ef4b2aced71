// my_axpy: out = alpha * x + y on the host, written with the op builder (caliber/builder.hpp).
// The baseline is a plain loop; the candidate a loop of `unroll` independent lanes over restrict
// pointers, tuned over unroll in {1, 4, 8, 16}.
#include <cmath>

#include <caliber/builder.hpp>

namespace {
using namespace caliber;
constexpr float kAlpha = 1.5f;

struct Vectors {  // one case's buffers, made from fresh random data for every case
  Vectors(DeviceContext& ctx, const Case& c)
      : n(static_cast<std::size_t>(c.numel())), x(ctx, n * 4), y(ctx, n * 4), out(ctx, n * 4) {
    check::fill_random(ctx, x.get(), DType::f32, n, -1, 1, 0);
    check::fill_random(ctx, y.get(), DType::f32, n, -1, 1, 1);
  }
  std::size_t n;
  Buffer x, y, out;
};

void axpy(const Vectors& v, std::size_t unroll) {
  const float* __restrict x = v.x.as<float>();
  const float* __restrict y = v.y.as<float>();
  float* __restrict o = v.out.as<float>();
  std::size_t i = 0;
  for (; i + unroll <= v.n; i += unroll)
    for (std::size_t l = 0; l < unroll; ++l) o[i + l] = kAlpha * x[i + l] + y[i + l];
  for (; i < v.n; ++i) o[i] = kAlpha * x[i] + y[i];
}

// The float64 reference, with the error scale of one rounding of each term (y can cancel alpha x).
Accuracy check_axpy(Run<Vectors>& r) {
  r.poison(r.data.out);  // an unwritten element reads NaN
  r.launch();
  const auto x = r.download(r.data.x), y = r.download(r.data.y);
  std::vector<double> ref(x.size()), scale(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ref[i] = double{kAlpha} * x[i] + y[i];
    scale[i] = std::fabs(double{kAlpha} * x[i]) + std::fabs(y[i]);
  }
  return r.compare(r.data.out, ref, "axpy vs float64", std::nullopt, &scale);
}

[[maybe_unused]] const bool registered =
    op_builder<Vectors>("my_axpy")
        .family("pointwise")
        .dtypes({DType::f32})
        .description("alpha * x + y")
        .shapes({{65536}, {1048576}})  // a --shapes file with an entry for my_axpy wins
        .baseline("loop", [](Run<Vectors>& r) { axpy(r.data, 1); })
        .candidate("unrolled", Tunable{{{"unroll", {1, 4, 8, 16}}}, Config{{{"unroll", 4}}}},
                   [](Run<Vectors>& r) { axpy(r.data, r.config.get<std::size_t>("unroll")); })
        .check(check_axpy)
        .flops([](const Case& c) { return 2.0 * c.numel(); })
        .bytes([](const Case& c) { return 12.0 * c.numel(); })  // read x and y, write out
        .skip_if([](const Case&, const DeviceContext& ctx) -> std::optional<std::string> {
          if (!ctx.props().host) return "my_axpy runs on the host (cpu backend) only";
          return std::nullopt;
        })
        .register_for("cpu");
}  // namespace
