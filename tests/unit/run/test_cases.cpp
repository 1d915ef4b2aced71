// Case selection from the command line: glob node ids, --shape sweeps, and select_cases over the
// tiny ops of unit_ops.hpp (the only cpu ops of this executable): which ops, dtypes, shapes and
// node filters make which cases, and the errors that name the knob.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "run/case_runner.hpp"
#include "run/cases.hpp"
#include "run/run_table.hpp"
#include "settings/knobs.hpp"
#include "temp_dir.hpp"
#include "unit_ops.hpp"

using caliber::run::glob_match;

TEST(Glob, WildcardsAndLiteralBrackets) {
  EXPECT_TRUE(glob_match("mm[bf16-*]", "mm[bf16-M4096-N4096-K4096]"));
  EXPECT_FALSE(glob_match("mm[bf16-*]", "mm[f16-M4096-N4096-K4096]"));
  EXPECT_TRUE(glob_match("*[f32-*]", "add[f32-65536]"));
  EXPECT_TRUE(
      glob_match("add[f?"
                 "?-*]",
                 "add[f32-65536]"));
  EXPECT_FALSE(glob_match("add[f?-*]", "add[f32-65536]"));
  EXPECT_TRUE(glob_match("mm[bf16-M4096-N4096-K4096]", "mm[bf16-M4096-N4096-K4096]"));
  EXPECT_FALSE(glob_match("mm[bf16-M4096-N4096-K4096]", "mm[bf16-M4096-N4096-K40960]"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYYb"));
  EXPECT_TRUE(glob_match("**x", "x"));
  EXPECT_FALSE(glob_match("", "x"));
}

TEST(RunTable, EtaOnLongRunsOnly) {
  using caliber::run::eta_text;
  EXPECT_EQ(eta_text(5, 1, 10), "");  // too early to say
  EXPECT_EQ(eta_text(20, 2, 10), "eta ~1m20s");
  EXPECT_EQ(eta_text(20, 10, 10), "");  // done
  EXPECT_EQ(eta_text(3600, 1, 3), "eta ~2h00m");
  EXPECT_EQ(caliber::run::duration_text(8.4), "8s");
}

TEST(RunTable, StopRuleMissFromAnyProvider) {
  using nlohmann::json;
  // A case row from its run.log JSON (the fields under test), through the one conversion.
  auto stop_rule_miss = [](json row) {
    row["type"] = "case";
    row["op"] = "add";
    return caliber::run::stop_rule_miss(caliber::core::case_row_from_json(row));
  };
  EXPECT_EQ(stop_rule_miss({{"providers", {{{"name", "a"}, {"stop_reason", "converged"}}}}}), "");
  EXPECT_EQ(stop_rule_miss({{"providers",
                             {{{"name", "a"}, {"stop_reason", "converged"}},
                              {{"name", "b"}, {"stop_reason", "timeout after 1 s: noise 2%"}}}}}),
            "b: timeout after 1 s: noise 2%");
  EXPECT_EQ(stop_rule_miss({{"providers", {{{"name", "a"}, {"converged", false}}}}}),
            "a: not converged");
  EXPECT_EQ(stop_rule_miss({{"providers", {{{"name", "a"}, {"markers", {"STOP_NOT_CONVERGED"}}}}}}),
            "a: not converged");
}

// The closing table shows each speedup's interval (issue #32): from the row's samples, around the
// speedup, "n=1" for a side of one sample and "-" without both roles; a note says what it holds.
TEST(RunTable, EachSpeedupShowsItsInterval) {
  using nlohmann::json;
  auto row = [](std::vector<double> cand, std::vector<double> base) {
    json r = {{"type", "case"}, {"op", "add"}, {"dtype", "f32"}, {"shape", "1"}, {"speedup", 2.0}};
    r["providers"] = json::array();
    if (!cand.empty())
      r["providers"].push_back({{"name", "c"}, {"role", "candidate"}, {"samples_ms", cand}});
    if (!base.empty())
      r["providers"].push_back({{"name", "b"}, {"role", "baseline"}, {"samples_ms", base}});
    return caliber::core::case_row_from_json(r);
  };
  std::vector<double> cand, base;
  for (int i = 0; i < 51; ++i) {
    cand.push_back(1.0 + 0.01 * i);          // median 1.25
    base.push_back(2.0 * (1.0 + 0.01 * i));  // median 2.5: speedup 2.00
  }
  std::ostringstream out;
  caliber::run::print_run_table(out, {row(cand, base), row({1.0}, {2.0}), row(cand, {})},
                                {"op", "speedup", "speedup_ci"});
  const std::string t = out.str();
  EXPECT_NE(t.find("speedup 95%"), std::string::npos) << t;
  // Around 2, wider than a point: each side's median moves by a few percent when resampled.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(t, m, std::regex(R"(add +2\.00 +([0-9.]+)-([0-9.]+))"))) << t;
  EXPECT_LT(std::stod(m[1]), 1.97) << t;
  EXPECT_GT(std::stod(m[1]), 1.5) << t;
  EXPECT_GT(std::stod(m[2]), 2.03) << t;
  EXPECT_LT(std::stod(m[2]), 2.5) << t;
  EXPECT_NE(t.find("n=1"), std::string::npos) << t;
  EXPECT_NE(t.find("note: speedup 95%: the interval of this run's samples"), std::string::npos)
      << t;
  const auto& d = caliber::core::default_run_table_columns();
  EXPECT_NE(std::find(d.begin(), d.end(), "speedup_ci"), d.end()) << "shown by default";
}

// A repeated input whose figures disagree is noted under the closing table; one that agrees is
// not (the summary says that).
TEST(RunTable, RepeatedInputsThatDisagreeAreNoted) {
  using nlohmann::json;
  auto row = [](const std::string& shape, double ms, double noise) {
    json r = {{"type", "case"}, {"op", "mm"}, {"dtype", "f32"}, {"shape", shape}};
    r["providers"] = {
        {{"name", "torch"}, {"role", "baseline"}, {"latency_ms", ms}, {"noise", noise}}};
    return caliber::core::case_row_from_json(r);
  };
  std::ostringstream off, on;
  caliber::run::print_run_table(on, {row("64x64", 5.12, 0.02), row("64x64#2", 2.66, 0.001)},
                                {"op"});
  EXPECT_NE(on.str().find("note: 1 of 1 figure(s) of repeated inputs disagree beyond their "
                          "noise"),
            std::string::npos)
      << on.str();
  caliber::run::print_run_table(off, {row("64x64", 5.12, 0.02), row("64x64#2", 5.2, 0.001)},
                                {"op"});
  EXPECT_EQ(off.str().find("repeated inputs"), std::string::npos) << off.str();
}

namespace {

using caliber::run::Selection;
using caliber::run::SelectionError;

caliber::core::Knobs knobs(std::vector<std::string> ops) {
  caliber::core::Knobs k;
  k.backend = "cpu";
  k.ops = std::move(ops);
  k.shapes = {{256}, {512}};
  return k;
}

std::vector<std::string> nodes(const Selection& s) {
  std::vector<std::string> out;
  for (const auto& c : s.cases) out.push_back(c.node_id());
  return out;
}

std::vector<std::string> op_names(const Selection& s) {
  std::vector<std::string> out;
  for (const auto& e : s.ops) out.push_back(e.info.name);
  return out;
}

// The SelectionError's message, or "" when select_cases accepted the knobs.
std::string refusal(const caliber::core::Knobs& k) {
  try {
    (void)caliber::run::select_cases(k, "cpu", true);
  } catch (const SelectionError& e) {
    return e.what();
  }
  return "";
}

TEST(SelectCases, NamedOpsInTheOrderNamedOnceEachShapeByDtype) {
  const Selection s =
      caliber::run::select_cases(knobs({"unit_wrong", "unit_ok", "unit_ok"}), "cpu", true);
  EXPECT_EQ(op_names(s), (std::vector<std::string>{"unit_wrong", "unit_ok"}));
  EXPECT_EQ(nodes(s), (std::vector<std::string>{"unit_wrong[f32-N256]", "unit_wrong[f64-N256]",
                                                "unit_wrong[f32-N512]", "unit_wrong[f64-N512]",
                                                "unit_ok[f32-N256]", "unit_ok[f64-N256]",
                                                "unit_ok[f32-N512]", "unit_ok[f64-N512]"}));
  ASSERT_EQ(s.case_op.size(), s.cases.size());
  EXPECT_EQ(s.case_op[4]->info().name, "unit_ok");
  EXPECT_EQ(s.used_shapes.at("unit_ok").size(), 2u);
}

TEST(SelectCases, NoOpNamedMeansEveryOpOfTheBackend) {
  const Selection s = caliber::run::select_cases(knobs({}), "cpu", true);
  EXPECT_EQ(op_names(s), (std::vector<std::string>{"unit_ok", "unit_raise", "unit_skip",
                                                   "unit_wrong", "unit_huge"}));
  EXPECT_EQ(s.cases.size(), 5u * 2 * 2);
}

TEST(SelectCases, DtypesAndRepeatedShapesNarrowTheCases) {
  auto k = knobs({"unit_ok"});
  k.dtypes = {"f64"};
  k.shapes = {{256}, {256}};
  EXPECT_EQ(nodes(caliber::run::select_cases(k, "cpu", true)),
            (std::vector<std::string>{"unit_ok[f64-N256]"}));
}

TEST(SelectCases, NodeGlobsPickOpsAndCases) {
  auto k = knobs({});
  k.node = "unit_?k";
  EXPECT_EQ(op_names(caliber::run::select_cases(k, "cpu", true)),
            (std::vector<std::string>{"unit_ok"}));
  k.node = "unit_*[f64-N5*]";
  EXPECT_EQ(
      nodes(caliber::run::select_cases(k, "cpu", true)),
      (std::vector<std::string>{"unit_ok[f64-N512]", "unit_raise[f64-N512]", "unit_skip[f64-N512]",
                                "unit_wrong[f64-N512]", "unit_huge[f64-N512]"}));
}

TEST(SelectCases, OpFileAddsItsOpsAndSkipsComments) {
  caliber::testing::TempDir t;
  const auto file = t.path() / "ops.txt";
  std::ofstream(file) << "# the ops\nunit_skip\n\n  unit_ok  # trailing\n";
  auto k = knobs({"unit_wrong"});
  k.op_file = file.string();
  EXPECT_EQ(op_names(caliber::run::select_cases(k, "cpu", true)),
            (std::vector<std::string>{"unit_wrong", "unit_skip", "unit_ok"}));
  k.op_file = (t.path() / "missing.txt").string();
  EXPECT_NE(refusal(k).find("missing.txt"), std::string::npos) << refusal(k);
}

TEST(SelectCases, ErrorsNameTheKnobAndWhatIsAllowed) {
  EXPECT_EQ(refusal(knobs({"nope"})).rfind("unknown op 'nope' for backend cpu; ops: unit_ok", 0),
            0u)
      << refusal(knobs({"nope"}));
  auto k = knobs({"unit_ok"});
  k.dtypes = {"bf16", "f16"};
  EXPECT_EQ(refusal(k), "--dtypes: 'bf16,f16' is not supported by any selected op");
  k = knobs({});
  k.node = "unit_ok[f32-N7]";
  EXPECT_EQ(refusal(k).rfind("--node (TEST_NODE): 'unit_ok[f32-N7]' matches no case", 0), 0u)
      << refusal(k);
  k.node = "zz*";
  EXPECT_EQ(refusal(k).rfind("--node (TEST_NODE): 'zz*' matches no op for backend cpu", 0), 0u)
      << refusal(k);
  k = knobs({"unit_ok"});
  k.shapes = {{2, 3}};
  EXPECT_EQ(refusal(k), "--shape: '2x3' does not fit op unit_ok (its shape is N)");
  // Without --shape the ops take the shape file's lists, where the unit ops have none.
  k = knobs({"unit_ok"});
  k.shapes.clear();
  EXPECT_NE(refusal(k).find("op 'unit_ok' has no shapes at level core in "), std::string::npos)
      << refusal(k);
  EXPECT_EQ(refusal(knobs({})), "");
}

}  // namespace
