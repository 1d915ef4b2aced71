#include "report/history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/stats.hpp"
#include "records/identity.hpp"
#include "records/runlog.hpp"
#include "report/svg.hpp"

namespace caliber::report {

namespace fs = std::filesystem;

std::optional<HistoryOrder> parse_history_order(const std::string& s) noexcept {
  if (s == "time") return HistoryOrder::time;
  if (s == "commit") return HistoryOrder::commit;
  return std::nullopt;
}

namespace {

std::string identity_text(const nlohmann::json& id, const char* key) {
  if (!id.is_object()) return "";
  const auto it = id.find(key);
  return it != id.end() && it->is_string() ? it->get<std::string>() : "";
}

HistoryPoint make_point(const fs::path& dir) {
  HistoryPoint p;
  p.label = dir.filename().string();
  if (p.label.empty()) p.label = dir.parent_path().filename().string();
  p.runs = load_runs({dir});
  for (const auto& r : p.runs) {
    const std::string t = identity_text(r.identity, "start_time");
    if (!t.empty() && (p.start_time.empty() || t < p.start_time)) p.start_time = t;
    if (p.commit.empty()) p.commit = identity_text(r.identity, "git_commit");
  }
  return p;
}

// The directories one argument names as points (see history_points).
std::vector<fs::path> point_dirs(const fs::path& arg) {
  std::error_code ec;
  if (!fs::is_directory(arg, ec))
    throw std::invalid_argument("history: '" + arg.string() + "' is not a directory");
  if (is_run_dir(arg) || is_batch_dir(arg)) return {arg};
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(arg, ec))
    if (e.is_directory(ec) && (is_run_dir(e.path()) || is_batch_dir(e.path())))
      out.push_back(e.path());
  if (out.empty())
    throw std::invalid_argument("history: '" + arg.string() +
                                "' is not a run or batch directory and holds none");
  std::sort(out.begin(), out.end());
  return out;
}

// order commit: every point of one commit becomes one point (its runs pooled, as compare pools
// repeated runs of a side); points without a recorded commit stay as they are.
std::vector<HistoryPoint> group_by_commit(std::vector<HistoryPoint> points) {
  std::vector<HistoryPoint> out;
  std::map<std::string, std::size_t> at;
  for (auto& p : points) {
    const auto it = p.commit.empty() || p.commit == "unknown" ? at.end() : at.find(p.commit);
    if (it == at.end()) {
      if (!p.commit.empty() && p.commit != "unknown") at[p.commit] = out.size();
      if (!p.commit.empty()) p.label = p.commit;
      out.push_back(std::move(p));
      continue;
    }
    auto& q = out[it->second];
    for (auto& r : p.runs) q.runs.push_back(std::move(r));
    if (!p.start_time.empty() && (q.start_time.empty() || p.start_time < q.start_time))
      q.start_time = p.start_time;
  }
  return out;
}

}  // namespace

std::vector<HistoryPoint> history_points(const std::vector<fs::path>& dirs, HistoryOrder order) {
  if (dirs.empty()) throw std::invalid_argument("history: name at least one directory");
  std::vector<HistoryPoint> points;
  std::set<fs::path> seen;
  for (const auto& arg : dirs)
    for (const auto& d : point_dirs(arg)) {
      std::error_code ec;
      const fs::path canon = fs::weakly_canonical(d, ec);
      if (!seen.insert(ec ? d : canon).second) continue;  // named twice: one point
      points.push_back(make_point(d));
      refuse_profile_runs(points.back().runs);
    }
  // Oldest first; the name breaks ties (and orders runs that recorded no start time).
  std::stable_sort(points.begin(), points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
    return a.start_time != b.start_time ? a.start_time < b.start_time : a.label < b.label;
  });
  if (order == HistoryOrder::commit) points = group_by_commit(std::move(points));
  return points;
}

