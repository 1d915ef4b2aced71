// measure() on a scripted fake device: timers, fallback per error class, repetition, throttle
// discard, RNG guard, timer choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_device.hpp"
#include "timing/timer.hpp"

namespace caliber::timing {
namespace {

using backends::Failure;
using test::FakeBackend;
using test::FakeDevice;
using Markers = std::vector<std::string>;

struct Fixture : ::testing::Test {
  FakeDevice dev;
  FakeBackend backend;
  TimingOptions opt = test::fake_options(dev);
  std::function<void()> launch = [this] { dev.kernel(); };
  Measurement run() { return measure(dev, backend, launch, opt); }
};

using Direct = Fixture;
using Graph = Fixture;
using Fallback = Fixture;
using Repeat = Fixture;
using Throttle = Fixture;
using RngGuard = Fixture;
using TimerChoiceTest = Fixture;

TEST_F(Direct, ReportsTheKernelTimeAndFlushesOutsideTheEvents) {
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long) { return 0.25; };
  dev.flush_ms = 5.0;  // would dominate if it were inside the events
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::direct);
  EXPECT_DOUBLE_EQ(m.latency_ms, 0.25);
  EXPECT_EQ(m.markers, (Markers{"timer=direct"}));
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::flush_per_launch);
  EXPECT_GE(dev.flushes, m.total_samples);
  EXPECT_EQ(dev.captures, 0);
  EXPECT_EQ(m.stop_reason, "converged");
  EXPECT_GE(m.total_samples, opt.stop.min_samples);
}

TEST_F(Direct, WarmDoesNotFlush) {
  opt.timer = TimerKind::direct;
  opt.l2 = L2Policy::warm;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(dev.flushes, 0);
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::warm);
}

TEST_F(Direct, StopsOnTimeoutAndNamesTheNoise) {
  opt.timer = TimerKind::direct;
  opt.stop.max_noise = 1e-6;
  opt.stop.timeout_s = 0.5;
  dev.kernel_ms = [](long n) { return n % 3 == 0 ? 1.0 : (n % 3 == 1 ? 1.1 : 1.3); };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.stop_reason.rfind("timeout after", 0), 0u) << m.stop_reason;
  EXPECT_NE(m.stop_reason.find("noise"), std::string::npos) << m.stop_reason;
  EXPECT_GT(m.noise, opt.stop.max_noise);
  // It really stopped at the timeout, which counts from the first sample: the warmup (at most
  // twice --warmup of wall time) comes before it.
  EXPECT_LT(dev.wall_s(), 2 * opt.stop.warmup_s + 0.5 + 0.01);
}

TEST_F(Direct, ConvergesWithJitterOnceEnoughSamples) {
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long n) { return n % 2 == 0 ? 1.0 : 1.02; };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.stop_reason, "converged");
  EXPECT_LE(m.noise, opt.stop.max_noise);
  EXPECT_GT(m.noise, 0.0);
}

TEST_F(Direct, KeepsAtMostTheSampleCapForAB) {
  opt.timer = TimerKind::direct;
  opt.stop.min_samples = 1000;
  opt.stop.timeout_s = 100;
  dev.kernel_ms = [](long) { return 0.01; };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_GE(m.total_samples, 1000);
  EXPECT_EQ(m.samples_ms.size(), 200u);
}

TEST_F(Direct, LaunchErrorIsClassified) {
  opt.timer = TimerKind::direct;
  dev.throw_on_launch = 700;
  dev.throw_after = 5;
  Measurement m = run();
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::fatal_on_device);
  EXPECT_EQ(m.latency_ms, 0);
  EXPECT_TRUE(m.samples_ms.empty());
  EXPECT_TRUE(process_unusable(m));

  FakeDevice dev2;
  dev2.throw_on_launch = 2;  // out of memory: an ordinary error
  TimingOptions o2 = test::fake_options(dev2);
  o2.timer = TimerKind::direct;
  m = measure(
      dev2, backend, [&] { dev2.kernel(); }, o2);
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::other);
  EXPECT_FALSE(process_unusable(m));
}

