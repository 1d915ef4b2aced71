// caliber summary on hand-made run and batch directories.
#include <gtest/gtest.h>

#include <cmath>

#include "records/repeats.hpp"
#include "report/summary.hpp"
#include "unit/report/fixtures.hpp"

using namespace caliber::testing;
using caliber::report::summarize;
using caliber::report::summary_report;
using caliber::report::SummaryGroup;

namespace {

const SummaryGroup* find_group(const caliber::report::Summary& s, const std::string& op,
                               const std::string& dtype) {
  for (const auto& g : s.groups)
    if (g.op == op && g.dtype == dtype) return &g;
  return nullptr;
}

}  // namespace

TEST(Summary, GeomeanOfKnownSpeedups) {
  TempDir t;
  const auto run =
      write_run(t.path(), "add-20261129-101010",
                {speedup_row("add", "f32", "1", 1.0), speedup_row("add", "f32", "2", 2.0),
                 speedup_row("add", "f32", "3", 4.0), speedup_row("add", "f16", "1", 8.0)});
  const auto s = summarize({run});
  const auto* g = find_group(s, "add", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->rows, 3);
  EXPECT_EQ(g->with_speedup, 3);
  ASSERT_TRUE(g->geomean);
  EXPECT_NEAR(*g->geomean, 2.0, 1e-9);  // (1 * 2 * 4)^(1/3), where the arithmetic mean is 2.33
  EXPECT_NEAR(*g->min, 1.0, 1e-12);
  EXPECT_NEAR(*g->max, 4.0, 1e-12);
  ASSERT_TRUE(g->ci_lo && g->ci_hi);
  EXPECT_LE(*g->ci_lo, *g->geomean);
  EXPECT_GE(*g->ci_hi, *g->geomean);
  EXPECT_GE(*g->ci_lo, 1.0 - 1e-12);  // a resample's geomean cannot leave [min, max]
  EXPECT_LE(*g->ci_hi, 4.0 + 1e-12);
  EXPECT_LT(*g->ci_lo, *g->ci_hi);
  ASSERT_EQ(s.overall.size(), 1u);
  EXPECT_EQ(s.overall[0].rows, 4);
  EXPECT_NEAR(*s.overall[0].geomean, std::pow(1.0 * 2 * 4 * 8, 0.25), 1e-9);
}

TEST(Summary, ConstantSpeedupHasAPointInterval) {
  TempDir t;
  const auto run =
      write_run(t.path(), "mm-20261129-101010",
                {speedup_row("mm", "bf16", "1", 3.0), speedup_row("mm", "bf16", "2", 3.0),
                 speedup_row("mm", "bf16", "3", 3.0)});
  const auto s = summarize({run});
  const auto* g = find_group(s, "mm", "bf16");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(*g->geomean, 3.0, 1e-12);
  EXPECT_NEAR(*g->ci_lo, 3.0, 1e-9);
  EXPECT_NEAR(*g->ci_hi, 3.0, 1e-9);
}

