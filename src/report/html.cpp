#include "report/html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/stats.hpp"
#include "report/ab_report.hpp"
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

}  // namespace

Table caliber_table(const std::vector<RunData>& runs) {
  Table t;
  t.id = "caliber";
  t.title = "Caliber of each run (two runs are comparable only when these agree)";
  // Every caliber key (core::caliber_keys: device_model as the device's name) and then context.
  t.columns = {"run",    "backend", "device", "uuid",   "timer", "level",     "tune",
               "repeat", "l2",      "clock",  "commit", "start", "copy GB/s", "mm TFLOP/s"};
  for (const auto& r : runs) {
    const json& id = r.identity;
    const json dev = id.is_object() ? id.value("device", json::object()) : json::object();
    const json peaks = id.is_object() ? id.value("peaks", json::object()) : json::object();
    auto s = [&](const json& j, const char* k) {
      return j.is_object() && j.contains(k)
                 ? (j[k].is_string() ? j[k].get<std::string>() : j[k].dump())
                 : std::string("-");
    };
    t.rows.push_back({text_cell(r.dir.filename().string()), text_cell(s(id, "backend")),
                      text_cell(s(dev, "name")), text_cell(s(dev, "uuid")),
                      text_cell(s(id, "timer")), text_cell(s(id, "level")),
                      text_cell(s(id, "tune")), text_cell(s(id, "repeat")), text_cell(s(id, "l2")),
                      text_cell(s(id, "clock")), text_cell(s(id, "git_commit")),
                      text_cell(s(id, "start_time")), number_cell(number_at(peaks, "copy_gbps")),
                      number_cell(number_at(peaks, "gemm_tflops"))});
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
      const core::ProviderRow* b = provider_with_role(row, core::role::baseline);
      const core::ProviderRow* c = provider_with_role(row, core::role::candidate);
      std::string extra;
      for (const auto& m : row_markers(row)) extra += (extra.empty() ? "" : " ") + m;
      if (row.error) extra += (extra.empty() ? "" : "; ") + *row.error;
      if (row.reason) extra += (extra.empty() ? "" : "; ") + *row.reason;
      t.rows.push_back(
          {text_cell(row.op), text_cell(row.dtype.value_or("")), text_cell(row.shape.value_or("")),
           text_cell(b ? b->name : "-"), number_cell(row.latency_base_ms),
           text_cell(c ? c->name : "-"), number_cell(c ? row.latency_ms : std::nullopt),
           number_cell(row_speedup(row), 3), number_cell(row.tflops), number_cell(row.gbps),
           number_cell(row.pct_peak_bw, 3), text_cell(row_status(row)), text_cell(extra)});
    }
  return t;
}

std::string render_html(const Report& r, const std::string& title,
                        const std::vector<Figure>& figures, std::size_t tables_before_figures) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
    << html_escape(title)
    << "</title>\n<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
       "margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
       "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f0f0f0}"
       ".banner{background:#fdd;border:2px solid #c00;padding:.5em;font-weight:bold}"
       ".warn{color:#a60}.note{color:#555;font-size:12px}figure{margin:0 0 1.5em}"
       "svg.chart{display:block;max-width:100%;height:auto}</style></head><body>\n";
  o << "<h1>" << html_escape(title) << "</h1>\n";
  for (const auto& b : r.banners) o << "<p class=\"banner\">" << html_escape(b) << "</p>\n";
  auto table = [&](const Table& t) {
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
  };
  auto charts = [&] {
    if (figures.empty()) return;
    o << "<h2>Charts</h2>\n";
    for (const auto& f : figures) {
      o << "<figure><h3>" << html_escape(f.heading) << "</h3>\n";
      if (!f.note.empty()) o << "<p class=\"note\">" << html_escape(f.note) << "</p>\n";
      o << f.svg << "</figure>\n";
    }
  };
  for (std::size_t i = 0; i < r.tables.size(); ++i) {
    if (i == tables_before_figures) charts();
    table(r.tables[i]);
  }
  if (tables_before_figures >= r.tables.size()) charts();
  for (const auto& w : r.warnings) o << "<p class=\"warn\">" << html_escape(w) << "</p>\n";
  o << "</body></html>\n";
  return o.str();
}

