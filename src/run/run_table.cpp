#include "run/run_table.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "core/format.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"
#include "records/repeats.hpp"
#include "records/runlog.hpp"
#include "settings/knobs.hpp"

namespace caliber::run {

std::string eta_text(double elapsed_s, std::size_t done, std::size_t total) {
  if (done == 0 || done >= total || !(elapsed_s >= kEtaAfterS)) return "";
  return "eta ~" +
         duration_text(elapsed_s / static_cast<double>(done) * static_cast<double>(total - done));
}

std::string stop_rule_miss(const core::CaseRow& row) {
  if (!row.providers) return "";
  for (const auto& p : *row.providers) {
    const std::string reason = p.stop_reason.value_or("");
    const bool not_converged = p.converged && !*p.converged;
    const bool marked = p.markers && std::find(p.markers->begin(), p.markers->end(),
                                               kMarkerStopNotConverged) != p.markers->end();
    if ((!reason.empty() && reason != "converged") || not_converged || marked)
      return (p.name.empty() ? "?" : p.name) + ": " +
             (reason.empty() || reason == "converged" ? "not converged" : reason);
  }
  return "";
}

namespace {

// One column of the closing table: its title, alignment and one cell per row.
struct Column {
  std::string title;
  bool left = false;
  std::vector<std::string> cells;
};

std::string fixed_or_dash(const std::optional<double>& v, int prec) {
  return v ? core::fixed(*v, prec) : "-";
}
std::string fixed_or_dash(const core::Nullable<double>& v, int prec) {
  return v && *v ? core::fixed(**v, prec) : "-";
}

// The provider whose figures the row shows: the first candidate, else the first provider.
const core::ProviderRow* main_provider(const core::CaseRow& r) {
  if (!r.providers) return nullptr;
  const core::ProviderRow* first = nullptr;
  for (const auto& p : *r.providers) {
    if (p.role == core::role::candidate) return &p;
    if (first == nullptr) first = &p;
  }
  return first;
}

// The quantiles column: one column per q of --quantiles, of the main provider.
void add_quantile_columns(std::vector<Column>& table, const std::vector<core::CaseRow>& rows,
                          const std::vector<double>& quantiles) {
  for (std::size_t qi = 0; qi < quantiles.size(); ++qi) {
    std::ostringstream t;
    t << "p" << quantiles[qi] * 100 << " ms";
    Column col{t.str(), false, {}};
    for (const auto& r : rows) {
      const core::ProviderRow* m = main_provider(r);
      const bool has = m != nullptr && m->quantiles_ms && qi < m->quantiles_ms->size();
      col.cells.push_back(has ? core::fixed((*m->quantiles_ms)[qi], 4) : "-");
    }
    table.push_back(std::move(col));
  }
}

// A column's title and alignment (core::run_table_columns() lists the names).
Column column_head(const std::string& c) {
  static const std::map<std::string, std::string> titles = {
      {"base_ms", "base ms"}, {"cand_ms", "cand ms"},       {"tflops", "TFLOPS"},
      {"gbps", "GB/s"},       {"pct_peak_bw", "% bw"},      {"pct_peak_flops", "% flops"},
      {"noise", "noise %"},   {"speedup_ci", "speedup 95%"}};
  static const std::vector<std::string> left = {"op",   "dtype", "shape",   "node",
                                                "stop", "timer", "markers", "status"};
  Column col;
  const auto it = titles.find(c);
  col.title = it != titles.end() ? it->second : c;
  col.left = std::find(left.begin(), left.end(), c) != left.end();
  return col;
}

std::string joined_markers(const core::CaseRow& r) {
  std::string v;
  if (r.markers)
    for (const auto& mk : *r.markers) v += (v.empty() ? "" : " ") + mk;
  return v;
}

// The status cell: the status, the fallback and poisoned markers, and a missed stopping rule
// (visible in the row, not only in run.log).
std::string status_cell(const core::CaseRow& r) {
  std::string v = r.status.value_or("?");
  if (r.markers)
    for (const auto& mk : *r.markers)
      if (mk == core::markers::direct_no_graph || mk == core::markers::capture_poisoned)
        v += " " + mk;
  if (!stop_rule_miss(r).empty() && v.find(kMarkerStopNotConverged) == std::string::npos)
    v += std::string(" ") + kMarkerStopNotConverged;
  return v;
}

// The speedup's 95% interval from this run's samples (core::speedup_interval: the first provider
// of each role), "lo-hi"; "n=1" where a side has one sample, "-"
// without both roles. Run-to-run noise is not in it: compare adds that (docs/ab.md).
std::string speedup_ci_cell(const core::CaseRow& r) {
  if (!r.providers || !r.speedup || !*r.speedup) return "-";
  const std::vector<double>*cand = nullptr, *base = nullptr;
  for (const auto& p : *r.providers) {
    if (!p.samples_ms || p.samples_ms->empty()) continue;
    if (p.role == core::role::candidate && cand == nullptr) cand = &*p.samples_ms;
    if (p.role == core::role::baseline && base == nullptr) base = &*p.samples_ms;
  }
  if (cand == nullptr || base == nullptr) return "-";
  if (cand->size() < 2 || base->size() < 2) return "n=1";
  for (const auto* side : {cand, base})
    for (const double x : *side)
      if (!(x > 0)) return "-";
  if (!(**r.speedup > 0)) return "-";
  // A closing table's guide (compare resamples 2000 times for its verdicts).
  const core::Interval ci = core::speedup_interval(*cand, *base, **r.speedup);
  return core::fixed(ci.lo, 2) + "-" + core::fixed(ci.hi, 2);
}

// One cell: column `c` of row `r`.
std::string cell(const std::string& c, const core::CaseRow& r) {
  const core::ProviderRow* m = main_provider(r);
  if (c == "op") return r.op;
  if (c == "dtype") return r.dtype.value_or("");
  if (c == "node") return r.node.value_or("");
  if (c == "timer") return r.timer.value_or("");
  if (c == "shape") {
    std::string v = r.shape.value_or("");
    return v.size() > 29 ? v.substr(0, 28) + "~" : v;
  }
  if (c == "base_ms") return r.latency_base_ms ? core::latency_ms(*r.latency_base_ms, 4) : "-";
  if (c == "cand_ms") return r.latency_ms ? core::latency_ms(*r.latency_ms, 4) : "-";
  if (c == "speedup") return fixed_or_dash(r.speedup, 2);
  if (c == "speedup_ci") return speedup_ci_cell(r);
  if (c == "tflops") return fixed_or_dash(r.tflops, 2);
  if (c == "gbps") return fixed_or_dash(r.gbps, 1);
  if (c == "pct_peak_bw") return fixed_or_dash(r.pct_peak_bw, 1);
  if (c == "pct_peak_flops") return fixed_or_dash(r.pct_peak_flops, 1);
  if (c == "noise") return r.noise ? core::fixed(*r.noise * 100, 2) : "-";
  if (c == "samples")
    return m != nullptr && m->samples_ms ? std::to_string(m->samples_ms->size()) : "-";
  if (c == "stop") {
    const std::string v = stop_rule_miss(r);
    if (!v.empty()) return v;
    return m != nullptr ? m->stop_reason.value_or("-") : "-";
  }
  if (c == "markers") return joined_markers(r);
  if (c == "status") return status_cell(r);
  return "";
}

// The columns laid out by core::TextTable, after a blank line.
void render(std::ostream& out, const std::vector<Column>& table, std::size_t n_rows) {
  std::vector<bool> right;
  std::vector<std::string> titles;
  for (const auto& col : table) {
    right.push_back(!col.left);
    titles.push_back(col.title);
  }
  core::TextTable text(right);
  text.add_row(titles);
  for (std::size_t r = 0; r < n_rows; ++r) {
    std::vector<std::string> cells;
    for (const auto& col : table) cells.push_back(col.cells[r]);
    text.add_row(std::move(cells));
  }
  out << "\n" << text.str();
}

// % bw above 100 is not an error: the case fits in a cache, while the copy peak streams a buffer
// larger than the caches through memory (on the cpu backend 256 MiB against L3-sized cases).
void note_above_peak(std::ostream& out, const std::vector<core::CaseRow>& rows,
                     const std::vector<std::string>& cols) {
  if (std::find(cols.begin(), cols.end(), "pct_peak_bw") == cols.end()) return;
  double top = 0;
  for (const auto& r : rows)
    if (r.pct_peak_bw) top = std::max(top, *r.pct_peak_bw);
  if (top <= 100) return;
  out << "note: % bw reaches " << core::fixed(top, 0)
      << "%: those cases fit in a cache, and the copy peak streams a buffer larger than the "
         "caches through memory (docs/measurements.md)\n";
}

}  // namespace

void print_run_table(std::ostream& out, const std::vector<core::CaseRow>& rows,
                     const std::vector<std::string>& columns,
                     const std::vector<double>& quantiles) {
  const auto& cols = columns.empty() ? core::default_run_table_columns() : columns;
  std::vector<Column> table;
  for (const auto& c : cols) {
    if (c == "quantiles") {
      add_quantile_columns(table, rows, quantiles);
      continue;
    }
    Column col = column_head(c);
    for (const auto& r : rows) col.cells.push_back(cell(c, r));
    table.push_back(std::move(col));
  }
  render(out, table, rows.size());
  if (std::find(cols.begin(), cols.end(), "speedup_ci") != cols.end())
    out << "note: speedup 95%: the interval of this run's samples (a bootstrap of the medians); "
           "the next run may land outside it, which caliber compare accounts for "
           "(docs/ab.md#the-rule)\n";
  note_above_peak(out, rows, cols);
  // Inputs timed twice (FlagGems' SHAPE#2 rows) whose figures disagree: said at once, not only
  // by a later `caliber summary` (docs/report.md#repeated-inputs).
  core::RepeatCheck repeats;
  core::check_repeats(rows, repeats);
  if (const auto n = core::repeats_note(repeats, /*agreeing=*/false); !n.empty())
    out << "note: " << n << "\n";
}

}  // namespace caliber::run
