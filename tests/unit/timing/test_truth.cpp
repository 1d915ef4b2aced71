// What the timers claim, on a scripted device whose truth is known: cold means cold for every
// timed launch, launch gaps stay out of the direct timer's events, a missed stopping rule is
// marked, warmup is outside the timeout, and the clock regimes (docs/timing.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_device.hpp"
#include "timing/timer.hpp"

namespace caliber::timing {
namespace {

using test::FakeBackend;
using test::FakeDevice;

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct Truth : ::testing::Test {
  FakeDevice dev;
  FakeBackend backend;
  TimingOptions opt = test::fake_options(dev);
  std::function<void()> launch = [this] { dev.kernel(); };
  Measurement run() { return measure(dev, backend, launch, opt); }
};

TEST_F(Truth, GraphColdTimesEveryLaunchCold) {
  // 10 us warm, 4 us more when the L2 was just flushed: a cold launch is 14 us.
  dev.kernel_ms = [](long) { return 0.010; };
  dev.cold_extra_ms = 0.004;
  dev.flush_ms = 0.030;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::graph);
  EXPECT_GT(m.launches_per_sample, 10);
  EXPECT_NEAR(m.latency_ms, 0.014, 1e-9);
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::flush_per_launch);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::events_per_launch);
  EXPECT_GT(dev.graph_event_records, 0);
}

TEST_F(Truth, GraphWarmTimesLaunchesWithoutFlushes) {
  dev.kernel_ms = [](long) { return 0.010; };
  dev.cold_extra_ms = 0.004;
  opt.l2 = L2Policy::warm;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_NEAR(m.latency_ms, 0.010, 1e-9);
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::warm);
}

TEST_F(Truth, WithoutEventNodesTheGraphSaysOnlyTheFirstLaunchWasCold) {
  dev.caps_.graph_event_nodes = false;
  dev.kernel_ms = [](long) { return 0.010; };
  dev.cold_extra_ms = 0.004;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::flush_per_replay);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::events_per_replay);
  // One cold launch per replay of K: nearly the warm figure, which is why the row must say so.
  EXPECT_LT(m.latency_ms, 0.0105);
}

TEST_F(Truth, DirectHoldKeepsTheLaunchGapOutOfTheEvents) {
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long) { return 0.010; };
  dev.launch_gap_ms = 0.003;
  const Measurement held = run();
  ASSERT_TRUE(held.ok) << held.error;
  EXPECT_NEAR(held.latency_ms, 0.010, 1e-9);
  EXPECT_EQ(held.sample_method, caliber::core::SampleDelimiter::held);
  EXPECT_GT(dev.holds, 0);

  FakeDevice plain;
  plain.caps_.stream_hold = false;
  plain.kernel_ms = [](long) { return 0.010; };
  plain.launch_gap_ms = 0.003;
  TimingOptions o = test::fake_options(plain);
  o.timer = TimerKind::direct;
  const Measurement unheld = measure(
      plain, backend, [&] { plain.kernel(); }, o);
  ASSERT_TRUE(unheld.ok);
  EXPECT_NEAR(unheld.latency_ms, 0.013, 1e-9);
  EXPECT_EQ(unheld.sample_method, caliber::core::SampleDelimiter::unheld);
}

TEST_F(Truth, AHoldThatGivesUpIsDroppedAndSaid) {
  opt.timer = TimerKind::direct;
  dev.hold_gives_up = true;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::unheld);
  EXPECT_NE(m.note.find("hold gave up"), std::string::npos) << m.note;
  EXPECT_LE(dev.holds, 3);  // not one per sample
}

// The host cost of one call comes from the warmup's batches, enqueued back to back: on the
// scripted device a launch costs the host its gap and (synchronously) the kernel.
TEST_F(Truth, TheWarmupSaysTheHostCostOfALaunch) {
  dev.kernel_ms = [](long) { return 0.1; };
  dev.launch_gap_ms = 0.2;
  for (TimerKind t : {TimerKind::direct, TimerKind::graph}) {
    opt.timer = t;
    const Measurement m = run();
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_NEAR(m.host_ms, 0.3, 1e-9) << core::spelled(m.timer);
  }
}

