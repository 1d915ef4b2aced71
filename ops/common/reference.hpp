// Host references for the corpus's correctness gate: float64 math for every op family, host
// fp16/bf16 conversions, per-dtype tolerances and the comparison that yields caliber::Accuracy.
// Plain C++ (no device headers) so it is unit-tested without a GPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "caliber/dtype.hpp"
#include "caliber/op.hpp"

namespace caliber::ops::ref {

// ---------------------------------------------------------------------------------------------
// Host fp16 / bf16 <-> float. Round to nearest even, as the device's __float2half_rn does, so
// a host-rounded reference matches a correctly rounded device result bit for bit.

[[nodiscard]] inline float bits_to_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
[[nodiscard]] inline std::uint32_t float_to_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

[[nodiscard]] inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_to_float(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    // Subnormal: value = mant * 2^-24.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign != 0 ? -v : v;
  }
  return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

[[nodiscard]] inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = float_to_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u : 0u));
  }
  if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (ax < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24 rounded to nearest even.
    const double v = static_cast<double>(bits_to_float(ax)) / 5.9604644775390625e-8;
    const double r = std::nearbyint(v);  // default rounding mode: nearest even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r));
  }
  const std::uint32_t exp = ((ax >> 23) - 112u) << 10;
  const std::uint32_t mant = (ax >> 13) & 0x3FFu;
  std::uint32_t h = exp | mant;
  const std::uint32_t rest = ax & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // carries into exp correctly
  return static_cast<std::uint16_t>(sign | h);
}

[[nodiscard]] inline float bf16_to_float(std::uint16_t b) {
  return bits_to_float(static_cast<std::uint32_t>(b) << 16);
}

[[nodiscard]] inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = float_to_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t lsb = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7FFFu + lsb) >> 16);
}

// Value after a round trip through dtype t (what a correctly rounded device output would hold).
[[nodiscard]] inline double round_to(double v, DType t) {
  switch (t) {
    case DType::f32:
      return static_cast<double>(static_cast<float>(v));
    case DType::f16:
      return half_to_float(float_to_half(static_cast<float>(v)));
    case DType::bf16:
      return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    default:
      return v;
  }
}