TEST(Summary, OnePathologicalBaselineDoesNotDominate) {
  TempDir t;
  std::vector<json> rows;
  for (int i = 0; i < 9; ++i) rows.push_back(speedup_row("sum", "f32", std::to_string(i), 1.0));
  rows.push_back(speedup_row("sum", "f32", "huge", 1000.0));
  const auto s = summarize({write_run(t.path(), "sum-20261129-101010", rows)});
  const auto* g = find_group(s, "sum", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(*g->geomean, std::pow(1000.0, 0.1), 1e-9);  // ~2.0, where the mean would be ~100.9
}

TEST(Summary, RowsWithoutSpeedupAreCountedButExcluded) {
  TempDir t;
  RowSpec fft;  // baseline-only: no candidate, no speedup
  fft.op = "add";
  fft.shape = "fft-like";
  fft.base = {1.0, 1.1};
  RowSpec failed;
  failed.op = "add";
  failed.shape = "broken";
  failed.status = "failed";
  failed.cand = {1.0};
  failed.base = {5.0};
  RowSpec skipped;
  skipped.op = "add";
  skipped.shape = "skip";
  skipped.status = "skipped";
  RowSpec bad_accuracy;  // ok status but accuracy false: its speedup means nothing
  bad_accuracy.op = "add";
  bad_accuracy.shape = "wrong";
  bad_accuracy.cand = {1.0};
  bad_accuracy.base = {9.0};
  json wrong = make_row(bad_accuracy);
  wrong["accuracy"] = false;
  const auto run =
      write_run(t.path(), "add-20261129-101010",
                {speedup_row("add", "f32", "1", 2.0), speedup_row("add", "f32", "2", 8.0),
                 make_row(fft), make_row(failed), make_row(skipped), wrong});
  const auto s = summarize({run});
  const auto* g = find_group(s, "add", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->rows, 6);
  EXPECT_EQ(g->with_speedup, 2);
  EXPECT_EQ(g->no_speedup, 4);
  EXPECT_EQ(g->failed, 1);
  EXPECT_EQ(g->skipped, 1);
  EXPECT_NEAR(*g->geomean, 4.0, 1e-9);
  const std::string text = caliber::report::render_text(summary_report(s));
  EXPECT_NE(text.find("excluded from the geomean"), std::string::npos) << text;
}

TEST(Summary, FallbackAndPoisonedRowsAreCounted) {
  TempDir t;
  const auto run = write_run(
      t.path(), "sort-20261129-101010",
      {speedup_row("sort", "i32", "1", 1.5, {"BENCHMARK_DIRECT_NO_CUDAGRAPH", "repeat=3"}),
       speedup_row("sort", "i32", "2", 1.5, {"BENCHMARK_DIRECT_NO_CUDAGRAPH repeat=3"}),
       speedup_row("sort", "i32", "3", 1.5, {"BENCHMARK_CAPTURE_POISONED"}),
       speedup_row("sort", "i32", "4", 1.5, {"timer=direct"})});
  const auto s = summarize({run});
  const auto* g = find_group(s, "sort", "i32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->fallback, 2);
  EXPECT_EQ(g->poisoned, 1);
  EXPECT_EQ(g->power_capped, 0);
  const std::string plain = caliber::report::render_text(summary_report(s));
  EXPECT_EQ(plain.find("CLOCK_POWER_CAPPED"), std::string::npos) << plain;
}

TEST(Summary, PowerCappedRowsAreCountedAndSaid) {
  TempDir t;
  const auto run = write_run(t.path(), "bmm-20261129-101010",
                             {speedup_row("bmm", "f16", "1", 1.0, {"CLOCK_POWER_CAPPED"}),
                              speedup_row("bmm", "f16", "2", 1.0, {"CLOCK_POWER_CAPPED"}),
                              speedup_row("bmm", "f16", "3", 1.0)});
  const auto s = summarize({run});
  const auto* g = find_group(s, "bmm", "f16");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->power_capped, 2);
  const std::string text = caliber::report::render_text(summary_report(s));
  EXPECT_NE(text.find("2 row(s) carry CLOCK_POWER_CAPPED"), std::string::npos) << text;
}

TEST(Summary, RowsTimedBesideAnotherProcessAreCountedAndSaid) {
  TempDir t;
  const auto run = write_run(t.path(), "gelu-20261206-155138",
                             {speedup_row("gelu", "f32", "1", 0.96, {"DEVICE_SHARED"}),
                              speedup_row("gelu", "f32", "2", 0.96)});
  const auto s = summarize({run});
  const auto* g = find_group(s, "gelu", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->device_shared, 1);
  const std::string text = caliber::report::render_text(summary_report(s));
  EXPECT_NE(text.find("1 row(s) carry DEVICE_SHARED: another process had work on the device"),
            std::string::npos)
      << text;
}

TEST(Summary, StopMissesAreCountedInAColumnAndSaid) {
  TempDir t;
  const auto run = write_run(t.path(), "add-20261130-101010",
                             {speedup_row("add", "f32", "1", 1.0, {"STOP_NOT_CONVERGED"}),
                              speedup_row("add", "f32", "2", 1.0)});
  const auto s = summarize({run});
  const auto* g = find_group(s, "add", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->stop_missed, 1);
  const std::string text = caliber::report::render_text(summary_report(s));
  EXPECT_NE(text.find("stop_missed"), std::string::npos) << text;
  EXPECT_NE(text.find("1 row(s) carry STOP_NOT_CONVERGED"), std::string::npos) << text;
}

TEST(Summary, BatchDirectoryUsesTheNewestRunPerOp) {
  TempDir t;
  const auto batch = t.path() / "batch-20261129-100000";
  // A first attempt that crashed after one row, and its resumed rerun.
  write_run(batch, "add-20261129-100001", {speedup_row("add", "f32", "1", 100.0)}, identity(),
            false);
  write_run(batch, "add-20261129-100500",
            {speedup_row("add", "f32", "1", 2.0), speedup_row("add", "f32", "2", 2.0)});
  write_run(batch, "sum-20261129-100001", {speedup_row("sum", "f32", "1", 3.0)});
  write_run(batch, "sum-20261129-100001-2", {speedup_row("sum", "f32", "1", 5.0)});
  std::ofstream(batch / "ops_status.csv") << "op,status\nadd,ok\nsum,ok\n";
  const auto s = summarize({batch});
  const auto* add = find_group(s, "add", "f32");
  const auto* sum = find_group(s, "sum", "f32");
  ASSERT_NE(add, nullptr);
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(add->rows, 2);
  EXPECT_NEAR(*add->geomean, 2.0, 1e-12);
  EXPECT_NEAR(*sum->geomean, 5.0, 1e-12);  // "-2" is the later claim of the same second
  ASSERT_EQ(s.overall.size(), 1u);
  EXPECT_EQ(s.overall[0].rows, 3);
  EXPECT_EQ(s.overall[0].source, "batch-20261129-100000");
}

// batch --ops-per-child: ops_status.csv's `run` column says which run holds each op's rows. A
// group's run (add, sum and mm ran in one child) counts only for the ops that name it: mm failed
// there and ran again alone, so its rows in the group's run are set aside; a group that could
// vouch for none of its ops (named by no op) is left out; an op without a run value (an older
// batch's row) still finds its newest run by name.
TEST(Summary, BatchRunColumnPicksEachOpsRowsFromItsRun) {
  TempDir t;
  const auto batch = t.path() / "batch-20261202-070000";
  write_run(batch, "group-add-3-20261202-070001",
            {speedup_row("add", "f32", "1", 2.0), speedup_row("sum", "f32", "1", 3.0),
             speedup_row("mm", "f32", "1", 100.0)});
  write_run(batch, "mm-20261202-070100", {speedup_row("mm", "f32", "1", 4.0)});
  write_run(batch, "group-neg-2-20261202-070200", {speedup_row("neg", "f32", "1", 50.0)},
            identity(), false);
  write_run(batch, "neg-20261202-070300", {speedup_row("neg", "f32", "1", 6.0)});
  write_run(batch, "exp-20261202-070400", {speedup_row("exp", "f32", "1", 7.0)});
  std::ofstream(batch / "ops_status.csv")
      << "op,status,run\nadd,ok,group-add-3-20261202-070001\nsum,ok,group-add-3-20261202-070001\n"
         "mm,failed,mm-20261202-070100\nneg,ok,neg-20261202-070300\nexp,ok,\n";
  const auto s = summarize({batch});
  for (const auto& [op, want] : std::vector<std::pair<std::string, double>>{
           {"add", 2.0}, {"sum", 3.0}, {"mm", 4.0}, {"neg", 6.0}, {"exp", 7.0}}) {
    const auto* g = find_group(s, op, "f32");
    ASSERT_NE(g, nullptr) << op;
    EXPECT_EQ(g->rows, 1) << op;
    EXPECT_NEAR(*g->geomean, want, 1e-12) << op;
  }
  ASSERT_EQ(s.overall.size(), 1u);
  EXPECT_EQ(s.overall[0].rows, 5);
}

// `caliber summary runs/` (issue #32): a folder of runs that is not a batch holds unrelated
// runs. Each is a source of its own, named, and two runs of one op are both shown, never merged
// into one line nor one of them dropped; a note says so.
TEST(Summary, AFolderOfRunsIsSummarizedPerRun) {
  TempDir t;
  const auto runs = t.path() / "runs";
  write_run(runs, "add-20261129-100001", {speedup_row("add", "f32", "1", 2.0)});
  write_run(runs, "add-20261130-100001", {speedup_row("add", "f32", "1", 4.0)});
  write_run(runs, "mm-20261130-110000", {speedup_row("mm", "f32", "1", 8.0)});
  const auto s = summarize({runs});
  ASSERT_EQ(s.overall.size(), 3u);
  std::vector<std::string> sources;
  for (const auto& o : s.overall) sources.push_back(o.source);
  EXPECT_EQ(sources, (std::vector<std::string>{"add-20261129-100001", "add-20261130-100001",
                                               "mm-20261130-110000"}));
  std::vector<double> add;
  for (const auto& g : s.groups)
    if (g.op == "add") add.push_back(*g.geomean);
  EXPECT_EQ(add, (std::vector<double>{2.0, 4.0})) << "both runs of add, each on its own line";
  const std::string text = caliber::report::render_text(summary_report(s));
  EXPECT_NE(text.find("runs (3 runs): a folder of runs, not a batch"), std::string::npos) << text;
}

TEST(Summary, TruncatedLastLineIsTolerated) {
  TempDir t;
  const auto run = write_run(t.path(), "add-20261129-101010", {speedup_row("add", "f32", "1", 2.0)},
                             identity(), false, R"({"type":"case","op":"add","dty)");
  const auto s = summarize({run});
  const auto* g = find_group(s, "add", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->rows, 1);
  EXPECT_EQ(s.truncated_logs, 1);
  EXPECT_EQ(s.unfinished_runs, 1);
}

TEST(Summary, NotARunDirectoryIsRefused) {
  TempDir t;
  EXPECT_THROW((void)summarize({t.path()}), std::runtime_error);
  EXPECT_THROW((void)summarize({t.path() / "missing"}), std::runtime_error);
}

TEST(Summary, OneRowModelFourReporters) {
  TempDir t;
  const auto run =
      write_run(t.path(), "add-20261129-101010",
                {speedup_row("add", "f32", "1", 2.0), speedup_row("add", "f32", "2", 8.0)});
  const auto rep = summary_report(summarize({run}));
  const auto j = caliber::report::render_json(rep);
  ASSERT_TRUE(j.contains("summary"));
  const auto& rows = j["summary"]["rows"];
  ASSERT_EQ(rows.size(), 2u);  // the op line and the overall line
  EXPECT_EQ(rows[0]["op"], "add");
  EXPECT_NEAR(rows[0]["geomean"].get<double>(), 4.0, 1e-9);
  EXPECT_EQ(rows[1]["op"], "(all)");
  const std::string csv = caliber::report::render_csv(rep);
  EXPECT_EQ(csv.rfind("source,op,dtype,rows,", 0), 0u) << csv;
  EXPECT_NE(csv.find(",add,f32,2,2,4,"), std::string::npos) << csv;
  const std::string md = caliber::report::render_markdown(rep);
  EXPECT_NE(md.find("| source | op |"), std::string::npos) << md;
  const std::string text = caliber::report::render_text(rep);
  EXPECT_NE(text.find("geomean"), std::string::npos);
}

TEST(Summary, ARowWithAFieldOfTheWrongTypeIsNotReadAndTheNoteSaysWhy) {
  TempDir t;
  json bad = speedup_row("add", "f32", "2", 2.0);
  bad["latency_ms"] = "fast";
  const auto run =
      write_run(t.path(), "add-20261129-101010", {speedup_row("add", "f32", "1", 1.0), bad});
  const auto s = summarize({run});
  const auto* g = find_group(s, "add", "f32");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->rows, 1);  // the bad row is not half read
  EXPECT_EQ(s.bad_lines, 1);
  const auto rep = summary_report(s);
  std::string notes;
  for (const auto& tb : rep.tables)
    for (const auto& n : tb.notes) notes += n + "\n";
  EXPECT_NE(notes.find("1 run.log line(s) could not be read"), std::string::npos) << notes;
  EXPECT_NE(notes.find("field 'latency_ms' is string, expected a number"), std::string::npos)
      << notes;
}

