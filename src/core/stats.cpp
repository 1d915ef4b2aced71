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

// quantile_sorted's value without sorting: selection, O(n); reorders v.
double quantile_selected(std::vector<double>& v, double q) {
  const double h = static_cast<double>(v.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return *std::max_element(v.begin(), v.end());
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(v.begin(), at, v.end());
  const double below = *at;
  const double above = *std::min_element(at + 1, v.end());
  return below + (h - static_cast<double>(lo)) * (above - below);
}

Interval percentile_interval(std::vector<double> estimates, double confidence) {
  const double alpha = (1.0 - confidence) / 2.0;
  const double lo = quantile_selected(estimates, alpha);
  return {lo, quantile_selected(estimates, 1.0 - alpha)};
}

double median_sorted(const std::vector<double>& v) {
  return quantile_sorted(v, 0.5);
}

// The same value as median_sorted of the sorted vector, by selection: O(n), reorders v.
double median_in_place(std::vector<double>& v) {
  const std::size_t n = v.size();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((n - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  const double lo = *mid;
  if (n % 2 == 1) return lo;
  const double hi = *std::min_element(mid + 1, v.end());
  return lo + (hi - lo) * 0.5;
}

}  // namespace

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

double median_rel_std_error(std::span<const double> xs) {
  const std::size_t n = xs.size();
  if (n < 2) return 0;
  const std::vector<double> v = sorted_copy(xs);
  const double med = median_sorted(v);
  if (med == 0) return 0;
  std::vector<double> dev;
  dev.reserve(n);
  for (double x : v) dev.push_back(std::fabs(x - med));
  // 1.4826 * MAD estimates a normal distribution's sigma and ignores outliers.
  const double mad_sigma = 1.4826 * median_in_place(dev);
  // Event timings are quantized (about 0.5 us): when more than half the samples tie at the
  // median, MAD is 0 although the median can still flip between two values from run to run.
  // 1.2533 * the mean absolute deviation of the central 90% of the samples sees those ties and
  // stays blind to the few outliers in the tails.
  const std::size_t trim = n / 20;
  double sum_abs = 0;
  for (std::size_t i = trim; i < n - trim; ++i) sum_abs += std::fabs(v[i] - med);
  const double mean_ad_sigma = 1.2533 * sum_abs / static_cast<double>(n - 2 * trim);
  const double sigma = std::max(mad_sigma, mean_ad_sigma);
  // 1.2533 / sqrt(n): the median's standard error for that sigma.
  return 1.2533 * sigma / (std::fabs(med) * std::sqrt(static_cast<double>(n)));
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

namespace {
// One bootstrap draw of the median of n values resampled with replacement from sorted v, in O(1):
// the k-th smallest of n draws is v[floor(n U)] with U the k-th smallest of n uniforms, which is
// Beta(k, n - k + 1); the next one up is U + (1 - U) Beta(1, n - k). Exact, not an approximation.
double resampled_median_sorted(const std::vector<double>& v, std::mt19937_64& rng) {
  const std::size_t n = v.size();
  auto beta = [&](double x, double y) {
    std::gamma_distribution<double> gx(x, 1.0), gy(y, 1.0);
    const double a = gx(rng), b = gy(rng);
    return a / (a + b);
  };
  auto at = [&](double u) {
    const auto i = static_cast<std::size_t>(u * static_cast<double>(n));
    return v[std::min(n - 1, i)];
  };
  const double nd = static_cast<double>(n);
  if (n % 2 == 1) {
    const double k = (nd + 1) / 2;
    return at(beta(k, nd - k + 1));
  }
  const double k = nd / 2;
  const double u1 = beta(k, nd - k + 1);
  const double u2 = u1 + (1 - u1) * beta(1, nd - k);
  return (at(u1) + at(u2)) / 2;
}
}  // namespace

Interval bootstrap_median_ratio_ci_sorted(std::span<const double> a, std::span<const double> b,
                                          double confidence, int resamples, std::uint64_t seed) {
  require_values(a, "bootstrap_median_ratio_ci_sorted (a)");
  require_values(b, "bootstrap_median_ratio_ci_sorted (b)");
  check_bootstrap(confidence, resamples);
  std::mt19937_64 rng(seed);
  const auto sa = sorted_copy(a);
  const auto sb = sorted_copy(b);
  std::vector<double> estimates;
  estimates.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    const double ma = resampled_median_sorted(sa, rng);
    const double mb = resampled_median_sorted(sb, rng);
    estimates.push_back(mb / ma);
  }
  return percentile_interval(std::move(estimates), confidence);
}

Interval moved_onto(Interval ci, double sample_ratio, double estimate) {
  if (!(sample_ratio > 0) || !(estimate > 0) || !std::isfinite(sample_ratio) ||
      !std::isfinite(estimate))
    return ci;
  const double k = estimate / sample_ratio;
  return {ci.lo * k, ci.hi * k};
}

Interval speedup_interval(std::span<const double> candidate, std::span<const double> baseline,
                          double speedup) {
  constexpr int kResamples = 1000;
  const Interval ci =
      bootstrap_median_ratio_ci_sorted(candidate, baseline, 0.95, kResamples, /*seed=*/1);
  return moved_onto(ci, median(baseline) / median(candidate), speedup);
}

Interval bootstrap_median_ratio_ci(std::span<const double> a, std::span<const double> b,
                                   double confidence, int resamples, std::uint64_t seed) {
  // Past kDirectBootstrapMax samples a side a table would cost more than beta draws of the same
  // law (2000 resamples of 100k samples by sorting took 43 s).
  if (a.size() > kDirectBootstrapMax || b.size() > kDirectBootstrapMax)
    return bootstrap_median_ratio_ci_sorted(a, b, confidence, resamples, seed);
  require_values(a, "bootstrap_median_ratio_ci (a)");
  require_values(b, "bootstrap_median_ratio_ci (b)");
  check_bootstrap(confidence, resamples);
  std::mt19937_64 rng(seed);
  // Up to kDirectBootstrapMax samples a side: each resample's median from the table of its law.
  const auto sa = sorted_copy(a);
  const auto sb = sorted_copy(b);
  const ResampledMedian la(sa.size());
  const ResampledMedian lb(sb.size());
  auto value = [](const std::vector<double>& v, ResampledMedian::Draw d) {
    const double lo = v[d.lower];
    return lo + (v[d.upper] - lo) * 0.5;  // median_in_place's arithmetic
  };
  std::vector<double> estimates;
  estimates.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    const double ma = value(sa, la.draw(rng));
    const double mb = value(sb, lb.draw(rng));
    estimates.push_back(mb / ma);
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
  return median_in_place(scratch);
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
  // A group of more than kDirectBootstrapMax samples is represented by that many evenly spaced
  // order statistics (its quantiles): the same distribution, and a resample costs O(cap) instead
  // of O(n log n) per group.
  auto thin = [](const std::vector<std::vector<double>>& groups) {
    std::vector<std::vector<double>> out;
    for (const auto& g : groups) {
      if (g.size() <= kDirectBootstrapMax) {
        out.push_back(g);
        continue;
      }
      const auto s = sorted_copy(g);
      std::vector<double> t(kDirectBootstrapMax);
      for (std::size_t i = 0; i < t.size(); ++i) t[i] = s[(2 * i + 1) * s.size() / (2 * t.size())];
      out.push_back(std::move(t));
    }
    return out;
  };
  const auto ta = thin(a);
  const auto tb = thin(b);
  std::vector<double> sa, sb, estimates;
  estimates.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    const double ma = resampled_median(ta, rng, sa);
    const double mb = resampled_median(tb, rng, sb);
    estimates.push_back(mb / ma);
  }
  return percentile_interval(std::move(estimates), confidence);
}

double normal_quantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

namespace {
// The continued fraction of the regularized incomplete beta function I_x(a, b) (modified Lentz).
double beta_cf(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    d = 1 / (std::abs(d) < tiny ? tiny : d);
    c = 1 + aa / c;
    c = std::abs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    d = 1 / (std::abs(d) < tiny ? tiny : d);
    c = 1 + aa / c;
    c = std::abs(c) < tiny ? tiny : c;
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

// A uniform draw in [0, 1) from the top 53 bits: the same on every standard library.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

double student_t_cdf(double t, double dof) {
  const double tail = 0.5 * incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
  return t >= 0 ? 1 - tail : tail;
}
}  // namespace

double student_t_quantile(double p, double dof) {
  if (!(dof >= 1)) dof = 1;
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (student_t_cdf(mid, dof) < p)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

namespace {

// The crossover's estimate (phases 2): see paired_log_ratio in stats.hpp.
PairedEstimate crossover_log_ratio(const std::vector<std::vector<double>>& rounds,
                                   double confidence) {
  PairedEstimate e;
  std::vector<double> means;
  double ss = 0, place = 0;
  std::size_t n = 0;
  for (const auto& r : rounds) {
    if (r.size() < 4 || r.size() % 2 != 0) return e;  // a half of one block shows no spread
    const std::size_t h = r.size() / 2;
    const std::vector<double> first(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(h));
    const std::vector<double> second(r.begin() + static_cast<std::ptrdiff_t>(h), r.end());
    const double m1 = mean(first), m2 = mean(second);
    for (double d : first) ss += (d - m1) * (d - m1);
    for (double d : second) ss += (d - m2) * (d - m2);
    means.push_back(0.5 * (m1 + m2));
    place += 0.25 * (m1 - m2) * (m1 - m2);
    n += r.size();
  }
  if (means.empty()) return e;
  const double q = 0.5 + 0.5 * confidence;
  const double r = static_cast<double>(means.size());
  const double dof = static_cast<double>(n) - 2 * r;
  e.blocks = static_cast<int>(n);
  e.rounds = static_cast<int>(means.size());
  e.phases = 2;
  e.log_ratio = mean(means);
  e.placement = std::sqrt(place / r);
  // Equal halves: each round's estimate has variance s^2 / n_round; their mean s^2 / n.
  e.half_width =
      student_t_quantile(q, dof) * std::sqrt(ss / dof) / std::sqrt(static_cast<double>(n));
  if (means.size() >= 3)
    e.half_width =
        std::max(e.half_width, student_t_quantile(q, r - 1) * stdev(means) / std::sqrt(r));
  return e;
}

}  // namespace

PairedEstimate paired_log_ratio(const std::vector<std::vector<double>>& rounds, double confidence,
                                int phases) {
  if (phases == 2) return crossover_log_ratio(rounds, confidence);
  PairedEstimate e;
  std::vector<double> all, means;
  for (const auto& r : rounds) {
    if (r.empty()) continue;
    all.insert(all.end(), r.begin(), r.end());
    means.push_back(mean(r));
  }
  if (all.size() < 2) return e;
  const double q = 0.5 + 0.5 * confidence;
  e.blocks = static_cast<int>(all.size());
  e.rounds = static_cast<int>(means.size());
  e.log_ratio = mean(all);
  const double n = static_cast<double>(all.size());
  e.half_width = student_t_quantile(q, n - 1) * stdev(all) / std::sqrt(n);
  if (means.size() >= 3) {
    const double r = static_cast<double>(means.size());
    e.half_width =
        std::max(e.half_width, student_t_quantile(q, r - 1) * stdev(means) / std::sqrt(r));
  }
  return e;
}

Interval widen_for_run_noise(Interval ci, double ratio, double sd_a, double sd_b,
                             double confidence) {
  if (!(ratio > 0) || !(ci.lo > 0) || !(ci.hi > 0)) return ci;
  const double z = normal_quantile(0.5 + 0.5 * confidence);
  const double extra = z * std::sqrt(sd_a * sd_a + sd_b * sd_b);
  if (!(extra > 0)) return ci;
  const double c = std::log(ratio);
  const double below = std::max(0.0, c - std::log(ci.lo));
  const double above = std::max(0.0, std::log(ci.hi) - c);
  return {std::exp(c - std::hypot(below, extra)), std::exp(c + std::hypot(above, extra))};
}

Verdict ab_verdict(Interval ci, double ratio, double min_effect, double band,
                   double zone) noexcept {
  if (!(ratio > 0) || !(ci.lo > 0) || !(ci.hi > 0)) return Verdict::unsure;
  const double effect = std::abs(std::log(ratio));
  // A small tolerance so that a planted effect of exactly min_effect is not lost to rounding.
  const bool big_enough = effect >= std::log1p(min_effect) - 1e-12;
  if (ci.hi < 1.0 / (1.0 + zone) && big_enough) return Verdict::faster;
  if (ci.lo > 1.0 + zone && big_enough) return Verdict::slower;
  if (ci.lo >= 1.0 / (1.0 + band) && ci.hi <= 1.0 + band) return Verdict::same;
  return Verdict::unsure;
}

Resolution resolve_unsure(double ratio, double sample_hw, double noise_hw, int runs,
                          double min_effect, double band) noexcept {
  Resolution r;
  if (!(ratio > 0)) return r;
  const double effect = std::abs(std::log(ratio));
  r.toward_same = effect < std::log1p(min_effect);
  // The half width that would decide: below the effect (FASTER/SLOWER), or inside the band's
  // room left beside the effect (SAME).
  const double target = r.toward_same ? std::log1p(band) - effect : effect;
  if (!(target > 1e-6)) return r;
  const double now = std::hypot(sample_hw, noise_hw);
  if (!(now > target)) {
    r.possible = true;
    return r;
  }
  r.possible = true;
  // More runs a side: three at least (the grouped bootstrap then measures the run-to-run part),
  // and both parts shrink as 1/sqrt(runs).
  const int have = std::max(runs, 1);
  const double need = static_cast<double>(have) * (now / target) * (now / target);
  r.rounds = std::max(3, static_cast<int>(std::ceil(need)));
  // A longer window shrinks only the samples' part.
  if (noise_hw < target && sample_hw > 0) {
    const double room = std::sqrt(target * target - noise_hw * noise_hw);
    r.min_time_factor = (sample_hw / room) * (sample_hw / room);
  }
  return r;
}

ResampledMedian::ResampledMedian(std::size_t n) : n_(n), k_(n % 2 == 1 ? (n + 1) / 2 : n / 2) {
  if (n == 0) throw std::invalid_argument("ResampledMedian: no values");
  const auto nd = static_cast<double>(n);
  const auto kd = static_cast<double>(k_);
  // lower <= i when at least k of the n draws land at or below i: Binomial(n, (i + 1) / n) >= k.
  cdf_.resize(n);
  for (std::size_t i = 0; i + 1 < n; ++i)
    cdf_[i] = incomplete_beta(kd, nd - kd + 1, static_cast<double>(i + 1) / nd);
  cdf_[n - 1] = 1;
  for (std::size_t i = 1; i < n; ++i) cdf_[i] = std::max(cdf_[i], cdf_[i - 1]);
  if (n % 2 == 1) return;
  // Even n: upper > lower == i when exactly k draws are at or below i and fewer than k below it:
  // C(n, k) ((n-1-i)/n)^(n-k) [((i+1)/n)^k - (i/n)^k].
  apart_.assign(n, 0.0);
  const double log_c = std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const double p = p_lower(i);
    if (!(p > 0)) continue;
    const double base = log_c + (nd - kd) * std::log(static_cast<double>(n - 1 - i) / nd);
    const double at_or_below = std::exp(base + kd * std::log(static_cast<double>(i + 1) / nd));
    const double below = i == 0 ? 0.0 : std::exp(base + kd * std::log(static_cast<double>(i) / nd));
    apart_[i] = std::clamp((at_or_below - below) / p, 0.0, 1.0);
  }
}

double ResampledMedian::p_lower(std::size_t i) const {
  return cdf_.at(i) - (i == 0 ? 0.0 : cdf_[i - 1]);
}

double ResampledMedian::p_apart(std::size_t i) const {
  return apart_.empty() ? 0.0 : apart_.at(i);
}

ResampledMedian::Draw ResampledMedian::draw(std::mt19937_64& rng) const {
  const double u = uniform01(rng);
  const auto first_above = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  const std::size_t lower = std::min(static_cast<std::size_t>(first_above - cdf_.begin()), n_ - 1);
  if (apart_.empty() || !(uniform01(rng) < apart_[lower])) return {lower, lower};
  // The (k+1)-th draw is the smallest of the n - k draws above `lower`, each uniform over the
  // `span` indices there: P(upper - lower - 1 >= t) = ((span - t) / span)^(n - k).
  const std::size_t span = n_ - 1 - lower;
  const double w = 1.0 - uniform01(rng);  // (0, 1]
  const double t =
      -std::expm1(std::log(w) / static_cast<double>(n_ - k_)) * static_cast<double>(span);
  return {lower, lower + 1 + std::min(span - 1, static_cast<std::size_t>(t))};
}

}  // namespace caliber::core
