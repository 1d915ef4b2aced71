// caliber public API: checking a candidate against a reference, the way the built-in corpus
// does (docs/writing-ops.md, "Checks and tolerances"). Header-only and device-agnostic: the
// helpers that touch memory go through DeviceContext, so one check serves every backend.
//
//   poison(ctx, out, bytes)         0xFF bytes: NaN for every floating type, -1 for integers
//   launch the provider once
//   compare_device(ctx, out, dtype, n, ref, pointwise_tolerance(dtype), "what")
//
// where ref is a float64 host reference (caliber/reference.hpp has those of common op families)
// computed from download(ctx, input, dtype, n). Random ops check statistics instead
// (check_distribution, check_keep_rate).
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "caliber/context.hpp"
#include "caliber/dtype.hpp"
#include "caliber/op.hpp"

namespace caliber::check {

// What a check compared against: the spellings of Accuracy::method (a row's check_method).
namespace method {
inline constexpr const char* host_full = "host-float64";             // every output element
inline constexpr const char* host_sampled = "host-float64-sampled";  // a deterministic sample
inline constexpr const char* device = "device-float64";  // a float64 reference on the device
inline constexpr const char* baseline = "baseline";      // the baseline's output
inline constexpr const char* statistics = "statistics";  // a distribution (random ops)
inline constexpr const char* exact = "exact";            // integer results, element by element
}  // namespace method

// Stamps what a check covered: `checked` of `total` output elements compared by `how`.
inline Accuracy& covered(Accuracy& a, const char* how, std::int64_t checked, std::int64_t total) {
  a.method = how;
  a.checked = checked;
  a.total = total;
  return a;
}

// ---------------------------------------------------------------------------------------------
// Host threads. A check's host side (conversion, float64 reference, comparison) runs over every
// output element up to 2^24 of them; on one thread that took a tenth of a whole run on the H200
// (docs/writing-ops.md, "The gate's cost"). parallel_for spreads such a loop over the host's
// cores. Each range is computed by one thread only, so a loop whose element i depends on nothing
// but i gives the same bits on any number of threads.

// The most threads a check takes of the hardware by itself (CALIBER_CHECK_THREADS may ask for
// more): beyond this the loops are bound by memory bandwidth.
inline constexpr unsigned kMaxCheckThreads = 16;
// The fewest elements worth a thread of their own (starting one costs tens of microseconds).
inline constexpr std::size_t kParallelGrain = std::size_t{1} << 15;

// The environment knob that sets the threads of every check (docs/writing-ops.md): an integer
// from 1 to kCheckThreadsLimit; caliber's knob table refuses anything else before a run starts.
inline constexpr const char* kCheckThreadsEnv = "CALIBER_CHECK_THREADS";
inline constexpr unsigned kCheckThreadsLimit = 256;

// The knob's value as a thread count, blanks around it ignored; 0 when it is not an integer from
// 1 to kCheckThreadsLimit.
[[nodiscard]] inline unsigned parse_check_threads(std::string_view v) {
  const auto b = v.find_first_not_of(" \t");
  if (b == std::string_view::npos) return 0;
  v = v.substr(b, v.find_last_not_of(" \t") - b + 1);
  unsigned n = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > kCheckThreadsLimit) return 0;
  return n;
}

// The threads a check uses when not told: CALIBER_CHECK_THREADS where it holds a valid count,
// else the host's hardware threads, 1 to kMaxCheckThreads.
[[nodiscard]] inline unsigned default_threads() {
  if (const char* e = std::getenv(kCheckThreadsEnv); e != nullptr) {
    if (const unsigned n = parse_check_threads(e); n > 0) return n;
  }
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxCheckThreads);
}

