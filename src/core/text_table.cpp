#include "core/text_table.hpp"

#include <algorithm>

namespace caliber::core {

TextTable::TextTable(std::vector<bool> right_aligned) : right_(std::move(right_aligned)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(right_.size());
  rows_.push_back(std::move(cells));
  rule_.push_back(false);
}

void TextTable::add_rule() {
  rows_.emplace_back(right_.size());
  rule_.push_back(true);
}

std::string TextTable::str() const {
  std::vector<std::size_t> width(right_.size(), 0);
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    std::string s;
    for (std::size_t c = 0; c < width.size(); ++c) {
      if (c) s += "  ";
      const std::string cell = rule_[r] ? std::string(width[c], '-') : rows_[r][c];
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      s += right_[c] ? pad + cell : cell + pad;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out += s + "\n";
  }
  return out;
}

}  // namespace caliber::core