namespace {

std::string series_key(const std::string& op, const std::string& dtype, const std::string& shape,
                       const std::string& role, const std::string& provider) {
  return op + '\x1f' + dtype + '\x1f' + shape + '\x1f' + role + '\x1f' + provider;
}

std::string pair_key(const PairResult& p) {
  return series_key(p.op, p.dtype, p.shape, p.role, p.provider);
}

// Why `r` is not comparable with the reference run, empty when it is.
std::string mismatch(const nlohmann::json& ref, const RunData& r) {
  std::string why;
  for (const auto& d : core::diff_identity(ref, r.identity))
    why += (why.empty() ? "" : "; ") + d.key + ": " + (d.b.empty() ? "(none)" : d.b) +
           ", the newest " + (d.a.empty() ? "(none)" : d.a);
  return why;
}

// The newest point's newest run (its identity's start_time; the first run where none says).
const RunData& newest_run(const HistoryPoint& p) {
  const auto start = [](const RunData& r) { return identity_text(r.identity, "start_time"); };
  const RunData* best = &p.runs.front();
  for (const auto& r : p.runs)
    if (start(r) > start(*best)) best = &r;
  return *best;
}

// Keeps the runs whose caliber is the newest run's; a point keeps its comparable
// runs (a commit's point may gather runs of other settings: those alone are left out), and a
// point with none, or with no readable case row, goes to left_out.
void keep_comparable(std::vector<HistoryPoint>& points, const HistoryOptions& opt,
                     HistoryResult& out) {
  std::vector<HistoryPoint> kept;
  const nlohmann::json ref = newest_run(points.back()).identity;
  for (auto& p : points) {
    if (p.runs.empty() || std::all_of(p.runs.begin(), p.runs.end(),
                                      [](const RunData& r) { return r.log.cases.empty(); })) {
      out.left_out.push_back(p.label + ": holds no readable case row");
      continue;
    }
    if (!opt.compare.allow_mismatch) {
      std::vector<RunData> same;
      std::string why;
      for (auto& r : p.runs) {
        const std::string w = mismatch(ref, r);
        if (w.empty())
          same.push_back(std::move(r));
        else if (why.empty())
          why = w;
      }
      if (same.empty()) {
        out.left_out.push_back(p.label + ": not comparable with the newest point (" + why + ")");
        continue;
      }
      if (same.size() < p.runs.size())
        out.left_out.push_back(p.label + ": " + std::to_string(p.runs.size() - same.size()) +
                               " of its " + std::to_string(p.runs.size()) +
                               " runs not comparable with the newest point (" + why + ")");
      p.runs = std::move(same);
    }
    kept.push_back(std::move(p));
  }
  points = std::move(kept);
}

// The figure of every (op, dtype, shape, role, provider) per point: ok rows only, over the
// point's runs as compare takes a side's (figure_of_runs).
void collect_series(const std::vector<HistoryPoint>& points, HistoryResult& out) {
  std::map<std::string, std::size_t> at;
  const std::size_t n = points.size();
  for (std::size_t i = 0; i < n; ++i) {
    std::map<std::string, std::vector<double>> figures;
    std::vector<std::string> order;
    for (const auto& run : points[i].runs)
      for (const auto& row : run.log.cases) {
        if (row_status(row) != core::status::ok) continue;
        const auto provs = row_providers(row);
        const bool has_candidate = std::any_of(provs.begin(), provs.end(), [](const auto& p) {
          return p.role == core::role::candidate;
        });
        for (const auto& p : provs) {
          if (p.samples_ms.empty() || !(p.latency_ms > 0)) continue;
          const std::string key =
              series_key(row.op, row.dtype.value_or(""), row.shape.value_or(""), p.role, p.name);
          if (!at.count(key)) {
            at[key] = out.rows.size();
            HistoryRow r;
            r.op = row.op;
            r.dtype = row.dtype.value_or("");
            r.shape = row.shape.value_or("");
            r.role = p.role;
            r.provider = p.name;
            r.primary = p.role == core::role::candidate || !has_candidate;
            r.median_ms.assign(n, std::nullopt);
            out.rows.push_back(std::move(r));
          }
          auto& s = figures[key];
          if (s.empty()) order.push_back(key);
          s.push_back(p.latency_ms);
        }
      }
    for (const auto& key : order) out.rows[at[key]].median_ms[i] = figure_of_runs(figures[key]);
  }
}

std::vector<RunData> runs_of(const std::vector<HistoryPoint>& points, std::size_t from,
                             std::size_t to) {
  std::vector<RunData> out;
  for (std::size_t i = from; i < to; ++i)
    out.insert(out.end(), points[i].runs.begin(), points[i].runs.end());
  return out;
}

std::vector<double> present_logs(const std::vector<std::optional<double>>& medians) {
  std::vector<double> y;
  for (const auto& m : medians)
    if (m && *m > 0) y.push_back(std::log(*m));
  return y;
}

std::optional<double> series_spread(const std::vector<std::optional<double>>& medians) {
  const auto y = present_logs(medians);
  if (y.size() < std::size_t(kMinSpreadPoints)) return std::nullopt;
  std::vector<double> d;
  for (std::size_t i = 1; i < y.size(); ++i) d.push_back(y[i] - y[i - 1]);
  for (double& v : d) v = std::abs(v);
  return 1.4826 * core::median(d) / std::sqrt(2.0);
}

std::string regression_text(const HistoryRow& r, const HistoryStep& s, double pct) {
  std::ostringstream o;
  o << r.op << " " << r.dtype << " " << r.shape << " (" << r.provider << "): ratio " << s.ratio
    << ", SLOWER by more than " << pct << "%";
  return o.str();
}

// The gate: the newest point against the one before it, on the steps that were flagged.
void add_regressions(const HistoryOptions& opt, std::size_t points, HistoryResult& out) {
  const auto& pct = opt.compare.fail_on_regression_pct;
  if (!pct || points < 2) return;
  for (const auto& r : out.rows)
    for (const auto& s : r.steps)
      if (r.primary && s.at + 1 == static_cast<int>(points) && s.flagged &&
          s.verdict == Verdict::slower && s.ratio > 1.0 + *pct / 100.0)
        out.regressions.push_back(regression_text(r, s, *pct));
}

// compare's verdict of every point against the one before it, judged against the series' spread.
void add_steps(const std::vector<HistoryPoint>& points, const HistoryOptions& opt,
               HistoryResult& out) {
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const auto& r = out.rows[i];
    at[series_key(r.op, r.dtype, r.shape, r.role, r.provider)] = i;
  }
  for (std::size_t i = 1; i < points.size(); ++i) {
    const CompareResult res = compare_loaded(points[i - 1].runs, points[i].runs, opt.compare);
    // The gate on the newest step: a case that fails there, or nothing comparable at all, fails
    // it as a slower case does (a gate that judged nothing is no pass).
    if (opt.compare.fail_on_regression_pct && i + 1 == points.size()) {
      for (const auto& c : res.broken)
        out.regressions.push_back(c + ": ok in the point before, failed in the newest");
      if (res.paired == 0)
        out.regressions.push_back(
            "the newest point shares no comparable case with the one "
            "before it: nothing was judged");
    }
    for (const auto& p : res.pairs) {
      const auto it = at.find(pair_key(p));
      if (it == at.end()) continue;
      auto& row = out.rows[it->second];
      HistoryStep s{static_cast<int>(i), p.ratio, p.ci, p.verdict};
      s.flagged =
          (p.verdict == Verdict::faster || p.verdict == Verdict::slower) &&
          (!row.spread || std::abs(std::log(p.ratio)) >= opt.step_z * *row.spread * std::sqrt(2.0));
      row.steps.push_back(s);
    }
  }
  add_regressions(opt, points.size(), out);
}

