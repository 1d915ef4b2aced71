// add: out = a + b over any shape, written with the op builder (caliber/builder.hpp). Memory
// bound: it measures how close a loop gets to the host's memory bandwidth.
#include "caliber/builder.hpp"
#include "host/host_common.hpp"

namespace caliber::host {
namespace {

template <class T>
void add_plain(const T* a, const T* b, T* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// No aliasing and eight independent lanes per step: the shape a vectorizer turns into full-width
// SIMD without runtime overlap checks.
template <class T>
void add_unrolled(const T* __restrict a, const T* __restrict b, T* __restrict out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (std::size_t l = 0; l < 8; ++l) out[i + l] = a[i + l] + b[i + l];
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

struct AddData {  // one case: a and b from fresh random data, the output
  AddData(DeviceContext& ctx, const Case& c)
      : n(static_cast<std::size_t>(c.numel())),
        a(ctx, n * size_of(c.dtype)),
        b(ctx, n * size_of(c.dtype)),
        out(ctx, n * size_of(c.dtype)) {
    check::fill_random(ctx, a.get(), c.dtype, n, -1.0, 1.0, 0);
    check::fill_random(ctx, b.get(), c.dtype, n, -1.0, 1.0, 1);
  }
  std::size_t n;
  Buffer a, b, out;
};

// The dtypes add runs on the host; another one skips its case.
template <class F>
void on_dtype(const Run<AddData>& r, F&& f) {
  dispatch<DType::f32, DType::f64>(r.dtype(), std::forward<F>(f));
}

// The float64 reference; one rounding of the output (the host's per-element bound, no norm gate).
std::vector<double> add_reference(Run<AddData>& r) {
  const auto a = r.download(r.data.a), b = r.download(r.data.b);
  std::vector<double> ref(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) ref[i] = a[i] + b[i];
  return ref;
}

check::Tolerance add_tolerance(const Case& c) {
  check::Tolerance tol;
  tol.rtol = check::pointwise_tolerance(c.dtype).rtol;
  tol.norm_rel = std::numeric_limits<double>::infinity();
  return tol;
}

[[maybe_unused]] const bool registered =
    op_builder<AddData>("add")
        .family("pointwise")
        .dtypes({DType::f32, DType::f64})
        .description("elementwise a + b on the host")
        .baseline("loop",
                  [](Run<AddData>& r) {
                    on_dtype(r, [&]<class T>() {
                      add_plain(r.data.a.as<T>(), r.data.b.as<T>(), r.data.out.as<T>(), r.data.n);
                    });
                  })
        .label("loop", kHostBaselineLabel)
        .candidate("unrolled",
                   [](Run<AddData>& r) {
                     on_dtype(r, [&]<class T>() {
                       add_unrolled(r.data.a.as<T>(), r.data.b.as<T>(), r.data.out.as<T>(),
                                    r.data.n);
                     });
                   })
        .label("unrolled", "restrict pointers, 8 lanes per step")
        .reference(&AddData::out, add_reference, add_tolerance)
        .flops([](const Case& c) { return static_cast<double>(c.numel()); })
        .bytes(
            [](const Case& c) { return 3.0 * static_cast<double>(c.numel() * size_of(c.dtype)); })
        .skip_if([](const Case& c, const DeviceContext& ctx) -> std::optional<std::string> {
          if (!ctx.props().host) return c.op + ": a host op needs host memory (the cpu backend)";
          if (c.numel() <= 0) return c.op + ": empty shape " + c.size_detail();
          if (c.dtype != DType::f32 && c.dtype != DType::f64)
            return "add: dtype " + std::string(to_string(c.dtype)) +
                   " is not implemented on the host";
          return std::nullopt;
        })
        .register_for("cpu");

}  // namespace
}  // namespace caliber::host
