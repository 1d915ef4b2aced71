#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace caliber::core {

namespace {

void require_values(std::span<const double> xs, const char* what) {
  if (xs.empty()) throw std::invalid_argument(std::string(what) + ": no values");
}

std::vector<double> sorted_copy(std::span<const double> xs) {
  std::vector<double> v(xs.begin(), xs.end());
  std::sort(v.begin(), v.end());
  return v;
}

// numpy's "linear" method on an already sorted, non-empty vector.
double quantile_sorted(const std::vector<double>& v, double q) {
  const double h = static_cast<double>(v.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

void check_q(double q) {
  if (!(q >= 0.0 && q <= 1.0)) {
    throw std::invalid_argument("quantile: q must be in [0, 1], got " + std::to_string(q));
  }
}

void check_bootstrap(double confidence, int resamples) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw std::invalid_argument("bootstrap: confidence must be in (0, 1), got " +
                                std::to_string(confidence));
  }
  if (resamples < 1) {
    throw std::invalid_argument("bootstrap: resamples must be at least 1, got " +
                                std::to_string(resamples));
  }
}

Interval percentile_interval(std::vector<double> estimates, double confidence) {
  std::sort(estimates.begin(), estimates.end());
  const double alpha = (1.0 - confidence) / 2.0;
  return {quantile_sorted(estimates, alpha), quantile_sorted(estimates, 1.0 - alpha)};
}

double median_sorted(const std::vector<double>& v) {
  return quantile_sorted(v, 0.5);
}

}  // namespace

std::optional<ReturnMode> parse_return_mode(std::string_view s) noexcept {
  if (s == "min") return ReturnMode::min;
  if (s == "max") return ReturnMode::max;
  if (s == "mean") return ReturnMode::mean;
  if (s == "median") return ReturnMode::median;
  if (s == "all") return ReturnMode::all;
  return std::nullopt;
}

std::string_view to_string(ReturnMode m) noexcept {
  switch (m) {
    case ReturnMode::min:
      return "min";
    case ReturnMode::max:
      return "max";
    case ReturnMode::mean:
      return "mean";
    case ReturnMode::median:
      return "median";
    case ReturnMode::all:
      return "all";
  }
  return "median";
}

double min_of(std::span<const double> xs) {
  require_values(xs, "min");
  return *std::min_element(xs.begin(), xs.end());
}

double max_of(std::span<const double> xs) {
  require_values(xs, "max");
  return *std::max_element(xs.begin(), xs.end());
}

double mean(std::span<const double> xs) {
  require_values(xs, "mean");
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

double median(std::span<const double> xs) {
  require_values(xs, "median");
  return median_sorted(sorted_copy(xs));
}

double stdev(std::span<const double> xs) {
  if (xs.size() < 2) return 0.0;
  const double m = mean(xs);
  double ss = 0.0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

double rel_stdev(std::span<const double> xs) {
  if (xs.size() < 2) return 0.0;
  const double m = mean(xs);
  if (m == 0.0) return 0.0;
  return stdev(xs) / std::fabs(m);
}

double quantile(std::span<const double> xs, double q) {
  require_values(xs, "quantile");
  check_q(q);
  return quantile_sorted(sorted_copy(xs), q);
}

std::vector<double> quantiles(std::span<const double> xs, std::span<const double> qs) {
  require_values(xs, "quantiles");
  const auto v = sorted_copy(xs);
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) {
    check_q(q);
    out.push_back(quantile_sorted(v, q));
  }
  return out;
}

double reduce(std::span<const double> xs, ReturnMode m) {
  switch (m) {
    case ReturnMode::min:
      return min_of(xs);
    case ReturnMode::max:
      return max_of(xs);
    case ReturnMode::mean:
      return mean(xs);
    case ReturnMode::median:
    case ReturnMode::all:
      return median(xs);
  }
  return median(xs);
}

double median_of_medians(const std::vector<std::vector<double>>& calls) {
  std::vector<double> medians;
  medians.reserve(calls.size());
  // A call that produced no sample has no median; the others still describe the drift.
  for (const auto& c : calls) {
    if (!c.empty()) medians.push_back(median(c));
  }
  require_values(medians, "median_of_medians");
  return median(medians);
}

double geomean(std::span<const double> xs) {
  double log_sum = 0.0;
  std::size_t n = 0;
  for (double x : xs) {
    if (x > 0.0 && std::isfinite(x)) {
      log_sum += std::log(x);
      ++n;
    }
  }
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::exp(log_sum / static_cast<double>(n));
}

Interval bootstrap_geomean_ci(std::span<const double> xs, double confidence, int resamples,
                              std::uint64_t seed) {
  check_bootstrap(confidence, resamples);
  // Resample logs: the geomean of a resample is then the exp of a plain mean.
  std::vector<double> logs;
  for (double x : xs) {
    if (x > 0.0 && std::isfinite(x)) logs.push_back(std::log(x));
  }
  if (logs.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan};
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, logs.size() - 1);
  std::vector<double> estimates;
  estimates.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    double s = 0.0;
    for (std::size_t i = 0; i < logs.size(); ++i) s += logs[pick(rng)];
    estimates.push_back(std::exp(s / static_cast<double>(logs.size())));
  }
  return percentile_interval(std::move(estimates), confidence);
}