TEST_F(Graph, PerLaunchTimeFromKLaunchesPerReplay) {
  // A backend without event nodes: a replay is timed whole and divided by K.
  dev.caps_.graph_event_nodes = false;
  opt.timer = TimerKind::graph;
  // The first launch pays lazy loading; the estimate must not see it.
  dev.kernel_ms = [](long n) { return n == 0 ? 50.0 : 0.01; };
  dev.flush_ms = 5.0;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::graph);
  EXPECT_EQ(m.launches_per_sample, 100);  // 1 ms replay / 0.01 ms
  EXPECT_NEAR(m.latency_ms, 0.01, 1e-12);
  EXPECT_TRUE(m.markers.empty());
  EXPECT_EQ(m.l2_method, caliber::core::L2Method::flush_per_replay);
  EXPECT_EQ(dev.captures, 1);
  EXPECT_EQ(dev.captured_launches, 100);
  EXPECT_GE(dev.flushes, m.total_samples);
  EXPECT_EQ(m.repeat, 1);
}

TEST_F(Graph, KIsCapped) {
  opt.timer = TimerKind::graph;
  opt.max_graph_launches = 64;
  dev.kernel_ms = [](long) { return 0.001; };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.launches_per_sample, 64);
  EXPECT_NEAR(m.latency_ms, 0.001, 1e-12);
}

TEST_F(Graph, LongKernelUsesOneLaunchPerReplay) {
  opt.timer = TimerKind::graph;
  dev.kernel_ms = [](long) { return 3.0; };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.launches_per_sample, 1);
  EXPECT_DOUBLE_EQ(m.latency_ms, 3.0);
}

TEST_F(Fallback, EveryRefusedCodeFallsBackWithTheExactMarkers) {
  for (int code = 900; code <= 908; ++code) {
    FakeDevice d;
    d.throw_in_capture = code;
    TimingOptions o = test::fake_options(d);
    o.timer = TimerKind::graph;
    o.op = "sort";
    const Measurement m = measure(
        d, backend, [&] { d.kernel(); }, o);
    ASSERT_TRUE(m.ok) << code << ": " << m.error;
    EXPECT_EQ(m.timer, caliber::core::TimerKind::direct) << code;
    EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=1"}))
        << code;
    EXPECT_EQ(d.aborts, 1) << code;
    EXPECT_DOUBLE_EQ(m.latency_ms, 1.0) << code;
    EXPECT_FALSE(m.note.empty());
  }
}

TEST_F(Fallback, RefusedAtEndCaptureFallsBackToo) {
  opt.timer = TimerKind::graph;
  dev.throw_at_end_capture = 901;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=1"}));
}

// A host language's own error under capture (a Python exception in the Python package,
// docs/python.md) is a refusal: the case falls back to the direct timer, where the same launch
// runs outside any capture.
TEST_F(Fallback, HostErrorUnderCaptureFallsBackLikeARefusal) {
  opt.timer = TimerKind::graph;
  auto refusing = [this] {
    dev.kernel();
    if (dev.capturing()) throw CaptureRefused("ValueError: not under capture");
  };
  const Measurement m = measure(dev, backend, refusing, opt);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=1"}));
  EXPECT_EQ(dev.aborts, 1);
  EXPECT_NE(m.note.find("ValueError: not under capture"), std::string::npos) << m.note;
  EXPECT_DOUBLE_EQ(m.latency_ms, 1.0);
}

