// caliber export: one row per case and provider, columns of a fixed type, the lead's timing fields
// read when present and empty when absent, Google Benchmark's JSON shape.
#include <gtest/gtest.h>

#include <algorithm>

#include "report/export.hpp"
#include "unit/report/fixtures.hpp"

using namespace caliber::report;
using namespace caliber::testing;

namespace {

std::size_t col(const ExportTable& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == name) return i;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

json two_provider_row() {
  RowSpec s;
  s.op = "mm";
  s.dtype = "bf16";
  s.shape = "64x64";
  s.cand = samples(1.0, 0.01, 9, 1);
  s.base = samples(2.0, 0.01, 7, 2);
  json row = make_row(s);
  row["params"] = {{"layout", "nt"}};
  row["markers"] = {"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct", "compat_lifted"};
  auto& cand = row["providers"][0];
  cand["markers"] = {"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct"};
  cand["noise"] = 0.004;
  cand["gbps"] = 100.0;
  cand["tflops"] = 2.0;
  cand["pct_peak_bw"] = 50.0;
  cand["stop_reason"] = "converged";
  cand["throttled_discarded"] = 3;
  cand["launches_per_sample"] = 8;
  cand["quantiles_ms"] = {0.9, 1.1};
  cand["regime"] = "sustained";
  cand["converged"] = false;
  cand["l2_method"] = "flush";
  cand["sm_clock_mean_mhz"] = 1755.5;
  cand["clock_reasons"] = {"sw_power_cap", "hw_slowdown"};
  cand["accuracy"] = true;
  auto& base = row["providers"][1];
  base["gbps"] = 40.0;  // no pct recorded: computed from the run's peaks
  return row;
}

}  // namespace