// A pause of the host's own in one call of eight (a garbage collection) is not the cost of every
// call: the median launch, not the last batch's mean (which read 1.13 ms here).
TEST_F(Truth, AHostPauseInOneCallIsNotTheHostCost) {
  dev.kernel_ms = [](long) { return 0.1; };
  dev.launch_gap_ms = 0.2;
  long calls = 0;
  launch = [&] {
    if (++calls % 8 == 0) dev.now_ms += 5.0;
    dev.kernel();
  };
  for (TimerKind t : {TimerKind::direct, TimerKind::graph}) {
    opt.timer = t;
    const Measurement m = run();
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_NEAR(m.host_ms, 0.3, 1e-9) << core::spelled(m.timer);
  }
}

TEST_F(Truth, AMissedStoppingRuleIsMarked) {
  // 20% jitter and a short timeout: the 0.5% noise target cannot be met.
  dev.kernel_ms = [](long n) { return n % 2 == 0 ? 0.8 : 1.2; };
  opt.timer = TimerKind::direct;
  opt.stop.timeout_s = 0.02;
  opt.stop.max_noise = 0.0001;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_FALSE(m.converged);
  EXPECT_TRUE(has(m.markers, kMarkerStopMissed));
  EXPECT_NE(m.stop_reason.find("timeout"), std::string::npos);
}

TEST_F(Truth, AMetStoppingRuleIsNotMarked) {
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(m.converged);
  EXPECT_FALSE(has(m.markers, kMarkerStopMissed));
}

TEST_F(Truth, WarmupDoesNotEatTheTimeout) {
  // A warmup as long as the timeout used to leave one window of samples.
  opt.timer = TimerKind::direct;
  opt.stop.warmup_s = 0.2;
  opt.stop.timeout_s = 0.2;
  opt.stop.min_samples = 50;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_GE(m.total_samples, 50);
  EXPECT_TRUE(m.converged) << m.stop_reason;
}

TEST_F(Truth, TheTimeoutDoesNotCutTheWarmup) {
  // --warmup 5 --timeout 0.5: the warmup keeps its 5 s of device-busy time (it used to stop at
  // the timeout's 0.5 s, timing a machine that had warmed for a tenth of what was asked).
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long) { return 1.0; };
  opt.stop.warmup_s = 5.0;
  opt.stop.timeout_s = 0.5;
  opt.stop.min_samples = 3;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_GE(dev.uncaptured_launches, 5000);         // 5 s of 1 ms launches before the first sample
  EXPECT_LT(dev.uncaptured_launches, 5000 + 2000);  // and at most the timeout's worth after it
}

backends::ClockSample clock(int mhz, double watts, std::vector<std::string> reasons = {}) {
  backends::ClockSample c;
  c.sm_mhz = mhz;
  c.sm_max_mhz = 1980;
  c.power_w = watts;
  c.power_limit_w = 700;
  c.power_cap_only = std::find(reasons.begin(), reasons.end(), "power_cap") != reasons.end();
  c.reasons = std::move(reasons);
  return c;
}

TEST_F(Truth, BurstDropsPowerLimitedWindowsAndRests) {
  // The board hits its power limit for a stretch of readings, then recovers (after a rest).
  dev.clock_script = [](int call) -> std::optional<backends::ClockSample> {
    if (call >= 6 && call < 9) return clock(1470, 690, {"power_cap"});
    return clock(1980, 200);
  };
  dev.kernel_ms = [](long) { return 10.0; };  // a clock reading after every sample
  opt.stop.min_samples = 40;
  opt.stop.timeout_s = 2.0;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.regime, caliber::core::ClockRegime::burst);
  EXPECT_GT(m.regime_discarded, 0);
  EXPECT_GT(dev.slept_s, 0);
  EXPECT_EQ(m.power_capped, 0);
  EXPECT_TRUE(m.clock.known);
  EXPECT_EQ(m.clock.sm_min_mhz, 1980);  // no kept sample came from the limited clock
  EXPECT_FALSE(has(m.markers, kMarkerPowerCapped));
}

