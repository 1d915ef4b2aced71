// caliber history's rules on hand-made runs (fixtures.hpp): points ordered by start time, a
// planted step found at its point by the step verdict and by the change-point, the series' own
// spread keeping a noisy series from stepping, and the gate on the newest point.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "report/history.hpp"

namespace {

using caliber::report::HistoryOptions;
using caliber::report::Verdict;
namespace t = caliber::testing;

// `n` points (run directories) of one row; point i's candidate samples center on centers[i].
std::filesystem::path series(const std::filesystem::path& root,
                             const std::vector<double>& centers) {
  for (std::size_t i = 0; i < centers.size(); ++i) {
    t::RowSpec s;
    s.cand = t::samples(centers[i], 0.002, 80, static_cast<std::uint32_t>(10 + i));
    s.base = t::samples(2.0, 0.002, 80, static_cast<std::uint32_t>(100 + i));
    auto id = t::identity();
    // Named against their time order on purpose: the start time orders them.
    id["start_time"] =
        "2026-12-01T10:00:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "Z";
    t::write_run(root, "r-" + std::to_string(centers.size() - i), {t::make_row(s)}, id);
  }
  return root;
}

caliber::report::HistoryResult history(const std::filesystem::path& root,
                                       const HistoryOptions& opt = {}) {
  return caliber::report::history_of(
      caliber::report::history_points({root}, caliber::report::HistoryOrder::time), opt);
}

const caliber::report::HistoryRow& candidate(const caliber::report::HistoryResult& h) {
  for (const auto& r : h.rows)
    if (r.role == "candidate") return r;
  throw std::runtime_error("no candidate row");
}

TEST(History, APlantedStepIsFoundAtItsPointAndNothingElse) {
  caliber::testing::TempDir dir;
  const auto h = history(series(dir.path(), {1.0, 1.0, 1.0, 1.2, 1.2, 1.2, 1.2}));
  ASSERT_EQ(h.points.size(), 7u);
  EXPECT_EQ(h.points.front().start_time, "2026-12-01T10:00:00Z");
  const auto& r = candidate(h);
  ASSERT_TRUE(r.spread.has_value());  // seven points: the series' own spread is used
  ASSERT_TRUE(r.change.has_value());
  EXPECT_TRUE(r.moved());
  EXPECT_EQ(r.change->at, 3);
  EXPECT_EQ(r.change->verdict, Verdict::slower);
  EXPECT_NEAR(r.change->ratio, 1.2, 0.01);
  int flagged = 0;
  for (const auto& s : r.steps) flagged += s.flagged ? 1 : 0;
  EXPECT_EQ(flagged, 1);
  for (const auto& row : h.rows) {
    if (row.role == "baseline") {
      EXPECT_FALSE(row.moved()) << "the unchanged baseline moved";
    }
  }
}

// A point's figure is its run's latency_ms (what the run's table printed), not the median of the
// samples the run kept (at most 200 of those its latency is the median of).
TEST(History, APointIsItsRunsOwnLatency) {
  t::TempDir dir;
  for (int i = 0; i < 2; ++i) {
    t::RowSpec s;
    s.cand = t::samples(1.0, 0.002, 80, static_cast<std::uint32_t>(10 + i));
    s.base = t::samples(2.0, 0.002, 80, static_cast<std::uint32_t>(100 + i));
    auto row = t::make_row(s);
    row["providers"][0]["latency_ms"] = 1.05 + 0.01 * i;
    auto id = t::identity();
    id["start_time"] = "2026-12-01T10:00:0" + std::to_string(i) + "Z";
    t::write_run(dir.path(), "r-" + std::to_string(i), {row}, id);
  }
  const auto h = history(dir.path());
  const auto& c = candidate(h);
  ASSERT_EQ(c.median_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(c.median_ms[0].value_or(0), 1.05);
  EXPECT_DOUBLE_EQ(c.median_ms[1].value_or(0), 1.06);
}

TEST(History, ASeriesThatMovesEveryRunDoesNotStep) {
  // 20% up and down between consecutive runs, around one level: compare calls many of these
  // FASTER/SLOWER (its run-to-run terms are an H200's), the series' own spread does not.
  caliber::testing::TempDir dir;
  std::vector<double> c;
  for (int i = 0; i < 12; ++i) c.push_back(i % 2 ? 1.2 : 1.0);
  const auto h = history(series(dir.path(), c));
  const auto& r = candidate(h);
  int compare_flags = 0, flagged = 0;
  for (const auto& s : r.steps) {
    compare_flags += s.verdict == Verdict::faster || s.verdict == Verdict::slower;
    flagged += s.flagged;
  }
  EXPECT_GT(compare_flags, 5) << "the test needs compare to see the moves";
  EXPECT_EQ(flagged, 0);
  EXPECT_FALSE(r.moved());
}

TEST(History, TheGateIsTheNewestPointAgainstTheOneBefore) {
  caliber::testing::TempDir dir;
  HistoryOptions opt;
  opt.compare.fail_on_regression_pct = 10.0;
  const auto slow_last = history(series(dir.path() / "a", {1.0, 1.0, 1.25}), opt);
  EXPECT_EQ(caliber::report::history_exit_code(slow_last, opt), 1);
  ASSERT_EQ(slow_last.regressions.size(), 1u);
  const auto slow_first = history(series(dir.path() / "b", {1.0, 1.25, 1.25}), opt);
  EXPECT_EQ(caliber::report::history_exit_code(slow_first, opt), 0) << "an old step is not gated";
  opt.compare.fail_on_regression_pct = 30.0;
  EXPECT_EQ(caliber::report::history_exit_code(history(dir.path() / "a", opt), opt), 0);
}

TEST(History, APointOfAnotherCaliberIsLeftOutAndNamed) {
  caliber::testing::TempDir dir;
  series(dir.path(), {1.0, 1.0});
  auto id = t::identity("comprehensive");
  id["start_time"] = "2026-12-01T09:00:00Z";
  t::RowSpec s;
  s.cand = {1.0, 1.0, 1.0};
  t::write_run(dir.path(), "other", {t::make_row(s)}, id);
  const auto h = history(dir.path());
  EXPECT_EQ(h.points.size(), 2u);
  ASSERT_EQ(h.left_out.size(), 1u);
  EXPECT_NE(h.left_out[0].find("other: not comparable"), std::string::npos) << h.left_out[0];
  EXPECT_NE(h.left_out[0].find("level"), std::string::npos) << h.left_out[0];
}

}  // namespace
