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
  const std::vector<double> est = {1, 1, 2, 4};
  // Two cases done in 4 s where 2 s were estimated: the rest (6 s) takes twice as long.
  EXPECT_DOUBLE_EQ(eta_s(est, 2, 4.0), 12.0);
  // Faster than estimated: half.
  EXPECT_DOUBLE_EQ(eta_s(est, 2, 1.0), 3.0);
}

TEST(Eta, TheRatioIsBoundedAndTheEndIsZero) {
  const std::vector<double> est = {1, 1};
  EXPECT_DOUBLE_EQ(eta_s(est, 1, 100.0), 4.0);  // a first case 100x slow: at most 4x
  EXPECT_DOUBLE_EQ(eta_s(est, 1, 0.0), 0.25);   // at least a quarter
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