// Converts n host elements of dtype t (raw bytes) to double. Complex values (c64) give 2n
// doubles (re, im interleaved).
[[nodiscard]] inline std::vector<double> to_double(const void* host, DType t, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(host);
  std::vector<double> out;
  const std::size_t count = t == DType::c64 ? 2 * n : n;
  out.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (t) {
      case DType::f32:
      case DType::c64: {
        float v;
        std::memcpy(&v, b + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::f16:
      case DType::bf16: {
        std::uint16_t v;
        std::memcpy(&v, b + 2 * i, 2);
        out[i] = t == DType::f16 ? half_to_float(v) : bf16_to_float(v);
        break;
      }
      case DType::f64:
        std::memcpy(&out[i], b + 8 * i, 8);
        break;
      case DType::i32: {
        std::int32_t v;
        std::memcpy(&v, b + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::i64: {
        std::int64_t v;
        std::memcpy(&v, b + 8 * i, 8);
        out[i] = static_cast<double>(v);
        break;
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tolerances.

// Unit roundoff of a dtype's storage (half an ulp at 1.0).
[[nodiscard]] inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::f16:
      return 0x1p-11;
    case DType::bf16:
      return 0x1p-8;
    case DType::f64:
      return 0x1p-53;
    default:
      return 0x1p-24;
  }
}

struct Tolerance {
  double rtol = 0;  // per element: |out - ref| <= atol + rtol * |ref|
  double atol = 0;
  double norm_rel = 0;  // over the tensor: ||out - ref|| / ||ref|| must stay below this
  // Half the output format's subnormal step: the error a correctly rounded output has near zero.
  // The norm gate counts only the error beyond it, because there the format, not the kernel,
  // sets the relative error (fp16 softmax over 151936 columns: every output ~6.6e-6 is subnormal
  // and rounds by up to 0.5%, far above the 1e-3 norm gate).
  double abs_floor = 0;
};

// Pointwise ops (one rounding of the output plus a few ulps of fp32 math).
[[nodiscard]] inline Tolerance pointwise_tolerance(DType t) {
  switch (t) {
    case DType::f16:
      return {2e-3, 1e-5, 1e-3, 0x1p-25};
    case DType::bf16:
      return {1.6e-2, 1e-4, 1e-2, 0x1p-134};
    case DType::f64:
      return {1e-12, 1e-300, 1e-12, 0};
    default:
      return {1e-5, 1e-30, 1e-5, 0x1p-150};
  }
}

// Reductions and norms (fp32 accumulation over a row of `row_len`): the norm gate of the spec
// (fp32 < 1e-5, fp16 < 1e-3, bf16 < 1e-2), with per-element slack that grows with the row.
[[nodiscard]] inline Tolerance reduction_tolerance(DType t, std::int64_t row_len) {
  const double growth = std::sqrt(static_cast<double>(std::max<std::int64_t>(row_len, 1)));
  Tolerance tol = pointwise_tolerance(t);
  tol.rtol = std::max(tol.rtol, 4.0 * unit_roundoff(t) + 8.0 * 0x1p-24 * growth);
  tol.atol = std::max(tol.atol, 1e-6);
  if (t == DType::f32) tol.norm_rel = std::max(1e-5, 2.0 * 0x1p-24 * growth);
  return tol;
}

// GEMM with fp32 accumulation over K: per element |c - ref| <= u_out*|ref| + 2*u32*sqrt(K)*S
// where S = sum_k |a_ik * b_kj| (the error bound's natural scale), and a norm gate that allows
// the sqrt(K) growth of fp32 accumulation (fp32 at K = 151936 cannot meet 1e-5 in any library).
struct GemmTolerance {
  double out_rel = 0;  // output rounding, relative to |ref|
  double acc_rel = 0;  // accumulation, relative to S
  double norm_rel = 0;
};

[[nodiscard]] inline GemmTolerance gemm_tolerance(DType t, std::int64_t k) {
  const double sk = std::sqrt(static_cast<double>(std::max<std::int64_t>(k, 1)));
  GemmTolerance g;
  g.out_rel = 2.0 * unit_roundoff(t);
  g.acc_rel = 2.0 * 0x1p-24 * sk + 1e-7;
  const double base = t == DType::f16 ? 1e-3 : t == DType::bf16 ? 1e-2 : 1e-5;
  g.norm_rel = std::max(base, 2.0 * 0x1p-24 * sk);
  return g;
}

// ---------------------------------------------------------------------------------------------
// Comparison.

struct CompareStats {
  std::size_t n = 0;
  std::size_t nonfinite = 0;   // NaN/inf in the output where the reference is finite (poison)
  std::size_t violations = 0;  // elements outside the per-element bound
  std::size_t first_bad = 0;   // index of the first bad element (valid when bad() )
  double max_abs = 0;
  double rel_norm = 0;
  [[nodiscard]] bool bad() const { return nonfinite + violations > 0; }
};

// out and ref must have the same size. `what` says what was compared (e.g. "all 4096x4096
// elements vs host float64"). Passing needs: no NaN/inf where the reference is finite, every
// element within atol + rtol*|ref|, and the norm-relative error within tol.norm_rel.
[[nodiscard]] inline Accuracy compare(const std::vector<double>& out,
                                      const std::vector<double>& ref, const Tolerance& tol,
                                      const std::string& what) {
  Accuracy a;
  if (out.size() != ref.size()) {
    a.passed = false;
    a.detail = what + ": size mismatch (" + std::to_string(out.size()) + " vs " +
               std::to_string(ref.size()) + ")";
    return a;
  }
  CompareStats s;
  s.n = out.size();
  double diff2 = 0, ref2 = 0;
  bool first = true;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = out[i], r = ref[i];
    if (!std::isfinite(o) && !(std::isinf(r) && o == r)) {
      ++s.nonfinite;
      if (first) s.first_bad = i, first = false;
      continue;
    }
    if (!std::isfinite(r)) continue;  // matching infinities
    const double d = std::fabs(o - r);
    s.max_abs = std::max(s.max_abs, d);
    const double dn = std::max(0.0, d - tol.abs_floor);
    diff2 += dn * dn;
    ref2 += r * r;
    if (!(d <= tol.atol + tol.rtol * std::fabs(r))) {
      ++s.violations;
      if (first) s.first_bad = i, first = false;
    }
  }
  s.rel_norm = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  a.max_abs_err = s.max_abs;
  a.rel_err = s.nonfinite > 0 ? std::numeric_limits<double>::quiet_NaN() : s.rel_norm;
  a.passed = s.n > 0 && !s.bad() && s.rel_norm <= tol.norm_rel;
  std::ostringstream d;
  d << what << ": n=" << s.n << " rel_err=" << s.rel_norm << " max_abs=" << s.max_abs
    << " (tol rtol=" << tol.rtol << " atol=" << tol.atol << " norm=" << tol.norm_rel;
  if (tol.abs_floor > 0) d << " beyond " << tol.abs_floor;
  d << ")";
  if (s.n == 0) d << "; nothing compared";
  if (s.nonfinite > 0) d << "; " << s.nonfinite << " unwritten/NaN elements";
  if (s.violations > 0) d << "; " << s.violations << " elements out of tolerance";
  if (s.bad()) {
    d << "; first bad index " << s.first_bad << " out=" << out[s.first_bad]
      << " ref=" << ref[s.first_bad];
  }
  if (!s.bad() && s.n > 0 && s.rel_norm > tol.norm_rel) d << "; norm error above tolerance";
  a.detail = d.str();
  return a;
}

// Exact comparison for integer results (indices, argmax, permutations). Poisoned int outputs
// read as -1, which never equals a valid index.
template <class I>
[[nodiscard]] Accuracy compare_exact(const std::vector<I>& out, const std::vector<I>& ref,
                                     const std::string& what) {
  Accuracy a;
  std::size_t bad = 0, first_bad = 0;
  const std::size_t n = std::min(out.size(), ref.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i] != ref[i]) {
      if (bad == 0) first_bad = i;
      ++bad;
    }
  }
  a.passed = out.size() == ref.size() && n > 0 && bad == 0;
  a.rel_err = n > 0 ? static_cast<double>(bad) / static_cast<double>(n) : 0.0;
  a.max_abs_err = bad > 0 ? 1.0 : 0.0;
  std::ostringstream d;
  d << what << ": n=" << n << " exact, " << bad << " mismatches";
  if (out.size() != ref.size()) d << "; size mismatch " << out.size() << " vs " << ref.size();
  if (bad > 0) {
    d << "; first at " << first_bad << " out=" << static_cast<long long>(out[first_bad])
      << " ref=" << static_cast<long long>(ref[first_bad]);
  }
  a.detail = d.str();
  return a;
}

// ---------------------------------------------------------------------------------------------
// Deterministic sampling (splitmix64), so a failing sample is reproducible from the seed.

[[nodiscard]] inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// `count` indices in [0, total), sorted, distinct when count < total; all of them when
// count >= total. Always includes the first and last index (edges are where bounds bugs live).
[[nodiscard]] inline std::vector<std::int64_t> sample_indices(std::int64_t total,
                                                              std::int64_t count,
                                                              std::uint64_t seed) {
  std::vector<std::int64_t> idx;
  if (total <= 0) return idx;
  if (count >= total) {
    idx.resize(static_cast<std::size_t>(total));
    std::iota(idx.begin(), idx.end(), std::int64_t{0});
    return idx;
  }
  idx.push_back(0);
  if (count > 1) idx.push_back(total - 1);
  std::uint64_t st = seed;
  // Draw in rounds and deduplicate once per round: sorting after every draw made 65536 samples
  // cost minutes (seen on the H200, 2026-11-29).
  while (static_cast<std::int64_t>(idx.size()) < count) {
    const auto missing = count - static_cast<std::int64_t>(idx.size());
    for (std::int64_t i = 0; i < missing; ++i)
      idx.push_back(static_cast<std::int64_t>(splitmix64(st) % static_cast<std::uint64_t>(total)));
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  }
  return idx;
}

// The runs of consecutive values in `rows` (row indices, e.g. from sample_indices): each run as
// {its first position in rows, its length}, so that a download copies a run at once. A check of
// every row of 100003x8 made 100003 copies of 32 bytes (1.7 s per check on the H200, 2026-11-29).
struct IndexRun {
  std::size_t at = 0;
  std::size_t count = 0;
  bool operator==(const IndexRun&) const = default;
};
[[nodiscard]] inline std::vector<IndexRun> consecutive_runs(const std::vector<std::int64_t>& rows) {
  std::vector<IndexRun> runs;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    runs.push_back({i, j - i});
    i = j;
  }
  return runs;
}

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

template <class F>
[[nodiscard]] std::vector<double> map(const std::vector<double>& x, F f) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return y;
}
template <class F>
[[nodiscard]] std::vector<double> zip(const std::vector<double>& a, const std::vector<double>& b,
                                      F f) {
  std::vector<double> y(std::min(a.size(), b.size()));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = f(a[i], b[i]);
  return y;
}

