// Case selection from the command line: glob node ids and --shape sweeps.
#include <gtest/gtest.h>

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
