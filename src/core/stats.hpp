// Statistics used by the timers and the reports. One file, as Google Benchmark keeps them.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <vector>

namespace caliber::core {

// Which statistic of the samples is the latency (--return-mode); its words are the settings'
// (settings/settings.hpp).
enum class ReturnMode { min, max, mean, median, all };

[[nodiscard]] double min_of(std::span<const double> xs);
[[nodiscard]] double max_of(std::span<const double> xs);
[[nodiscard]] double mean(std::span<const double> xs);
[[nodiscard]] double median(std::span<const double> xs);
// Sample standard deviation (n - 1); 0 for fewer than two values.
[[nodiscard]] double stdev(std::span<const double> xs);
// stdev / mean; 0 when the mean is 0.
[[nodiscard]] double rel_stdev(std::span<const double> xs);
// Linear-interpolated quantile, q in [0, 1], as numpy.quantile (method "linear") and Triton compute
// it.
[[nodiscard]] double quantile(std::span<const double> xs, double q);
[[nodiscard]] std::vector<double> quantiles(std::span<const double> xs, std::span<const double> qs);
// The value a return mode selects (all: the median, the caller keeps the sequence).
[[nodiscard]] double reduce(std::span<const double> xs, ReturnMode m);
// Median of per-call medians (cross-call repetition).
[[nodiscard]] double median_of_medians(const std::vector<std::vector<double>>& calls);
// The relative standard error of the median, estimated robustly (0 for fewer than two values or
// a zero median): sigma = max(1.4826 * MAD, 1.2533 * mean |x - median| over the central 90%),
// noise = 1.2533 * sigma / (|median| * sqrt(n)). docs/timing.md says why; the stopping rule
// (src/timing/stopping.cpp) stops on it.
[[nodiscard]] double median_rel_std_error(std::span<const double> xs);
// Geometric mean of positive values (non-positive values are ignored; NaN when none).
[[nodiscard]] double geomean(std::span<const double> xs);

struct Interval {
  double lo = 0, hi = 0;
};
// Bootstrap percentile confidence interval of the geometric mean (deterministic for a seed).
[[nodiscard]] Interval bootstrap_geomean_ci(std::span<const double> xs, double confidence = 0.95,
                                            int resamples = 2000, std::uint64_t seed = 1);
// A side's resampled median is drawn from its exact distribution (the side sorted once), never by
// sorting a resample: up to this many samples through ResampledMedian's table, past it through
// beta draws of the order statistics; grouped sides are thinned to this many quantiles.
inline constexpr std::size_t kDirectBootstrapMax = 4096;

// The law of the median of a bootstrap resample (n draws with replacement) of n sorted values, as
// the order statistics it takes: v[lower] for odd n, (v[lower] + v[upper]) / 2 for even n. Built
// once per side in O(n) evaluations of the incomplete beta function; a draw then costs one or two
// uniforms and a binary search, where resampling costs n draws and a selection. Exact, not an
// approximation: the k-th smallest of n draws is at index <= i when at least k of the n draws are,
// a binomial tail; for even n the (k+1)-th either shares the k-th's index or is the smallest of the
// n - k draws above it.
class ResampledMedian {
 public:
  explicit ResampledMedian(std::size_t n);
  struct Draw {
    std::size_t lower = 0, upper = 0;  // upper == lower for odd n
  };
  [[nodiscard]] Draw draw(std::mt19937_64& rng) const;
  // P(lower == i), and for even n P(upper > i | lower == i) (0 for odd n).
  [[nodiscard]] double p_lower(std::size_t i) const;
  [[nodiscard]] double p_apart(std::size_t i) const;

