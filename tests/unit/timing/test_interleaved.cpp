// The interleaved pair (docs/ab.md): two builds of one op in one captured graph, on a scripted
// device whose clock moves in plateaus. Each sample of A has one of B from the same replay, so a
// planted 2% reads 2% in every block however the clock moves; where the pair cannot share a
// graph the timer says so (nullopt) and leaves the device as it found it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/stats.hpp"
#include "fake_device.hpp"
#include "timing/timer.hpp"

namespace caliber::timing {
namespace {

using test::FakeBackend;
using test::FakeDevice;

struct Interleaved : ::testing::Test {
  FakeDevice dev;
  FakeBackend backend;
  TimingOptions opt = test::fake_options(dev);
  double planted = 1.02;  // B's launch is this much longer than A's
  std::function<void()> a = [this] { dev.kernel(); };
  std::function<void()> b = [this] { dev.kernel(planted); };
  void SetUp() override {
    // The clock steps every 10 ms of device time: 1.00, 1.06, 0.95 of the base latency (a
    // power-capped GEMM's plateaus, docs/measurements.md).
    dev.kernel_ms = [this](long) {
      static const double level[] = {1.00, 1.06, 0.95};
      return 0.2 * level[static_cast<long>(dev.now_ms / 10.0) % 3];
    };
    dev.flush_ms = 0.01;
  }
};

TEST_F(Interleaved, APlantedChangeReadsTheSameInEveryStretchOfTime) {
  const auto m = measure_interleaved(dev, backend, a, b, opt, 32);
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->a.ok && m->b.ok);
  ASSERT_EQ(m->a.samples_ms.size(), m->b.samples_ms.size());
  ASSERT_GE(m->a.samples_ms.size(), 32u);
  EXPECT_EQ(m->a.timer, caliber::core::TimerKind::graph);
  EXPECT_EQ(m->a.l2_method, caliber::core::L2Method::flush_per_launch);
  // Sample by sample, B over A is the planted ratio within the plateaus' edges.
  int off = 0;
  for (std::size_t i = 0; i < m->a.samples_ms.size(); ++i) {
    const double r = m->b.samples_ms[i] / m->a.samples_ms[i];
    if (std::abs(r - planted) > 0.002) ++off;
  }
  EXPECT_LE(off, static_cast<int>(m->a.samples_ms.size() / 10)) << "pairs off the planted ratio";
  EXPECT_NEAR(m->b.latency_ms / m->a.latency_ms, planted, 0.003);
  // The samples span several plateaus: the latency itself moved by several percent.
  const auto [lo, hi] = std::minmax_element(m->a.samples_ms.begin(), m->a.samples_ms.end());
  EXPECT_GT(*hi / *lo, 1.05);
}

TEST_F(Interleaved, WithoutEventNodesThePairIsNotShared) {
  dev.caps_.graph_event_nodes = false;
  EXPECT_FALSE(measure_interleaved(dev, backend, a, b, opt, 32).has_value());
  EXPECT_EQ(dev.captures, 0);
}

TEST_F(Interleaved, TheDirectTimerOrADeniedOpIsNotShared) {
  opt.timer = TimerKind::direct;
  EXPECT_FALSE(measure_interleaved(dev, backend, a, b, opt, 32).has_value());
  opt.timer = TimerKind::automatic;
  opt.capture_denied = true;
  EXPECT_FALSE(measure_interleaved(dev, backend, a, b, opt, 32).has_value());
  EXPECT_EQ(dev.captures, 0);
}

TEST_F(Interleaved, ACaptureThatFailsIsAbortedAndLeftToTheCaller) {
  dev.throw_in_capture = 900;  // a launch refuses capture
  EXPECT_FALSE(measure_interleaved(dev, backend, a, b, opt, 32).has_value());
  EXPECT_EQ(dev.captures, 1);
  EXPECT_EQ(dev.aborts, 1);
}

TEST_F(Interleaved, TheGeneratorIsRestoredAfterCapture) {
  opt.rng = true;
  dev.gen = GeneratorState{7, 0};
  const auto m = measure_interleaved(dev, backend, a, b, opt, 32);
  ASSERT_TRUE(m.has_value());
  // Warmup and replays advance it as uncaptured launches do; the capture itself does not.
  const auto after_capture_only = dev.gen;
  EXPECT_EQ(after_capture_only.seed, 7u);
  EXPECT_EQ(dev.gen.offset, static_cast<std::uint64_t>(dev.uncaptured_launches));
}

}  // namespace
}  // namespace caliber::timing