// The split of a row's series that maximises |mean after - mean before| x sqrt(k (m - k) / m)
// over the log medians of the points where it has a value (binary segmentation's statistic);
// returns the index of the first point after it, or nullopt with fewer than two values.
struct Split {
  int at = 0;       // index of the first point after it
  double diff = 0;  // median log after - median log before (robust to one outlying run)
  int before = 0, after = 0;
};

// min_segment: the fewest points a side of the split may have (3 where the series has a spread:
// one or two points after a split cannot be told from an outlying run; the step rule judges
// the newest point).
std::optional<Split> best_split(const std::vector<std::optional<double>>& medians,
                                std::size_t min_segment) {
  std::vector<int> idx;
  std::vector<double> y;
  for (std::size_t i = 0; i < medians.size(); ++i)
    if (medians[i] && *medians[i] > 0) {
      idx.push_back(static_cast<int>(i));
      y.push_back(std::log(*medians[i]));
    }
  const std::size_t m = y.size();
  if (m < 2 * min_segment) return std::nullopt;
  double total = 0;
  for (double v : y) total += v;
  double best = -1, before = 0;
  Split out;
  for (std::size_t k = 1; k < m; ++k) {
    before += y[k - 1];
    if (k < min_segment || m - k < min_segment) continue;
    const double d = (total - before) / double(m - k) - before / double(k);
    const double t = std::abs(d) * std::sqrt(double(k) * double(m - k) / double(m));
    if (t > best) {
      best = t;
      out = {idx[k], d, static_cast<int>(k), static_cast<int>(m - k)};
    }
  }
  const auto k = static_cast<std::ptrdiff_t>(out.before);
  out.diff = core::median(std::vector<double>(y.begin() + k, y.end())) -
             core::median(std::vector<double>(y.begin(), y.begin() + k));
  return out;
}

