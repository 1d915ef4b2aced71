#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "plan/plan.hpp"

using namespace caliber::backends;
using caliber::backends::compat_lifts;
using caliber::plan::make_plan;
using caliber::plan::Plan;
using caliber::plan::PlanInputs;

namespace {

const Backend& B(const char* name) {
  return *find_backend(name);
}

std::vector<std::string> names(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& s : p.stages) out.push_back(s.name);
  return out;
}

const std::string kFftReason = "fft: skipped because the guard requires torch.cuda.is_available()";

}  // namespace

TEST(Plan, CudaKeepsCaptureAndClusterFix) {
  const Plan p = make_plan(B("cuda"), PlanInputs{});
  EXPECT_EQ(p.timer, caliber::core::TimerKind::graph);
  EXPECT_TRUE(p.has("graph_capture"));
  EXPECT_TRUE(p.has("cluster_fix"));
  EXPECT_FALSE(p.has("direct_timer"));
  EXPECT_FALSE(p.has("compat"));
  EXPECT_EQ(names(p), (std::vector<std::string>{"device_setup", "cluster_fix", "tune",
                                                "graph_capture", "timing", "summary"}));
}

TEST(Plan, OthersOmitCaptureAndClusterFixAndRecordDirect) {
  for (const char* name : {"cpu", "rocm", "musa", "ascend"}) {
    const Plan p = make_plan(B(name), PlanInputs{});
    EXPECT_EQ(p.timer, caliber::core::TimerKind::direct) << name;
    EXPECT_FALSE(p.has("graph_capture")) << name;
    EXPECT_FALSE(p.has("cluster_fix")) << name;
    EXPECT_TRUE(p.has("direct_timer")) << name;
    EXPECT_TRUE(p.has("device_setup")) << name;
  }
}

TEST(Plan, CompatFirstAndOnlyOnItsOwnBackend) {
  const Plan musa = make_plan(B("musa"), PlanInputs{});
  ASSERT_FALSE(musa.stages.empty());
  EXPECT_EQ(musa.stages.front().name, "compat");
  EXPECT_NE(musa.stages.front().why.find("fft"), std::string::npos);
  EXPECT_EQ(musa.position("device_setup"), 1);
  for (const char* other : {"cuda", "rocm", "ascend", "cpu"}) {
    EXPECT_FALSE(make_plan(B(other), PlanInputs{}).has("compat")) << other;
  }
}

TEST(Plan, CompatStageOnlyForSelectedOps) {
  PlanInputs in;
  in.ops = {"sort", "mm"};
  EXPECT_FALSE(make_plan(B("musa"), in).has("compat"));
  in.ops = {"sort", "fft"};
  EXPECT_EQ(make_plan(B("musa"), in).position("compat"), 0);
}

TEST(Plan, ParallelWarmupOnlyWhenAsked) {
  PlanInputs in;
  EXPECT_FALSE(make_plan(B("cuda"), in).has("parallel_warmup"));
  in.parallel_warmup = 4;
  const Plan p = make_plan(B("cuda"), in);
  EXPECT_TRUE(p.has("parallel_warmup"));
  EXPECT_LT(p.position("device_setup"), p.position("parallel_warmup"));
  EXPECT_LT(p.position("parallel_warmup"), p.position("tune"));
  EXPECT_NE(p.stages[p.position("parallel_warmup")].why.find("4 devices"), std::string::npos);
  in.parallel_warmup = -1;
  EXPECT_THROW((void)make_plan(B("cuda"), in), std::invalid_argument);
}

TEST(Plan, TuneOffDropsTuneAndClusterFix) {
  PlanInputs in;
  in.tune = caliber::core::TuneMode::off;
  const Plan p = make_plan(B("cuda"), in);
  EXPECT_FALSE(p.has("tune"));
  EXPECT_FALSE(p.has("cluster_fix"));
  EXPECT_TRUE(p.has("graph_capture"));
  in.tune = caliber::core::TuneMode::replay;
  EXPECT_NE(
      make_plan(B("cuda"), in).stages[make_plan(B("cuda"), in).position("tune")].why.find("replay"),
      std::string::npos);
}

TEST(Plan, TimerRequest) {
  PlanInputs in;
  in.timer = caliber::core::TimerKind::direct;
  const Plan p = make_plan(B("cuda"), in);
  EXPECT_EQ(p.timer, caliber::core::TimerKind::direct);
  EXPECT_FALSE(p.has("graph_capture"));
  EXPECT_TRUE(p.has("cluster_fix"));  // tuning is still on: clusters still matter
  in.timer = caliber::core::TimerKind::graph;
  EXPECT_EQ(make_plan(B("rocm"), in).timer,
            caliber::core::TimerKind::graph);  // hip graphs exist; asked for explicitly
  EXPECT_THROW((void)make_plan(B("cpu"), in), std::invalid_argument);
}

TEST(Plan, FixedTailOrder) {
  const Plan p = make_plan(B("rocm"), PlanInputs{});
  const auto n = names(p);
  ASSERT_GE(n.size(), 3u);
  EXPECT_EQ(n[n.size() - 1], "summary");
  EXPECT_EQ(n[n.size() - 2], "timing");
  EXPECT_EQ(n[n.size() - 3], "direct_timer");
  const std::string text = caliber::plan::format_plan(p);
  EXPECT_NE(text.find("timer: direct"), std::string::npos) << text;
  EXPECT_NE(text.find("1. device_setup"), std::string::npos) << text;
}

TEST(Compat, LiftsOnlyExactOpReasonOnTheRunningBackend) {
  EXPECT_TRUE(compat_lifts(B("musa"), "fft", kFftReason));
  EXPECT_FALSE(compat_lifts(B("cuda"), "fft", kFftReason));
  EXPECT_FALSE(compat_lifts(B("rocm"), "fft", kFftReason));
  EXPECT_FALSE(compat_lifts(B("cpu"), "fft", kFftReason));
  EXPECT_FALSE(compat_lifts(B("musa"), "sort", kFftReason));
  EXPECT_FALSE(compat_lifts(B("musa"), "fft", kFftReason + " "));
  EXPECT_FALSE(compat_lifts(B("musa"), "fft", "fft: skipped because the size is too large"));
  EXPECT_FALSE(compat_lifts(B("musa"), "FFT", kFftReason));
}
