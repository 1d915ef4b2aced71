// The stopping rule's decisions and the noise estimate, without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "timing/timer.hpp"

namespace caliber::timing {
namespace {

TEST(Noise, RelativeStandardErrorOfTheMedianFromMad) {
  const std::vector<double> xs{1, 2, 3, 4, 5};  // median 3, MAD 1, mean |x - 3| = 1.2
  const double sigma = std::max(1.4826 * 1.0, 1.2533 * 1.2);
  const double expected = 1.2533 * sigma / (3.0 * std::sqrt(5.0));
  EXPECT_NEAR(median_rel_std_error(xs), expected, 1e-12);
}

TEST(Noise, OneOutlierDoesNotDominate) {
  std::vector<double> xs(20, 1.0);
  xs.push_back(100.0);  // a preempted launch
  EXPECT_DOUBLE_EQ(median_rel_std_error(xs), 0.0);
  EXPECT_GT(core::rel_stdev(xs), 1.0);  // what stdev/mean would have said
}

TEST(Noise, TiesAtTheMedianStillShowNoise) {
  // Quantized timings: 11 of 20 samples at 2.0 us, 9 at 2.5 us. MAD is 0, the noise is not.
  std::vector<double> xs(11, 2.0);
  xs.insert(xs.end(), 9, 2.5);
  EXPECT_GT(median_rel_std_error(xs), 0.02);
}

TEST(Noise, ShrinksWithMoreSamples) {
  std::vector<double> few, many;
  for (int i = 0; i < 10; ++i) few.push_back(1.0 + 0.01 * (i % 3));
  for (int i = 0; i < 1000; ++i) many.push_back(1.0 + 0.01 * (i % 3));
  EXPECT_GT(median_rel_std_error(few), median_rel_std_error(many));
  EXPECT_DOUBLE_EQ(median_rel_std_error(std::vector<double>{2.0}), 0.0);
}

TEST(StopRule, ConvergesOnlyWhenAllThreeConditionsHold) {
  StopRule r;  // 10 samples, 10 ms, 0.5%
  EXPECT_TRUE(evaluate_stop(r, 10, 0.02, 0.001, 0.1).converged);
  EXPECT_FALSE(evaluate_stop(r, 9, 0.02, 0.001, 0.1).stop);
  EXPECT_FALSE(evaluate_stop(r, 10, 0.009, 0.001, 0.1).stop);
  EXPECT_FALSE(evaluate_stop(r, 10, 0.02, 0.006, 0.1).stop);
  EXPECT_EQ(evaluate_stop(r, 10, 0.02, 0.001, 0.1).reason, "converged");
}

TEST(StopRule, TimeoutNamesTheMissedCondition) {
  StopRule r;
  const StopState st = evaluate_stop(r, 500, 0.5, 0.013, 1.0);
  EXPECT_TRUE(st.stop);
  EXPECT_FALSE(st.converged);
  EXPECT_EQ(st.reason, "timeout after 1.0 s: noise 1.3% > 0.5%");

  const StopState few = evaluate_stop(r, 3, 0.5, 0.001, 1.2, 7);
  EXPECT_EQ(few.reason, "timeout after 1.2 s: samples 3 < 10, 7 samples discarded as throttled");

  const StopState short_time = evaluate_stop(r, 50, 0.004, 0.001, 1.0);
  EXPECT_NE(short_time.reason.find("time 4 ms < 10 ms"), std::string::npos) << short_time.reason;
}

TEST(StopRule, SampleCapStopsAndSaysSo) {
  StopRule r;
  r.max_samples = 100;
  const StopState st = evaluate_stop(r, 100, 0.5, 0.02, 0.1);
  EXPECT_TRUE(st.stop);
  EXPECT_EQ(st.reason.rfind("sample cap 100 reached", 0), 0u) << st.reason;
}

TEST(ThinEvenly, KeepsEndsAndCount) {
  std::vector<double> xs;
  for (int i = 0; i < 1000; ++i) xs.push_back(i);
  const auto t = thin_evenly(xs, 200);
  ASSERT_EQ(t.size(), 200u);
  EXPECT_EQ(t.front(), 0);
  EXPECT_EQ(t.back(), 999);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_EQ(thin_evenly(std::vector<double>{1, 2, 3}, 200).size(), 3u);
}

TEST(CombineCalls, MedianOfCallMedians) {
  const std::vector<std::vector<double>> calls{{1, 2, 9}, {5, 6, 7}, {3, 4, 4}};
  // call medians 2, 6, 4 -> 4
  EXPECT_DOUBLE_EQ(combine_calls(calls, core::ReturnMode::median), 4.0);
  // call minima 1, 5, 3 -> 3
  EXPECT_DOUBLE_EQ(combine_calls(calls, core::ReturnMode::min), 3.0);
  EXPECT_DOUBLE_EQ(combine_calls({{1, 2, 9}}, core::ReturnMode::mean), 4.0);
}

}  // namespace
}  // namespace caliber::timing
