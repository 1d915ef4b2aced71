#include "report/html.hpp"

#include <sstream>
#include <stdexcept>

#include "report/summary.hpp"

namespace caliber::report {

using nlohmann::json;

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

std::optional<double> number_at(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

const json* provider_with_role(const json& row, const char* role) {
  if (!row.contains("providers") || !row["providers"].is_array()) return nullptr;
  for (const auto& p : row["providers"])
    if (p.value("role", "") == role) return &p;
  return nullptr;
}

}  // namespace

Table caliber_table(const std::vector<RunData>& runs) {
  Table t;
  t.id = "caliber";
  t.title = "Caliber of each run (two runs are comparable only when these agree)";
  t.columns = {"run",    "backend", "device", "uuid",  "timer",     "level",     "tune",
               "repeat", "l2",      "commit", "start", "copy GB/s", "mm TFLOP/s"};
  for (const auto& r : runs) {
    const json& id = r.identity;
    const json dev = id.is_object() ? id.value("device", json::object()) : json::object();
    const json peaks = id.is_object() ? id.value("peaks", json::object()) : json::object();
    auto s = [&](const json& j, const char* k) {
      return j.is_object() && j.contains(k)
                 ? (j[k].is_string() ? j[k].get<std::string>() : j[k].dump())
                 : std::string("-");
    };
    t.rows.push_back(
        {text_cell(r.dir.filename().string()), text_cell(s(id, "backend")),
         text_cell(s(dev, "name")), text_cell(s(dev, "uuid")), text_cell(s(id, "timer")),
         text_cell(s(id, "level")), text_cell(s(id, "tune")), text_cell(s(id, "repeat")),
         text_cell(s(id, "l2")), text_cell(s(id, "git_commit")), text_cell(s(id, "start_time")),
         number_cell(number_at(peaks, "copy_gbps")), number_cell(number_at(peaks, "gemm_tflops"))});
  }
  return t;
}

Table cases_table(const std::vector<RunData>& runs) {
  Table t;
  t.id = "cases";
  t.title = "Every case";
  t.columns = {"op",      "dtype",   "shape", "baseline",  "base ms", "candidate",      "cand ms",
               "speedup", "TFLOP/s", "GB/s",  "% peak bw", "status",  "markers / error"};
  for (const auto& run : runs)
    for (const auto& row : run.log.cases) {
      const json* b = provider_with_role(row, "baseline");
      const json* c = provider_with_role(row, "candidate");
      std::string extra;
      for (const auto& m : row_markers(row)) extra += (extra.empty() ? "" : " ") + m;
      if (row.contains("error")) extra += (extra.empty() ? "" : "; ") + row_string(row, "error");
      if (row.contains("reason")) extra += (extra.empty() ? "" : "; ") + row_string(row, "reason");
      t.rows.push_back(
          {text_cell(row_string(row, "op")), text_cell(row_string(row, "dtype")),
           text_cell(row_string(row, "shape")), text_cell(b ? b->value("name", "") : "-"),
           number_cell(number_at(row, "latency_base_ms")),
           text_cell(c ? c->value("name", "") : "-"),
           number_cell(c ? number_at(row, "latency_ms") : std::nullopt),
           number_cell(row_speedup(row), 3), number_cell(number_at(row, "tflops")),
           number_cell(number_at(row, "gbps")), number_cell(number_at(row, "pct_peak_bw"), 3),
           text_cell(row_status(row)), text_cell(extra)});
    }
  return t;
}

std::string render_html(const Report& r, const std::string& title) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
    << html_escape(title)
    << "</title>\n<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
       "margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
       "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f0f0f0}"
       ".banner{background:#fdd;border:2px solid #c00;padding:.5em;font-weight:bold}"
       ".warn{color:#a60}.note{color:#555;font-size:12px}</style></head><body>\n";
  o << "<h1>" << html_escape(title) << "</h1>\n";
  for (const auto& b : r.banners) o << "<p class=\"banner\">" << html_escape(b) << "</p>\n";
  for (const auto& t : r.tables) {
    o << "<h2>" << html_escape(t.title) << "</h2>\n<table><thead><tr>";
    for (const auto& c : t.columns) o << "<th>" << html_escape(c) << "</th>";
    o << "</tr></thead><tbody>\n";
    for (const auto& row : t.rows) {
      o << "<tr>";
      for (const auto& cell : row)
        o << (cell.value.is_number() ? "<td class=\"n\">" : "<td>") << html_escape(cell.text)
          << "</td>";
      o << "</tr>\n";
    }
    o << "</tbody></table>\n";
    for (const auto& n : t.notes) o << "<p class=\"note\">" << html_escape(n) << "</p>\n";
  }
  for (const auto& w : r.warnings) o << "<p class=\"warn\">" << html_escape(w) << "</p>\n";
  o << "</body></html>\n";
  return o.str();
}

std::string html_report(const std::vector<std::filesystem::path>& dirs) {
  const auto runs = load_runs(expand_run_dirs(dirs));
  if (runs.empty()) throw std::invalid_argument("no run directory under the given paths");
  Report r = summary_report(summarize(dirs));
  r.tables.insert(r.tables.begin(), caliber_table(runs));
  r.tables.push_back(cases_table(runs));
  return render_html(r, "caliber report: " + dirs.front().filename().string());
}

}  // namespace caliber::report