// ---------------------------------------------------------------------------------------------
// Row references: x holds `rows` rows of `cols` contiguous elements (the last dimension).

[[nodiscard]] inline std::vector<double> row_sum(const std::vector<double>& x, std::int64_t rows,
                                                 std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += x[static_cast<std::size_t>(r * cols + c)];
    y[static_cast<std::size_t>(r)] = s;
  }
  return y;
}

[[nodiscard]] inline std::vector<double> row_amax(const std::vector<double>& x, std::int64_t rows,
                                                  std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows), -std::numeric_limits<double>::infinity());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      y[static_cast<std::size_t>(r)] =
          std::max(y[static_cast<std::size_t>(r)], x[static_cast<std::size_t>(r * cols + c)]);
    }
  }
  return y;
}

// First index of the maximum (torch's tie rule).
[[nodiscard]] inline std::vector<std::int64_t> row_argmax(const std::vector<double>& x,
                                                          std::int64_t rows, std::int64_t cols) {
  std::vector<std::int64_t> y(static_cast<std::size_t>(rows), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < cols; ++c) {
      if (x[static_cast<std::size_t>(r * cols + c)] >
          x[static_cast<std::size_t>(r * cols + best)]) {
        best = c;
      }
    }
    y[static_cast<std::size_t>(r)] = best;
  }
  return y;
}

