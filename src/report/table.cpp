#include "report/table.hpp"

#include "core/terminal.hpp"
#include "core/text_table.hpp"
#include "records/csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace caliber::report {

Cell text_cell(std::string s) {
  // A cell is read by a person: a 100 MB op name from a hostile run.log is cut, not printed.
  if (s.size() > kMaxCellChars) {
    std::size_t cut = kMaxCellChars;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    const std::size_t more = s.size() - cut;
    s.resize(cut);
    s += "...(" + std::to_string(more) + " more bytes)";
  }
  Cell c;
  c.value = s;
  c.text = std::move(s);
  return c;
}

Cell number_cell(std::optional<double> v, int digits) {
  if (!v || !std::isfinite(*v)) return Cell{"-", nullptr};
  char buf[64];
  const double a = std::fabs(*v);
  // Fixed notation reads better in tables; fall back to %g for very large or small magnitudes.
  if (a != 0 && (a >= 1e7 || a < 1e-4)) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, *v);
  } else {
    int decimals = digits - 1;
    if (a >= 1)
      decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(a))));
    else if (a > 0)
      decimals = digits - 1 - static_cast<int>(std::floor(std::log10(a)));
    decimals = std::min(decimals, 8);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, *v);
  }
  return Cell{buf, *v};
}

Cell integer_cell(long long v) {
  return Cell{std::to_string(v), v};
}

std::optional<Format> parse_format(std::string_view s) noexcept {
  if (s == "table" || s == "text") return Format::table;
  if (s == "md" || s == "markdown") return Format::md;
  if (s == "csv") return Format::csv;
  if (s == "json") return Format::json;
  return std::nullopt;
}

const char* format_names() noexcept {
  return "table, md, csv, json";
}

namespace {

bool numeric(const Cell& c) {
  return c.value.is_number() || c.value.is_null();  // "-" or "n=1": a number that is not there
}

// A cell's text in a Markdown table: '|' would end the cell, and '<' open an HTML element where
// the Markdown is rendered (an op name or commit text is not ours to trust).
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
      continue;
    }
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

using core::csv_field;

std::string csv_value(const Cell& c) {
  if (c.value.is_null()) return "";
  if (c.value.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", c.value.get<double>());
    return buf;
  }
  if (c.value.is_number()) return c.value.dump();
  if (c.value.is_string()) return core::csv_text_cell(c.value.get<std::string>());
  return core::csv_text_cell(c.text);
}

// Each line once, in first-seen order: a warning or note that two parts of a report raised is
// printed once.
std::vector<std::string> distinct(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines)
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  return out;
}

}  // namespace

std::string render_text(const Report& r) {
  std::ostringstream o;
  if (!r.banners.empty()) {
    std::size_t w = 0;
    for (const auto& b : r.banners) w = std::max(w, b.size());
    const std::string bar(std::min<std::size_t>(w, 100), '!');
    o << bar << "\n";
    for (const auto& b : r.banners) o << b << "\n";
    o << bar << "\n\n";
  }
  bool first = true;
  for (const auto& t : r.tables) {
    if (!first) o << "\n";
    first = false;
    if (!t.title.empty()) o << t.title << "\n";
    std::vector<bool> right(t.columns.size(), true);
    for (const auto& row : t.rows)
      for (std::size_t c = 0; c < row.size() && c < right.size(); ++c)
        if (!numeric(row[c])) right[c] = false;
    core::TextTable text(right);
    text.add_row(t.columns);
    text.add_rule();
    for (const auto& row : t.rows) {
      std::vector<std::string> cells;
      for (const auto& c : row) cells.push_back(c.text);
      text.add_row(std::move(cells));
    }
    o << text.str();
    if (t.rows.empty()) o << "(no rows)\n";
    for (const auto& n : distinct(t.notes)) o << "note: " << n << "\n";
  }
  for (const auto& w : distinct(r.warnings)) o << "\nWARNING: " << w << "\n";
  return o.str();
}

std::string render_markdown(const Report& r) {
  std::ostringstream o;
  for (const auto& b : r.banners) o << "> **" << md_escape(b) << "**\n\n";
  for (const auto& t : r.tables) {
    if (!t.title.empty()) o << "### " << md_escape(t.title) << "\n\n";
    o << "|";
    for (const auto& c : t.columns) o << " " << md_escape(c) << " |";
    o << "\n|";
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const bool right = !t.rows.empty() &&
                         std::all_of(t.rows.begin(), t.rows.end(),
                                     [&](auto& row) { return c >= row.size() || numeric(row[c]); });
      o << (right ? " ---: |" : " --- |");
    }
    o << "\n";
    for (const auto& row : t.rows) {
      o << "|";
      for (const auto& c : row) o << " " << md_escape(c.text) << " |";
      o << "\n";
    }
    o << "\n";
    for (const auto& n : distinct(t.notes)) o << "_" << md_escape(n) << "_\n\n";
  }
  for (const auto& w : distinct(r.warnings)) o << "> **WARNING:** " << md_escape(w) << "\n\n";
  return o.str();
}

std::string render_csv(const Report& r) {
  std::ostringstream o;
  if (r.tables.empty()) return "";
  const Table& t = r.tables.front();
  for (std::size_t c = 0; c < t.columns.size(); ++c) o << (c ? "," : "") << csv_field(t.columns[c]);
  o << "\n";
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size(); ++c) o << (c ? "," : "") << csv_value(row[c]);
    o << "\n";
  }
  return o.str();
}

std::string render_csv_side(const Report& r) {
  std::ostringstream o;
  for (const auto& b : r.banners) o << b << "\n";
  if (!r.tables.empty())
    for (const auto& n : distinct(r.tables.front().notes)) o << "note: " << n << "\n";
  if (r.tables.size() > 1) {
    Report rest;
    rest.tables.assign(r.tables.begin() + 1, r.tables.end());
    o << "\n" << render_text(rest);
  }
  for (const auto& w : distinct(r.warnings)) o << "WARNING: " << w << "\n";
  return o.str();
}

nlohmann::json render_json(const Report& r) {
  nlohmann::json j = nlohmann::json::object();
  j["banners"] = r.banners;
  j["warnings"] = distinct(r.warnings);
  for (const auto& t : r.tables) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows) {
      nlohmann::json obj = nlohmann::json::object();
      for (std::size_t c = 0; c < row.size() && c < t.columns.size(); ++c)
        obj[t.columns[c]] = row[c].value;
      rows.push_back(std::move(obj));
    }
    j[t.id] = {
        {"title", t.title}, {"columns", t.columns}, {"rows", rows}, {"notes", distinct(t.notes)}};
  }
  return j;
}

Rendered render_streams(const Report& r, Format f) {
  if (f == Format::csv) return {render(r, f), core::terminal_safe(render_csv_side(r))};
  return {render(r, f), ""};
}

// Every format but JSON (whose encoder escapes control characters itself) goes through
// core::terminal_safe: cells and notes come from files anyone may have written.
std::string render(const Report& r, Format f) {
  switch (f) {
    case Format::table:
      return core::terminal_safe(render_text(r));
    case Format::md:
      return core::terminal_safe(render_markdown(r));
    case Format::csv:
      return core::terminal_safe(render_csv(r));
    case Format::json:
      return render_json(r).dump(2) + "\n";
  }
  return core::terminal_safe(render_text(r));
}

}  // namespace caliber::report
