// The kernel-trace sample method on the scripted fake device: each timed launch's device time from
// its own records (several kernels a launch, flushes excluded, graph replays), the events kept as
// a cross-check, and the fallback to events with its marker (records missing, another subscriber,
// no trace on the backend).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_device.hpp"
#include "timing/timer.hpp"
#include "timing/trace.hpp"

namespace caliber::timing {
namespace {

using test::FakeBackend;
using test::FakeDevice;
using Markers = std::vector<std::string>;

bool has(const Markers& ms, const std::string& m) {
  return std::find(ms.begin(), ms.end(), m) != ms.end();
}

struct Trace : ::testing::Test {
  FakeDevice dev;
  FakeBackend backend;
  TimingOptions opt = test::fake_options(dev);
  void SetUp() override {
    dev.caps_.kernel_trace = true;
    dev.event_floor_ms = 0.5;  // what only the events see
  }
  Measurement run(const std::function<void()>& launch) {
    return measure(dev, backend, launch, opt);
  }
};

TEST_F(Trace, DirectReadsTheLaunchsOwnSpanOverSeveralKernels) {
  opt.timer = TimerKind::direct;
  dev.flush_ms = 4.0;  // a flush record before every launch: excluded
  const Measurement m = run([this] {
    dev.kernel();
    dev.kernel(0.5);
  });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_DOUBLE_EQ(m.latency_ms, 1.5);
  EXPECT_EQ(m.kernel_count, 2);
  EXPECT_DOUBLE_EQ(m.kernel_sum_ms, 1.5);
  EXPECT_DOUBLE_EQ(m.event_latency_ms, 2.0);  // the event floor on top
  EXPECT_DOUBLE_EQ(m.record_resolution_us, 0.001);
  EXPECT_FALSE(has(m.markers, kMarkerEventsNoTrace));
  EXPECT_EQ(dev.trace_opens, 1);
  EXPECT_EQ(dev.trace_closes, 1);  // closed after the measurement: other subscribers may come in
}

// Cold graph: every launch follows a flush node of its own; the flush's records separate the
// launches of a replay and are nobody's, so the span is the cold kernel alone, with no floor.
TEST_F(Trace, GraphColdExcludesTheFlushes) {
  opt.timer = TimerKind::graph;
  dev.flush_ms = 0.25;
  dev.cold_extra_ms = 0.25;
  dev.kernel_ms = [](long) { return 0.125; };
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::graph);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_GT(m.launches_per_sample, 1);
  EXPECT_DOUBLE_EQ(m.latency_ms, 0.375);
  EXPECT_DOUBLE_EQ(m.event_latency_ms, 0.875);
  EXPECT_EQ(dev.boundaries, 0);  // cold: the flushes are the boundaries
}

// Warm graph: nothing of the backend's between launches, so a boundary node precedes each one.
TEST_F(Trace, GraphWarmSeparatesLaunchesByBoundaries) {
  opt.timer = TimerKind::graph;
  opt.l2 = L2Policy::warm;
  dev.kernel_ms = [](long n) { return n % 2 == 0 ? 0.25 : 0.125; };
  const Measurement m = run([this] {
    dev.kernel();
    dev.kernel();
  });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_EQ(dev.boundaries, m.launches_per_sample);
  EXPECT_DOUBLE_EQ(m.latency_ms, 0.375);
  EXPECT_EQ(m.kernel_count, 2);
}

// A replay of K launches back to back (caliber.bench's default, do_bench_cudagraph's method): the
// span of the replay's records divided by K, with no boundary and no event floor.
TEST_F(Trace, GraphPerReplayReadsTheReplaysSpanOverK) {
  opt.timer = TimerKind::graph;
  opt.l2 = L2Policy::warm;
  opt.graph_per_launch = false;
  dev.kernel_ms = [](long) { return 0.125; };
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_GT(m.launches_per_sample, 1);
  EXPECT_EQ(dev.boundaries, 0);
  EXPECT_DOUBLE_EQ(m.latency_ms, 0.125);
  EXPECT_EQ(m.kernel_count, 1);
  EXPECT_DOUBLE_EQ(m.event_latency_ms, 0.125 + 0.5 / m.launches_per_sample);
}

// A launcher's own work before each replay (torch's RNG prologue: two fill kernels, then the
// host's gap to the graph launch) is outside the graph. The 2 us kernel's replays with that
// prologue, back to back (warm, K launches a replay) or per launch (cold, a flush each).
struct ReplayPrologue : Trace {
  void SetUp() override {
    Trace::SetUp();
    opt.timer = TimerKind::graph;
    dev.kernel_ms = [](long) { return 0.002; };
    dev.replay_prologue_ms = 0.004;
    dev.replay_prologue_gap_ms = 0.25;
  }
  Measurement back_to_back() {
    opt.l2 = L2Policy::warm;
    opt.graph_per_launch = false;
    return run([this] { dev.kernel(); });
  }
  Measurement per_launch() {
    opt.l2 = L2Policy::cold;
    opt.graph_per_launch = true;
    dev.flush_ms = 0.01;
    return run([this] { dev.kernel(); });
  }
};

// Its records carry no graph id and belong to no launch: back to back, the replay's span over K
// is the kernel's; per launch, the prologue's run no longer makes the records count one launch
// too many (a fallback to events before).
TEST_F(ReplayPrologue, IsLeftOutOfTheLaunches) {
  const Measurement m = back_to_back();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_NEAR(m.latency_ms, 0.002, 1e-9);
  EXPECT_EQ(m.kernel_count, 1);
  // The events around the replay hold the prologue: only the trace can leave it out.
  EXPECT_GT(m.event_latency_ms, 0.002 + 0.25 / m.launches_per_sample);
  const Measurement p = per_launch();
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_FALSE(has(p.markers, kMarkerEventsNoTrace)) << p.note;
  EXPECT_NEAR(p.latency_ms, 0.002, 1e-9);
}

// A backend whose records carry no graph id cannot tell the prologue from the graph's work: it is
// kept (back to back it is in the span), and per launch the count no longer matches, so the
// measurement falls back to the events, marked, rather than reading a wrong launch.
TEST_F(ReplayPrologue, IsKeptWithoutGraphIds) {
  dev.graph_ids = false;
  const Measurement m = back_to_back();
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_NEAR(m.latency_ms, 0.002 + 0.254 / m.launches_per_sample, 1e-9);
  const Measurement p = per_launch();
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(has(p.markers, kMarkerEventsNoTrace));
}

// The stopping rule's min_time counts the wall time of sampling under the trace: a 10 us kernel
// behind a 1 ms flush reaches 10 ms of wall in a few samples, where its summed spans would ask
// for a thousand; the event-timed measurement keeps counting the samples' own time.
TEST_F(Trace, MinTimeCountsTheWallTimeOfSampling) {
  opt.timer = TimerKind::direct;
  dev.kernel_ms = [](long) { return 0.01; };
  dev.flush_ms = 1.0;
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_TRUE(m.converged) << m.stop_reason;
  EXPECT_LE(m.total_samples, 40);
  EXPECT_GE(m.total_samples, opt.stop.min_samples);
  dev.caps_.kernel_trace = false;
  const Measurement e = run([this] { dev.kernel(); });
  ASSERT_TRUE(e.ok) << e.error;
  EXPECT_GE(e.total_samples, 20);  // 10 ms of its own 0.51 ms samples
}

TEST_F(Trace, MissingRecordsFallBackToTheEventsWithTheMarker) {
  opt.timer = TimerKind::direct;
  dev.drop_records_after = 12;  // the warmup and a few samples in, the records stop
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_NE(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_TRUE(has(m.markers, kMarkerEventsNoTrace));
  EXPECT_NE(m.note.find("records"), std::string::npos) << m.note;
  // Every kept sample is the events' (1 ms + the floor): none of the trace's mixed in.
  EXPECT_DOUBLE_EQ(m.latency_ms, 1.5);
  for (double x : m.samples_ms) EXPECT_DOUBLE_EQ(x, 1.5);
  EXPECT_EQ(m.kernel_count, 0);
  EXPECT_EQ(dev.trace_closes, 1);
}

TEST_F(Trace, GraphReplayWithMissingRecordsFallsBackToo) {
  opt.timer = TimerKind::graph;
  dev.drop_records_after = 3;
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::graph);
  EXPECT_TRUE(has(m.markers, kMarkerEventsNoTrace));
  EXPECT_DOUBLE_EQ(m.latency_ms, 1.5);
}

// Another activity subscriber (torch.profiler, nsys, ncu) holds the tracer: the trace does not
// open, nothing of the other's is touched (no close), and the row says why.
TEST_F(Trace, ASubscriberConflictFallsBackWithTheMarker) {
  opt.timer = TimerKind::graph;
  dev.trace_refusal = "another activity subscriber is active (a profiler)";
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_TRUE(has(m.markers, kMarkerEventsNoTrace));
  EXPECT_NE(m.note.find("another activity subscriber"), std::string::npos) << m.note;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::events_per_launch);
  EXPECT_DOUBLE_EQ(m.latency_ms, 1.5);
  EXPECT_EQ(dev.trace_opens, 0);
  EXPECT_EQ(dev.trace_closes, 0);
  EXPECT_FALSE(dev.tracing);
}

