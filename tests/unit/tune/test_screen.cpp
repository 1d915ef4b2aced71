// A sweep's screening pass (tuner.hpp, Screen): every config timed briefly, the fastest quarter
// timed again at the sweep's budget, the winner from that second pass.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "caliber/context.hpp"
#include "tune/sweep_options.hpp"
#include "tune/tuner.hpp"
#include "tune_test_util.hpp"

namespace caliber::tune {
namespace {

using testing::key_for;
using testing::make_settings;
using testing::TempDir;

Config cfg3(std::int64_t block, std::int64_t vec, std::int64_t waves) {
  return Config{{{"block", block}, {"vec", vec}, {"waves", waves}}};
}

// 4 x 3 x 2 = 24 configs, as an elementwise op declares them.
ConfigSpace space24() {
  ConfigSpace s;
  for (std::int64_t block : {128, 256, 512, 1024})
    for (std::int64_t vec : {1, 2, 4})
      for (std::int64_t waves : {1, 4}) s.configs.push_back(cfg3(block, vec, waves));
  s.default_config = cfg3(256, 4, 4);
  s.key = {{"N", 1 << 20, KeyStrategy::log2}};
  return s;
}

// True latency: block 512, vec 4, waves 4 is fastest (1.00 ms); the others up to ~1.9 ms.
double true_ms(const Config& c) {
  return 1.0 + std::abs(std::log2(static_cast<double>(c.get("block")) / 512.0)) * 0.1 +
         (4 - c.get("vec")) * 0.1 + (c.get("waves") == 4 ? 0.0 : 0.05);
}

Trial trial(double ms, bool rejected = false) {
  Trial t;
  t.ms = ms;
  t.rejected = rejected;
  return t;
}

TEST(Screen, SurvivorsAreTheFastestQuarterAtLeastFourInTheirOrder) {
  std::vector<Trial> t;
  for (double ms : {9.0,  1.0,  8.0,  2.0,  7.0,  3.0,  6.0,  4.0,  5.0,  10.0,
                    11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0})
    t.push_back(trial(ms));
  Screen s;
  // 20 valid: a quarter is 5
  EXPECT_EQ(screen_survivors(t, s), (std::vector<std::size_t>{1, 3, 5, 7, 8}));
  // rejected trials never survive, and count out of the quarter's base
  t[1].rejected = true;
  t[3].rejected = true;
  EXPECT_EQ(screen_survivors(t, s), (std::vector<std::size_t>{4, 5, 6, 7, 8}));
  // at least min_keep
  std::vector<Trial> few{trial(3), trial(1), trial(2), trial(5), trial(4), trial(6)};
  EXPECT_EQ(screen_survivors(few, s), (std::vector<std::size_t>{0, 1, 2, 4}));
  // ties keep the earlier config
  std::vector<Trial> ties{trial(2), trial(1), trial(1), trial(1), trial(1), trial(1)};
  EXPECT_EQ(screen_survivors(ties, s), (std::vector<std::size_t>{1, 2, 3, 4}));
  // fewer valid than min_keep: all of them
  std::vector<Trial> two{trial(2), trial(1, true), trial(3)};
  EXPECT_EQ(screen_survivors(two, s), (std::vector<std::size_t>{0, 2}));
}

TEST(Screen, ASweepScreensThenTimesTheQuarterAgainAndFindsTheWinner) {
  TempDir dir;
  Tuner t(make_settings(Mode::live, dir.path() / "tune.db"));
  int screened = 0, full = 0;
  // The screen reads each config 3% off its true figure, up or down by config: noisy, but less
  // than the gaps between the best configs and the rest.
  Screen screen;
  screen.time = [&](const Config& c) {
    ++screened;
    const double sign = (c.get("block") / 128 + c.get("vec") + c.get("waves")) % 2 ? 1 : -1;
    return true_ms(c) * (1 + 0.03 * sign);
  };
  TimeConfig exact = [&](const Config& c) {
    ++full;
    return true_ms(c);
  };
  const Selection s = t.select(key_for("add", ""), space24(), exact, screen);
  EXPECT_EQ(s.source, "tuned");
  EXPECT_EQ(s.config, cfg3(512, 4, 4));
  EXPECT_EQ(screened, 24);
  EXPECT_EQ(full, 6) << "a quarter of 24";
  EXPECT_EQ(s.tried, 24);
  int out = 0;
  for (const Trial& tr : s.trials) {
    if (tr.screened_out) {
      ++out;
      continue;
    }
    EXPECT_DOUBLE_EQ(tr.ms, true_ms(tr.config)) << "a finalist keeps its second-pass figure";
  }
  EXPECT_EQ(out, 18);
  EXPECT_NE(s.note.find("the fastest 6 of a screen timed again"), std::string::npos) << s.note;
  // the stored record keeps which trials were screened out
  std::vector<std::string> w;
  auto cache = ConfigCache::open(dir.path() / "tune.db", ConfigCache::Access::read_only, w);
  auto rec = cache->find(key_for("add", tune_key(space24().key)));
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->trials, s.trials);
  EXPECT_DOUBLE_EQ(rec->ms, 1.0);
}

TEST(Screen, TheWinnerComesFromTheSecondPassNotTheScreen) {
  // The screen reads the true best as second-best; the second pass puts it first.
  TempDir dir;
  Tuner live(make_settings(Mode::record, {}, dir.path()));
  Screen screen;
  screen.time = [](const Config& c) {
    return c == cfg3(512, 4, 4) ? 1.02 : (c == cfg3(256, 4, 4) ? 1.01 : true_ms(c));
  };
  TimeConfig exact = [](const Config& c) { return true_ms(c); };
  const Selection s = live.select(key_for("add", ""), space24(), exact, screen);
  EXPECT_EQ(s.config, cfg3(512, 4, 4));
}

TEST(Screen, SmallSpacesAndNoScreenSweepInOnePass) {
  int screened = 0, full = 0;
  Screen screen;
  screen.time = [&](const Config& c) {
    ++screened;
    return true_ms(c);
  };
  TimeConfig exact = [&](const Config& c) {
    ++full;
    return true_ms(c);
  };
  ConfigSpace small = space24();
  small.configs.resize(8);  // under Screen::from
  TempDir dir;
  Tuner t(make_settings(Mode::live, dir.path() / "tune.db"));
  (void)t.select(key_for("add", "a"), small, exact, screen);
  EXPECT_EQ(screened, 0);
  EXPECT_EQ(full, 8);
  full = 0;
  (void)t.select(key_for("add", "b"), space24(), exact, Screen{});
  EXPECT_EQ(full, 24) << "no screen: every config at the sweep's budget";
}

TEST(Screen, AFinalistThatFailsTheSecondPassIsRejectedAndAnotherWins) {
  TempDir dir;
  Tuner t(make_settings(Mode::live, dir.path() / "tune.db"));
  Screen screen;
  screen.time = [](const Config& c) { return true_ms(c); };
  TimeConfig exact = [](const Config& c) -> double {
    if (c == cfg3(512, 4, 4)) throw ConfigRejected("out of resources");
    return true_ms(c);
  };
  const Selection s = t.select(key_for("add", ""), space24(), exact, screen);
  EXPECT_EQ(s.source, "tuned");
  EXPECT_NE(s.config, cfg3(512, 4, 4));
  EXPECT_EQ(s.rejected, 1);
  for (const Trial& tr : s.trials) {
    if (tr.config == cfg3(512, 4, 4)) {
      EXPECT_TRUE(tr.rejected && !tr.screened_out);
    }
  }
}

TEST(Screen, TheScreensBudgetIsBelowTheSweeps) {
  timing::TimingOptions full;
  const timing::TimingOptions sweep = sweep_options(full);
  const timing::TimingOptions scr = screen_options(full);
  EXPECT_LT(scr.stop.min_samples, sweep.stop.min_samples);
  EXPECT_LE(scr.stop.min_time_s, sweep.stop.min_time_s);
  EXPECT_LT(scr.stop.warmup_s, sweep.stop.warmup_s);
  EXPECT_LT(scr.regime.carry_window_s, sweep.regime.carry_window_s);
  EXPECT_LE(scr.regime.carried_warmup_s, 0.001);
  EXPECT_GE(scr.stop.max_noise, 1.0) << "no noise target: three samples and done";
  EXPECT_EQ(scr.timer, sweep.timer);
  EXPECT_EQ(scr.l2, sweep.l2);
}

}  // namespace
}  // namespace caliber::tune