TEST_F(Truth, BurstDropsWindowsBelowTheBurstClockWhateverTheReason) {
  // A board too hot to boost reads 1700 of 1980 MHz with no power-cap reason: not a burst.
  dev.clock_script = [](int call) -> std::optional<backends::ClockSample> {
    if (call >= 4 && call < 7) return clock(1700, 200);
    return clock(1980, 200);
  };
  dev.kernel_ms = [](long) { return 10.0; };
  opt.stop.min_samples = 30;
  opt.stop.timeout_s = 2.0;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_GT(m.regime_discarded, 0);
  EXPECT_EQ(m.clock.sm_min_mhz, 1980);
}

TEST_F(Truth, BurstStartsFromARestedDevice) {
  // Hot at first (power near the limit): the measurement waits before it warms up.
  dev.clock_script = [](int call) -> std::optional<backends::ClockSample> {
    if (call < 5) return clock(1980, 650);
    return clock(1980, 200);
  };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_GT(m.settle_s, 0.03);
  EXPECT_LT(m.settle_s, opt.regime.rest_timeout_s);
}

TEST_F(Truth, SustainedSettlesThenKeepsThePowerLimitedClock) {
  // The clock falls as the board heats, then holds at the power limit.
  dev.clock_script = [](int call) -> std::optional<backends::ClockSample> {
    static const int steps[] = {1980, 1900, 1750, 1600, 1500};
    if (call < 5)
      return clock(steps[call], 400 + 60 * call,
                   call > 1 ? std::vector<std::string>{"power_cap"} : std::vector<std::string>{});
    return clock(1450, 690, {"power_cap"});
  };
  opt.regime.regime = ClockRegime::sustained;
  dev.kernel_ms = [](long) { return 0.5; };
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.regime, caliber::core::ClockRegime::sustained);
  EXPECT_TRUE(m.settled);
  // The power limit was seen: not settled before the power control had time to swing.
  EXPECT_GE(m.settle_s, opt.regime.settle_min_capped_s);
  EXPECT_LT(m.settle_s, opt.regime.settle_timeout_s);
  EXPECT_EQ(m.clock.sm_min_mhz, 1450);
  EXPECT_NEAR(m.clock.sm_mean_mhz, 1450, 1e-9);
  EXPECT_NEAR(m.clock.power_mean_w, 690, 1e-9);
  EXPECT_TRUE(has(m.clock.reasons, "power_cap"));
  EXPECT_TRUE(has(m.markers, kMarkerPowerCapped));
}

TEST_F(Truth, SustainedWorkThatStaysCoolSettlesAtOnce) {
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> { return clock(1980, 180); };
  opt.regime.regime = ClockRegime::sustained;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(m.settled);
  EXPECT_LE(m.settle_s, 2 * opt.regime.settle_window_s + 0.01);
}

TEST_F(Truth, SustainedWindowsOfATinyColdKernelCountWallTime) {
  // A 3 us kernel behind a 30 us flush: a window is settle_window_s of wall time (the device is
  // busy flushing all along), not 50 ms of the kernel's own time (~0.55 s of wall here).
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> { return clock(1980, 180); };
  dev.kernel_ms = [](long) { return 0.003; };
  dev.flush_ms = 0.030;
  opt.regime.regime = ClockRegime::sustained;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_TRUE(m.settled);
  EXPECT_LE(m.settle_s, 2 * opt.regime.settle_window_s + 0.01);
}

TEST_F(Truth, SustainedWaitsForTheLatencyToHold) {
  // The clock reads steady but the work is still slowing down (the readings lag): not settled
  // until four windows' latencies agree.
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> {
    return clock(1500, 690, {"power_cap"});
  };
  dev.kernel_ms = [](long n) { return n < 3000 ? 0.1 + 0.00005 * n : 0.25; };
  opt.regime.regime = ClockRegime::sustained;
  opt.regime.settle_min_capped_s = 0;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(m.settled);
  EXPECT_GT(dev.executions, 3000);
  EXPECT_NEAR(m.latency_ms, 0.25, 1e-9);
}

TEST_F(Truth, SustainedThatNeverSettlesSaysSoWithinItsBound) {
  dev.clock_script = [](int call) -> std::optional<backends::ClockSample> {
    return clock(call % 2 == 0 ? 1980 : 1500, call % 2 == 0 ? 300 : 690);
  };
  opt.regime.regime = ClockRegime::sustained;
  opt.regime.settle_timeout_s = 0.3;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_FALSE(m.settled);
  EXPECT_LE(m.settle_s, 0.3 + 0.05);
}