// Each row's most likely split, judged by compare on the two segments' runs pooled (one compare
// per distinct split, shared by the rows that split there).
void add_change_points(const std::vector<HistoryPoint>& points, const HistoryOptions& opt,
                       HistoryResult& out) {
  std::map<int, CompareResult> at_split;
  for (auto& row : out.rows) {
    const auto split = best_split(row.median_ms, row.spread ? 3 : 1);
    if (!split) continue;
    const std::size_t at = std::size_t(split->at);
    auto it = at_split.find(split->at);
    if (it == at_split.end()) {
      CompareOptions o = opt.compare;
      o.fail_on_regression_pct.reset();
      it = at_split
               .emplace(split->at, compare_loaded(runs_of(points, 0, at),
                                                  runs_of(points, at, points.size()), o))
               .first;
    }
    const std::string key = series_key(row.op, row.dtype, row.shape, row.role, row.provider);
    for (const auto& p : it->second.pairs) {
      if (pair_key(p) != key) continue;
      ChangePoint c{split->at, p.ratio, p.ci, p.verdict};
      // A median's standard error is sqrt(pi / 2) = 1.2533 times a mean's.
      const double se =
          row.spread ? 1.2533 * *row.spread * std::sqrt(1.0 / split->before + 1.0 / split->after)
                     : 0.0;
      c.z = se > 0               ? std::abs(split->diff) / se
            : split->diff != 0.0 ? std::numeric_limits<double>::infinity()
                                 : 0.0;
      c.reported = (p.verdict == Verdict::faster || p.verdict == Verdict::slower) &&
                   std::abs(p.ratio - 1.0) >= opt.min_step && (!row.spread || c.z >= opt.change_z);
      row.change = c;
      break;
    }
  }
}

}  // namespace

HistoryResult history_of(std::vector<HistoryPoint> points, const HistoryOptions& opt) {
  if (points.empty()) throw std::invalid_argument("history: no run to read");
  if (!(opt.min_step >= 0 && opt.min_step < 1))
    throw std::invalid_argument("--min-step: a percentage from 0 to below 100");
  HistoryResult out;
  keep_comparable(points, opt, out);
  if (points.empty())
    throw std::invalid_argument(
        out.left_out.empty() ? std::string("history: no directory holds a readable case row")
                             : "history: no point is left to chart: " + out.left_out.front());
  collect_series(points, out);
  for (auto& r : out.rows) r.spread = series_spread(r.median_ms);
  add_steps(points, opt, out);
  add_change_points(points, opt, out);
  out.points = std::move(points);
  return out;
}

int history_exit_code(const HistoryResult& h, const HistoryOptions& opt) {
  return opt.compare.fail_on_regression_pct && !h.regressions.empty() ? 1 : 0;
}

}  // namespace caliber::report