TEST(Export, OneRowPerCaseAndProviderWithTypedColumns) {
  TempDir t;
  json ident = identity();
  ident["quantiles"] = {0.1, 0.9};
  ident["peaks"] = {{"copy_gbps", 200.0}, {"gemm_tflops", 10.0}};
  RowSpec skipped;
  skipped.op = "sum";
  skipped.status = "skipped";
  json srow = make_row(skipped);
  srow.erase("providers");
  srow["reason"] = "needs 9 GiB";
  const auto dir = write_run(t.path(), "mm-20261130-101010", {two_provider_row(), srow}, ident);
  const ExportTable tab = export_table(load_runs({dir}));
  ASSERT_EQ(tab.rows.size(), 3u);  // two providers, then the skipped case on one row
  const auto& cand = tab.rows[0];
  const auto& base = tab.rows[1];
  const auto& skip = tab.rows[2];
  EXPECT_EQ(cand[col(tab, "run")], "mm-20261130-101010");
  EXPECT_EQ(cand[col(tab, "provider")], "mine");
  EXPECT_EQ(cand[col(tab, "role")], "candidate");
  EXPECT_EQ(cand[col(tab, "node")], "mm[bf16-64x64]");
  EXPECT_EQ(cand[col(tab, "params")], (json{{"layout", "nt"}}));
  EXPECT_EQ(cand[col(tab, "samples")], 9);
  EXPECT_EQ(base[col(tab, "samples")], 7);
  EXPECT_DOUBLE_EQ(cand[col(tab, "p10_ms")].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(cand[col(tab, "p90_ms")].get<double>(), 1.1);
  EXPECT_TRUE(base[col(tab, "p90_ms")].is_null());
  EXPECT_DOUBLE_EQ(cand[col(tab, "pct_peak_bw")].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(cand[col(tab, "pct_peak_flops")].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(base[col(tab, "pct_peak_bw")].get<double>(), 20.0);
  // The speedup is the case's, on its first candidate only.
  EXPECT_TRUE(cand[col(tab, "speedup")].is_number());
  EXPECT_TRUE(base[col(tab, "speedup")].is_null());
  // Markers: the provider's own, each once, and the case's that no provider carries.
  EXPECT_EQ(cand[col(tab, "markers")], "BENCHMARK_DIRECT_NO_CUDAGRAPH timer=direct compat_lifted");
  EXPECT_EQ(base[col(tab, "markers")], "compat_lifted");
  // The timing fields of another change: read when present, empty when absent.
  EXPECT_EQ(cand[col(tab, "regime")], "sustained");
  EXPECT_EQ(cand[col(tab, "converged")], false);
  EXPECT_EQ(cand[col(tab, "l2_method")], "flush");
  EXPECT_EQ(cand[col(tab, "clock_reasons")], "sw_power_cap;hw_slowdown");
  EXPECT_DOUBLE_EQ(cand[col(tab, "sm_clock_mean_mhz")].get<double>(), 1755.5);
  EXPECT_TRUE(base[col(tab, "regime")].is_null());
  EXPECT_TRUE(base[col(tab, "converged")].is_null());
  EXPECT_TRUE(base[col(tab, "power_w")].is_null());
  EXPECT_EQ(skip[col(tab, "status")], "skipped");
  EXPECT_TRUE(skip[col(tab, "provider")].is_null());
  EXPECT_EQ(skip[col(tab, "error")], "needs 9 GiB");
  // An integer column never holds an empty cell.
  for (std::size_t c = 0; c < tab.columns.size(); ++c) {
    if (tab.columns[c].kind == ColumnKind::integer) {
      for (const auto& r : tab.rows) EXPECT_TRUE(r[c].is_number_integer()) << tab.columns[c].name;
    }
  }
  EXPECT_FALSE(std::any_of(tab.notes.begin(), tab.notes.end(),
                           [](const std::string& n) { return n.find("peaks") != n.npos; }));
}

TEST(Export, CsvIsOneTableAndJsonKeepsTypes) {
  TempDir t;
  const auto dir = write_run(t.path(), "mm-20261130-101010", {two_provider_row()}, identity(),
                             /*footer=*/false);
  const ExportTable tab = export_table(load_runs({dir}));
  const std::string csv = render_export_csv(tab);
  // A header and two lines, nothing else: notes are returned, not written.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.find('#'), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"{\"\"layout\"\":\"\"nt\"\"}\""), std::string::npos) << csv;
  EXPECT_NE(csv.find(",false,true,"), std::string::npos) << csv;  // converged, accuracy
  ASSERT_FALSE(tab.notes.empty());
  EXPECT_NE(tab.notes.front().find("no footer"), std::string::npos);
  const json j = render_export_json(tab);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_TRUE(j[0]["samples"].is_number_integer());
  EXPECT_TRUE(j[0]["latency_ms"].is_number_float());
  EXPECT_TRUE(j[1]["converged"].is_null());
}

TEST(Export, GoogleBenchmarkShape) {
  TempDir t;
  RowSpec failed;
  failed.op = "sum";
  failed.status = "failed";
  json frow = make_row(failed);
  frow.erase("providers");
  const auto dir = write_run(t.path(), "mm-20261130-101010", {two_provider_row(), frow});
  const json g = render_export_gbench(load_runs({dir}));
  ASSERT_TRUE(g["context"].is_object());
  ASSERT_TRUE(g["benchmarks"].is_array());
  int iterations = 0, medians = 0, errors = 0;
  for (const auto& b : g["benchmarks"]) {
    if (b.value("error_occurred", false)) {
      ++errors;
      EXPECT_EQ(b["name"], "sum[f32-1024]");
      continue;
    }
    EXPECT_EQ(b["time_unit"], "ns");
    EXPECT_TRUE(b["real_time"].is_number());
    EXPECT_TRUE(b["cpu_time"].is_number());
    if (b["run_type"] == "iteration" && b["name"] == "mm[bf16-64x64]/mine") {
      ++iterations;
      EXPECT_EQ(b["repetitions"], 9);
      EXPECT_EQ(b["iterations"], 8);
    }
    if (b["run_type"] == "aggregate" && b["aggregate_name"] == "median") {
      ++medians;
      EXPECT_EQ(b["name"].get<std::string>().substr(b["name"].get<std::string>().size() - 7),
                "_median");
    }
  }
  EXPECT_EQ(iterations, 9);
  EXPECT_EQ(medians, 2);
  EXPECT_EQ(errors, 1);
}

TEST(Export, FormatNames) {
  EXPECT_EQ(parse_export_format("gbench"), ExportFormat::gbench);
  EXPECT_FALSE(parse_export_format("xlsx"));
}
