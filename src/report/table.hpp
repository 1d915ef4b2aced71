// One row model, four reporters: aligned terminal text, Markdown, CSV and JSON. Summary, compare
// and identity build a Report; the CLI picks the reporter with --format.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace caliber::report {

// What a cell shows (text) and what machine formats get (value: a number, a string, or null).
struct Cell {
  std::string text;
  nlohmann::json value;
};
// A text cell longer than kMaxCellChars bytes is cut there and says how much was left out.
inline constexpr std::size_t kMaxCellChars = 256;
[[nodiscard]] Cell text_cell(std::string s);
// A number shown with `digits` significant digits; NaN or an empty optional shows "-" (null).
[[nodiscard]] Cell number_cell(std::optional<double> v, int digits = 4);
[[nodiscard]] Cell integer_cell(long long v);

struct Table {
  std::string id;     // JSON key, CSV section name: "summary", "pairs"
  std::string title;  // shown above the table
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  // shown under the table
};

struct Report {
  std::vector<std::string> banners;  // shown first and loudly (a caliber mismatch)
  std::vector<Table> tables;
  std::vector<std::string> warnings;  // shown last, after the tables ("WARNING: ...")
};

enum class Format { table, md, csv, json };
[[nodiscard]] std::optional<Format> parse_format(std::string_view s) noexcept;
[[nodiscard]] const char* format_names() noexcept;  // "table, md, csv, json"

[[nodiscard]] std::string render(const Report& r, Format f);
// What a format puts on stdout and what on stderr. CSV holds one table only, the report's first
// (the one a tool reads: summary, pairs), so that pandas and spreadsheets read it as it is; its
// banners and notes, the other tables (as aligned text) and the warnings go to `err`. The other
// formats put everything in `out`.
struct Rendered {
  std::string out;
  std::string err;
};
[[nodiscard]] Rendered render_streams(const Report& r, Format f);
[[nodiscard]] std::string render_text(const Report& r);
[[nodiscard]] std::string render_markdown(const Report& r);
// The first table alone, RFC 4180 (see render_streams).
[[nodiscard]] std::string render_csv(const Report& r);
// Everything render_csv leaves out, as text for stderr ("" when there is nothing).
[[nodiscard]] std::string render_csv_side(const Report& r);
[[nodiscard]] nlohmann::json render_json(const Report& r);

}  // namespace caliber::report
