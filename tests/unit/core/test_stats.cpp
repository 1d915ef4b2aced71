#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/stats.hpp"

using namespace caliber::core;

TEST(Stats, BasicMoments) {
  const std::vector<double> xs = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(min_of(xs), 1);
  EXPECT_DOUBLE_EQ(max_of(xs), 4);
  EXPECT_DOUBLE_EQ(mean(xs), 2.5);
  EXPECT_DOUBLE_EQ(median(xs), 2.5);
  // sum of squared deviations 5, n - 1 = 3
  EXPECT_DOUBLE_EQ(stdev(xs), std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(rel_stdev(xs), std::sqrt(5.0 / 3.0) / 2.5);
}

TEST(Stats, MedianOddCount) {
  const std::vector<double> xs = {9, 1, 5};
  EXPECT_DOUBLE_EQ(median(xs), 5);
}

TEST(Stats, StdevOfFewValuesIsZero) {
  const std::vector<double> one = {3};
  EXPECT_EQ(stdev(one), 0);
  EXPECT_EQ(rel_stdev(one), 0);
  const std::vector<double> zeros = {0, 0, 0};
  EXPECT_EQ(rel_stdev(zeros), 0);
}

TEST(Stats, QuantileMatchesNumpyLinear) {
  const std::vector<double> xs = {1, 2, 3, 4};
  // numpy.quantile([1,2,3,4], q): h = 3q, x[floor h] + frac(h) * (next - x[floor h])
  EXPECT_DOUBLE_EQ(quantile(xs, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(xs, 1.0), 4);
  // Unsorted input with a gap: [10, 0, 20, 5, 15] sorted [0,5,10,15,20], q=0.2 -> h=0.8 -> 4.0
  const std::vector<double> ys = {10, 0, 20, 5, 15};
  EXPECT_DOUBLE_EQ(quantile(ys, 0.2), 4.0);
  EXPECT_DOUBLE_EQ(quantile(ys, 0.9), 18.0);
  const std::vector<double> qs = {0.5, 0.2, 0.8};
  const auto r = quantiles(ys, qs);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0], 10);
  EXPECT_DOUBLE_EQ(r[1], 4);
  EXPECT_DOUBLE_EQ(r[2], 16);
}

TEST(Stats, QuantileOutOfRangeThrows) {
  const std::vector<double> xs = {1, 2};
  EXPECT_THROW((void)quantile(xs, 1.5), std::invalid_argument);
  EXPECT_THROW((void)quantile(xs, -0.1), std::invalid_argument);
  EXPECT_THROW((void)quantile(xs, std::nan("")), std::invalid_argument);
}

TEST(Stats, EmptyInputThrows) {
  const std::vector<double> none;
  EXPECT_THROW((void)min_of(none), std::invalid_argument);
  EXPECT_THROW((void)max_of(none), std::invalid_argument);
  EXPECT_THROW((void)mean(none), std::invalid_argument);
  EXPECT_THROW((void)median(none), std::invalid_argument);
  EXPECT_THROW((void)quantile(none, 0.5), std::invalid_argument);
  EXPECT_THROW((void)reduce(none, ReturnMode::mean), std::invalid_argument);
  EXPECT_THROW((void)median_of_medians({}), std::invalid_argument);
  EXPECT_THROW((void)median_of_medians({{}, {}}), std::invalid_argument);
}

TEST(Stats, ReturnModes) {
  // The words: settings (tests/unit/settings/test_format.cpp).
  const std::vector<double> xs = {5, 1, 2, 10};
  EXPECT_DOUBLE_EQ(reduce(xs, ReturnMode::min), 1);
  EXPECT_DOUBLE_EQ(reduce(xs, ReturnMode::max), 10);
  EXPECT_DOUBLE_EQ(reduce(xs, ReturnMode::mean), 4.5);
  EXPECT_DOUBLE_EQ(reduce(xs, ReturnMode::median), 3.5);
  EXPECT_DOUBLE_EQ(reduce(xs, ReturnMode::all), 3.5);
}