// A profiler that ran and stopped keeps its subscription (torch.profiler's does): the trace opens
// beside it only on the caller's word that it is idle; without that word the row is the events'.
TEST_F(Trace, AnIdleSubscriberIsJoinedOnlyOnTheCallersWord) {
  opt.timer = TimerKind::graph;
  dev.trace_refusal = "another activity subscriber is active (a profiler)";
  dev.idle_subscriber = true;
  dev.flush_ms = 0.031;  // the records' clock is read from flushes beside a subscriber
  const Measurement unvouched = run([this] { dev.kernel(); });
  ASSERT_TRUE(unvouched.ok) << unvouched.error;
  EXPECT_TRUE(has(unvouched.markers, kMarkerEventsNoTrace));
  EXPECT_DOUBLE_EQ(unvouched.latency_ms, 1.5);
  EXPECT_EQ(dev.trace_opens, 0);
  opt.trace_beside_idle_subscriber = true;
  const Measurement vouched = run([this] { dev.kernel(); });
  ASSERT_TRUE(vouched.ok) << vouched.error;
  EXPECT_EQ(vouched.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_FALSE(has(vouched.markers, kMarkerEventsNoTrace));
  EXPECT_DOUBLE_EQ(vouched.latency_ms, 1.0);
  EXPECT_EQ(dev.trace_opens, 1);
  EXPECT_EQ(dev.trace_closes, 1);
  // The word is not enough where the subscriber is collecting (no idle one to join).
  dev.idle_subscriber = false;
  const Measurement busy = run([this] { dev.kernel(); });
  EXPECT_TRUE(has(busy.markers, kMarkerEventsNoTrace));
  EXPECT_EQ(dev.trace_opens, 1);
}

// Beside torch's idle profiler CUPTI's records are in the clock Kineto registered (TSC ticks):
// the trace reads the records' rate against the events and scales by it, and says so.
TEST_F(Trace, BesideASubscriberTheRecordsClockIsReadAndScaled) {
  opt.timer = TimerKind::graph;
  opt.trace_beside_idle_subscriber = true;
  dev.trace_refusal = "another activity subscriber is active (a profiler)";
  dev.idle_subscriber = true;
  dev.flush_ms = 0.031;
  dev.beside_ticks_per_ns = 2.09;
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_NEAR(m.latency_ms, 1.0, 1e-6);  // not 2.09: the kernel's own length
  EXPECT_NE(m.note.find("2.0900 ticks per ns"), std::string::npos) << m.note;
  // A clock in nanoseconds is left as it is, and the row says nothing of it.
  dev.beside_ticks_per_ns = 1.0;
  const Measurement plain = run([this] { dev.kernel(); });
  EXPECT_DOUBLE_EQ(plain.latency_ms, 1.0);
  EXPECT_EQ(plain.note.find("ticks per ns"), std::string::npos) << plain.note;
}

TEST(TraceClock, RateCancelsTheEventsFloorAndNeedsTheFlushRecords) {
  FakeDevice dev;
  dev.caps_.kernel_trace = true;
  dev.event_floor_ms = 0.5;  // a floor far above a flush: the difference of two runs cancels it
  dev.flush_ms = 0.031;
  dev.idle_subscriber = true;
  dev.beside_ticks_per_ns = 2.5;
  ASSERT_TRUE(dev.trace_open({true}).ok);
  const std::optional<double> rate = detail::record_ticks_per_ns(dev);
  ASSERT_TRUE(rate.has_value());
  EXPECT_NEAR(*rate, 2.5, 1e-3);
  dev.tracing = false;  // no records at all: no rate, and the trace is not used
  EXPECT_FALSE(detail::record_ticks_per_ns(dev).has_value());
}

TEST_F(Trace, EventsOnRequestOpenNoTraceAndCarryNoMarker) {
  opt.timer = TimerKind::graph;
  opt.sample_method = SampleMethod::events;
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::events_per_launch);
  EXPECT_FALSE(has(m.markers, kMarkerEventsNoTrace));
  EXPECT_EQ(dev.trace_opens, 0);
  EXPECT_DOUBLE_EQ(m.event_latency_ms, 0);
}

