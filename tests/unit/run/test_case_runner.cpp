// The case runner: on the scripted fake device, one timing regime per row; on the cpu backend,
// with the tiny ops of unit_ops.hpp, the row and status of each kind of case.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/registry.hpp"
#include "caliber/op.hpp"
#include "records/runlog.hpp"
#include "run/case_runner.hpp"
#include "settings/knobs.hpp"
#include "temp_dir.hpp"
#include "tune/tuner.hpp"
#include "unit/timing/fake_device.hpp"
#include "unit_ops.hpp"

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
  [[nodiscard]] Accuracy check(std::size_t) override {
    return {true, 0, 0, "exact", "exact", 0, 0};
  }
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
  CaseRunner runner(backend, 0, 1, knobs, core::TimerKind::graph, settings);
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

// A tunable candidate whose configs ask for clusters of 1, 2 and 16 blocks; each config it is
// prepared with is recorded.
class ClusterWorkload : public Workload {
 public:
  ClusterWorkload(FakeDevice& dev, std::vector<std::string>& prepared)
      : dev_(dev), prepared_(prepared) {}
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ConfigSpace space;
    for (std::int64_t cl : {1, 2, 16}) space.configs.push_back(Config{{{"cluster", cl}}});
    space.default_config = space.configs.back();  // a default the device may not launch
    return {{"vendor", Role::baseline, "1", "", {}}, {"ours", Role::candidate, "1", "", space}};
  }
  void prepare(std::size_t p, const Config& c) override {
    if (p == 1) prepared_.push_back(c.str());
  }
  void launch(std::size_t) override { dev_.kernel(); }
  [[nodiscard]] Accuracy check(std::size_t) override {
    return {true, 0, 0, "exact", "exact", 0, 0};
  }
  [[nodiscard]] double bytes() const override { return 1e6; }

 private:
  FakeDevice& dev_;
  std::vector<std::string>& prepared_;
};

class ClusterOp : public Op {
 public:
  explicit ClusterOp(std::vector<std::string>& prepared) : prepared_(prepared) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "clustered";
    i.family = "test";
    i.dtypes = {DType::f32};
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case&) const override { return 0; }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case&) const override {
    return std::make_unique<ClusterWorkload>(dynamic_cast<FakeDevice&>(ctx), prepared_);
  }

 private:
  std::vector<std::string>& prepared_;
};

// The configs a live-tuned case prepared its candidate with, on a fake backend with or without
// thread-block clusters.
std::vector<std::string> tuned_configs(bool clusters, tune::Mode mode, nlohmann::json& row) {
  caliber::testing::TempDir t;
  FakeBackend backend;
  backend.caps.clusters = clusters;
  backend.caps.max_cluster = clusters ? backends::kPortableMaxCluster : 0;
  core::Knobs knobs;
  tune::Settings settings;
  settings.mode = mode;
  settings.shared_cache = t.path() / "tune.db";
  settings.show_progress = false;
  knobs.tune = mode == tune::Mode::off ? core::TuneMode::off : core::TuneMode::live;
  std::vector<std::string> prepared;
  {
    CaseRunner runner(backend, 0, 1, knobs, core::TimerKind::graph, settings);
    Case c{"clustered", DType::f32, {1024}, {}, {}};
    row = core::to_json(runner.run_case(ClusterOp(prepared), c));
  }
  return prepared;
}

// The plan's cluster_fix stage: configs the device cannot launch never reach the sweep, nor a
// run without tuning (whose default is then the first config left).
TEST(ClusterFix, ConfigsTheDeviceCannotLaunchAreNeverPrepared) {
  nlohmann::json row;
  for (const auto& c : tuned_configs(false, tune::Mode::live, row))
    EXPECT_EQ(c, "cluster=1") << row.dump();  // no clusters: one config left, not tunable
  ASSERT_EQ(row["status"], "ok") << row.dump();
  EXPECT_EQ(row["providers"][1]["config"], "cluster=1");
  const auto with = tuned_configs(true, tune::Mode::live, row);
  ASSERT_EQ(row["status"], "ok") << row.dump();
  EXPECT_NE(std::find(with.begin(), with.end(), "cluster=2"), with.end());   // swept
  EXPECT_EQ(std::find(with.begin(), with.end(), "cluster=16"), with.end());  // over the limit
  EXPECT_EQ(row["providers"][1]["tune"]["tried"], 2) << row.dump();
  for (const auto& c : tuned_configs(true, tune::Mode::off, row)) EXPECT_NE(c, "cluster=16");
}

// An op whose skip guard always says `reason` (as a guard that assumes CUDA does on MUSA).
class GuardedOp : public Op {
 public:
  explicit GuardedOp(std::string reason) : reason_(std::move(reason)) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "guarded";
    i.family = "test";
    i.dtypes = {DType::f32};
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case&) const override { return 0; }
  [[nodiscard]] std::optional<std::string> skip_reason(const Case&,
                                                       const DeviceContext&) const override {
    return reason_;
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case&) const override {
    return std::make_unique<TwinWorkload>(dynamic_cast<FakeDevice&>(ctx), false);
  }

 private:
  std::string reason_;
};

nlohmann::json run_guarded(const std::vector<backends::CompatRule>& rules,
                           const std::string& reason) {
  FakeBackend backend;
  backend.rules = rules;
  core::Knobs knobs;
  knobs.tune = core::TuneMode::off;
  tune::Settings settings;
  settings.mode = tune::Mode::off;
  CaseRunner runner(backend, 0, 1, knobs, core::TimerKind::graph, settings);
  Case c{"guarded", DType::f32, {1024}, {}, {}};
  return core::to_json(runner.run_case(GuardedOp(reason), c));
}

