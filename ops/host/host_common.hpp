// Shared pieces of the host corpus: typed host buffers and dtype dispatch over the public check
// helpers (caliber/check.hpp: poison, fresh inputs, comparison against a float64 reference). Host
// ops run on the cpu backend, where a DeviceContext's pointers are host memory; they use nothing
// but include/caliber/.
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
#include "caliber/check.hpp"

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
  HostTensor(DeviceContext& ctx, std::size_t n) : ctx_(&ctx), buf_(ctx, n * sizeof(T)), n_(n) {}
  [[nodiscard]] T* data() const noexcept { return buf_.as<T>(); }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] DeviceContext& ctx() const noexcept { return *ctx_; }
  T& operator[](std::size_t i) const noexcept { return data()[i]; }

 private:
  DeviceContext* ctx_ = nullptr;
  Buffer buf_;
  std::size_t n_ = 0;
};

// Input tensor number k of a case: fresh uniform values in [lo, hi) (caliber/check.hpp).
template <class T>
void fill(DeviceContext& ctx, const HostTensor<T>& t, double lo, double hi, std::uint64_t k) {
  check::fill_random(ctx, t.data(), dtype_of<T>(), t.size(), lo, hi, k);
}

template <class T>
void poison(const HostTensor<T>& t) {
  check::poison(t.ctx(), t.data(), t.size() * sizeof(T));
}

// Rounding error of a reduction over n terms grows with the depth of the summation; log2(n) is the
// depth of a pairwise sum and a generous bound on the typical growth of a sequential one.
[[nodiscard]] inline double reduction_growth(std::int64_t n) {
  return n > 2 ? std::log2(static_cast<double>(n)) : 1.0;
}

// Compares out[i] with ref[i] (check::compare): |out - ref| <= rtol * growth * scale[i], with the
// pointwise rtol of the dtype, and scale |ref| for a single rounding or the sum of |terms| for a
// reduction (so cancellation does not make a correct result look wrong). No norm gate: the
// per-element bound already scales with the work. NaN never passes; integers must match exactly.
template <class T>
[[nodiscard]] Accuracy compare(const T* out, const std::vector<double>& ref,
                               const std::vector<double>* scale, double growth,
                               const std::string& what) {
  const DType t = dtype_of<T>();
  check::Tolerance tol;
  tol.rtol = check::pointwise_tolerance(t).rtol * growth;
  tol.norm_rel = std::numeric_limits<double>::infinity();
  return check::compare(check::to_double(out, t, ref.size()), ref, tol, what + " vs host float64",
                        scale);
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
    Accuracy a = verify();
    // A verify() that does not say otherwise compared every output element.
    if (a.method.empty()) {
      const auto n = static_cast<std::int64_t>(output_count());
      check::covered(a, check::method::host_full, n, n);
    }
    return a;
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