namespace {

// "f32 1024" within one op's chart; the run's name too when the page shows several runs.
std::string case_label(const RunData& run, const core::CaseRow& row, bool several_runs) {
  std::string s = row.dtype.value_or("") + " " + row.shape.value_or("");
  if (several_runs) s = run.dir.filename().string() + ": " + s;
  return s;
}

std::string fmt_num(double v, int digits = 4) {
  return number_cell(v, digits).text;
}

struct BoxStats {
  double min, q1, median, q3, max;
};
BoxStats box_stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    const double pos = p * static_cast<double>(v.size() - 1);
    const auto i = static_cast<std::size_t>(std::floor(pos));
    const double f = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
  };
  return {v.front(), q(0.25), q(0.5), q(0.75), v.back()};
}

// The charts of a run report, filled row by row.
struct RunCharts {
  std::vector<std::string> ops;  // in first-seen order
  std::map<std::string, Chart> speedup, latency;
  Chart peak;
  RunCharts() {
    peak.id = "chart-peak";
    peak.title = "Percent of the measured peak";
    peak.x_label = "% of peak";
    peak.reference = 100;
    peak.x_min = 0;
    peak.x_max = 100;
    peak.series = {{"memory: GB/s over the copy peak", "#9467bd"},
                   {"compute: TFLOP/s over the mm peak", "#8c564b"}};
  }
};

// A row's speedup dot, with its interval (core::speedup_interval, the run table's too).
void add_speedup_mark(Chart& c, const core::CaseRow& row, const std::string& label,
                      const ProviderSamples& cand, const ProviderSamples& base) {
  const auto sp = row_speedup(row);
  if (!sp) return;
  Mark m;
  m.value = *sp;
  std::string ci_text = "";
  if (cand.raw_samples && base.raw_samples && cand.samples_ms.size() >= 2 &&
      base.samples_ms.size() >= 2) {
    const auto ci = core::speedup_interval(cand.samples_ms, base.samples_ms, *sp);
    m.lo = ci.lo;
    m.hi = ci.hi;
    ci_text = ", 95% CI " + fmt_num(ci.lo) + " to " + fmt_num(ci.hi);
    m.color = ci.lo > 1 ? kFasterColor : ci.hi < 1 ? kSlowerColor : kSameColor;
  } else {
    m.color = kSameColor;
    ci_text = " (too few samples for an interval)";
  }
  m.title = row.op + " " + label + ": speedup " + fmt_num(*sp) + ci_text + " (" + base.name +
            " / " + cand.name + ")";
  c.rows.push_back({label, {m}});
}

// A provider's latency distribution from its stored samples, as a box.
void add_latency_box(ChartRow& r, const ProviderSamples* p, int series) {
  if (p == nullptr || !p->raw_samples) return;
  const BoxStats b = box_stats(p->samples_ms);
  Mark m;
  m.kind = Mark::Kind::box;
  m.series = series;
  m.value = b.median;
  m.q1 = b.q1;
  m.q3 = b.q3;
  m.lo = b.min;
  m.hi = b.max;
  m.samples = p->samples_ms;
  const std::size_t kept = p->samples_ms.size();
  // A provider keeps at most 200 of its samples: the box draws those, the title also gives the
  // run's own figure where they are fewer than it took (docs/run-log.md).
  const bool thinned = p->samples_total > 0 && static_cast<std::size_t>(p->samples_total) > kept;
  m.title = p->name + " (" + p->role + "), " +
            (thinned ? std::to_string(kept) + " of " + std::to_string(p->samples_total) +
                           " samples kept (the run's median " + fmt_num(p->latency_ms) +
                           " ms): their median "
                     : std::to_string(kept) + " samples: median ") +
            fmt_num(b.median) + " ms, quartiles " + fmt_num(b.q1) + " to " + fmt_num(b.q3) +
            ", range " + fmt_num(b.min) + " to " + fmt_num(b.max) + " ms";
  r.marks.push_back(std::move(m));
}

// Percent of peak, of the row's main provider (recorded by the run driver).
void add_peak_bars(Chart& peak, const core::CaseRow& row, const std::string& label) {
  ChartRow r{row.op + " " + label, {}};
  auto add = [&](const std::optional<double>& pct, int series, const char* what) {
    if (!pct) return;
    Mark m;
    m.kind = Mark::Kind::bar;
    m.series = series;
    m.value = *pct;
    m.title = row.op + " " + label + ": " + fmt_num(m.value, 3) + "% of the " + what + " peak";
    r.marks.push_back(std::move(m));
  };
  add(row.pct_peak_bw, 0, "copy bandwidth");
  add(row.pct_peak_flops, 1, "mm TFLOP/s");
  if (!r.marks.empty()) peak.rows.push_back(std::move(r));
}