// A backend's compat rule lifts exactly its (op, reason): the case runs, marked compat_lifted;
// another reason, another op's rule or no rule leaves the skip.
TEST(CompatRules, LiftExactlyTheirOpAndReason) {
  const std::string why = "guarded: needs torch.cuda";
  nlohmann::json row = run_guarded({{"guarded", why, "the guard assumes CUDA"}}, why);
  ASSERT_EQ(row["status"], "ok") << row.dump();
  ASSERT_TRUE(row.contains("markers")) << row.dump();
  EXPECT_NE(row["markers"].dump().find(core::markers::compat_lifted), std::string::npos)
      << row.dump();
  for (const auto& rules :
       std::vector<std::vector<backends::CompatRule>>{{},
                                                      {{"guarded", why + " (another)", ""}},
                                                      {{"other", why, ""}},
                                                      {{"flaggems:guarded", why, ""}}}) {
    row = run_guarded(rules, why);
    EXPECT_EQ(row["status"], "skipped") << row.dump();
    EXPECT_EQ(row["reason"], why) << row.dump();
  }
}

// A case runner on the cpu backend's device 0, no tuning, a loose stopping rule.
class CpuCases : public ::testing::Test {
 protected:
  CpuCases()
      : runner_(*backends::find_backend("cpu"), 0, 7, test::fast_cpu_knobs(),
                core::TimerKind::direct, settings()) {}
  static tune::Settings settings() {
    tune::Settings s;
    s.mode = tune::Mode::off;
    return s;
  }
  template <test::Behaviour B>
  nlohmann::json run(std::vector<std::int64_t> shape = {256}) {
    const test::UnitOp<B> op;
    const Case c{op.name(), DType::f32, std::move(shape), {"N"}, {}};
    nlohmann::json row;
    EXPECT_NO_THROW(row = core::to_json(runner_.run_case(op, c)))
        << c.node_id();  // never for the case's own fault
    return row;
  }
  static std::string text(const nlohmann::json& row, const char* key) {
    return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : "";
  }
  CaseRunner runner_;
};

TEST_F(CpuCases, AnOkCaseTimesEveryProviderAndPassesItsCheck) {
  const nlohmann::json row = run<test::Behaviour::ok>();
  ASSERT_EQ(text(row, core::field::status), core::status::ok) << row.dump();
  EXPECT_EQ(text(row, core::field::node), "unit_ok[f32-N256]");
  EXPECT_EQ(text(row, core::field::timer), "direct");
  EXPECT_EQ(row[core::field::accuracy], true);
  ASSERT_EQ(row[core::field::providers].size(), 2u);
  EXPECT_EQ(row[core::field::providers][0][core::field::name], "loop");
  EXPECT_EQ(row[core::field::providers][0][core::field::role], "baseline");
  EXPECT_EQ(row[core::field::providers][1][core::field::name], "loop2");
  EXPECT_GT(row[core::field::latency_ms].get<double>(), 0);
  EXPECT_GT(row[core::field::latency_base_ms].get<double>(), 0);
}

TEST_F(CpuCases, ARaisingCandidateFailsItsCaseAloneWithItsMessage) {
  const nlohmann::json bad = run<test::Behaviour::raise>();
  EXPECT_EQ(text(bad, core::field::status), core::status::failed) << bad.dump();
  EXPECT_NE(text(bad, core::field::error).find(test::kPlantedError), std::string::npos)
      << bad.dump();
  EXPECT_FALSE(bad.contains(core::field::latency_ms)) << bad.dump();
  // The same runner, the next case: untouched by the failure before it.
  const nlohmann::json next = run<test::Behaviour::ok>();
  EXPECT_EQ(text(next, core::field::status), core::status::ok) << next.dump();
}

TEST_F(CpuCases, AFailedCheckFailsTheCase) {
  const nlohmann::json row = run<test::Behaviour::wrong>();
  EXPECT_EQ(text(row, core::field::status), core::status::failed) << row.dump();
  EXPECT_EQ(row[core::field::accuracy], false) << row.dump();
}

TEST_F(CpuCases, SkipsSayWhy) {
  const nlohmann::json guard = run<test::Behaviour::skip>();
  EXPECT_EQ(text(guard, core::field::status), core::status::skipped) << guard.dump();
  EXPECT_EQ(text(guard, core::field::reason), test::kSkipReason);
  EXPECT_FALSE(guard.contains(core::field::latency_ms));
  const nlohmann::json memory = run<test::Behaviour::huge>();
  EXPECT_EQ(text(memory, core::field::status), core::status::skipped) << memory.dump();
  EXPECT_EQ(text(memory, core::field::reason).rfind("needs ", 0), 0u) << memory.dump();
  // Sizes past what a count can hold: skipped before the op's own guards see a wrapped count.
  const std::int64_t big = std::int64_t{1} << 30;
  const nlohmann::json huge = run<test::Behaviour::ok>({big, big, big});
  EXPECT_EQ(text(huge, core::field::status), core::status::skipped) << huge.dump();
  EXPECT_EQ(text(huge, core::field::reason).rfind("unit_ok: ", 0), 0u) << huge.dump();
}

}  // namespace
}  // namespace caliber::run
