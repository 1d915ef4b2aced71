// The tables, charts and page of `caliber history` (the logic is history.cpp).
#include <cmath>
#include <sstream>

#include "core/stats.hpp"
#include "records/runlog.hpp"
#include "report/history.hpp"
#include "report/svg.hpp"

namespace caliber::report {

namespace {

std::string fixed(double v, int prec = 3) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(prec);
  o << v;
  return o.str();
}

std::string point_name(const HistoryResult& h, int at) {
  return "#" + std::to_string(at + 1) + " " + h.points[std::size_t(at)].label;
}

std::optional<double> first_value(const HistoryRow& r) {
  for (const auto& m : r.median_ms)
    if (m) return m;
  return std::nullopt;
}

std::optional<double> last_value(const HistoryRow& r) {
  for (auto it = r.median_ms.rbegin(); it != r.median_ms.rend(); ++it)
    if (*it) return *it;
  return std::nullopt;
}

// "#3 1.201 SLOWER; #7 0.950 FASTER": the consecutive verdicts that named a difference.
Cell steps_cell(const HistoryRow& r) {
  std::string text;
  nlohmann::json v = nlohmann::json::array();
  for (const auto& s : r.steps) {
    v.push_back({{"at", s.at + 1},
                 {"ratio", s.ratio},
                 {"ci_lo", s.ci.lo},
                 {"ci_hi", s.ci.hi},
                 {"verdict", to_string(s.verdict)},
                 {"flagged", s.flagged}});
    if (!s.flagged) continue;
    if (!text.empty()) text += "; ";
    text += "#" + std::to_string(s.at + 1) + " " + fixed(s.ratio) + " " + to_string(s.verdict);
  }
  return {text.empty() ? "-" : text, v};
}

Cell change_cell(const HistoryResult& h, const HistoryRow& r) {
  if (!r.change) return {"-", nullptr};
  const auto& c = *r.change;
  const nlohmann::json v = {{"at", c.at + 1},
                            {"ratio", c.ratio},
                            {"ci_lo", c.ci.lo},
                            {"ci_hi", c.ci.hi},
                            {"verdict", to_string(c.verdict)},
                            {"reported", c.reported},
                            {"z", std::isfinite(c.z) ? nlohmann::json(c.z) : nlohmann::json()}};
  const std::string where = "from " + point_name(h, c.at) + ": " + fixed(c.ratio) + " [" +
                            fixed(c.ci.lo) + ", " + fixed(c.ci.hi) + "] " + to_string(c.verdict);
  return {c.reported ? where : "-", v};  // JSON keeps the best split that was not reported
}

Table points_table(const HistoryResult& h) {
  Table t{"points", "Points, oldest first", {"#", "point", "start_time", "commit", "runs"}, {}, {}};
  for (std::size_t i = 0; i < h.points.size(); ++i) {
    const auto& p = h.points[i];
    t.rows.push_back({integer_cell(static_cast<long long>(i) + 1), text_cell(p.label),
                      text_cell(p.start_time.empty() ? "-" : p.start_time),
                      text_cell(p.commit.empty() ? "-" : p.commit),
                      integer_cell(static_cast<long long>(p.runs.size()))});
  }
  for (const auto& l : h.left_out) t.notes.push_back("left out: " + l);
  return t;
}

Table rows_table(const HistoryResult& h, const HistoryOptions& opt) {
  Table t{"history",
          "Per row: the series' ends, the steps between consecutive points, the change-point",
          {"op", "dtype", "shape", "provider", "points", "first_ms", "last_ms", "last/first",
           "spread_pct", "steps", "change_point"},
          {},
          {}};
  int moved = 0;
  for (const auto& r : h.rows) {
    int n = 0;
    for (const auto& m : r.median_ms) n += m ? 1 : 0;
    const auto first = first_value(r);
    const auto last = last_value(r);
    std::optional<double> change;
    if (first && last) change = *last / *first;
    t.rows.push_back(
        {text_cell(r.op), text_cell(r.dtype), text_cell(r.shape),
         text_cell(r.provider + (r.role == core::role::baseline ? " (baseline)" : "")),
         integer_cell(n), number_cell(first), number_cell(last), number_cell(change),
         r.spread ? number_cell(100.0 * std::expm1(*r.spread), 3) : number_cell(std::nullopt),
         steps_cell(r), change_cell(h, r)});
    moved += r.moved() ? 1 : 0;
  }
  t.notes.push_back(std::to_string(moved) + " of " + std::to_string(h.rows.size()) +
                    " rows moved (a change-point)");
  t.notes.push_back(
      "steps: compare's FASTER/SLOWER of a point against the one before it, and "
      "with a spread_pct (the series' run-to-run spread) at least " +
      fixed(opt.step_z, 1) + " spreads (docs/report.md#history)");
  t.notes.push_back(
      "change_point: the best single split, when compare of its two segments is "
      "FASTER/SLOWER by at least " +
      fixed(100 * opt.min_step, 1) + "% and, with a spread, " + fixed(opt.change_z, 1) +
      " standard errors (docs/report.md#history)");
  return t;
}

// Long form for CSV and JSON: one line per row and point.
Table series_table(const HistoryResult& h) {
  Table t{"series",
          "Series",
          {"op", "dtype", "shape", "role", "provider", "point", "label", "start_time", "commit",
           "median_ms", "step_ratio", "step_verdict", "change_point"},
          {},
          {}};
  for (const auto& r : h.rows)
    for (std::size_t i = 0; i < r.median_ms.size(); ++i) {
      if (!r.median_ms[i]) continue;
      const HistoryStep* step = nullptr;
      for (const auto& s : r.steps)
        if (s.at == static_cast<int>(i)) step = &s;
      const auto& p = h.points[i];
      const bool cp = r.moved() && r.change->at == static_cast<int>(i);
      t.rows.push_back({text_cell(r.op), text_cell(r.dtype), text_cell(r.shape), text_cell(r.role),
                        text_cell(r.provider), integer_cell(static_cast<long long>(i) + 1),
                        text_cell(p.label), text_cell(p.start_time), text_cell(p.commit),
                        number_cell(r.median_ms[i], 6),
                        step ? number_cell(step->ratio) : number_cell(std::nullopt),
                        step ? text_cell(std::string(to_string(step->verdict)) +
                                         (step->flagged ? "" : " (not flagged)"))
                             : Cell{"-", nullptr},
                        Cell{cp ? "yes" : "no", cp}});
    }
  return t;
}

}  // namespace