// One case row into the charts.
void chart_row(RunCharts& charts, const RunData& run, const core::CaseRow& row, bool several) {
  const std::string& op = row.op;
  if (std::find(charts.ops.begin(), charts.ops.end(), op) == charts.ops.end())
    charts.ops.push_back(op);
  const auto provs = row_providers(row);
  const ProviderSamples* cand = nullptr;
  const ProviderSamples* base = nullptr;
  for (const auto& p : provs) {
    if (p.role == core::role::candidate && cand == nullptr) cand = &p;
    if (p.role == core::role::baseline && base == nullptr) base = &p;
  }
  const std::string label = case_label(run, row, several);
  if (cand != nullptr && base != nullptr)
    add_speedup_mark(charts.speedup[op], row, label, *cand, *base);
  ChartRow r{label, {}};
  add_latency_box(r, cand, 0);
  add_latency_box(r, base, 1);
  if (!r.marks.empty()) charts.latency[op].rows.push_back(std::move(r));
  add_peak_bars(charts.peak, row, label);
}

// The figures of one op: its speedup chart and its latency chart, when they have rows.
void op_figures(RunCharts& charts, const std::string& op, std::vector<Figure>& out) {
  if (auto it = charts.speedup.find(op); it != charts.speedup.end() && !it->second.rows.empty()) {
    Chart& c = it->second;
    c.id = "chart-speedup-" + op;
    c.title = "Speedup per shape: " + op;
    c.x_label = "speedup = baseline latency / candidate latency (> 1: the candidate is faster)";
    c.log_x = true;
    c.reference = 1;
    c.legend_extra = {{kFasterColor, "interval above 1"},
                      {kSlowerColor, "interval below 1"},
                      {kSameColor, "interval spans 1"}};
    const std::string svg = render_svg(c);
    if (!svg.empty())
      out.push_back({c.title,
                     "Each dot is a case's speedup; the bar is the bootstrap 95% interval of "
                     "median(baseline samples) / median(candidate samples) within this run. "
                     "Run-to-run noise is not in it (caliber compare adds it).",
                     svg});
  }
  if (auto it = charts.latency.find(op); it != charts.latency.end() && !it->second.rows.empty()) {
    Chart& c = it->second;
    c.id = "chart-latency-" + op;
    c.title = "Latency distribution: " + op;
    c.x_label = "latency per launch, ms";
    c.log_x = true;
    c.series = {{"candidate", kCandidateColor}, {"baseline", kBaselineColor}};
    const std::string svg = render_svg(c);
    if (!svg.empty())
      out.push_back({c.title,
                     "Every stored sample as a dot; the box spans the quartiles, the black "
                     "line is the median, the thin line the range.",
                     svg});
  }
}

}  // namespace

std::vector<Figure> run_figures(const std::vector<RunData>& runs) {
  std::vector<Figure> out;
  RunCharts charts;
  for (const auto& run : runs)
    for (const auto& row : run.log.cases) chart_row(charts, run, row, runs.size() > 1);
  for (const auto& op : charts.ops) op_figures(charts, op, out);
  if (!charts.peak.rows.empty()) {
    const std::string svg = render_svg(charts.peak);
    if (!svg.empty())
      out.push_back({charts.peak.title,
                     "The main provider's GB/s over the run's measured copy bandwidth and its "
                     "TFLOP/s over the run's mm baseline on a large case (run_identity.json, "
                     "peaks): measured ceilings, not datasheet ones.",
                     svg});
  }
  return out;
}

