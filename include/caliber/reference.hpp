// caliber public API: float64 host references of common op families (pointwise activations,
// row reductions, softmax, norms, sampled GEMM), to compare a candidate's output against with
// caliber/check.hpp. Plain C++: a reference runs on the host whatever the backend.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "caliber/check.hpp"
#include "caliber/op.hpp"

namespace caliber::ref {

// ---------------------------------------------------------------------------------------------
// Pointwise references.

[[nodiscard]] inline double gelu_erf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
[[nodiscard]] inline double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
[[nodiscard]] inline double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

// y[i] = f(x[i]) and y[i] = f(a[i], b[i]), on the host's threads (check::parallel_for): f is
// called concurrently and must not write shared state.
template <class F>
[[nodiscard]] std::vector<double> map(const std::vector<double>& x, F f) {
  std::vector<double> y(x.size());
  check::parallel_for(y.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) y[i] = f(x[i]);
  });
  return y;
}
template <class F>
[[nodiscard]] std::vector<double> zip(const std::vector<double>& a, const std::vector<double>& b,
                                      F f) {
  std::vector<double> y(std::min(a.size(), b.size()));
  check::parallel_for(y.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) y[i] = f(a[i], b[i]);
  });
  return y;
}

// ---------------------------------------------------------------------------------------------
// Row references: x holds `rows` rows of `cols` contiguous elements (the last dimension). Rows
// are spread over the host's threads, each row on one thread in its own order, so the bits do not
// depend on the thread count.

// fn(r) for every row r < rows, rows split over the host's threads (check::parallel_for) so
// that a thread gets at least kParallelGrain elements.
template <class F>
void for_each_row(std::int64_t rows, std::int64_t cols, F fn) {
  const auto grain = std::max<std::size_t>(
      1, check::kParallelGrain / static_cast<std::size_t>(std::max<std::int64_t>(cols, 1)));
  check::parallel_for(
      static_cast<std::size_t>(std::max<std::int64_t>(rows, 0)),
      [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) fn(static_cast<std::int64_t>(r));
      },
      grain);
}

[[nodiscard]] inline std::vector<double> row_sum(const std::vector<double>& x, std::int64_t rows,
                                                 std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows), 0.0);
  for_each_row(rows, cols, [&](std::int64_t r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += x[static_cast<std::size_t>(r * cols + c)];
    y[static_cast<std::size_t>(r)] = s;
  });
  return y;
}

[[nodiscard]] inline std::vector<double> row_amax(const std::vector<double>& x, std::int64_t rows,
                                                  std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows), -std::numeric_limits<double>::infinity());
  for_each_row(rows, cols, [&](std::int64_t r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      y[static_cast<std::size_t>(r)] =
          std::max(y[static_cast<std::size_t>(r)], x[static_cast<std::size_t>(r * cols + c)]);
    }
  });
  return y;
}

// First index of the maximum (torch's tie rule).
[[nodiscard]] inline std::vector<std::int64_t> row_argmax(const std::vector<double>& x,
                                                          std::int64_t rows, std::int64_t cols) {
  std::vector<std::int64_t> y(static_cast<std::size_t>(rows), 0);
  for_each_row(rows, cols, [&](std::int64_t r) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < cols; ++c) {
      if (x[static_cast<std::size_t>(r * cols + c)] >
          x[static_cast<std::size_t>(r * cols + best)]) {
        best = c;
      }
    }
    y[static_cast<std::size_t>(r)] = best;
  });
  return y;
}

[[nodiscard]] inline std::vector<double> row_cumsum(const std::vector<double>& x, std::int64_t rows,
                                                    std::int64_t cols) {
  std::vector<double> y(x.size());
  for_each_row(rows, cols, [&](std::int64_t r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      s += x[static_cast<std::size_t>(r * cols + c)];
      y[static_cast<std::size_t>(r * cols + c)] = s;
    }
  });
  return y;
}

[[nodiscard]] inline std::vector<double> row_softmax(const std::vector<double>& x,
                                                     std::int64_t rows, std::int64_t cols,
                                                     bool log = false) {
  std::vector<double> y(x.size());
  for_each_row(rows, cols, [&](std::int64_t r) {
    const double* xr = x.data() + r * cols;
    double* yr = y.data() + r * cols;
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    const double ls = std::log(s);
    for (std::int64_t c = 0; c < cols; ++c) {
      yr[c] = log ? (xr[c] - m - ls) : std::exp(xr[c] - m) / s;
    }
  });
  return y;
}

