// The run's cost model (run/estimate.hpp): what a case costs from its shape, and the ETA that
// scales the estimate by how the finished cases compared with theirs.
#include <gtest/gtest.h>

#include "run/estimate.hpp"

namespace caliber::run {
namespace {

TEST(Eta, BeforeAnyCaseItIsTheEstimate) {
  const std::vector<double> est = {1, 2, 3};
  EXPECT_DOUBLE_EQ(eta_s(est, 0, 0), 6.0);
}

TEST(Eta, ScalesTheRestByHowTheFinishedCasesCompared) {
  const std::vector<double> est = {1, 1, 2, 4};  // 8 s, a prior of 2 s
  // Two cases done in 4 s where 2 s were estimated: the rest (6 s) scaled by (4+2)/(2+2).
  EXPECT_DOUBLE_EQ(eta_s(est, 2, 4.0), 9.0);
  // Faster than estimated: (1+2)/(2+2).
  EXPECT_DOUBLE_EQ(eta_s(est, 2, 1.0), 4.5);
  // Once most of the run is done its own ratio dominates: 7 s estimated took 14.
  EXPECT_NEAR(eta_s(est, 4, 14.0), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(eta_s({1, 1, 2, 4, 92}, 4, 16.0), 92 * (16.0 + 25) / (8 + 25));
}

TEST(Eta, ACheapFirstCaseDoesNotScaleTheRestByAQuarter) {
  // The H200's main job of 2026-12-02: a first case estimated 2.07 s ran in 0.35 s, of 298 s
  // estimated; the raw ratio read 0.29x the true time left.
  std::vector<double> est(144, 2.0);
  est.front() = 2.07;
  const double left = 143 * 2.0;
  const double eta = eta_s(est, 1, 0.35);
  EXPECT_GT(eta, 0.95 * left);
  EXPECT_LT(eta, left);
}

TEST(Eta, TheRatioIsBoundedAndTheEndIsZero) {
  const std::vector<double> est = {1, 1};           // a prior of 0.5 s
  EXPECT_DOUBLE_EQ(eta_s(est, 1, 100.0), 4.0);      // a first case 100x slow: at most 4x
  EXPECT_DOUBLE_EQ(eta_s(est, 1, 0.0), 0.5 / 1.5);  // instant: the prior's share
  EXPECT_DOUBLE_EQ(eta_s(est, 1, -10.0), 0.25);     // at least a quarter
  EXPECT_DOUBLE_EQ(eta_s(est, 2, 5.0), 0.0);
}

TEST(CostModel, DeviceTermsFollowTheRegimeAndTheCarry) {
  core::Knobs k;
  CostModel m = cost_model(false, k);
  EXPECT_GT(m.settle_capped_s, m.settle_cool_s);
  EXPECT_GT(m.settle_carried_s, 0);
  k.clock = core::ClockRegime::burst;
  m = cost_model(false, k);
  EXPECT_EQ(m.settle_cool_s, 0);
  EXPECT_EQ(m.settle_capped_s, 0);
  // The host: no settling; sampling bounded by the timeout.
  k.timeout_s = 0.2;
  m = cost_model(true, k);
  EXPECT_EQ(m.settle_capped_s, 0);
  EXPECT_LE(m.sample_s, 2 * k.warmup_s + 0.2 + 1e-12);
}

}  // namespace
}  // namespace caliber::run
