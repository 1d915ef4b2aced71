// The case runner on the scripted fake device: one timing regime per row.
#include <gtest/gtest.h>

#include "caliber/op.hpp"
#include "core/knobs.hpp"
#include "run/case_runner.hpp"
#include "tune/tuner.hpp"
#include "unit/timing/fake_device.hpp"

namespace caliber::run {
namespace {

using timing::test::FakeBackend;
using timing::test::FakeDevice;

// Two providers whose kernels take the same time; the candidate refuses capture when asked to.
class TwinWorkload : public Workload {
 public:
  TwinWorkload(FakeDevice& dev, bool candidate_refuses) : dev_(dev), refuses_(candidate_refuses) {}
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base{"vendor", Role::baseline, "1", "", {}};
    ProviderInfo cand{"ours", Role::candidate, "1", "", {}};
    return {base, cand};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    if (p == 1 && refuses_ && dev_.capturing())
      throw NativeError(900, "fakeLaunch", "operation not permitted when stream is capturing");
    dev_.kernel();
  }
  [[nodiscard]] Accuracy check(std::size_t) override { return {true, 0, 0, "exact"}; }
  [[nodiscard]] double bytes() const override { return 1e6; }

 private:
  FakeDevice& dev_;
  bool refuses_;
};

class TwinOp : public Op {
 public:
  explicit TwinOp(bool refuses) : refuses_(refuses) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "twin";
    i.family = "test";
    i.dtypes = {DType::f32};
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case&) const override { return 0; }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case&) const override {
    return std::make_unique<TwinWorkload>(dynamic_cast<FakeDevice&>(ctx), refuses_);
  }

 private:
  bool refuses_;
};

nlohmann::json run_twin(bool refuses) {
  FakeBackend backend;
  core::Knobs knobs;
  knobs.tune = core::TuneMode::off;
  tune::Settings settings;
  settings.mode = tune::Mode::off;
  CaseRunner runner(backend, 0, 1, knobs, "graph", settings);
  Case c{"twin", DType::f32, {1024}, {}, {}};
  return core::to_json(runner.run_case(TwinOp(refuses), c));
}

TEST(OneRegimePerRow, AFallbackMakesEveryProviderOfTheCaseDirect) {
  const nlohmann::json row = run_twin(true);
  ASSERT_EQ(row["status"], "ok") << row.dump();
  EXPECT_EQ(row["timer"], "direct");
  const auto& base = row["providers"][0];
  const auto& cand = row["providers"][1];
  EXPECT_EQ(cand["timer"], "direct");
  EXPECT_EQ(base["timer"], "direct") << base.dump();
  EXPECT_TRUE(base.contains("graph_latency_ms"));
  // Identical kernels, same timer: a like-for-like ratio.
  EXPECT_NEAR(row["speedup"].get<double>(), 1.0, 1e-9);
}

TEST(OneRegimePerRow, WithoutAFallbackTheGraphTimerStays) {
  const nlohmann::json row = run_twin(false);
  ASSERT_EQ(row["status"], "ok") << row.dump();
  EXPECT_EQ(row["timer"], "graph");
  EXPECT_EQ(row["providers"][0]["timer"], "graph");
  EXPECT_FALSE(row["providers"][0].contains("graph_latency_ms"));
  EXPECT_EQ(row["providers"][0]["regime"], "sustained");
  EXPECT_EQ(row["providers"][0]["converged"], true);
}

}  // namespace
}  // namespace caliber::run
