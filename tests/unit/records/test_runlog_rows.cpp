// The typed run.log rows (core/runlog_rows.hpp): one conversion each way, faithful round trips,
// unknown keys kept, and a clear RowError for a missing required key or a value of the wrong type.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "records/runlog.hpp"
#include "records/runlog_rows.hpp"
#include "temp_dir.hpp"

using caliber::testing::TempDir;
using namespace caliber::core;
using nlohmann::json;

namespace {

// A case row as `caliber run add --seed 42` on the cpu backend writes it (samples cut to three),
// with a tuned provider's "tune" object and a re-timed provider's graph fields added: every
// field of docs/run-log.md's case and provider tables that a run writes.
const char* kRealRow = R"({"accuracy": true, "dims": [65536], "dtype": "f32", "family": "pointwise",
 "gbps": 137.24428345030563, "latency_base_ms": 0.005515184210526316,
 "latency_ms": 0.005730162162162163, "markers": ["timer=direct"], "node": "add[f32-65536]",
 "noise": 0.007713285901122782, "op": "add", "params": {"axis": "1"},
 "pct_peak_bw": 385.65045132851856, "pct_peak_flops": 34.394307763034384,
 "providers": [{"clock_known": false, "converged": true, "gbps": 142.59396784952546,
   "l2_method": "flush-per-sample", "label": "plain loop; the host has no vendor library",
   "latency_ms": 0.005515184210526316, "launches_per_sample": 38, "markers": ["timer=direct"],
   "name": "loop", "noise": 0.007251722118860243,
   "note": "the backend reads no clocks: the clock regime is declared, not verified",
   "pct_peak_bw": 400.6828311927865, "pct_peak_flops": 35.73497337792315, "regime": "sustained",
   "repeat": 1, "role": "baseline", "sample_method": "host-batch",
   "samples_ms": [0.005530342105263158, 0.005463684210526316, 0.005335052631578947],
   "settled": false, "stop_reason": "converged", "tflops": 0.011882830654127123,
   "throttled_discarded": 0, "timer": "direct", "timer_resolution_us": 0.0,
   "wall_s": 0.07055403599952115, "graph_latency_ms": null, "graph_launches_per_sample": 4},
  {"accuracy": true, "accuracy_detail": "add vs host float64: n=65536 rel_err=2.76192e-08",
   "clock_known": true, "sm_clock_mean_mhz": 1980.5, "sm_clock_min_mhz": 1965,
   "sm_clock_max_mhz": 1980, "power_w": 412.5, "power_limit_w": 700.0,
   "clock_reasons": ["sw_power_cap"], "power_capped_samples": 3, "regime_discarded": 2,
   "settle_s": 1.5, "settle": "carried", "check_method": "host-float64-sampled",
   "check_coverage": 0.25, "check_elements": 16384, "config": "lanes=8", "tune_markers": ["compile_tune_no_evict"],
   "tune": {"source": "tuned", "tried": 4, "rejected": 1, "sweep_s": 0.25, "key": "65536",
            "note": "retuned", "evicted": "lanes=16"},
   "converged": true, "gbps": 137.24428345030563, "l2_method": "flush-per-sample",
   "label": "restrict pointers, 8 lanes per step", "latency_ms": 0.005730162162162163,
   "launches_per_sample": 37, "markers": ["compile_tune_no_evict", "timer=direct"],
   "max_abs_err": 5.960464477539063e-08, "name": "unrolled", "noise": 0.007713285901122782,
   "pct_peak_bw": 385.65045132851856, "pct_peak_flops": 34.394307763034384,
   "quantiles_ms": [0.0055, 0.0061], "regime": "sustained", "rel_err": 2.7619165948636313e-08,
   "repeat": 1, "role": "candidate", "sample_method": "host-batch",
   "samples_ms": [0.006007351351351351, 0.005793243243243243, 0.006737891891891892],
   "stop_reason": "converged", "tflops": 0.011437023620858801, "throttled_discarded": 0,
   "timer": "direct", "timer_resolution_us": 0.0, "wall_s": 0.07241948699811473}],
 "repeat": 1, "shape": "65536", "speedup": 0.9624830946224515, "status": "ok",
 "tflops": 0.011437023620858801, "timer": "direct", "type": "case",
 "inputs_s": 0.012, "prepare_s": 0.25, "check_s": 0.004, "settle_s": 1.5, "timing_s": 0.14,
 "other_s": 0.001, "wall_s": 1.907})";

json real_row() {
  return json::parse(kRealRow);
}

// A failed and a skipped row, and a --profile row's providers.
const char* kOtherRows[] = {
    R"({"type":"case","op":"mm","dtype":"f32","shape":"M1","status":"failed","error":"boom",
        "accuracy":null,"speedup":null,"providers":[{"name":"a","role":"candidate",
        "error":"boom","failure":"recoverable"}]})",
    R"({"type":"case","op":"sum","status":"skipped","reason":"needs 2 GiB","markers":[]})",
    R"({"type":"case","op":"mm","profile":true,"status":"ok","providers":[{"name":"a",
        "role":"candidate","config":"bm=64","range":"mm[f32-M1]/a","launches":3}]})",
};