// --- Carried settling (docs/timing.md): the state one measurement leaves is kept by the next
// while the power class and the clock hold; anything else settles again.

TEST_F(Truth, SustainedCarriesACoolStateIntoTheNextMeasurement) {
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> { return clock(1980, 180); };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  const Measurement first = run();
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.settle, "settled");
  const Measurement second = run();
  ASSERT_TRUE(second.ok);
  EXPECT_EQ(second.settle, "carried");
  // one window of the carry check's length, not of a full settling's
  EXPECT_LT(opt.regime.carry_window_s, opt.regime.settle_window_s);
  EXPECT_LE(second.settle_s, opt.regime.carry_window_s + 0.005);
  EXPECT_EQ(carry.settled, 1);
  EXPECT_EQ(carry.carried, 1);
}

TEST_F(Truth, ACarriedStateShortensTheWarmup) {
  // Two carried measurements of a 0.5 ms kernel that differ only in the carried warmup's length:
  // the work they launch differs by that warmup's difference, 15 ms = 30 launches (the first
  // measurement of each settles, with the full warmup).
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> { return clock(1980, 180); };
  dev.kernel_ms = [](long) { return 0.5; };
  opt.regime.regime = ClockRegime::sustained;
  auto carried_launches = [&](double carried_warmup_s) {
    RegimeCarry carry;
    opt.carry = &carry;
    opt.regime.carried_warmup_s = carried_warmup_s;
    EXPECT_EQ(run().settle, "settled");
    const long before = dev.executions;
    const Measurement m = run();
    EXPECT_EQ(m.settle, "carried");
    return dev.executions - before;
  };
  ASSERT_DOUBLE_EQ(opt.stop.warmup_s, 0.02);
  const long full = carried_launches(0.02);
  const long short_warmup = carried_launches(0.005);
  EXPECT_GE(full - short_warmup, 25) << full << " vs " << short_warmup;
  EXPECT_LE(full - short_warmup, 35) << full << " vs " << short_warmup;
}

TEST_F(Truth, SustainedCarriesAPowerCappedStatePastTheSwingMinimum) {
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> {
    return clock(1450, 690, {"power_cap"});
  };
  dev.kernel_ms = [](long) { return 0.5; };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  const Measurement first = run();
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.settle, "settled");
  EXPECT_GE(first.settle_s, opt.regime.settle_min_capped_s);
  const Measurement second = run();
  ASSERT_TRUE(second.ok);
  EXPECT_EQ(second.settle, "carried");
  EXPECT_LE(second.settle_s, 2 * opt.regime.carry_window_s + 0.005);
  EXPECT_TRUE(has(second.markers, kMarkerPowerCapped));
}

TEST_F(Truth, APowerClassChangeSettlesAgain) {
  // Cool work first, then work that meets the power limit: the capped minimum applies again.
  bool hot = false;
  dev.clock_script = [&hot](int) -> std::optional<backends::ClockSample> {
    return hot ? clock(1450, 690, {"power_cap"}) : clock(1980, 180);
  };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  ASSERT_TRUE(run().ok);
  hot = true;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.settle, "settled");
  EXPECT_GE(m.settle_s, opt.regime.settle_min_capped_s);
}

TEST_F(Truth, AClockThatMovedSinceTheCarriedStateSettlesAgain) {
  // Both capped, but the clock the second measurement meets is not where the first one ended.
  int mhz = 1450;
  dev.clock_script = [&mhz](int) -> std::optional<backends::ClockSample> {
    return clock(mhz, 690, {"power_cap"});
  };
  dev.kernel_ms = [](long) { return 0.5; };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  ASSERT_TRUE(run().ok);
  mhz = 1700;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.settle, "settled");
  EXPECT_GE(m.settle_s, opt.regime.settle_min_capped_s);
}

TEST_F(Truth, AnIdleGapLongerThanTheCarryGapSettlesAgain) {
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> {
    return clock(1450, 690, {"power_cap"});
  };
  dev.kernel_ms = [](long) { return 0.5; };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  ASSERT_TRUE(run().ok);
  dev.now_ms += (opt.regime.carry_gap_s + 0.05) * 1e3;  // the device idles past the gap
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.settle, "settled");
  EXPECT_GE(m.settle_s, opt.regime.settle_min_capped_s);
}