TEST(Stats, MedianOfMedians) {
  // call medians: 2, 10, 3.5 -> 3.5; a plain median over all samples would give 4
  const std::vector<std::vector<double>> calls = {{1, 2, 3}, {10, 10, 10}, {3, 4}};
  EXPECT_DOUBLE_EQ(median_of_medians(calls), 3.5);
  // An empty call contributes nothing.
  EXPECT_DOUBLE_EQ(median_of_medians({{}, {7, 9}}), 8);
}

TEST(Stats, Geomean) {
  const std::vector<double> xs = {1, 4, 16};
  EXPECT_NEAR(geomean(xs), 4.0, 1e-12);
  const std::vector<double> with_bad = {2, 8, 0, -3};
  EXPECT_NEAR(geomean(with_bad), 4.0, 1e-12);
  const std::vector<double> none = {0, -1};
  EXPECT_TRUE(std::isnan(geomean(none)));
  EXPECT_TRUE(std::isnan(geomean(std::vector<double>{})));
}

TEST(Stats, BootstrapGeomeanCi) {
  const std::vector<double> xs = {0.9, 1.1, 1.0, 1.2, 0.8, 1.05, 0.95, 1.15, 0.85, 1.0};
  const auto a = bootstrap_geomean_ci(xs, 0.95, 2000, 42);
  const auto b = bootstrap_geomean_ci(xs, 0.95, 2000, 42);
  EXPECT_EQ(a.lo, b.lo);  // deterministic for a seed
  EXPECT_EQ(a.hi, b.hi);
  const double g = geomean(xs);
  EXPECT_LT(a.lo, g);
  EXPECT_GT(a.hi, g);
  EXPECT_GE(a.lo, min_of(xs));
  EXPECT_LE(a.hi, max_of(xs));
  // A wider confidence gives a wider interval; another seed a (slightly) different one.
  const auto w = bootstrap_geomean_ci(xs, 0.99, 2000, 42);
  EXPECT_LE(w.lo, a.lo);
  EXPECT_GE(w.hi, a.hi);
  const auto c = bootstrap_geomean_ci(xs, 0.95, 2000, 7);
  EXPECT_TRUE(c.lo != a.lo || c.hi != a.hi);
  // One value: no spread.
  const std::vector<double> one = {2.0};
  const auto o = bootstrap_geomean_ci(one);
  EXPECT_DOUBLE_EQ(o.lo, 2.0);
  EXPECT_DOUBLE_EQ(o.hi, 2.0);
  EXPECT_THROW((void)bootstrap_geomean_ci(xs, 1.0), std::invalid_argument);
  EXPECT_THROW((void)bootstrap_geomean_ci(xs, 0.95, 0), std::invalid_argument);
}

TEST(Stats, BootstrapMedianRatioCi) {
  const std::vector<double> a = {10, 11, 9, 10, 10.5, 9.5, 10, 10.2};
  const std::vector<double> b = {5, 5.5, 4.5, 5, 5.2, 4.8, 5, 5.1};  // b is half of a
  const auto ci = bootstrap_median_ratio_ci(a, b, 0.95, 2000, 3);
  EXPECT_LT(ci.lo, 0.5 + 1e-9);
  EXPECT_GT(ci.hi, 0.5 - 1e-9);
  EXPECT_GT(ci.lo, 0.4);
  EXPECT_LT(ci.hi, 0.6);
  const auto again = bootstrap_median_ratio_ci(a, b, 0.95, 2000, 3);
  EXPECT_EQ(ci.lo, again.lo);
  EXPECT_EQ(ci.hi, again.hi);
  // Identical samples: the interval holds 1.
  const auto same = bootstrap_median_ratio_ci(a, a, 0.95, 500, 3);
  EXPECT_LE(same.lo, 1.0);
  EXPECT_GE(same.hi, 1.0);
  EXPECT_THROW((void)bootstrap_median_ratio_ci({}, b), std::invalid_argument);
}

