// Statistics used by the timers and the reports. One file, as Google Benchmark keeps them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace caliber::core {

enum class ReturnMode { min, max, mean, median, all };
[[nodiscard]] std::optional<ReturnMode> parse_return_mode(std::string_view s) noexcept;
[[nodiscard]] std::string_view to_string(ReturnMode m) noexcept;

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
// Past this many samples a side's resampled median is drawn from its exact distribution (sorted
// once) rather than by sorting every resample; grouped sides are thinned to this many quantiles.
inline constexpr std::size_t kDirectBootstrapMax = 4096;
// Bootstrap CI of median(b) / median(a), resampling each side independently.
[[nodiscard]] Interval bootstrap_median_ratio_ci(std::span<const double> a,
                                                 std::span<const double> b,
                                                 double confidence = 0.95, int resamples = 2000,
                                                 std::uint64_t seed = 1);

// The same with each side given as groups (one per run or round): a two-stage bootstrap that
// resamples the groups, then the samples within them, so drift between runs widens the interval
// (one run's samples alone cannot show it).
[[nodiscard]] Interval bootstrap_median_ratio_ci_grouped(const std::vector<std::vector<double>>& a,
                                                         const std::vector<std::vector<double>>& b,
                                                         double confidence = 0.95,
                                                         int resamples = 2000,
                                                         std::uint64_t seed = 1);

}  // namespace caliber::core