// Calls fn(begin, end) on contiguous ranges that split [0, n) in index order, one range a
// thread, the calling thread taking the first: min(threads, n / grain) ranges, at least one
// (threads 0: default_threads()). The ranges depend on n, grain and threads only. An exception
// from fn is rethrown here once every range has ended (the one of the lowest range first).
template <class F>
void parallel_for(std::size_t n, F&& fn, std::size_t grain = kParallelGrain, unsigned threads = 0) {
  if (n == 0) return;
  if (threads == 0) threads = default_threads();
  const std::size_t by_work = n / std::max<std::size_t>(grain, 1);
  const auto parts =
      static_cast<std::size_t>(std::clamp<std::size_t>(by_work, 1, std::max(threads, 1u)));
  if (parts == 1) {
    fn(std::size_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> errors(parts);
  auto run = [&](std::size_t k) {
    try {
      fn(k * n / parts, (k + 1) * n / parts);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(parts - 1);
  for (std::size_t k = 1; k < parts; ++k) {
    try {
      pool.emplace_back(run, k);
    } catch (const std::system_error&) {
      run(k);  // no thread to be had: this range on the calling thread
    }
  }
  run(0);
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

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
  parallel_for(count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
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
  });
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
    case DType::i32:
    case DType::i64:
      return {0, 0, 0, 0};  // integers match exactly
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

// The elements compare_stats adds up as one block: the norm's sums run over each block and then
// over the blocks in index order, whatever the number of threads, so every thread count gives
// the same bits.
inline constexpr std::size_t kCompareBlock = std::size_t{1} << 16;

// The figures compare() judges by: out against ref under tol (and `scale`, see compare()), on
// `threads` host threads (0: default_threads()). The same bits for every thread count: the first
// bad index is the lowest one, the counts and the largest error are exact, and the norm's sums
// are formed block by block (kCompareBlock) in index order. out and ref must have the same size.
[[nodiscard]] inline CompareStats compare_stats(const std::vector<double>& out,
                                                const std::vector<double>& ref,
                                                const Tolerance& tol,
                                                const std::vector<double>* scale = nullptr,
                                                unsigned threads = 0) {
  struct Block {
    std::size_t nonfinite = 0, violations = 0, first_bad = 0;
    bool any_bad = false;
    double max_abs = 0, diff2 = 0, ref2 = 0;
  };
  const std::size_t n = std::min(out.size(), ref.size());
  const std::size_t blocks = (n + kCompareBlock - 1) / kCompareBlock;
  std::vector<Block> part(blocks);
  parallel_for(
      blocks,
      [&](std::size_t first_block, std::size_t end_block) {
        for (std::size_t k = first_block; k < end_block; ++k) {
          Block& b = part[k];
          const std::size_t end = std::min(n, (k + 1) * kCompareBlock);
          for (std::size_t i = k * kCompareBlock; i < end; ++i) {
            const double o = out[i], r = ref[i];
            if (!std::isfinite(o) && !(std::isinf(r) && o == r)) {
              ++b.nonfinite;
              if (!b.any_bad) b.first_bad = i, b.any_bad = true;
              continue;
            }
            if (!std::isfinite(r)) continue;  // matching infinities
            const double d = std::fabs(o - r);
            b.max_abs = std::max(b.max_abs, d);
            const double dn = std::max(0.0, d - tol.abs_floor);
            b.diff2 += dn * dn;
            const double sc = scale != nullptr && i < scale->size() ? (*scale)[i] : std::fabs(r);
            b.ref2 += sc * sc;
            if (!(d <= tol.atol + tol.rtol * sc)) {
              ++b.violations;
              if (!b.any_bad) b.first_bad = i, b.any_bad = true;
            }
          }
        }
      },
      1, threads);
  // The merge, in block order: the first block with a bad element holds the first bad index.
  CompareStats s;
  s.n = n;
  double diff2 = 0, ref2 = 0;
  bool first = true;
  for (const Block& b : part) {
    s.nonfinite += b.nonfinite;
    s.violations += b.violations;
    if (b.any_bad && first) s.first_bad = b.first_bad, first = false;
    s.max_abs = std::max(s.max_abs, b.max_abs);
    diff2 += b.diff2;
    ref2 += b.ref2;
  }
  s.rel_norm = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return s;
}

// out and ref must have the same size. `what` says what was compared (e.g. "all 4096x4096
// elements vs host float64"). Passing needs: no NaN/inf where the reference is finite, every
// element within atol + rtol*|ref|, and the norm-relative error within tol.norm_rel.
// `scale`, where given, replaces |ref[i]| in the per-element bound and in the norm gate's
// denominator: a sum or an axpy passes the sum of |terms| so that cancellation does not make a
// correct result look wrong. `threads`: as compare_stats (the verdict is the same for any).
[[nodiscard]] inline Accuracy compare(const std::vector<double>& out,
                                      const std::vector<double>& ref, const Tolerance& tol,
                                      const std::string& what,
                                      const std::vector<double>* scale = nullptr,
                                      unsigned threads = 0) {
  Accuracy a;
  if (out.size() != ref.size()) {
    a.passed = false;
    a.detail = what + ": size mismatch (" + std::to_string(out.size()) + " vs " +
               std::to_string(ref.size()) + ")";
    return a;
  }
  const CompareStats s = compare_stats(out, ref, tol, scale, threads);
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
// Inputs, poison and downloads on any backend (through DeviceContext).

// A different seed per input tensor of one case (k = 0, 1, ...), all derived from the case's
// fresh seed: every case, and every run, sees new data.
[[nodiscard]] inline std::uint64_t tensor_seed(const DeviceContext& ctx, std::uint64_t k) {
  return ctx.seed() ^ (0x9E3779B97F4A7C15ull * (k + 1));
}

// n fresh uniform values in [lo, hi) of dtype t for input tensor number k.
inline void fill_random(DeviceContext& ctx, void* p, DType t, std::size_t n, double lo, double hi,
                        std::uint64_t k) {
  ctx.fill_uniform(p, t, n, lo, hi, tensor_seed(ctx, k));
}

// The byte every poisoned output holds: 0xFF is NaN for f32, f16, bf16, f64 and c64, and -1 for
// integers, so an element the provider never wrote fails any comparison.
inline constexpr int kPoisonByte = 0xFF;

// Poisons `bytes` of device memory (enqueued on the context's stream).
inline void poison(DeviceContext& ctx, void* p, std::size_t bytes) {
  if (bytes != 0) ctx.memset(p, kPoisonByte, bytes);
}

// The value of a poisoned element of T (NaN for floating types, -1 for integers).
template <class T>
[[nodiscard]] T poison_value() {
  T v;
  std::memset(&v, kPoisonByte, sizeof v);
  return v;
}

// Copies n elements of T back to the host, unconverted (e.g. indices kept as integers).
template <class T>
[[nodiscard]] std::vector<T> download_raw(DeviceContext& ctx, const void* p, std::size_t n) {
  std::vector<T> out(n);
  if (n > 0) ctx.copy(out.data(), p, n * sizeof(T), CopyKind::device_to_host);
  return out;
}

// Copies n elements of dtype t back to the host, converted to double (c64: 2n values).
[[nodiscard]] inline std::vector<double> download(DeviceContext& ctx, const void* p, DType t,
                                                  std::size_t n) {
  std::vector<unsigned char> raw(n * size_of(t));
  if (n > 0) ctx.copy(raw.data(), p, raw.size(), CopyKind::device_to_host);
  return to_double(raw.data(), t, n);
}

// Copies the given rows (each row_elems elements, e.g. a sample from sample_indices) back and
// converts them to double, row after row. Consecutive rows travel in one copy.
[[nodiscard]] inline std::vector<double> download_rows(DeviceContext& ctx, const void* p, DType t,
                                                       const std::vector<std::int64_t>& rows,
                                                       std::int64_t row_elems) {
  const std::size_t row_bytes = static_cast<std::size_t>(row_elems) * size_of(t);
  std::vector<unsigned char> raw(rows.size() * row_bytes);
  for (const auto& run : consecutive_runs(rows)) {
    const auto* src =
        static_cast<const unsigned char*>(p) + static_cast<std::size_t>(rows[run.at]) * row_bytes;
    if (run.count * row_bytes != 0)
      ctx.copy(raw.data() + run.at * row_bytes, src, run.count * row_bytes,
               CopyKind::device_to_host);
  }
  return to_double(raw.data(), t, rows.size() * static_cast<std::size_t>(row_elems));
}

// The device output (n elements of dtype t) against a float64 reference of the same length
// (compare(), with its optional per-element scale).
[[nodiscard]] inline Accuracy compare_device(DeviceContext& ctx, const void* out, DType t,
                                             std::size_t n, const std::vector<double>& ref,
                                             const Tolerance& tol, const std::string& what,
                                             const std::vector<double>* scale = nullptr) {
  ctx.synchronize();
  return compare(download(ctx, out, t, n), ref, tol, what, scale);
}

// ---------------------------------------------------------------------------------------------
// Statistics checks for random ops: a generator's output has no reference element by element,
// so its distribution is checked instead (bounds of six standard errors: a correct generator
// fails about once in a billion checks).

enum class Distribution { uniform01, standard_normal };

// check_distribution's Kolmogorov-Smirnov bound is kKsBoundC / sqrt(samples).
inline constexpr double kKsBoundC = 3.27;

[[nodiscard]] inline double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// Moments over all n values (sum and sum of squares, accumulated in double wherever they were
// computed), the count of values non-finite or out of range, and a sample of the values (any
// order, finite and in range) for a Kolmogorov-Smirnov distance. t is the output dtype: its
// rounding widens the bounds by a few unit roundoffs.
[[nodiscard]] inline Accuracy check_distribution(Distribution dist, double sum, double sum2,
                                                 std::uint64_t n, std::uint64_t out_of_range,
                                                 std::vector<double> sample, DType t,
                                                 const std::string& what) {
  const double u = unit_roundoff(t);
  const double nn = static_cast<double>(n > 0 ? n : 1);
  const bool normal = dist == Distribution::standard_normal;
  const double mean = sum / nn;
  const double var = sum2 / nn - mean * mean;
  const double want_mean = normal ? 0.0 : 0.5, want_var = normal ? 1.0 : 1.0 / 12.0;
  const double tol_mean = 6.0 * std::sqrt(want_var / nn) + 2 * u;
  // Standard error of the variance: sqrt(2/n) for a normal, sqrt(1/180/n) ~ 0.0745/sqrt(n) for
  // a uniform on [0, 1).
  const double tol_var = 6.0 * (normal ? std::sqrt(2.0 / nn) : 0.0745 / std::sqrt(nn)) + 4 * u;
  std::sort(sample.begin(), sample.end());
  double d = 0;
  const double m = static_cast<double>(sample.size());
  for (std::size_t i = 0; i < sample.size(); ++i) {
    const double f = normal ? normal_cdf(sample[i]) : std::clamp(sample[i], 0.0, 1.0);
    d = std::max({d, std::fabs(f - static_cast<double>(i) / m),
                  std::fabs(static_cast<double>(i + 1) / m - f)});
  }
  // The KS bound at the same odds as the moments' six standard errors: a correct generator's
  // distance exceeds c/sqrt(m) with probability about 2 exp(-2 c^2), 1e-9 at c = 3.27. (It was
  // c = 1.95, the 0.1% point: with ~45 such checks a core corpus run failed a correct rand about
  // once in 20 runs, as the H200 did on 2026-12-02 with a distance of 1.97/sqrt(m).)
  const double tol_ks = kKsBoundC / std::sqrt(std::max(m, 1.0)) + 2 * u;
  Accuracy a;
  a.rel_err = std::fabs(mean - want_mean);
  a.max_abs_err = d;
  a.passed = n > 0 && out_of_range == 0 && !sample.empty() &&
             std::fabs(mean - want_mean) <= tol_mean && std::fabs(var - want_var) <= tol_var &&
             d <= tol_ks;
  std::ostringstream o;
  o << what << "mean " << mean << " (tol " << tol_mean << "), variance " << var << " (want "
    << want_var << " +- " << tol_var << "), KS distance " << d << " on " << sample.size()
    << " samples (tol " << tol_ks << "), " << out_of_range << " out of range or NaN";
  a.detail = o.str();
  return a;
}

// The same from every value on the host (small outputs, or a host backend).
[[nodiscard]] inline Accuracy check_distribution(Distribution dist,
                                                 const std::vector<double>& values, DType t,
                                                 const std::string& what) {
  double sum = 0, sum2 = 0;
  std::uint64_t bad = 0;
  std::vector<double> sample;
  const bool normal = dist == Distribution::standard_normal;
  const std::size_t stride = std::max<std::size_t>(1, values.size() / (1 << 16));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!std::isfinite(v) || (!normal && (v < 0.0 || v > 1.0))) {
      ++bad;
      continue;
    }
    sum += v;
    sum2 += v * v;
    if (i % stride == 0) sample.push_back(v);
  }
  return check_distribution(dist, sum, sum2, values.size(), bad, std::move(sample), t, what);
}

// A Bernoulli keep rate (dropout): `kept` of n kept where keep_p is expected, within six standard
// errors; `bad` values that are neither dropped nor correctly scaled fail it outright.
[[nodiscard]] inline Accuracy check_keep_rate(std::uint64_t kept, std::uint64_t n, double keep_p,
                                              std::uint64_t bad, const std::string& what) {
  const double nn = static_cast<double>(n > 0 ? n : 1);
  const double rate = static_cast<double>(kept) / nn;
  const double tol = 6.0 * std::sqrt(keep_p * (1.0 - keep_p)) / std::sqrt(nn);
  Accuracy a;
  a.rel_err = std::fabs(rate - keep_p);
  a.passed = n > 0 && bad == 0 && a.rel_err <= tol;
  std::ostringstream o;
  o << what << "keep rate " << rate << " (want " << keep_p << " +- " << tol << "), " << bad
    << " elements neither dropped nor exactly scaled";
  a.detail = o.str();
  return a;
}

}  // namespace caliber::check