namespace {
// The law of a resample's median order statistics by enumerating all n^n resamples: P(lower = i)
// and P(upper > i and lower = i).
struct EnumeratedMedian {
  std::vector<double> lower, apart;
};
EnumeratedMedian enumerate_median(std::size_t n) {
  EnumeratedMedian e{std::vector<double>(n), std::vector<double>(n)};
  std::vector<std::size_t> idx(n, 0), sorted(n);
  const double total = std::pow(static_cast<double>(n), static_cast<double>(n));
  const std::size_t k = n % 2 == 1 ? (n + 1) / 2 : n / 2;
  for (;;) {
    sorted = idx;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t lo = sorted[k - 1];
    e.lower[lo] += 1 / total;
    if (n % 2 == 0 && sorted[k] > lo) e.apart[lo] += 1 / total;
    std::size_t d = 0;
    while (d < n && ++idx[d] == n) idx[d++] = 0;
    if (d == n) break;
  }
  return e;
}
}  // namespace

TEST(Stats, ResampledMedianIsTheLawOfAResampledMedian) {
  for (std::size_t n = 1; n <= 7; ++n) {
    const auto e = enumerate_median(n);
    const ResampledMedian law(n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(law.p_lower(i), e.lower[i], 1e-12) << "n " << n << " i " << i;
      const double apart = e.lower[i] > 0 ? e.apart[i] / e.lower[i] : 0;
      EXPECT_NEAR(law.p_apart(i), apart, 1e-12) << "n " << n << " i " << i;
    }
  }
  // Its draws follow it: the frequencies of (lower, upper) of 400k draws for n = 6.
  const std::size_t n = 6;
  const auto e = enumerate_median(n);
  const ResampledMedian law(n);
  std::mt19937_64 rng(11);
  std::vector<double> lower(n), apart(n), gap(n);
  const int draws = 400000;
  for (int r = 0; r < draws; ++r) {
    const auto d = law.draw(rng);
    ASSERT_LT(d.upper, n);
    ASSERT_LE(d.lower, d.upper);
    lower[d.lower] += 1.0 / draws;
    if (d.upper > d.lower) apart[d.lower] += 1.0 / draws;
  }
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(lower[i], e.lower[i], 0.005) << i;
    EXPECT_NEAR(apart[i], e.apart[i], 0.005) << i;
  }
  // The upper order statistic when apart: lower 1 of n = 6 (k = 3) leaves 3 draws uniform over
  // indices 2..5; the smallest is 2 with probability 1 - (3/4)^3.
  std::mt19937_64 rng2(12);
  double two = 0, apart1 = 0;
  for (int r = 0; r < draws; ++r) {
    const auto d = law.draw(rng2);
    if (d.lower != 1 || d.upper == 1) continue;
    apart1 += 1;
    if (d.upper == 2) two += 1;
  }
  EXPECT_NEAR(two / apart1, 1 - std::pow(0.75, 3), 0.01);
  // A table of the largest size the direct path takes is a distribution.
  const ResampledMedian big(kDirectBootstrapMax);
  double sum = 0;
  for (std::size_t i = 0; i < kDirectBootstrapMax; ++i) sum += big.p_lower(i);
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(big.p_lower(kDirectBootstrapMax / 2 - 1), big.p_lower(kDirectBootstrapMax / 2), 1e-3);
}

TEST(Stats, BootstrapMedianRatioCiMatchesResampling) {
  // The interval drawn from the median's law agrees with one that resamples and sorts (20000
  // resamples each, so bootstrap noise is a small part of the width), for odd and even n.
  for (std::size_t n : {7, 8, 50, 51}) {
    std::mt19937_64 gen(n);
    std::lognormal_distribution<double> d(0.0, 0.1);
    std::vector<double> a(n), b(n);
    for (auto& x : a) x = d(gen);
    for (auto& x : b) x = 1.05 * d(gen);
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    std::vector<double> est, ra(n), rb(n);
    const int resamples = 20000;
    for (int r = 0; r < resamples; ++r) {
      for (auto& x : ra) x = a[pick(rng)];
      for (auto& x : rb) x = b[pick(rng)];
      est.push_back(median(rb) / median(ra));
    }
    std::sort(est.begin(), est.end());
    const double lo = quantile(est, 0.025), hi = quantile(est, 0.975);
    const auto ci = bootstrap_median_ratio_ci(a, b, 0.95, resamples, 3);
    EXPECT_NEAR(ci.lo, lo, 0.05 * (hi - lo)) << "n " << n;
    EXPECT_NEAR(ci.hi, hi, 0.05 * (hi - lo)) << "n " << n;
  }
}