std::vector<Figure> compare_figures(const CompareResult& r) {
  Chart c;
  c.id = "chart-ratio";
  c.title = "Ratio B / A per pair";
  c.x_label = "ratio = median(B) / median(A) latency (> 1: B is slower)";
  c.log_x = true;
  c.reference = 1;
  c.legend_extra = {{kFasterColor, "FASTER"},
                    {kSlowerColor, "SLOWER"},
                    {kSameColor, "SAME"},
                    {kUnsureColor, "UNSURE"}};
  for (const auto& p : r.pairs) {
    Mark m;
    m.value = p.ratio;
    m.lo = p.ci.lo;
    m.hi = p.ci.hi;
    switch (p.verdict) {
      case Verdict::faster:
        m.color = kFasterColor;
        break;
      case Verdict::slower:
        m.color = kSlowerColor;
        break;
      case Verdict::same:
        m.color = kSameColor;
        break;
      case Verdict::unsure:
        m.color = kUnsureColor;
        break;
    }
    const std::string label = p.op + " " + p.dtype + " " + p.shape + " " + p.provider;
    m.title = label + ": ratio " + fmt_num(p.ratio) + ", 95% CI " + fmt_num(p.ci.lo) + " to " +
              fmt_num(p.ci.hi) + ", " + to_string(p.verdict) + " (n " + std::to_string(p.n_a) +
              " / " + std::to_string(p.n_b) + ")";
    c.rows.push_back({label, {m}});
  }
  const std::string svg = render_svg(c);
  if (svg.empty()) return {};
  char band[32];
  std::snprintf(band, sizeof band, "%.3g", r.band_used * 100);
  return {{c.title,
           std::string("Each dot is a pair's ratio, the bar its 95% interval (run-to-run noise "
                       "included where a side has fewer than three runs); the verdict compares "
                       "the interval with the noise band of +/-") +
               band + "%.",
           svg}};
}

std::optional<std::pair<std::vector<std::filesystem::path>, std::vector<std::filesystem::path>>>
ab_sides(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "ab.json", ec)) return std::nullopt;
  std::vector<std::filesystem::path> a, b;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_directory() || !is_run_dir(e.path())) continue;
    const std::string n = e.path().filename().string();
    if (n.rfind("A-", 0) == 0) a.push_back(e.path());
    if (n.rfind("B-", 0) == 0) b.push_back(e.path());
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a.empty() || b.empty())
    throw std::invalid_argument(dir.string() +
                                ": an ab directory without runs on both sides (A-*, B-*)");
  return std::make_pair(a, b);
}

std::string html_report(const std::vector<std::filesystem::path>& dirs) {
  if (dirs.size() == 1)
    if (auto ab = read_ab_dir(dirs.front())) return html_ab_report(ab->a, ab->b);
  const auto runs = load_runs(dirs);
  if (runs.empty()) throw std::invalid_argument("no run directory under the given paths");
  Report r = summary_report(summarize(dirs));
  r.tables.insert(r.tables.begin(), caliber_table(runs));
  r.tables.push_back(cases_table(runs));
  // "runs/x/" has an empty filename(); name the page after the last real component.
  auto name = dirs.front().lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  std::string title = "caliber report: " + name.filename().string();
  if (dirs.size() > 1) title += " and " + std::to_string(dirs.size() - 1) + " more";
  return render_html(r, title, run_figures(runs), 2);
}

std::string html_ab_report(const std::vector<std::filesystem::path>& a,
                           const std::vector<std::filesystem::path>& b, const CompareOptions& opt,
                           const std::string& page_title) {
  const auto runs_a = load_runs(a);
  const auto runs_b = load_runs(b);
  refuse_profile_runs(runs_a);
  refuse_profile_runs(runs_b);
  if (runs_a.empty() || runs_b.empty())
    throw std::invalid_argument("no run directory on one side of the A/B");
  CompareOptions o = opt;
  o.allow_mismatch = true;  // the page shows the mismatch as a banner
  const CompareResult res = compare_loaded(runs_a, runs_b, o);
  Report r = compare_report(res, o);
  // Title and first note name what the sides were (the ab.json switch, else the op libraries or
  // run names), not only their first run directories.
  const std::string da = describe_side(a, 'A'), db = describe_side(b, 'B');
  // Rounds of an ab directory, or runs named by hand (0: the note counts them a side).
  const bool rounds_of_ab = ab_dir_of(a, 'A') && ab_dir_of(b, 'B');
  const int rounds = rounds_of_ab ? static_cast<int>(a.size()) : 0;
  add_ab_notes(r, res, da, db, rounds);
  std::vector<RunData> all = runs_a;
  all.insert(all.end(), runs_b.begin(), runs_b.end());
  r.tables.insert(r.tables.begin(), caliber_table(all));
  auto figures = compare_figures(res);
  const auto plural = [](std::size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  const std::string count = rounds > 0 ? plural(static_cast<std::size_t>(rounds), "round")
                            : a.size() == b.size() ? plural(a.size(), "run") + " a side"
                                                   : plural(a.size(), "run") + " of A, " +
                                                         std::to_string(b.size()) + " of B";
  const std::string title =
      page_title.empty() ? "caliber A/B: A = " + da + " vs B = " + db + ", " + count : page_title;
  return render_html(r, title, figures, 1);
}

}  // namespace caliber::report
