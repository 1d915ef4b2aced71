// A sweep's timing budget: a fraction of a full measurement's, and no power-limit wait per config.
#include <gtest/gtest.h>

#include "tune/sweep_options.hpp"

namespace caliber::tune {
namespace {

TEST(SweepOptions, CutTheFullBudgetAndThePowerLimitWait) {
  timing::TimingOptions full;
  full.repeat = 3;
  full.quantiles = {0.2, 0.8};
  const timing::TimingOptions s = sweep_options(full);
  EXPECT_EQ(s.repeat, 1);
  EXPECT_TRUE(s.quantiles.empty());
  EXPECT_LE(s.stop.min_samples, 5);
  EXPECT_LE(s.stop.timeout_s, 0.25);
  EXPECT_LE(s.regime.settle_window_s, 0.02);
  // the full rule waits 1.5 s once the power limit was seen; a config of a sweep does not
  EXPECT_GE(full.regime.settle_min_capped_s, 1.0);
  EXPECT_LE(s.regime.settle_min_capped_s, 0.1);
  EXPECT_LE(s.regime.settle_timeout_s, 0.5);
  EXPECT_LT(s.regime.carry_window_s, full.regime.carry_window_s);
  EXPECT_LT(s.graph_replay_ms, full.graph_replay_ms);
  // what the run asked for and the sweep does not change stays
  EXPECT_EQ(s.timer, full.timer);
  EXPECT_EQ(s.l2, full.l2);
  EXPECT_EQ(s.regime.regime, full.regime.regime);
}

TEST(SweepOptions, NeverLooserThanWhatTheRunAsked) {
  timing::TimingOptions full;
  full.stop.timeout_s = 0.1;
  full.regime.settle_min_capped_s = 0;
  const timing::TimingOptions s = sweep_options(full);
  EXPECT_DOUBLE_EQ(s.stop.timeout_s, 0.1);
  EXPECT_DOUBLE_EQ(s.regime.settle_min_capped_s, 0);
}

}  // namespace
}  // namespace caliber::tune
