#include "run/run_table.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "core/format.hpp"
#include "core/knobs.hpp"
#include "core/runlog.hpp"
#include "core/text_table.hpp"

namespace caliber::run {

using nlohmann::json;
namespace field = core::field;

std::string eta_text(double elapsed_s, std::size_t done, std::size_t total) {
  if (done == 0 || done >= total || !(elapsed_s >= kEtaAfterS)) return "";
  return "eta ~" +
         duration_text(elapsed_s / static_cast<double>(done) * static_cast<double>(total - done));
}

std::string stop_rule_miss(const json& row) {
  const auto provs = row.find(field::providers);
  if (provs == row.end() || !provs->is_array()) return "";
  for (const auto& p : *provs) {
    if (!p.is_object()) continue;
    const std::string name = p.value(field::name, std::string("?"));
    const std::string reason = p.value(field::stop_reason, std::string());
    const auto conv = p.find(field::converged);
    const bool not_converged = conv != p.end() && conv->is_boolean() && !conv->get<bool>();
    bool marked = false;
    if (p.contains(field::markers) && p[field::markers].is_array())
      for (const auto& m : p[field::markers])
        if (m == kMarkerStopNotConverged) marked = true;
    if ((!reason.empty() && reason != "converged") || not_converged || marked)
      return name + ": " + (reason.empty() || reason == "converged" ? "not converged" : reason);
  }
  return "";
}

void print_run_table(std::ostream& out, const std::vector<json>& rows,
                     const std::vector<std::string>& columns,
                     const std::vector<double>& quantiles) {
  const auto& cols = columns.empty() ? core::default_run_table_columns() : columns;
  auto fixed = [](const json& v, int prec) -> std::string {
    return v.is_number() ? core::fixed(v.get<double>(), prec) : "-";
  };
  auto main_provider = [](const json& r) -> const json* {
    if (!r.contains(field::providers) || !r[field::providers].is_array()) return nullptr;
    const json* base = nullptr;
    for (const auto& p : r[field::providers]) {
      if (p.value(field::role, "") == core::role::candidate) return &p;
      if (base == nullptr) base = &p;
    }
    return base;
  };
  struct Column {
    std::string title;
    bool left = false;
    std::vector<std::string> cells;
  };
  std::vector<Column> table;
  for (const auto& c : cols) {
    if (c == "quantiles") {
      for (std::size_t qi = 0; qi < quantiles.size(); ++qi) {
        std::ostringstream t;
        t << "p" << quantiles[qi] * 100 << " ms";
        Column col{t.str(), false, {}};
        for (const auto& r : rows) {
          const json* m = main_provider(r);
          const json q =
              m != nullptr ? m->value(field::quantiles_ms, json::array()) : json::array();
          col.cells.push_back(qi < q.size() ? fixed(q[qi], 4) : "-");
        }
        table.push_back(std::move(col));
      }
      continue;
    }
    Column col;
    col.title = c;
    col.left = c == "op" || c == "dtype" || c == "shape" || c == "node" || c == "stop" ||
               c == "timer" || c == "markers" || c == "status";
    if (c == "base_ms") col.title = "base ms";
    if (c == "cand_ms") col.title = "cand ms";
    if (c == "tflops") col.title = "TFLOPS";
    if (c == "gbps") col.title = "GB/s";
    if (c == "pct_peak_bw") col.title = "% bw";
    if (c == "pct_peak_flops") col.title = "% flops";
    if (c == "noise") col.title = "noise %";
    for (const auto& r : rows) {
      const json* m = main_provider(r);
      std::string v;
      if (c == "op" || c == "dtype" || c == "node" || c == "timer") {
        v = r.value(c, std::string());
      } else if (c == "shape") {
        v = r.value(field::shape, std::string());
        if (v.size() > 29) v = v.substr(0, 28) + "~";
      } else if (c == "base_ms") {
        v = fixed(r.value(field::latency_base_ms, json()), 4);
      } else if (c == "cand_ms") {
        v = fixed(r.value(field::latency_ms, json()), 4);
      } else if (c == "speedup") {
        v = fixed(r.value(field::speedup, json()), 2);
      } else if (c == "tflops") {
        v = fixed(r.value(field::tflops, json()), 2);
      } else if (c == "gbps") {
        v = fixed(r.value(field::gbps, json()), 1);
      } else if (c == "pct_peak_bw" || c == "pct_peak_flops") {
        v = fixed(r.value(c, json()), 1);
      } else if (c == "noise") {
        const json n = r.value(field::noise, json());
        v = n.is_number() ? fixed(n.get<double>() * 100, 2) : "-";
      } else if (c == "samples") {
        v = m != nullptr && m->contains(field::samples_ms) && (*m)[field::samples_ms].is_array()
                ? std::to_string((*m)[field::samples_ms].size())
                : "-";
      } else if (c == "stop") {
        v = stop_rule_miss(r);
        if (v.empty()) v = m != nullptr ? m->value(field::stop_reason, std::string("-")) : "-";
      } else if (c == "markers") {
        if (r.contains(field::markers) && r[field::markers].is_array())
          for (const auto& mk : r[field::markers])
            if (mk.is_string()) v += (v.empty() ? "" : " ") + mk.get<std::string>();
      } else if (c == "status") {
        v = r.value(field::status, "?");
        if (r.contains(field::markers))
          for (const auto& mk : r[field::markers])
            if (mk == core::markers::direct_no_graph || mk == core::markers::capture_poisoned)
              v += " " + mk.get<std::string>();
        // A missed stopping rule is visible in the row, not only in run.log.
        if (!stop_rule_miss(r).empty() && v.find(kMarkerStopNotConverged) == std::string::npos)
          v += std::string(" ") + kMarkerStopNotConverged;
      }
      col.cells.push_back(v);
    }
    table.push_back(std::move(col));
  }
  std::vector<bool> right;
  std::vector<std::string> titles;
  for (const auto& col : table) {
    right.push_back(!col.left);
    titles.push_back(col.title);
  }
  core::TextTable text(right);
  text.add_row(titles);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::string> cells;
    for (const auto& col : table) cells.push_back(col.cells[r]);
    text.add_row(std::move(cells));
  }
  out << "\n" << text.str();
}

}  // namespace caliber::run