TEST_F(Trace, ABackendWithoutTraceTimesByEventsMarkedOnlyWhenAsked) {
  dev.caps_.kernel_trace = false;
  opt.timer = TimerKind::direct;
  const Measurement plain = run([this] { dev.kernel(); });
  EXPECT_FALSE(has(plain.markers, kMarkerEventsNoTrace));
  opt.sample_method = SampleMethod::trace;
  const Measurement asked = run([this] { dev.kernel(); });
  EXPECT_TRUE(has(asked.markers, kMarkerEventsNoTrace));
  EXPECT_NE(asked.note.find("no kernel trace"), std::string::npos) << asked.note;
}

// A refused capture: the graph's trace is closed before the direct fallback opens its own, and
// the fallback is traced.
TEST_F(Trace, RefusedCaptureFallsBackToATracedDirectTimer) {
  opt.timer = TimerKind::graph;
  dev.throw_in_capture = 900;
  const Measurement m = run([this] { dev.kernel(); });
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.timer, caliber::core::TimerKind::direct);
  EXPECT_EQ(m.sample_method, caliber::core::SampleDelimiter::kernel_trace);
  EXPECT_DOUBLE_EQ(m.latency_ms, 1.0);
  EXPECT_EQ(dev.trace_opens, 2);
  EXPECT_EQ(dev.trace_closes, 2);
}