// A launch that allocates its output holds that memory once per launch captured: add c64 at 1G
// elements (8 GiB a launch) ran out of memory in a graph of several launches on an 80 GB H100
// (2026-12-05) and was timed direct. The capture is tried once more with one launch a replay,
// which fits; only when that fails too does the direct fallback come.
TEST_F(Fallback, ACaptureOutOfMemoryIsTriedWithOneLaunchBeforeTheFallback) {
  opt.timer = TimerKind::graph;
  dev.kernel_ms = [](long) { return 0.05; };  // short: several launches a replay
  int fits = 1;                               // launches one capture has room for
  int in_this_capture = 0, attempt = -1;
  auto allocating = [&] {
    dev.kernel();
    if (!dev.capturing()) return;
    if (dev.aborts != attempt) attempt = dev.aborts, in_this_capture = 0;  // a new capture
    if (++in_this_capture > fits)
      throw CaptureRefused("OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB");
  };
  const Measurement m = measure(dev, backend, allocating, opt);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::graph);
  EXPECT_EQ(m.launches_per_sample, 1);
  EXPECT_EQ(dev.aborts, 1);
  EXPECT_NE(m.note.find("launches ran out of memory (OutOfMemoryError: CUDA out of memory"),
            std::string::npos)
      << m.note;
  EXPECT_NE(m.note.find("one launch a replay"), std::string::npos) << m.note;
  EXPECT_NEAR(m.latency_ms, 0.05, 1e-9);

  // No room even for one: the direct fallback, as before, after the second attempt.
  fits = 0;
  attempt = -1;
  const int aborts = dev.aborts;
  const Measurement d = measure(dev, backend, allocating, opt);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(dev.aborts - aborts, 2);
  EXPECT_NE(d.note.find("capture refused (OutOfMemoryError"), std::string::npos) << d.note;
}

// The regression of a refused capture's leftover error (H200, 2026-12-01): the baseline is
// graph-timed, the candidate's capture is refused (it synchronizes inside its launch) and it is
// timed direct; then the one-regime-per-row re-timing of the baseline by the direct timer met the
// refusal's code through the baseline's own last-error check, in the op's copy of the runtime the
// device cannot clear, and failed the case. A refused-capture code outside any capture is that
// leftover: the launch's own read cleared it, and the launch is run again.
TEST_F(Fallback, RefusedCapturesLeftoverErrorDoesNotFailTheNextProvidersDirectTiming) {
  opt.timer = TimerKind::graph;
  const Measurement ref_graph = measure(
      dev, backend, [this] { dev.kernel(); }, opt);
  ASSERT_TRUE(ref_graph.ok) << ref_graph.error;
  ASSERT_EQ(ref_graph.timer, caliber::core::TimerKind::graph);
  dev.throw_in_capture = 900;
  dev.refusal_leaves_op_error = true;
  // The candidate checks its synchronize's code, not the runtime's last error.
  const Measurement cand = measure(
      dev, backend, [this] { dev.kernel(1.0, false); }, opt);
  ASSERT_TRUE(cand.ok) << cand.error;
  EXPECT_EQ(cand.timer, caliber::core::TimerKind::direct);
  ASSERT_EQ(dev.op_runtime_error, 900);  // left behind, out of the device's reach
  TimingOptions direct = opt;
  direct.timer = TimerKind::direct;
  const Measurement ref = measure(
      dev, backend, [this] { dev.kernel(); }, direct);
  ASSERT_TRUE(ref.ok) << ref.error;
  EXPECT_EQ(ref.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(dev.stale_errors_read, 1);
  EXPECT_DOUBLE_EQ(ref.latency_ms, 1.0);
}

// The same leftover read by the refused candidate's own first direct launch: a fallback, not a
// capture that poisoned the context.
TEST_F(Fallback, RefusedCapturesLeftoverReadByTheFallbackItselfIsNoPoison) {
  opt.timer = TimerKind::graph;
  dev.throw_in_capture = 900;
  dev.refusal_leaves_op_error = true;
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=1"}));
  EXPECT_EQ(dev.stale_errors_read, 1);
}

// A launch that keeps failing with a refused-capture code outside any capture fails its case:
// the leftover is forgiven once, not every error.
TEST_F(Fallback, ARefusedCodeEveryDirectLaunchStillFails) {
  opt.timer = TimerKind::direct;
  dev.throw_on_launch = 900;
  const Measurement m = run();
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.error.find("code 900"), std::string::npos) << m.error;
}

TEST_F(Fallback, FallbackRowCarriesTheRepeatCount) {
  opt.timer = TimerKind::graph;
  opt.repeat = 3;
  dev.throw_in_capture = 900;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.repeat, 3);
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=3"}));
  EXPECT_EQ(m.call_medians_ms.size(), 3u);
}