// The sorted form draws each resampled median from its exact distribution: past
// kDirectBootstrapMax it is what bootstrap_median_ratio_ci computes (the same draws for a seed),
// and below it an interval of the same ratio and about the same width.
TEST(Stats, SortedMedianRatioBootstrapIsTheLargeSamplePath) {
  std::vector<double> big_a, big_b, a, b;
  for (int i = 0; i < 5000; ++i) {
    big_a.push_back(1.0 + 0.001 * (i % 97));
    big_b.push_back(2.0 + 0.002 * (i % 89));
  }
  const auto x = caliber::core::bootstrap_median_ratio_ci(big_a, big_b, 0.95, 300, 7);
  const auto y = caliber::core::bootstrap_median_ratio_ci_sorted(big_a, big_b, 0.95, 300, 7);
  EXPECT_EQ(x.lo, y.lo);
  EXPECT_EQ(x.hi, y.hi);
  for (int i = 0; i < 201; ++i) {
    a.push_back(1.0 + 0.01 * i);
    b.push_back(2.0 * (1.0 + 0.01 * i));
  }
  const auto d = caliber::core::bootstrap_median_ratio_ci(a, b, 0.95, 2000, 1);
  const auto s = caliber::core::bootstrap_median_ratio_ci_sorted(a, b, 0.95, 2000, 1);
  EXPECT_LT(s.lo, 2.0);
  EXPECT_GT(s.hi, 2.0);
  const double wd = std::log(d.hi / d.lo), ws = std::log(s.hi / s.lo);
  EXPECT_NEAR(ws / wd, 1.0, 0.2) << "direct " << d.lo << "-" << d.hi << ", sorted " << s.lo << "-"
                                 << s.hi;
}

// A run's speedup interval stands around the speedup the run reports, its relative width that of
// the kept samples' bootstrap: the kept samples (at most 200 of those the latency is the median
// of) can have a median ratio apart from the figures'. Here they read 2.0 while the run says 2.1.
TEST(Stats, SpeedupIntervalStandsAroundTheRunsSpeedup) {
  std::vector<double> cand, base;
  for (int i = 0; i < 200; ++i) {
    cand.push_back(1.0 + 0.001 * (i % 37));
    base.push_back(2.0 * (1.0 + 0.001 * (i % 41)));
  }
  const auto raw = caliber::core::bootstrap_median_ratio_ci_sorted(cand, base, 0.95, 1000, 1);
  ASSERT_GT(raw.lo, 1.9);
  ASSERT_LT(raw.hi, 2.1);  // the samples alone would exclude the run's own 2.1
  const auto ci = caliber::core::speedup_interval(cand, base, 2.1);
  EXPECT_LT(ci.lo, 2.1);
  EXPECT_GT(ci.hi, 2.1);
  EXPECT_NEAR(std::log(ci.hi / ci.lo), std::log(raw.hi / raw.lo), 1e-12);
  // Where the two agree nothing moves; a ratio that is not positive leaves it as it is.
  const double own = caliber::core::median(base) / caliber::core::median(cand);
  const auto same = caliber::core::speedup_interval(cand, base, own);
  EXPECT_DOUBLE_EQ(same.lo, raw.lo);
  EXPECT_DOUBLE_EQ(same.hi, raw.hi);
  const auto kept = caliber::core::moved_onto(raw, 0.0, 2.1);
  EXPECT_EQ(kept.lo, raw.lo);
}