[[nodiscard]] inline std::vector<double> row_cumsum(const std::vector<double>& x, std::int64_t rows,
                                                    std::int64_t cols) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      s += x[static_cast<std::size_t>(r * cols + c)];
      y[static_cast<std::size_t>(r * cols + c)] = s;
    }
  }
  return y;
}

[[nodiscard]] inline std::vector<double> row_softmax(const std::vector<double>& x,
                                                     std::int64_t rows, std::int64_t cols,
                                                     bool log = false) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
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
  }
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
  for (std::int64_t r = 0; r < rows; ++r) {
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
  }
  return y;
}

// y = x / sqrt(mean(x^2) + eps) * gamma.
[[nodiscard]] inline std::vector<double> row_rms_norm(const std::vector<double>& x,
                                                      std::int64_t rows, std::int64_t cols,
                                                      double eps,
                                                      const std::vector<double>& gamma = {}) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    double ms = 0;
    for (std::int64_t c = 0; c < cols; ++c) ms += xr[c] * xr[c];
    ms /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(ms + eps);
    for (std::int64_t c = 0; c < cols; ++c) {
      const double g = gamma.empty() ? 1.0 : gamma[static_cast<std::size_t>(c)];
      y[static_cast<std::size_t>(r * cols + c)] = xr[c] * inv * g;
    }
  }
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
                                           const GemmTolerance& tol, const std::string& what) {
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

}  // namespace caliber::ops::ref