TEST_F(Fallback, FatalInCaptureFailsWithoutLatencyAndTimesNothingMore) {
  for (int code : {700, 710, 714, 719}) {
    FakeDevice d;
    d.throw_in_capture = code;
    TimingOptions o = test::fake_options(d);
    o.timer = TimerKind::graph;
    const Measurement m = measure(
        d, backend, [&] { d.kernel(); }, o);
    const long launched_before_capture = d.uncaptured_launches;
    EXPECT_FALSE(m.ok) << code;
    EXPECT_EQ(m.failure, Failure::fatal_on_device) << code;
    EXPECT_EQ(m.latency_ms, 0) << code;
    EXPECT_TRUE(m.samples_ms.empty()) << code;
    EXPECT_TRUE(process_unusable(m));
    EXPECT_NE(m.error.find("code " + std::to_string(code)), std::string::npos) << m.error;
    // No direct fallback ran after the capture: the only flushes are the four that estimated the
    // flush's own time before it.
    EXPECT_EQ(d.flushes, 4) << code;
    EXPECT_EQ(d.uncaptured_launches, launched_before_capture);
    EXPECT_TRUE(std::find(m.markers.begin(), m.markers.end(), "BENCHMARK_DIRECT_NO_CUDAGRAPH") ==
                m.markers.end());
  }
}

TEST_F(Fallback, RefusedThenUnhealthyIsCapturePoisoned) {
  opt.timer = TimerKind::graph;
  opt.op = "dropout";
  dev.throw_in_capture = 906;
  dev.unhealthy_after_abort = true;
  const Measurement m = run();
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::capture_poisoned);
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_CAPTURE_POISONED"}));
  EXPECT_NE(m.error.find("'dropout'"), std::string::npos) << m.error;
  EXPECT_NE(m.error.find("capture-incompatible"), std::string::npos) << m.error;
  EXPECT_EQ(m.latency_ms, 0);
  EXPECT_TRUE(process_unusable(m));
}

TEST_F(Fallback, RefusedThenFailingFallbackIsCapturePoisoned) {
  opt.timer = TimerKind::graph;
  opt.op = "rand";
  dev.throw_in_capture = 900;
  dev.poison_code_after_abort = 999;  // the context looked fine, yet every launch now fails
  const Measurement m = run();
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::capture_poisoned);
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_CAPTURE_POISONED"}));
  EXPECT_NE(m.error.find("'rand'"), std::string::npos);
}

TEST_F(Fallback, OtherErrorInCaptureFailsTheCaseOnly) {
  opt.timer = TimerKind::graph;
  dev.throw_in_capture = 2;
  const Measurement m = run();
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::other);
  EXPECT_FALSE(process_unusable(m));
}

TEST_F(Fallback, DenyListNeverAttemptsCapture) {
  opt.timer = TimerKind::graph;
  opt.capture_denied = true;
  opt.op = "sort";
  dev.unhealthy_after_abort = true;  // an attempt would have been the damage
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(dev.captures, 0);
  EXPECT_EQ(m.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=1"}));
  EXPECT_NE(m.note.find("deny list"), std::string::npos);
}

TEST_F(Fallback, BackendDenyListIsHonouredForTheNamedOp) {
  opt.timer = TimerKind::graph;
  backend.deny = {"dropout"};
  opt.op = "softmax";
  ASSERT_TRUE(run().ok);
  EXPECT_EQ(dev.captures, 1);

  FakeDevice d2;
  TimingOptions o = test::fake_options(d2);
  o.timer = TimerKind::graph;
  o.op = "dropout";
  const Measurement m = measure(
      d2, backend, [&] { d2.kernel(); }, o);
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(d2.captures, 0);
  EXPECT_EQ(m.markers, (Markers{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "repeat=1"}));
}

TEST_F(Fallback, NonNativeExceptionPropagatesAfterAbortAndRestore) {
  opt.timer = TimerKind::graph;
  opt.rng = true;
  auto throwing = [this] {
    dev.kernel();
    if (dev.capturing()) throw ConfigRejected("too many registers");
  };
  EXPECT_THROW((void)measure(dev, backend, throwing, opt), ConfigRejected);
  EXPECT_EQ(dev.aborts, 1);
  EXPECT_FALSE(dev.capturing());
  EXPECT_EQ(dev.gen.offset, static_cast<std::uint64_t>(dev.uncaptured_launches));
}

TEST_F(Repeat, MedianOfCallMediansOnScriptedCalls) {
  opt.timer = TimerKind::direct;
  opt.repeat = 3;
  // Each call of the direct timer creates four events before its first launch (two for the
  // warmup, two for the samples), so the events created so far tell which call a launch is in.
  const std::vector<double> per_call{1.0, 3.0, 2.0};
  dev.kernel_ms = [&](long) { return per_call.at((dev.events_created - 1) / 4); };
  const Measurement m = run();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.repeat, 3);
  EXPECT_FALSE(m.repeat_skipped);
  EXPECT_EQ(m.call_medians_ms, per_call);
  EXPECT_DOUBLE_EQ(m.latency_ms, 2.0);
  EXPECT_EQ(m.markers, (Markers{"timer=direct", "repeat=3"}));
  EXPECT_EQ(dev.events_created, 12);
}