Interval bootstrap_median_ratio_ci(std::span<const double> a, std::span<const double> b,
                                   double confidence, int resamples, std::uint64_t seed) {
  require_values(a, "bootstrap_median_ratio_ci (a)");
  require_values(b, "bootstrap_median_ratio_ci (b)");
  check_bootstrap(confidence, resamples);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick_a(0, a.size() - 1);
  std::uniform_int_distribution<std::size_t> pick_b(0, b.size() - 1);
  std::vector<double> ra(a.size()), rb(b.size());
  std::vector<double> estimates;
  estimates.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (auto& x : ra) x = a[pick_a(rng)];
    for (auto& x : rb) x = b[pick_b(rng)];
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    estimates.push_back(median_sorted(rb) / median_sorted(ra));
  }
  return percentile_interval(std::move(estimates), confidence);
}

}  // namespace caliber::core

namespace caliber::core {

namespace {
// One two-stage resample of a side: groups (runs) with replacement, then samples within each.
double resampled_median(const std::vector<std::vector<double>>& groups, std::mt19937_64& rng,
                        std::vector<double>& scratch) {
  std::uniform_int_distribution<std::size_t> pick_group(0, groups.size() - 1);
  scratch.clear();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& chosen = groups[pick_group(rng)];
    std::uniform_int_distribution<std::size_t> pick(0, chosen.size() - 1);
    for (std::size_t i = 0; i < chosen.size(); ++i) scratch.push_back(chosen[pick(rng)]);
  }
  std::sort(scratch.begin(), scratch.end());
  return median_sorted(scratch);
}
}  // namespace

Interval bootstrap_median_ratio_ci_grouped(const std::vector<std::vector<double>>& a,
                                           const std::vector<std::vector<double>>& b,
                                           double confidence, int resamples, std::uint64_t seed) {
  auto require_groups = [](const std::vector<std::vector<double>>& g, const char* what) {
    if (g.empty()) throw std::invalid_argument(std::string(what) + ": no groups");
    for (const auto& x : g) require_values(x, what);
  };
  require_groups(a, "bootstrap_median_ratio_ci_grouped (a)");
  require_groups(b, "bootstrap_median_ratio_ci_grouped (b)");
  check_bootstrap(confidence, resamples);
  std::mt19937_64 rng(seed);
  std::vector<double> sa, sb, estimates;
  estimates.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    const double ma = resampled_median(a, rng, sa);
    const double mb = resampled_median(b, rng, sb);
    estimates.push_back(mb / ma);
  }
  return percentile_interval(std::move(estimates), confidence);
}

}  // namespace caliber::core
