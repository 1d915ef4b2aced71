// The placement crossover of a paired A/B (docs/ab.md): the pool hands each side the other side's
// blocks in the second phase, and a paired case on the scripted device, whose kernel runs 5%
// slower on one block of memory, reads the same code as the same code only with the crossover.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ab/placement.hpp"
#include "caliber/op.hpp"
#include "core/stats.hpp"
#include "records/runlog.hpp"
#include "run/case_runner.hpp"
#include "settings/knobs.hpp"
#include "tune/tuner.hpp"
#include "unit/timing/fake_device.hpp"

namespace caliber::run {
namespace {

using timing::test::FakeBackend;
using timing::test::FakeDevice;

TEST(PlacementPool, TheSecondPhaseTakesTheOtherSidesBlocksInOrder) {
  FakeDevice dev;
  {
    PlacementPool pool(dev);
    DeviceContext& a = pool.side(0);
    DeviceContext& b = pool.side(1);
    void* a1 = a.alloc(100);
    void* a2 = a.alloc(100);
    void* b1 = b.alloc(100);
    void* b2 = b.alloc(100);
    EXPECT_EQ(pool.blocks(0), 2u);
    EXPECT_EQ(pool.blocks(1), 2u);
    pool.hold();
    for (void* p : {a1, a2, b1, b2}) a.free(p);
    EXPECT_EQ(dev.frees, 0);  // kept for the second phase
    pool.cross();
    EXPECT_EQ(a.alloc(100), b1);
    EXPECT_EQ(a.alloc(100), b2);
    EXPECT_EQ(b.alloc(100), a1);
    EXPECT_EQ(b.alloc(100), a2);
    EXPECT_TRUE(pool.crossed_all());
    EXPECT_EQ(dev.allocs, 4);
  }
  EXPECT_EQ(dev.frees, 4);  // every block back to the device once, when the pool ends
}

TEST(PlacementPool, TemporariesGoBackAtOnceAndAnOtherSizeIsFresh) {
  FakeDevice dev;
  PlacementPool pool(dev);
  DeviceContext& a = pool.side(0);
  DeviceContext& b = pool.side(1);
  void* t = a.alloc(64);
  a.free(t);  // a set-up's temporary: back to the device, not swapped
  EXPECT_EQ(dev.frees, 1);
  void* x = a.alloc(64);
  void* y = b.alloc(32);
  void* u = b.alloc(64);
  EXPECT_EQ(pool.blocks(0), 1u);
  EXPECT_EQ(pool.blocks(1), 2u);
  pool.hold();
  for (void* p : {x, y, u}) a.free(p);
  pool.cross();
  EXPECT_EQ(a.alloc(64), u);  // by size, in the other side's order: B's 32-byte block is skipped
  EXPECT_EQ(b.alloc(64), x);
  EXPECT_FALSE(pool.crossed_all());  // B's 32-byte block was not taken
  void* fresh = b.alloc(65);         // no block of A's has 65 bytes
  EXPECT_NE(fresh, nullptr);
  const long before = dev.frees;
  b.free(fresh);  // a fresh block of the second phase goes back at once
  EXPECT_EQ(dev.frees, before + 1);
}

// An op whose kernels run 5% slower on the first block of memory the device ever handed out:
// side A's buffer in the first phase. Both providers share the buffer, as the GPU's did (the
// baseline and the candidate of one workload moved together, docs/ab.md).
struct Placement {
  FakeDevice* dev = nullptr;
  void* slow = nullptr;
  double slow_factor = 1.05;
  bool candidate_fails = false;  // the candidate's launch throws (a broken kernel)
};

class PlacedWorkload : public Workload {
 public:
  PlacedWorkload(Placement& pl, DeviceContext& ctx, std::size_t bytes) : pl_(pl), buf_(ctx, bytes) {
    if (pl_.slow == nullptr) pl_.slow = buf_.get();
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"vendor", Role::baseline, "1", "", {}}, {"ours", Role::candidate, "1", "", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    if (p == 1 && pl_.candidate_fails) throw std::runtime_error("planted launch failure");
    pl_.dev->kernel(buf_.get() == pl_.slow ? pl_.slow_factor : 1.0);
  }
  [[nodiscard]] Accuracy check(std::size_t) override {
    return {true, 0, 0, "exact", "exact", 0, 0};
  }
  [[nodiscard]] double bytes() const override { return 4096; }

 private:
  Placement& pl_;
  Buffer buf_;
};

class PlacedOp : public Op {
 public:
  explicit PlacedOp(Placement& pl, std::size_t bytes = 4096) : pl_(pl), bytes_(bytes) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "placed";
    i.family = "test";
    i.dtypes = {DType::f32};
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case&) const override { return 0; }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case&) const override {
    return std::make_unique<PlacedWorkload>(pl_, ctx, bytes_);
  }

