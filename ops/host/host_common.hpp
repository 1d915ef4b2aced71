// Shared pieces of the host corpus: typed host buffers, dtype dispatch, output poisoning and the
// comparison against a float64 reference. Host ops run on the cpu backend, where a DeviceContext's
// pointers are host memory; they use nothing but include/caliber/.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "caliber/caliber.hpp"

namespace caliber::host {

template <class T>
[[nodiscard]] constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  if constexpr (std::is_same_v<T, double>) return DType::f64;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
}

// A typed buffer on the context (host memory on the cpu backend).
template <class T>
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DeviceContext& ctx, std::size_t n) : buf_(ctx, n * sizeof(T)), n_(n) {}
  [[nodiscard]] T* data() const noexcept { return buf_.as<T>(); }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  T& operator[](std::size_t i) const noexcept { return data()[i]; }

 private:
  Buffer buf_;
  std::size_t n_ = 0;
};

// A different seed per input tensor of one case, all derived from the case's fresh seed.
[[nodiscard]] inline std::uint64_t tensor_seed(const DeviceContext& ctx, std::uint64_t k) {
  return ctx.seed() ^ (0x9E3779B97F4A7C15ull * (k + 1));
}

template <class T>
void fill(DeviceContext& ctx, const HostTensor<T>& t, double lo, double hi, std::uint64_t k) {
  ctx.fill_uniform(t.data(), dtype_of<T>(), t.size(), lo, hi, tensor_seed(ctx, k));
}

// What a provider never writes: NaN for floats (it fails every comparison), and for integers a
// value no fill produces.
template <class T>
[[nodiscard]] constexpr T poison_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(0x5A5A5A5A);
  } else {
    return static_cast<T>(0x5A5A5A5A5A5A5A5Aull);
  }
}

template <class T>
void poison(const HostTensor<T>& t) {
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = poison_value<T>();
}

// Relative tolerances per dtype, the way a kernel team states them: about a hundred ulps of the
// storage type for a single rounding, scaled by the length of a reduction where there is one.
[[nodiscard]] inline double rtol(DType t) {
  switch (t) {
    case DType::f32:
    case DType::c64:
      return 1e-5;
    case DType::f16:
      return 1e-3;
    case DType::bf16:
      return 1e-2;
    case DType::f64:
      return 1e-12;
    case DType::i32:
    case DType::i64:
      return 0;
  }
  return 0;
}

// Rounding error of a reduction over n terms grows with the depth of the summation; log2(n) is the
// depth of a pairwise sum and a generous bound on the typical growth of a sequential one.
[[nodiscard]] inline double reduction_growth(std::int64_t n) {
  return n > 2 ? std::log2(static_cast<double>(n)) : 1.0;
}

// Compares out[i] with ref[i]: |out - ref| <= rtol(dtype) * growth * scale[i], where scale is
// |ref| for a single rounding or the sum of |terms| for a reduction (so cancellation does not make
// a correct result look wrong). NaN never passes; integers must match exactly.
template <class T>
[[nodiscard]] Accuracy compare(const T* out, const std::vector<double>& ref,
                               const std::vector<double>* scale, double growth,
                               const std::string& what) {
  Accuracy a;
  const DType t = dtype_of<T>();
  const double tol = rtol(t) * growth;
  double err2 = 0, ref2 = 0, worst_excess = -1;
  std::size_t bad = 0, first_bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double o = static_cast<double>(out[i]);
    const double err = std::fabs(o - ref[i]);
    const double s = scale != nullptr ? (*scale)[i] : std::fabs(ref[i]);
    const double bound = tol * s;
    // Written as !(err <= bound) so that a NaN (an element never written) fails.
    const bool ok =
        std::is_floating_point_v<T> ? (err <= bound) : (out[i] == static_cast<T>(ref[i]));
    if (!ok) {
      if (bad == 0) first_bad = i;
      ++bad;
    }
    if (std::isnan(err) || err > a.max_abs_err) a.max_abs_err = err;
    err2 += err * err;
    ref2 += ref[i] * ref[i];
    if (bound > 0 && err / bound > worst_excess) worst_excess = err / bound;
  }
  a.rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  a.passed = bad == 0;
  std::ostringstream d;
  d.precision(9);
  if (a.passed) {
    d << what << ": " << ref.size() << " elements within " << (tol > 0 ? "rtol " : "exact match")
      << (tol > 0 ? std::to_string(tol) : "") << " of the float64 reference";
  } else {
    d << what << ": " << bad << " of " << ref.size() << " elements wrong; first at " << first_bad
      << ": got " << static_cast<double>(out[first_bad]) << ", reference " << ref[first_bad];
    if (std::is_floating_point_v<T>) d << ", tolerance rtol " << tol;
    if (std::isnan(static_cast<double>(out[first_bad]))) d << " (NaN: element not written?)";
    if (!std::is_floating_point_v<T> && out[first_bad] == poison_value<T>()) {
      d << " (poison: element not written)";
    }
  }
  a.detail = d.str();
  return a;
}

// Rows and columns of an op over the last dimension.
struct RowsCols {
  std::int64_t rows = 1, cols = 1;
};
[[nodiscard]] inline RowsCols rows_cols(const Case& c) {
  RowsCols rc;
  if (c.shape.empty()) return rc;
  rc.cols = c.shape.back();
  rc.rows = rc.cols > 0 ? c.numel() / rc.cols : 0;
  return rc;
}

inline void require_host(const DeviceContext& ctx, const Case& c) {
  if (!ctx.props().host) {
    throw CaseSkipped(c.op + ": a host op needs host memory (the cpu backend)");
  }
}

inline void require_positive(const Case& c) {
  if (c.numel() <= 0) throw CaseSkipped(c.op + ": empty shape " + c.size_detail());
}

// Every host workload checks the same way: poison the output, run the provider once, compare.
// verify() and the output are public so that tests can corrupt a correct output and see it fail.
class HostWorkload : public Workload {
 public:
  [[nodiscard]] Accuracy check(std::size_t p) final {
    poison_output();
    launch(p);
    return verify();
  }
  virtual void poison_output() = 0;
  // The output as it is now against the float64 reference (computed once, on first use).
  [[nodiscard]] virtual Accuracy verify() = 0;
  [[nodiscard]] virtual void* output_data() const = 0;
  [[nodiscard]] virtual std::size_t output_count() const = 0;
};

// The provider label of a host baseline: there is no vendor library on the host.
inline constexpr const char* kHostBaselineLabel = "plain loop; the host has no vendor library";

}  // namespace caliber::host