TEST_F(Repeat, DefaultOfOneChangesNothing) {
  opt.timer = TimerKind::direct;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.repeat, 1);
  EXPECT_FALSE(m.repeat_skipped);
  EXPECT_TRUE(m.call_medians_ms.empty());
  EXPECT_EQ(dev.events_created, 4);
  EXPECT_EQ(m.markers, (Markers{"timer=direct"}));
}

TEST_F(Repeat, SkippedWithQuantiles) {
  opt.timer = TimerKind::direct;
  opt.repeat = 4;
  opt.quantiles = {0.2, 0.5, 0.8};
  dev.kernel_ms = [](long n) { return 1.0 + 0.001 * (n % 5); };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(m.repeat_skipped);
  EXPECT_EQ(m.repeat, 1);
  EXPECT_EQ(dev.events_created, 4);  // one call only
  ASSERT_EQ(m.quantile_ms.size(), 3u);
  EXPECT_LE(m.quantile_ms[0], m.quantile_ms[1]);
  EXPECT_LE(m.quantile_ms[1], m.quantile_ms[2]);
}

TEST_F(Repeat, SkippedWithReturnModeAll) {
  opt.timer = TimerKind::direct;
  opt.repeat = 2;
  opt.return_mode = core::ReturnMode::all;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(m.repeat_skipped);
  EXPECT_EQ(m.repeat, 1);
  EXPECT_FALSE(m.samples_ms.empty());
}

TEST_F(Repeat, NotAppliedToGraphRows) {
  opt.timer = TimerKind::graph;
  opt.repeat = 5;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.timer, caliber::core::TimerKind::graph);
  EXPECT_EQ(m.repeat, 1);
  EXPECT_EQ(dev.captures, 1);
}

TEST_F(Throttle, SamplesAroundALowClockReadingAreDiscarded) {
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long) { return 10.0; };  // >= 10 ms: clocks read after every sample
  dev.clock_script = [](int call) {
    backends::ClockSample c;
    c.sm_max_mhz = 2000;
    c.sm_mhz = call == 3 ? 1000 : 1980;
    return std::optional<backends::ClockSample>(c);
  };
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  // Reading 3 ends window 3 and starts window 4: both samples go.
  EXPECT_EQ(m.throttled_discarded, 2);
  EXPECT_GE(m.total_samples, opt.stop.min_samples);
}

TEST_F(Throttle, NothingDiscardedWithoutClocks) {
  opt.timer = TimerKind::direct;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_GT(dev.clock_calls, 0);
  EXPECT_EQ(m.throttled_discarded, 0);

  FakeDevice d2;
  d2.clock_script = [](int) {
    backends::ClockSample c;
    c.sm_mhz = 100;  // no maximum known: nothing to compare with
    return std::optional<backends::ClockSample>(c);
  };
  TimingOptions o = test::fake_options(d2);
  o.timer = TimerKind::direct;
  EXPECT_EQ(measure(
                d2, backend, [&] { d2.kernel(); }, o)
                .throttled_discarded,
            0);
}