namespace {
// A FlagGems-style row: two providers with their noise, FlagGems' shape count and parameters.
json repeat_row(const std::string& shape, const std::string& ordinal, double torch_ms,
                double torch_noise, double gems_ms, double gems_noise, bool torch_converged) {
  RowSpec s;
  s.op = "mm";
  s.shape = shape;
  s.cand = {gems_ms};
  s.base = {torch_ms};
  json row = make_row(s);
  row["params"] = {{"ordinal", ordinal}, {"test", "benchmark/test_mm.py::test_mm"}};
  row["providers"][0]["name"] = "gems";
  row["providers"][0]["noise"] = gems_noise;
  row["providers"][1]["name"] = "torch";
  row["providers"][1]["noise"] = torch_noise;
  row["providers"][1]["converged"] = torch_converged;
  return row;
}
}  // namespace

// The H100 record of 2026-12-06: torch's mm f32 4096^3 read 5.12 ms (noise 2.14%, not
// converged) and, as `#2` later in the same run, 2.66 ms; gems read 2.092 and 2.107 ms.
TEST(Summary, RepeatedInputsThatDisagreeAreSaid) {
  TempDir t;
  const auto run = write_run(
      t.path(), "mm-20261206-015011",
      {repeat_row("4096x4096_4096x4096", "1", 5.124293, 0.0214, 2.091959, 0.0197, false),
       repeat_row("1024x1024_1024x1024", "2", 0.1, 0.001, 0.09, 0.001, true),
       repeat_row("4096x4096_4096x4096#2", "4", 2.6582535, 0.00015, 2.107319, 0.00083, true)});
  const auto s = summarize({run});
  EXPECT_NE(s.repeats.find("1 of 2 figure(s) of repeated inputs disagree beyond their noise"),
            std::string::npos)
      << s.repeats;
  // 3 x hypot(2.14%, 0.015%) = 6.4%: torch's 1.93x is beyond it, gems' 0.7% within 5.9%
  EXPECT_NE(s.repeats.find("torch mm f32 4096x4096_4096x4096 5.124 vs 2.658 ms (1.93x, allowed "
                           "6.4%; the first STOP_NOT_CONVERGED)"),
            std::string::npos)
      << s.repeats;
  const std::string text = caliber::report::render_text(summary_report(s));
  EXPECT_NE(text.find("repeated inputs disagree"), std::string::npos) << text;
}

