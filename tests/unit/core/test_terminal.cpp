// Help text wrapping and the terminal width.
#include <gtest/gtest.h>

#include <sstream>

#include "core/terminal.hpp"

using namespace caliber::core;

TEST(Terminal, ColumnsFromTheEnvironmentThenTheTerminal) {
  EXPECT_EQ(terminal_columns(nullptr, 0), 100u);
  EXPECT_EQ(terminal_columns("132", 80), 132u);
  EXPECT_EQ(terminal_columns(nullptr, 80), 80u);
  EXPECT_EQ(terminal_columns("abc", 90), 90u);
  EXPECT_EQ(terminal_columns("10", 0), 60u);     // clamped
  EXPECT_EQ(terminal_columns("9999", 0), 200u);  // clamped
}

TEST(Terminal, WrapsJoinsSoftBreaksAndKeepsIndentedLines) {
  const std::string text =
      "Per op and dtype: rows, geometric-mean speedup with a bootstrap\n"
      "95% CI, min and max.\n  env BENCH_LEVEL; default core; allowed: core, comprehensive";
  const std::string w = wrap_text(text, 30);
  std::istringstream in(w);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    EXPECT_LE(line.size(), 30u) << line;
    ++n;
  }
  EXPECT_GE(n, 5);
  // The hand break before "95%" became a space; the indented facts line stays its own line.
  EXPECT_NE(w.find("bootstrap 95%"), std::string::npos) << w;
  EXPECT_NE(w.find("\n  env BENCH_LEVEL;"), std::string::npos) << w;
  // Continuations of the indented line keep its indent.
  const std::string facts = w.substr(w.find("\n  env"));
  std::istringstream fin(facts.substr(1));
  while (std::getline(fin, line)) EXPECT_EQ(line.rfind("  ", 0), 0u) << w;
  EXPECT_EQ(wrap_text("short", 80), "short");
  // A comma list too long for a line breaks after its commas.
  EXPECT_EQ(wrap_text("x op,dtype,shape,base_ms", 12), "x op,dtype,\nshape,\nbase_ms");
  EXPECT_EQ(wrap_text("a-very-long-unbreakable-word x", 10), "a-very-long-unbreakable-word\nx");
}