TEST_F(Throttle, AllThrottledFailsAndSaysSo) {
  opt.timer = TimerKind::direct;
  opt.stop.timeout_s = 0.2;
  dev.clock_script = [](int) {
    backends::ClockSample c;
    c.sm_max_mhz = 2000;
    c.sm_mhz = 800;
    return std::optional<backends::ClockSample>(c);
  };
  const Measurement m = run();
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::other);
  EXPECT_GT(m.throttled_discarded, 0);
  EXPECT_NE(m.error.find("throttled"), std::string::npos) << m.error;
}

TEST_F(Throttle, APowerCapOfTheWorkItselfIsKeptAndMarked) {
  // The largest fp16 GEMMs on the H200 hold the board at its power limit: every clock reading
  // is low, with the power cap as the only reason. Those samples are the work's sustained speed.
  for (const TimerKind timer : {TimerKind::direct, TimerKind::graph}) {
    FakeDevice d;
    d.kernel_ms = [](long) { return 10.0; };  // a clock reading after every sample
    d.clock_script = [](int call) {
      backends::ClockSample c;
      c.sm_max_mhz = 2000;
      c.sm_mhz = call % 2 == 0 ? 1200 : 1980;
      c.power_cap_only = true;
      return std::optional<backends::ClockSample>(c);
    };
    TimingOptions o = test::fake_options(d);
    o.timer = timer;
    // In the sustained regime that clock is the regime itself (burst drops it: test_truth.cpp).
    o.regime.regime = ClockRegime::sustained;
    const Measurement m = measure(
        d, backend, [&] { d.kernel(); }, o);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_EQ(m.throttled_discarded, 0);
    EXPECT_GT(m.power_capped, 0);
    EXPECT_NE(std::find(m.markers.begin(), m.markers.end(), std::string(kMarkerPowerCapped)),
              m.markers.end());
  }
  // The same low clock for any other reason (heat, a hardware slowdown) is still discarded.
  FakeDevice d;
  d.kernel_ms = [](long) { return 10.0; };  // a clock reading after every sample
  d.clock_script = [](int call) {
    backends::ClockSample c;
    c.sm_max_mhz = 2000;
    c.sm_mhz = call == 3 ? 1200 : 1980;
    return std::optional<backends::ClockSample>(c);
  };
  TimingOptions o = test::fake_options(d);
  o.timer = TimerKind::direct;
  const Measurement m = measure(
      d, backend, [&] { d.kernel(); }, o);
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.throttled_discarded, 2);
  EXPECT_EQ(m.power_capped, 0);
  EXPECT_TRUE(m.markers.empty() || std::find(m.markers.begin(), m.markers.end(),
                                             std::string(kMarkerPowerCapped)) == m.markers.end());
}

TEST_F(Throttle, AnotherProcessOnTheDeviceMarksTheRowAndNothingElse) {
  // 2026-12-06: a caliber run left behind by a cut device call shared the H100 with the next
  // call's; its large f32 cases read 14% slow at 0.03% noise, the clock at its maximum. A reading
  // that sees another process marks the row; none seen (0) or unknown (-1) marks nothing.
  for (const int others : {2, 0, -1}) {
    for (const TimerKind timer : {TimerKind::direct, TimerKind::graph}) {
      FakeDevice d;
      d.kernel_ms = [](long) { return 10.0; };  // a clock reading after every sample
      d.clock_script = [others](int call) {
        backends::ClockSample c;
        c.sm_max_mhz = 2000;
        c.sm_mhz = 1980;
        c.other_processes = call >= 2 ? others : (others < 0 ? -1 : 0);
        return std::optional<backends::ClockSample>(c);
      };
      TimingOptions o = test::fake_options(d);
      o.timer = timer;
      const Measurement m = measure(
          d, backend, [&] { d.kernel(); }, o);
      ASSERT_TRUE(m.ok) << m.error;
      EXPECT_EQ(m.clock.other_processes, others) << others;
      EXPECT_EQ(m.throttled_discarded, 0);  // the samples stay: the row says it, not a filter
      const bool marked = std::find(m.markers.begin(), m.markers.end(),
                                    std::string(core::markers::device_shared)) != m.markers.end();
      EXPECT_EQ(marked, others > 0) << others;
    }
  }
}