TEST(Summary, RepeatedInputsThatAgreeAndOtherParametersAreNotRepeats) {
  TempDir t;
  auto other_test = repeat_row("64x64#2", "3", 9.0, 0.001, 9.0, 0.001, true);
  other_test["params"]["test"] = "benchmark/test_mm.py::test_mm_other";  // another input
  const auto run = write_run(t.path(), "mm-20261206-015501",
                             {repeat_row("64x64", "1", 1.0, 0.01, 0.5, 0.001, true), other_test,
                              repeat_row("64x64#2", "2", 1.04, 0.01, 0.51, 0.001, true)});
  const auto s = summarize({run});
  EXPECT_EQ(s.repeats,
            "2 figure(s) of repeated inputs agree within their noise (the same inputs timed twice "
            "in one run, FlagGems' SHAPE#2 rows; docs/report.md#repeated-inputs)");
  EXPECT_DOUBLE_EQ(caliber::core::repeat_limit(0.0, 0.0), 0.05);
  EXPECT_NEAR(caliber::core::repeat_limit(0.03, 0.04), 0.15, 1e-12);
}

TEST(Summary, RunsWithoutRepeatedInputsSayNothingOfThem) {
  TempDir t;
  const auto run =
      write_run(t.path(), "add-20261206-010101",
                {speedup_row("add", "f32", "1", 1.0), speedup_row("add", "f32", "2", 2.0)});
  EXPECT_EQ(summarize({run}).repeats, "");
}
