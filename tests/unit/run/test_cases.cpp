// Case selection from the command line: glob node ids and --shape sweeps.
#include <gtest/gtest.h>

#include "run/case_runner.hpp"
#include "run/cases.hpp"

using caliber::run::glob_match;

TEST(Glob, WildcardsAndLiteralBrackets) {
  EXPECT_TRUE(glob_match("mm[bf16-*]", "mm[bf16-M4096-N4096-K4096]"));
  EXPECT_FALSE(glob_match("mm[bf16-*]", "mm[f16-M4096-N4096-K4096]"));
  EXPECT_TRUE(glob_match("*[f32-*]", "add[f32-65536]"));
  EXPECT_TRUE(glob_match("add[f??-*]", "add[f32-65536]"));
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