TEST_F(Truth, ACoolStateCarriesOverALongerGapThanAWarmOne) {
  // Cool work idles 0.5 s between measurements (a large case's check): past the warm gap, within
  // the cool one, and its first window reads the clock where the state left it.
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> { return clock(1980, 180); };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  ASSERT_TRUE(run().ok);
  const double idle_s = 0.5;
  ASSERT_GT(idle_s, opt.regime.carry_gap_s);
  ASSERT_LT(idle_s, opt.regime.cool_carry_gap_s);
  dev.now_ms += idle_s * 1e3;
  EXPECT_EQ(run().settle, "carried");
  // Past the cool gap it settles in full.
  dev.now_ms += (opt.regime.cool_carry_gap_s + 0.05) * 1e3;
  EXPECT_EQ(run().settle, "settled");
}

TEST_F(Truth, ACoolStateWhoseClockDroppedInTheGapSettlesAgain) {
  // The board idled down during the gap and its first window still reads a low clock.
  int mhz = 1980;
  dev.clock_script = [&mhz](int) -> std::optional<backends::ClockSample> {
    return clock(mhz, 180);
  };
  opt.regime.regime = ClockRegime::sustained;
  RegimeCarry carry;
  opt.carry = &carry;
  ASSERT_TRUE(run().ok);
  dev.now_ms += 500;
  mhz = 1700;
  EXPECT_EQ(run().settle, "settled");
}

TEST_F(Truth, WithoutACarryEveryMeasurementSettles) {
  dev.clock_script = [](int) -> std::optional<backends::ClockSample> {
    return clock(1450, 690, {"power_cap"});
  };
  dev.kernel_ms = [](long) { return 0.5; };
  opt.regime.regime = ClockRegime::sustained;
  for (int i = 0; i < 2; ++i) {
    const Measurement m = run();
    ASSERT_TRUE(m.ok);
    EXPECT_EQ(m.settle, "settled");
    EXPECT_GE(m.settle_s, opt.regime.settle_min_capped_s);
  }
}

TEST_F(Truth, BurstSaysWhetherItRested) {
  bool hot = false;
  dev.clock_script = [&hot](int call) -> std::optional<backends::ClockSample> {
    if (hot && call < 3) return clock(1980, 600);
    return clock(1980, 100);
  };
  EXPECT_EQ(run().settle, "carried");  // rested at the first reading
  hot = true;
  dev.clock_calls = 0;
  const Measurement m = run();
  EXPECT_EQ(m.settle, "settled");
  EXPECT_GT(dev.slept_s, 0.0);
}

TEST_F(Truth, WithoutClocksTheRegimeIsDeclaredNotVerified) {
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_FALSE(m.clock.known);
  EXPECT_NE(m.note.find("declared, not verified"), std::string::npos) << m.note;
}

TEST_F(Truth, OnTheHostASampleIsABatchOfLaunchesAndSaysSo) {
  dev.caps_.host = true;
  dev.caps_.stream_hold = false;
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long) { return 0.002; };
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.launches_per_sample, 100);  // 0.2 ms / 0.002 ms
  EXPECT_NEAR(m.latency_ms, 0.002, 1e-12);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::host_batch);
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::flush_per_sample);
}

TEST(RegimeNames, ParseAndPrint) {
  EXPECT_EQ(parse_word<ClockRegime>("burst"), ClockRegime::burst);
  EXPECT_EQ(parse_word<ClockRegime>("sustained"), ClockRegime::sustained);
  EXPECT_FALSE(parse_word<ClockRegime>("boost").has_value());
  EXPECT_STREQ(to_string(ClockRegime::sustained), "sustained");
}

TEST(NoiseDefault, TheHostGetsATargetItCanMeet) {
  backends::Capabilities host;
  host.host = true;
  EXPECT_DOUBLE_EQ(resolved_max_noise(0, host), 0.02);
  EXPECT_DOUBLE_EQ(resolved_max_noise(0, backends::Capabilities{}), 0.005);
  EXPECT_DOUBLE_EQ(resolved_max_noise(0.01, host), 0.01);
}

}  // namespace
}  // namespace caliber::timing