// The row read and written back, as text: dump() tells 1 from 1.0, where json's == does not.
std::string round_trip(const json& j) {
  return to_json(case_row_from_json(j)).dump();
}

std::string error_of(const json& j) {
  try {
    (void)case_row_from_json(j);
  } catch (const RowError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(RunLogRows, RealRowRoundTripsExactly) {
  const json j = real_row();
  EXPECT_EQ(round_trip(j), j.dump());
  for (const char* text : kOtherRows)
    EXPECT_EQ(round_trip(json::parse(text)), json::parse(text).dump());
}

TEST(RunLogRows, EveryFieldAWriterWritesIsTyped) {
  // Nothing of a real row may land in `extra`: a field the conversion forgot would still round
  // trip through extra, but no reader could see it.
  const CaseRow row = case_row_from_json(real_row());
  EXPECT_TRUE(row.extra.empty()) << row.extra.dump();
  ASSERT_TRUE(row.providers.has_value());
  ASSERT_EQ(row.providers->size(), 2u);
  for (const auto& p : *row.providers) {
    EXPECT_TRUE(p.extra.empty()) << p.name << ": " << p.extra.dump();
    if (p.tune) {
      EXPECT_TRUE(p.tune->extra.empty()) << p.tune->extra.dump();
    }
  }
  for (const char* text : kOtherRows) {
    const CaseRow other = case_row_from_json(json::parse(text));
    EXPECT_TRUE(other.extra.empty()) << other.extra.dump();
  }
  EXPECT_EQ(row.op, "add");
  EXPECT_EQ(row.node, "add[f32-65536]");
  EXPECT_EQ(row.dims, std::vector<std::int64_t>{65536});
  EXPECT_EQ(row.params->at("axis"), "1");
  ASSERT_TRUE(row.speedup && *row.speedup);
  EXPECT_DOUBLE_EQ(**row.speedup, 0.9624830946224515);
  ASSERT_TRUE(row.accuracy && *row.accuracy);
  EXPECT_TRUE(**row.accuracy);
  const ProviderRow& base = (*row.providers)[0];
  const ProviderRow& cand = (*row.providers)[1];
  EXPECT_EQ(base.role, role::baseline);
  EXPECT_EQ(base.launches_per_sample, 38);
  EXPECT_EQ(base.samples_ms->size(), 3u);
  ASSERT_TRUE(base.graph_latency_ms.has_value());  // present, as null
  EXPECT_FALSE(base.graph_latency_ms->has_value());
  EXPECT_EQ(cand.tune->source, "tuned");
  EXPECT_EQ(cand.tune->tried, 4);
  EXPECT_EQ(cand.tune->evicted, "lanes=16");
  EXPECT_EQ(cand.sm_clock_min_mhz, 1965);
  EXPECT_EQ(cand.quantiles_ms->size(), 2u);
  EXPECT_EQ(cand.settle, "carried");
  EXPECT_EQ(cand.check_method, "host-float64-sampled");
  EXPECT_DOUBLE_EQ(*cand.check_coverage, 0.25);
  EXPECT_EQ(cand.check_elements, 16384);
  EXPECT_DOUBLE_EQ(*row.phases.settle_s, 1.5);
  EXPECT_DOUBLE_EQ(*row.phases.wall_s, 1.907);
  EXPECT_EQ(all_markers(row), (std::vector<std::string>{"timer=direct", "compile_tune_no_evict"}));
}

TEST(RunLogRows, NullsAreKeptAsWritten) {
  const CaseRow failed = case_row_from_json(json::parse(kOtherRows[0]));
  ASSERT_TRUE(failed.speedup.has_value());
  EXPECT_FALSE(failed.speedup->has_value());  // null: nothing to compare
  ASSERT_TRUE(failed.accuracy.has_value());
  EXPECT_FALSE(failed.accuracy->has_value());
  const CaseRow skipped = case_row_from_json(json::parse(kOtherRows[1]));
  EXPECT_FALSE(skipped.speedup.has_value());  // absent stays absent
  EXPECT_EQ(status_of(skipped), status::skipped);
  // A repaired NaN (null) in a field that is never null: absent for the readers, kept for writing.
  json j = real_row();
  j["repeat"] = nullptr;
  j["providers"][0]["latency_ms"] = nullptr;
  const CaseRow row = case_row_from_json(j);
  EXPECT_FALSE(row.repeat.has_value());
  EXPECT_FALSE((*row.providers)[0].latency_ms.has_value());
  EXPECT_EQ(to_json(row).dump(), j.dump());
}

TEST(RunLogRows, UnknownKeysSurviveARoundTrip) {
  json j = real_row();
  j["written_by_a_newer_caliber"] = {{"x", 1}, {"y", {1.5, 2.5}}};
  j["providers"][1]["energy_j"] = 0.25;
  j["providers"][1]["tune"]["strategy"] = "bayes";
  const CaseRow row = case_row_from_json(j);
  EXPECT_EQ(row.extra.at("written_by_a_newer_caliber")["x"], 1);
  EXPECT_EQ((*row.providers)[1].extra.at("energy_j"), 0.25);
  EXPECT_EQ((*row.providers)[1].tune->extra.at("strategy"), "bayes");
  EXPECT_EQ(to_json(row).dump(), j.dump());
  // A typed field wins over an extra of the same name.
  CaseRow edited = row;
  edited.extra["op"] = "not this";
  EXPECT_EQ(to_json(edited)["op"], "add");
}

TEST(RunLogRows, MissingRequiredKeyIsARowError) {
  json j = real_row();
  j.erase("op");
  EXPECT_NE(error_of(j).find("has no 'op'"), std::string::npos) << error_of(j);
  json p = real_row();
  p["providers"][1].erase("name");
  EXPECT_NE(error_of(p).find("has no 'name'"), std::string::npos) << error_of(p);
  EXPECT_NE(error_of(p).find("add[f32-65536]"), std::string::npos) << error_of(p);  // which row
  EXPECT_NE(error_of(json::parse(R"({"op":"add"})")).find("has no 'type'"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"type":"footer","op":"add"})")).find("is not 'case'"),
            std::string::npos);
  EXPECT_NE(error_of(json::array()).find("expected an object"), std::string::npos);
}

TEST(RunLogRows, WrongTypeIsARowErrorNamingTheField) {
  auto with = [](const char* key, json v) {
    json j = real_row();
    j[key] = std::move(v);
    return error_of(j);
  };
  const std::string e = with("latency_ms", "fast");
  EXPECT_NE(e.find("case row 'add[f32-65536]': field 'latency_ms' is string, expected a number"),
            std::string::npos)
      << e;
  EXPECT_NE(with("repeat", 1.5).find("field 'repeat' is number, expected an integer"),
            std::string::npos);
  EXPECT_NE(with("markers", "timer=direct").find("expected a list"), std::string::npos);
  EXPECT_NE(with("dims", json::array({1, "x"})).find("field 'dims'[1] is string"),
            std::string::npos)
      << with("dims", json::array({1, "x"}));
  EXPECT_NE(with("speedup", true).find("field 'speedup' is boolean"), std::string::npos);
  EXPECT_NE(with("params", {{"axis", 1}}).find("field 'params'.axis is number"), std::string::npos);
  json t = real_row();
  t["providers"][1]["tune"]["tried"] = "four";
  EXPECT_NE(error_of(t).find("field 'tried' is string"), std::string::npos) << error_of(t);
  // An integer written as 3.0 by a tool that knows only doubles is still an integer.
  EXPECT_EQ(with("repeat", 3.0), "(no error)");
}

TEST(RunLogRows, HeaderAndFooterRoundTrip) {
  const json header = {{"type", "header"},
                       {"schema", 1},
                       {"backend", "cpu"},
                       {"cases", 18},
                       {"device", {{"name", "host"}}}};
  const RunLogHeader h = header_from_json(header);
  EXPECT_EQ(h.cases, 18u);
  EXPECT_EQ(h.identity["backend"], "cpu");
  EXPECT_FALSE(h.identity.contains("type"));
  EXPECT_EQ(to_json(h).dump(), header.dump());
  const json footer = json::parse(
      R"({"cases": 18, "end_time": "2026-11-30T23:20:58Z", "failed": 0, "ok": 18,
          "parallel_warmup": null, "skipped": 0, "tune": {"cache": "/c/tune.db",
          "keys_tuned": 0, "mode": "live", "sweep_s": 0.0}, "type": "footer",
          "wall_s": 6.562622305, "warnings": ["w"], "later": true})");
  const RunLogFooter f = footer_from_json(footer);
  EXPECT_EQ(f.ok, 18);
  EXPECT_EQ(f.tune->mode, "live");
  ASSERT_TRUE(f.parallel_warmup.has_value());
  EXPECT_TRUE(f.parallel_warmup->is_null());
  EXPECT_EQ(f.extra.at("later"), true);
  EXPECT_EQ(to_json(f).dump(), footer.dump());
  EXPECT_THROW((void)footer_from_json(json{{"type", "footer"}, {"ok", "yes"}}), RowError);
}

TEST(RunLogRows, ReadRunLogCountsARowOfTheWrongTypeAsUnreadable) {
  TempDir dir;
  const auto file = dir.path() / run_log_file;
  {
    RunLogWriter w(file);
    w.append_header(RunLogHeader{{{"backend", "cpu"}}, 2});
    json bad = real_row();
    bad["latency_ms"] = "fast";
    w.append(bad);
    w.append_case(case_row_from_json(real_row()));
  }
  const RunLog log = read_run_log(file);
  ASSERT_EQ(log.cases.size(), 1u);
  EXPECT_EQ(log.bad_lines, 1);
  EXPECT_NE(log.first_bad_line_error.find("'latency_ms'"), std::string::npos)
      << log.first_bad_line_error;
  EXPECT_EQ(to_json(log.cases[0]).dump(), real_row().dump());
  EXPECT_EQ(log.header->cases, 2u);
}