TEST_F(RngGuard, CaptureDoesNotAdvanceTheGenerator) {
  opt.timer = TimerKind::graph;
  opt.rng = true;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  ASSERT_GT(dev.captured_launches, 0);
  EXPECT_EQ(dev.gen.seed, 42u);
  EXPECT_EQ(dev.gen.offset, static_cast<std::uint64_t>(dev.uncaptured_launches));
}

TEST_F(RngGuard, NotAnRngOpIsNotGuarded) {
  opt.timer = TimerKind::graph;
  opt.rng = false;
  ASSERT_TRUE(run().ok);
  EXPECT_EQ(dev.gen.offset,
            static_cast<std::uint64_t>(dev.uncaptured_launches + dev.captured_launches));
}

TEST_F(RngGuard, RestoredWhenTheCaptureIsRefused) {
  opt.timer = TimerKind::graph;
  opt.rng = true;
  dev.throw_in_capture = 900;
  dev.throw_at_captured = 3;  // the generator advanced three times before the refusal
  dev.kernel_ms = [](long) { return 0.1; };  // K = 10
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(dev.captured_launches, 3);
  EXPECT_EQ(dev.gen.offset, static_cast<std::uint64_t>(dev.uncaptured_launches));
}

TEST_F(RngGuard, SkippedWithoutADefaultGenerator) {
  opt.timer = TimerKind::graph;
  opt.rng = true;
  dev.has_generator = false;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(dev.gen.offset, 0u);  // untouched: nothing registered to protect
}

TEST_F(TimerChoiceTest, AutoFollowsTheBackendPolicy) {
  backends::Capabilities caps;
  caps.graph_capture = true;
  caps.graph_timer_default = true;
  EXPECT_EQ(choose_timer(caps, TimerKind::automatic).kind, TimerKind::graph);
  caps.graph_timer_default = false;
  EXPECT_EQ(choose_timer(caps, TimerKind::automatic).kind, TimerKind::direct);
  EXPECT_EQ(choose_timer(caps, TimerKind::graph).kind, TimerKind::graph);
  caps.graph_capture = false;
  const TimerChoice c = choose_timer(caps, TimerKind::graph);
  EXPECT_EQ(c.kind, TimerKind::direct);
  EXPECT_FALSE(c.note.empty());
  EXPECT_EQ(choose_timer(caps, TimerKind::direct).kind, TimerKind::direct);
}

TEST_F(TimerChoiceTest, MeasureUsesGraphOnlyWhereThePolicySaysSo) {
  ASSERT_TRUE(run().ok);  // fake backend: graph by default
  EXPECT_EQ(dev.captures, 1);

  backend.caps.graph_timer_default = false;
  FakeDevice d2;
  TimingOptions o = test::fake_options(d2);
  const Measurement m = measure(
      d2, backend, [&] { d2.kernel(); }, o);
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(d2.captures, 0);
  EXPECT_EQ(m.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(m.markers, (Markers{"timer=direct"}));
}

TEST_F(TimerChoiceTest, ExplicitGraphWithoutCaptureIsDirectWithANote) {
  backend.caps.graph_capture = false;
  opt.timer = TimerKind::graph;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(dev.captures, 0);
  EXPECT_EQ(m.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(m.markers, (Markers{"timer=direct"}));
  EXPECT_NE(m.note.find("graph"), std::string::npos);
}

TEST_F(Direct, WallCostIsRecorded) {
  opt.timer = TimerKind::direct;
  const Measurement m = run();
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.wall_s, dev.wall_s());  // the fake clock started at 0
  EXPECT_GT(m.estimate_ms, 0);
}

}  // namespace
}  // namespace caliber::timing
