// CSV quoting, one rule for every CSV caliber writes (ops_status.csv, --format csv, export).
#pragma once

#include <exception>
#include <string>

namespace caliber::core {

// A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break, with
// quotes doubled.
[[nodiscard]] inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A text cell of a CSV meant for spreadsheets (export, --format csv): a value a spreadsheet would
// run as a formula (=HYPERLINK(...), +cmd, @SUM, -2+3) gets a leading apostrophe, which shows as
// text; a number such as -1.5 and a lone "-" stay as they are. Not for ops_status.csv, which
// caliber reads back.
[[nodiscard]] inline std::string csv_text_cell(const std::string& s) {
  if (s.empty()) return csv_field(s);
  const char c = s[0];
  bool formula = c == '=' || c == '+' || c == '@' || c == '\t' || c == '\r';
  if (c == '-' && s.size() > 1) {
    std::size_t used = 0;
    try {
      (void)std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    formula = used != s.size();
  }
  return csv_field(formula ? "'" + s : s);
}

}  // namespace caliber::core