 private:
  Placement& pl_;
  std::size_t bytes_;
};

struct Paired {
  nlohmann::json a, b;  // side A's and side B's rows
  core::PairedEstimate est;
  int phases = 0;
  std::string note;
  long allocs = 0, frees = 0;
};

// The same code on both sides (side B's buffer `b_bytes`), one paired case: both rows, and the
// candidate's blocks' estimate.
Paired run_same_code(bool crossover, std::size_t b_bytes = 4096, bool candidate_fails = false) {
  FakeBackend backend;
  core::Knobs knobs;
  knobs.tune = core::TuneMode::off;
  tune::Settings settings;
  settings.mode = tune::Mode::off;
  Paired out;
  Placement pl;
  pl.candidate_fails = candidate_fails;
  {
    CaseRunner runner(backend, 0, 1, knobs, core::TimerKind::graph, settings);
    pl.dev = &dynamic_cast<FakeDevice&>(runner.device());
    pl.dev->kernel_ms = [](long) { return 0.2; };
    tune::Tuner tuner_b(settings);
    const PlacedOp a(pl), b(pl, b_bytes);
    const Case c{"placed", DType::f32, {1024}, {}, {}};
    const auto [ra, rb] = runner.run_case_paired(a, b, c, 8, crossover, tuner_b);
    out.a = core::to_json(ra);
    out.b = core::to_json(rb);
    out.allocs = pl.dev->allocs;
    out.frees = pl.dev->frees;
  }
  if (candidate_fails) return out;
  EXPECT_EQ(out.a["status"], "ok") << out.a.dump();
  const auto& pa = out.a["providers"][1];
  const auto& pb = out.b["providers"][1];
  const auto ma = pa["block_medians_ms"].get<std::vector<double>>();
  const auto mb = pb["block_medians_ms"].get<std::vector<double>>();
  EXPECT_EQ(ma.size(), 8u);
  EXPECT_EQ(mb.size(), 8u);
  std::vector<double> d;
  for (std::size_t k = 0; k < ma.size() && k < mb.size(); ++k) d.push_back(std::log(mb[k] / ma[k]));
  out.phases = pa.value("paired_phases", 1);
  out.note = pb.value("note", "");
  out.est = core::paired_log_ratio({d}, 0.95, out.phases);
  return out;
}

TEST(PlacementCrossover, TheSameCodeReadsTheSameWhereItsMemoryLandedSlow) {
  const Paired x = run_same_code(true);
  EXPECT_EQ(x.phases, 2);
  EXPECT_NEAR(x.est.log_ratio, 0.0, 0.002);
  EXPECT_LT(x.est.half_width, 0.01);
  EXPECT_NEAR(x.est.placement, std::log(1.05), 0.002);
  EXPECT_EQ(x.allocs, 2);  // one block a side, reused in the second phase
  EXPECT_EQ(x.frees, 2);   // and given back when the case ended
  EXPECT_EQ(x.note, "");
}

// Side B's build allocates another size: no block to swap, the rows say the crossover was partial.
TEST(PlacementCrossover, ABlockWithoutAPartnerMakesItPartialAndTheRowSaysSo) {
  const Paired x = run_same_code(true, 8192);
  EXPECT_EQ(x.phases, 2);
  EXPECT_NE(x.note.find("crossover was partial"), std::string::npos) << x.note;
  EXPECT_EQ(x.allocs, x.frees);
}

TEST(PlacementCrossover, WithoutItTheSlowBlockReadsAsAChange) {
  const Paired x = run_same_code(false);
  EXPECT_EQ(x.phases, 1);
  EXPECT_NEAR(x.est.log_ratio, -std::log(1.05), 0.002);  // B "faster": only its memory was
  EXPECT_EQ(x.allocs, x.frees);
}

// A pair that fails in the first phase keeps its failure; the others still get their second.
TEST(PlacementCrossover, AFailedPairDoesNotCostTheOthersTheirSecondPhase) {
  const nlohmann::json j = run_same_code(true, 4096, /*candidate_fails=*/true).a;
  EXPECT_EQ(j["status"], "failed") << j.dump();
  EXPECT_EQ(j["providers"][0].value("paired_phases", 1), 2) << j["providers"][0].dump();
  EXPECT_FALSE(j["providers"][1].contains("paired_phases"));
  EXPECT_NE(j["providers"][1].value("error", "").find("planted launch failure"), std::string::npos);
}

}  // namespace
}  // namespace caliber::run