Report history_report(const HistoryResult& h, const HistoryOptions& opt, bool series_first) {
  Report rep;
  if (series_first) {
    rep.tables.push_back(series_table(h));
    rep.tables.push_back(points_table(h));
  } else {
    rep.tables.push_back(points_table(h));
    rep.tables.push_back(rows_table(h, opt));
  }
  if (h.points.size() < 2)
    rep.warnings.push_back("one point only: no step or change-point can be found");
  for (const auto& r : h.regressions) rep.warnings.push_back("REGRESSION (newest point): " + r);
  return rep;
}

std::vector<Figure> history_figures(const HistoryResult& h) {
  std::vector<Figure> out;
  for (const auto& r : h.rows) {
    if (!r.moved()) continue;
    const auto& c = *r.change;
    std::vector<double> before;
    for (int i = 0; i < c.at; ++i)
      if (r.median_ms[std::size_t(i)]) before.push_back(*r.median_ms[std::size_t(i)]);
    Chart chart;
    chart.id = "history-" + std::to_string(out.size() + 1);
    chart.title = r.op + " " + r.dtype + " " + r.shape + " " + r.provider;
    chart.x_label = "median latency (ms)";
    if (!before.empty()) chart.reference = core::median(before);
    chart.series = {{"before the change-point", kSameColor},
                    {c.verdict == Verdict::slower ? "after: SLOWER" : "after: FASTER",
                     c.verdict == Verdict::slower ? kSlowerColor : kFasterColor}};
    for (std::size_t i = 0; i < r.median_ms.size(); ++i) {
      if (!r.median_ms[i]) continue;
      const bool after = static_cast<int>(i) >= c.at;
      Mark m;
      m.series = 0;  // one lane: the colour tells the segment
      m.value = *r.median_ms[i];
      m.color = after ? chart.series[1].color : kSameColor;
      m.title = point_name(h, static_cast<int>(i)) + ": " + fixed(m.value, 5) + " ms";
      chart.rows.push_back({point_name(h, static_cast<int>(i)), {m}});
    }
    out.push_back({chart.title + ": " + fixed(c.ratio) + " " + to_string(c.verdict) + " from " +
                       point_name(h, c.at),
                   "Each point's median latency, oldest at the top; the line is the median "
                   "before the change-point.",
                   render_svg(chart)});
  }
  return out;
}

std::string history_html(const HistoryResult& h, const HistoryOptions& opt) {
  const Report rep = history_report(h, opt);
  std::string title = "caliber history: " + std::to_string(h.points.size()) + " points";
  if (!h.points.empty()) {
    const auto& id = h.points.back().runs.front().identity;
    if (id.is_object()) {
      const nlohmann::json& b = json_member(id, "backend");
      const std::string backend = b.is_string() ? b.get<std::string>() : std::string();
      if (!backend.empty()) title += " on " + backend;
    }
    const std::string from = h.points.front().start_time, to = h.points.back().start_time;
    if (!from.empty() && !to.empty()) title += ", " + from + " to " + to;
  }
  return render_html(rep, title, history_figures(h), 1);
}

}  // namespace caliber::report