TEST(SplitLaunches, RunsBetweenOwnRecordsAreLaunches) {
  using backends::TraceRecord;
  auto rec = [](std::uint64_t a, std::uint64_t b, bool own) {
    TraceRecord r;
    r.start_ns = a;
    r.end_ns = b;
    r.own = own;
    return r;
  };
  const std::vector<TraceRecord> recs = {rec(0, 10, true),   rec(12, 20, false),
                                         rec(25, 40, false), rec(41, 60, true),
                                         rec(61, 62, true),  rec(70, 1070, false)};
  const auto ls = detail::split_launches(recs);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_DOUBLE_EQ(ls[0].span_ms, 28e-6);  // 12 .. 40: the gap between its kernels included
  EXPECT_EQ(ls[0].activities, 2);
  EXPECT_DOUBLE_EQ(ls[0].busy_ms, 23e-6);
  EXPECT_DOUBLE_EQ(ls[1].span_ms, 1000e-6);
}

TEST(SplitLaunches, AReplaysRecordsWithoutAGraphIdAreNoLaunchs) {
  using backends::TraceRecord;
  auto rec = [](std::uint64_t a, std::uint64_t b, bool own, std::uint64_t graph) {
    TraceRecord r;
    r.start_ns = a;
    r.end_ns = b;
    r.own = own;
    r.graph = graph;
    return r;
  };
  // The launcher's fill (no graph id) 0..2, the graph's kernels 300..310 and 311..320.
  const std::vector<TraceRecord> recs = {rec(0, 2, false, 0), rec(300, 310, false, 5),
                                         rec(311, 320, false, 5)};
  const auto replay = detail::split_launches(recs, true);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_DOUBLE_EQ(replay[0].span_ms, 20e-6);
  EXPECT_EQ(replay[0].activities, 2);
  // Not a replay (the direct timer: a user's function may replay a graph itself): all of it.
  const auto direct = detail::split_launches(recs, false);
  ASSERT_EQ(direct.size(), 1u);
  EXPECT_DOUBLE_EQ(direct[0].span_ms, 320e-6);
  EXPECT_EQ(direct[0].activities, 3);
}

}  // namespace
}  // namespace caliber::timing