[[nodiscard]] inline std::vector<double> row_log_softmax(const std::vector<double>& x,
                                                         std::int64_t rows, std::int64_t cols) {
  return row_softmax(x, rows, cols, true);
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance as torch. gamma/beta may be
// empty (then 1 and 0).
[[nodiscard]] inline std::vector<double> row_layer_norm(const std::vector<double>& x,
                                                        std::int64_t rows, std::int64_t cols,
                                                        double eps,
                                                        const std::vector<double>& gamma = {},
                                                        const std::vector<double>& beta = {}) {
  std::vector<double> y(x.size());
  for_each_row(rows, cols, [&](std::int64_t r) {
    const double* xr = x.data() + r * cols;
    double mean = 0;
    for (std::int64_t c = 0; c < cols; ++c) mean += xr[c];
    mean /= static_cast<double>(cols);
    double var = 0;
    for (std::int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      const double g = gamma.empty() ? 1.0 : gamma[ci];
      const double b = beta.empty() ? 0.0 : beta[ci];
      y[static_cast<std::size_t>(r * cols + c)] = (xr[c] - mean) * inv * g + b;
    }
  });
  return y;
}

// y = x / sqrt(mean(x^2) + eps) * gamma.
[[nodiscard]] inline std::vector<double> row_rms_norm(const std::vector<double>& x,
                                                      std::int64_t rows, std::int64_t cols,
                                                      double eps,
                                                      const std::vector<double>& gamma = {}) {
  std::vector<double> y(x.size());
  for_each_row(rows, cols, [&](std::int64_t r) {
    const double* xr = x.data() + r * cols;
    double ms = 0;
    for (std::int64_t c = 0; c < cols; ++c) ms += xr[c] * xr[c];
    ms /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(ms + eps);
    for (std::int64_t c = 0; c < cols; ++c) {
      const double g = gamma.empty() ? 1.0 : gamma[static_cast<std::size_t>(c)];
      y[static_cast<std::size_t>(r * cols + c)] = xr[c] * inv * g;
    }
  });
  return y;
}

// ---------------------------------------------------------------------------------------------
// GEMM on a sample of output elements: C[i,j] = alpha * sum_k A[i,k] B[k,j] + beta * bias[j].
// A is row-major MxK; B is KxN row-major, or column-major when b_col (B[k,j] at j*K + k).

struct GemmSample {
  std::int64_t i = 0, j = 0;
  double ref = 0;
  double scale = 0;  // sum_k |alpha * a_ik * b_kj| (+ |beta*bias|): the accumulation error scale
  // With a bias: |alpha * (A B)_ij|, the product before the bias is added. cuBLAS's beta = 1 path
  // (addmm's baseline) rounds it to the output type first on some kernels: fp16/bf16 results
  // were off by up to 13 output ulps of the sum, but within one rounding of this product
  // (H200, 2026-11-29). The bound allows that one rounding.
  double pre_bias = 0;
};

[[nodiscard]] inline GemmSample gemm_element(const std::vector<double>& a,
                                             const std::vector<double>& b, std::int64_t n,
                                             std::int64_t k, bool b_col, std::int64_t i,
                                             std::int64_t j, double alpha = 1.0, double beta = 0.0,
                                             const std::vector<double>& bias = {}) {
  GemmSample s;
  s.i = i;
  s.j = j;
  double acc = 0, sc = 0;
  for (std::int64_t kk = 0; kk < k; ++kk) {
    const double av = a[static_cast<std::size_t>(i * k + kk)];
    const double bv = b[static_cast<std::size_t>(b_col ? j * k + kk : kk * n + j)];
    acc += av * bv;
    sc += std::fabs(av * bv);
  }
  s.ref = alpha * acc;
  s.scale = std::fabs(alpha) * sc;
  if (!bias.empty()) {
    s.pre_bias = std::fabs(s.ref);
    s.ref += beta * bias[static_cast<std::size_t>(j)];
    s.scale += std::fabs(beta * bias[static_cast<std::size_t>(j)]);
  }
  return s;
}

// Compares device values `out` (one per sample) against the samples' references under the
// K-aware GEMM tolerance.
[[nodiscard]] inline Accuracy compare_gemm(const std::vector<double>& out,
                                           const std::vector<GemmSample>& samples,
                                           const check::GemmTolerance& tol,
                                           const std::string& what) {
  Accuracy a;
  std::size_t nonfinite = 0, viol = 0;
  double diff2 = 0, ref2 = 0, max_abs = 0;
  std::string first;
  const std::size_t n = std::min(out.size(), samples.size());
  for (std::size_t s = 0; s < n; ++s) {
    const double o = out[s], r = samples[s].ref;
    const double bound =
        tol.out_rel * (std::fabs(r) + samples[s].pre_bias) + tol.acc_rel * samples[s].scale + 1e-30;
    const bool finite = std::isfinite(o);
    const double d = std::fabs(o - r);
    if (!finite) {
      ++nonfinite;
    } else {
      diff2 += d * d;
      ref2 += r * r;
      max_abs = std::max(max_abs, d);
      if (!(d <= bound)) ++viol;
    }
    if ((!finite || !(d <= bound)) && first.empty()) {
      std::ostringstream f;
      f << "first bad (" << samples[s].i << "," << samples[s].j << ") out=" << o << " ref=" << r
        << " bound=" << bound;
      first = f.str();
    }
  }
  const double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  a.max_abs_err = max_abs;
  a.rel_err = nonfinite > 0 ? std::numeric_limits<double>::quiet_NaN() : rel;
  a.passed =
      n > 0 && out.size() == samples.size() && nonfinite == 0 && viol == 0 && rel <= tol.norm_rel;
  std::ostringstream d;
  d << what << ": " << n << " sampled elements vs host float64, rel_err=" << rel
    << " max_abs=" << max_abs << " (tol out_rel=" << tol.out_rel << " acc_rel=" << tol.acc_rel
    << " norm=" << tol.norm_rel << ")";
  if (nonfinite > 0) d << "; " << nonfinite << " unwritten/NaN elements";
  if (viol > 0) d << "; " << viol << " elements out of tolerance";
  if (!first.empty()) d << "; " << first;
  if (nonfinite == 0 && viol == 0 && rel > tol.norm_rel) d << "; norm error above tolerance";
  a.detail = d.str();
  return a;
}

}  // namespace caliber::ref
