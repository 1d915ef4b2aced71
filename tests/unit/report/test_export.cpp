// caliber export: one row per case and provider, columns of a fixed type, the lead's timing fields
// read when present and empty when absent, Google Benchmark's JSON shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

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

namespace {
// A run of two rows: two_provider_row's, and a failed sum row without providers.
std::filesystem::path ok_and_failed_run(const TempDir& t) {
  RowSpec failed;
  failed.op = "sum";
  failed.status = "failed";
  json frow = make_row(failed);
  frow.erase("providers");
  return write_run(t.path(), "mm-20261130-101010", {two_provider_row(), frow});
}
}  // namespace

// The gbench text is written entry by entry (a run of many samples is never one document in
// memory), and is still byte for byte the document's dump(2): what export printed before.
TEST(Export, GoogleBenchmarkTextIsTheDocumentsDump) {
  TempDir t;
  const auto dir = ok_and_failed_run(t);
  const auto empty = write_run(t.path(), "mm-20261130-101011", {});
  for (const auto& runs : {load_runs({dir}), load_runs({empty}), load_runs({dir, empty})}) {
    std::ostringstream text;
    write_export_gbench(text, runs);
    const json doc = json::parse(text.str());
    EXPECT_EQ(text.str(), doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  }
  std::ostringstream none;
  write_export_gbench(none, load_runs({empty}));
  EXPECT_NE(none.str().find("\"benchmarks\": [],"), std::string::npos) << none.str();
}

TEST(Export, GoogleBenchmarkShape) {
  TempDir t;
  const auto dir = ok_and_failed_run(t);
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

namespace {

// The "[INFO] {...}" records of a flaggems-log export.
std::vector<json> log_records(const std::string& text) {
  std::vector<json> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    EXPECT_EQ(line.rfind("[INFO] {", 0), 0u) << line;
    // Python's json reads NaN (a failed input's latency); nlohmann's parser does not.
    std::string body = line.substr(7);
    for (std::size_t at = 0; (at = body.find(":NaN", at)) != std::string::npos;)
      body.replace(at, 4, ":\"NaN\"");
    out.push_back(json::parse(body));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

}  // namespace

// The built-in corpus alternates dtypes within a shape (add f32 64, add f64 64, add f32 4096,
// ...): still one record per (op, dtype), or FlagGems' summary_for_plot, which keeps the last
// record of an (op, dtype), would show the last shape alone. A dtype its summary has no column
// for (f64) is named in a note.
TEST(Export, FlagGemsLogJoinsAnOpsDtypeAcrossTheRun) {
  TempDir t;
  std::vector<json> rows;
  for (const char* shape : {"64", "4096"})
    for (const char* dtype : {"f32", "f64"}) {
      RowSpec a;
      a.dtype = dtype;
      a.shape = shape;
      a.cand = {1.0};
      a.base = {2.0};
      rows.push_back(make_row(a));
    }
  const auto dir = write_run(t.path(), "add-20261204-101010", rows, identity("core"));
  const ExportResult r = render_export_flaggems_log(load_runs({dir}));
  const auto recs = log_records(r.text);
  ASSERT_EQ(recs.size(), 2u) << r.text;
  EXPECT_EQ(recs[0]["dtype"], "torch.float32");
  EXPECT_EQ(recs[0]["result"].size(), 2u);
  EXPECT_EQ(recs[1]["dtype"], "torch.float64");
  EXPECT_EQ(recs[1]["result"].size(), 2u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("torch.float64"), std::string::npos) << r.notes[0];
}

TEST(Export, FlagGemsLogOneRecordPerOpAndDtype) {
  TempDir t;
  // The built-in corpus: caliber's dtypes in torch's spelling, the dims as the shape detail.
  RowSpec a;
  a.op = "add";
  a.dtype = "f16";
  a.cand = {1.0};
  a.base = {2.0};
  json r1 = make_row(a);
  r1["dims"] = {1024};
  a.shape = "4096";
  json r2 = make_row(a);
  r2["providers"][0]["gbps"] = 30.0;
  r2["providers"][1]["gbps"] = 15.0;
  r2["tflops"] = 0.5;
  a.dtype = "bf16";
  json r3 = make_row(a);
  RowSpec sk = a;
  sk.status = "skipped";
  sk.shape = "8192";
  RowSpec bad = a;
  bad.status = "failed";
  bad.shape = "16384";
  json rb = make_row(bad);
  rb.erase("latency_ms");  // the candidate failed: no latency of its own
  const auto native =
      write_run(t.path(), "add-20261204-101010", {r1, r2, r3, make_row(sk), rb}, identity("core"));
  ExportResult r = render_export_flaggems_log(load_runs({native}));
  auto recs = log_records(r.text);
  ASSERT_EQ(recs.size(), 2u) << r.text;
  EXPECT_EQ(recs[0]["op_name"], "add");
  EXPECT_EQ(recs[0]["dtype"], "torch.float16");
  EXPECT_EQ(recs[0]["mode"], "caliber");
  EXPECT_EQ(recs[0]["level"], "core");
  ASSERT_EQ(recs[0]["result"].size(), 2u);
  const json& m1 = recs[0]["result"][0];
  EXPECT_EQ(m1["shape_detail"], json::array({1024}));
  EXPECT_DOUBLE_EQ(m1["latency"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(m1["latency_base"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(m1["speedup"].get<double>(), 2.0);
  EXPECT_TRUE(m1["error_msg"].is_null());
  for (const char* k : {"legacy_shape", "gbps_base", "gbps", "accuracy", "tflops", "utilization",
                        "compared_speedup"})
    EXPECT_TRUE(m1.contains(k) && m1[k].is_null()) << k;
  const json& m2 = recs[0]["result"][1];
  EXPECT_EQ(m2["shape_detail"], "4096");
  EXPECT_DOUBLE_EQ(m2["gbps"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(m2["gbps_base"].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(m2["tflops"].get<double>(), 0.5);
  // bf16: the ok row and the failed one (the skipped one left out), its error kept.
  EXPECT_EQ(recs[1]["dtype"], "torch.bfloat16");
  ASSERT_EQ(recs[1]["result"].size(), 2u);
  EXPECT_EQ(recs[1]["result"][1]["error_msg"], "made to fail");
  // Its latency NaN, as Python writes it, so that --compare can divide by it.
  EXPECT_EQ(recs[1]["result"][1]["latency"], "NaN");
  EXPECT_NE(r.text.find("\"latency\":NaN,"), std::string::npos) << r.text;
  EXPECT_TRUE(recs[1]["result"][0]["latency"].is_number());
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("1 skipped"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[1].find("1 failed"), std::string::npos) << r.notes[1];

  // A FlagGems run: its mode and level, and each row's own dtype text and shape detail; a row
  // whose input loop broke (no dtype) stays in the record being filled.
  json fg_ident = identity("comprehensive");
  fg_ident["flaggems"] = {{"mode", "cudagraph"}, {"level", "core"}};
  RowSpec g;
  g.op = "softmax";
  g.dtype = "f32";
  g.cand = {1.0};
  g.base = {1.5};
  json f1 = make_row(g);
  f1["flaggems"] = {{"dtype", "torch.float32"}, {"shape_detail", {{64, 64}}}};
  RowSpec broken = g;
  broken.status = "failed";
  json f2 = make_row(broken);
  f2.erase("dtype");
  const auto fg = write_run(t.path(), "flaggems-20261204-101010", {f1, f2}, fg_ident);
  recs = log_records(render_export_flaggems_log(load_runs({fg})).text);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["mode"], "cudagraph");
  EXPECT_EQ(recs[0]["level"], "core");
  EXPECT_EQ(recs[0]["dtype"], "torch.float32");
  ASSERT_EQ(recs[0]["result"].size(), 2u);
  EXPECT_EQ(recs[0]["result"][0]["shape_detail"], json::parse("[[64, 64]]"));
  EXPECT_EQ(recs[0]["result"][1]["error_msg"], "made to fail");
  // Without run_identity.json, the copy of the identity in the run.log header says the mode.
  const auto bare = t.path() / "flaggems-20261204-121212";
  std::filesystem::create_directories(bare);
  {
    std::ofstream log(bare / "run.log");
    log << json{{"type", "header"}, {"flaggems", {{"mode", "kernel"}, {"level", "core"}}}}.dump()
        << "\n"
        << f1.dump() << "\n";
  }
  recs = log_records(render_export_flaggems_log(load_runs({bare})).text);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["mode"], "kernel");
  EXPECT_EQ(recs[0]["level"], "core");
  // Through export_dirs, as the CLI calls it.
  EXPECT_EQ(export_dirs({fg}, ExportFormat::flaggems_log).text,
            render_export_flaggems_log(load_runs({fg})).text);
  EXPECT_EQ(parse_export_format("flaggems-log"), ExportFormat::flaggems_log);
}
