// The layout of every aligned text table caliber prints (the run's closing table, the reports'
// text format): columns two spaces apart, each as wide as its widest cell, left- or
// right-aligned, trailing spaces trimmed. What goes in the cells is the caller's business.
#pragma once

#include <string>
#include <vector>

namespace caliber::core {

class TextTable {
 public:
  // One flag per column: true right-aligns it (numbers), false left-aligns it.
  explicit TextTable(std::vector<bool> right_aligned);
  // A row; missing trailing cells are empty, extra ones ignored.
  void add_row(std::vector<std::string> cells);
  // A row of dashes as wide as each column.
  void add_rule();
  // Every row, each ending in "\n".
  [[nodiscard]] std::string str() const;

 private:
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> rule_;  // per row: a rule
};

}  // namespace caliber::core