 private:
  std::size_t n_, k_;
  std::vector<double> cdf_;    // P(lower <= i)
  std::vector<double> apart_;  // P(upper > i | lower == i), even n only
};
// Bootstrap CI of median(b) / median(a), resampling each side independently.
[[nodiscard]] Interval bootstrap_median_ratio_ci(std::span<const double> a,
                                                 std::span<const double> b,
                                                 double confidence = 0.95, int resamples = 2000,
                                                 std::uint64_t seed = 1);
// The same interval with every resampled median drawn from its exact distribution over the
// sorted samples (what bootstrap_median_ratio_ci does past kDirectBootstrapMax): a sort a side,
// then a few draws per resample whatever the sample count, for a table of many rows.
[[nodiscard]] Interval bootstrap_median_ratio_ci_sorted(std::span<const double> a,
                                                        std::span<const double> b,
                                                        double confidence = 0.95,
                                                        int resamples = 2000,
                                                        std::uint64_t seed = 1);

// The same with each side given as groups (one per run or round): a two-stage bootstrap that
// resamples the groups, then the samples within them, so drift between runs widens the interval
// (one run's samples alone cannot show it).
[[nodiscard]] Interval bootstrap_median_ratio_ci_grouped(const std::vector<std::vector<double>>& a,
                                                         const std::vector<std::vector<double>>& b,
                                                         double confidence = 0.95,
                                                         int resamples = 2000,
                                                         std::uint64_t seed = 1);

// An interval of a ratio drawn from kept samples, moved onto the ratio of the runs' own figures:
// scaled by estimate / sample_ratio, its relative width kept. A provider keeps at most
// max_kept_samples of the samples its latency is the median of (docs/run-log.md), so the kept
// samples' median ratio can differ from the figures' ratio every output quotes; the interval
// then stands around the figure it qualifies. Unchanged where either ratio is not positive.
[[nodiscard]] Interval moved_onto(Interval ci, double sample_ratio, double estimate);

// The 95% interval of a run's speedup, latency(baseline) / latency(candidate), from the two
// providers' kept samples and moved onto `speedup` (the run table's column and the report's
// speedup dots: one rule). Each resampled median drawn from its exact law over the sorted
// samples, 1000 resamples, seed 1: milliseconds a row over a run of hundreds of rows.
[[nodiscard]] Interval speedup_interval(std::span<const double> candidate,
                                        std::span<const double> baseline, double speedup);

// ---- A/B decisions (caliber compare, caliber ab; the rule and its guarantee: docs/ab.md) ----

// The standard normal quantile at p in (0, 1) (bisection on erfc, accurate to ~1e-12).
[[nodiscard]] double normal_quantile(double p);

// The Student t quantile at p in (0, 1) with dof >= 1 degrees of freedom (bisection on the CDF,
// which is computed from the regularized incomplete beta function; accurate to ~1e-9).
[[nodiscard]] double student_t_quantile(double p, double dof);

// A paired A/B (docs/ab.md): for each round (one process), the log ratios ln(b_k / a_k) of its
// blocks, block k of B against block k of A, timed back to back. The estimate is the mean of all
// blocks' log ratios; its half width at `confidence` is t_{n-1} * sd / sqrt(n) over the n blocks,
// or, with three or more rounds, the larger of that and t_{R-1} * sd(round means) / sqrt(R) (a
// move shared by a whole round shows only between rounds). Fewer than two blocks: half width 0
// and blocks 0 (no estimate).
//
// `phases` 2 (the placement crossover): each round's blocks are two equal consecutive halves, the
// second timed with each side in the other side's memory. A round's estimate is then the mean of
// its two halves' means, which cancels an effect of where the buffers landed (it has one sign in
// the first half and the other in the second), and the spread is the blocks' spread around their
// own half's mean, with n - 2R degrees of freedom. `placement` is the log effect the crossover
// removed: the root mean square over rounds of half the difference of the halves' means.
struct PairedEstimate {
  double log_ratio = 0;
  double half_width = 0;
  int blocks = 0;
  int rounds = 0;
  int phases = 1;
  double placement = 0;
};
[[nodiscard]] PairedEstimate paired_log_ratio(const std::vector<std::vector<double>>& rounds,
                                              double confidence = 0.95, int phases = 1);

// The CI of a ratio widened by run-to-run noise: each side with fewer than three runs adds its
// relative standard deviation `sd_a` / `sd_b`; the extra half-width z*sqrt(sd_a^2 + sd_b^2) is
// combined in quadrature with each half of `ci` on a log scale around `ratio`.
[[nodiscard]] Interval widen_for_run_noise(Interval ci, double ratio, double sd_a, double sd_b,
                                           double confidence);

enum class Verdict { faster, slower, same, unsure };

// The verdict on a ratio B/A (> 1: B slower) and its CI, in this order:
//   FASTER / SLOWER: the CI excludes no change, [1/(1 + zone), 1 + zone] (zone 0 on one device;
//     the device band across two, whose chip-to-chip difference no CI holds), and the effect
//     |ln ratio| is at least ln(1 + min_effect);
//   SAME: the CI lies inside the equivalence band [1/(1 + band), 1 + band];
//   UNSURE: anything else (a real effect too small to matter that is not inside the band, or an
//     interval too wide to tell).
[[nodiscard]] Verdict ab_verdict(Interval ci, double ratio, double min_effect, double band,
                                 double zone = 0) noexcept;

// What would resolve an UNSURE verdict, estimated from the interval's parts: `sample_hw` the half
// width (log scale, toward no change) from the samples alone, `noise_hw` the run-to-run half width
// added to it (0 when the sides had three or more runs and the grouped bootstrap measured it),
// `runs` the runs per side. Both are estimates: the half widths shrink as 1/sqrt(samples) and
// 1/sqrt(runs).
struct Resolution {
  bool possible = false;       // false: the effect sits on an edge no amount of data moves it off
  bool toward_same = false;    // the effect is below min_effect: only SAME can come of it
  int rounds = 0;              // runs per side that would resolve it (0: more runs do not help)
  double min_time_factor = 0;  // times the current --min-time (0: a longer window does not help)
};
[[nodiscard]] Resolution resolve_unsure(double ratio, double sample_hw, double noise_hw, int runs,
                                        double min_effect, double band) noexcept;

}  // namespace caliber::core
