#include "report/summary.hpp"

#include <algorithm>
#include <map>

#include "core/stats.hpp"
#include "records/repeats.hpp"

namespace caliber::report {

namespace {

struct Accumulator {
  SummaryGroup g;
  std::vector<double> speedups;
  // rows with both host costs and both device times
  std::vector<double> host_base, host, device_base, device;
};

std::optional<double> geomean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  return core::geomean(v);
}

void add_row(Accumulator& a, const core::CaseRow& row) {
  ++a.g.rows;
  const std::string status = row_status(row);
  if (status == core::status::failed) ++a.g.failed;
  if (status == core::status::skipped) ++a.g.skipped;
  if (row_has_marker(row, kFallbackMarker)) ++a.g.fallback;
  if (row_has_marker(row, kPoisonedMarker)) ++a.g.poisoned;
  if (row_has_marker(row, kPowerCappedMarker)) ++a.g.power_capped;
  if (row_has_marker(row, kStopMissedMarker)) ++a.g.stop_missed;
  if (row_has_marker(row, core::markers::device_shared)) ++a.g.device_shared;
  if (auto s = row_speedup(row)) {
    a.speedups.push_back(*s);
  } else {
    ++a.g.no_speedup;
  }
  if (row.host_base_ms && row.host_ms && row.latency_base_ms && row.latency_ms &&
      *row.host_base_ms > 0 && *row.host_ms > 0 && *row.latency_base_ms > 0 &&
      *row.latency_ms > 0) {
    a.host_base.push_back(*row.host_base_ms);
    a.host.push_back(*row.host_ms);
    a.device_base.push_back(*row.latency_base_ms);
    a.device.push_back(*row.latency_ms);
  }
}

SummaryGroup finish(Accumulator& a, const SummaryOptions& opt) {
  SummaryGroup g = a.g;
  g.with_speedup = static_cast<int>(a.speedups.size());
  if (!a.speedups.empty()) {
    g.geomean = core::geomean(a.speedups);
    // One row has no interval (a bootstrap of one value is that value: "1.518-1.518").
    if (a.speedups.size() >= 2) {
      const auto ci =
          core::bootstrap_geomean_ci(a.speedups, opt.confidence, opt.resamples, opt.seed);
      g.ci_lo = ci.lo;
      g.ci_hi = ci.hi;
    } else {
      g.ci_lo = g.ci_hi = std::nullopt;
    }
    g.min = *std::min_element(a.speedups.begin(), a.speedups.end());
    g.max = *std::max_element(a.speedups.begin(), a.speedups.end());
  }
  g.with_host = static_cast<int>(a.host.size());
  g.host_base_ms = geomean_of(a.host_base);
  g.host_ms = geomean_of(a.host);
  g.device_base_ms = geomean_of(a.device_base);
  g.device_ms = geomean_of(a.device);
  return g;
}

std::string input_name(const std::filesystem::path& p) {
  auto n = p.filename().string();
  if (n.empty()) n = p.parent_path().filename().string();
  return n.empty() ? p.string() : n;
}

}  // namespace

Summary summarize_rows(const std::vector<std::pair<std::string, std::vector<RunData>>>& inputs,
                       const SummaryOptions& opt) {
  Summary out;
  DuplicateRows duplicates;
  for (const auto& [source, runs] : inputs)
    for (const auto& run : runs) duplicates.add(run);
  out.duplicates = duplicates.note();
  core::RepeatCheck repeats;
  for (const auto& [source, runs] : inputs)
    for (const auto& run : runs) core::check_repeats(run.log.cases, repeats);
  out.repeats = core::repeats_note(repeats);
  for (const auto& [source, runs] : inputs) {
    std::map<std::pair<std::string, std::string>, Accumulator> groups;
    std::vector<PhaseGroup> phases;  // in the order the ops first appear
    PhaseGroup all_phases{source, "(all)", 0, {}};
    Accumulator all;
    all.g.source = source;
    all.g.op = "(all)";
    for (const auto& run : runs) {
      if (run.log.truncated) ++out.truncated_logs;
      out.bad_lines += run.log.bad_lines;
      if (out.first_row_error.empty()) out.first_row_error = run.log.first_bad_line_error;
      out.repaired_lines += run.log.repaired_lines;
      if (!run.log.footer) ++out.unfinished_runs;
      for (const auto& row : run.log.cases) {
        const std::string& op = row.op;
        const std::string dtype = row.dtype.value_or("");
        auto& acc = groups[{op, dtype}];
        if (acc.g.rows == 0) {
          acc.g.source = source;
          acc.g.op = op;
          acc.g.dtype = dtype;
        }
        add_row(acc, row);
        add_row(all, row);
        if (!row.phases.wall_s) continue;
        auto it = std::find_if(phases.begin(), phases.end(),
                               [&](const PhaseGroup& g) { return g.op == op; });
        if (it == phases.end()) it = phases.insert(phases.end(), PhaseGroup{source, op, 0, {}});
        ++it->cases;
        it->phases.add(row.phases);
        ++all_phases.cases;
        all_phases.phases.add(row.phases);
      }
    }
    for (auto& [key, acc] : groups) out.groups.push_back(finish(acc, opt));
    out.overall.push_back(finish(all, opt));
    if (all_phases.cases > 0) {
      out.phases.insert(out.phases.end(), phases.begin(), phases.end());
      out.phases.push_back(all_phases);
    }
  }
  return out;
}

Summary summarize(const std::vector<std::filesystem::path>& inputs, const SummaryOptions& opt) {
  std::vector<std::pair<std::string, std::vector<RunData>>> loaded;
  std::vector<std::string> folders;
  for (const auto& in : inputs) {
    // A run, or a batch (its runs are the ops of one batch), is one source. Any other folder of
    // runs holds unrelated runs (runs/: yesterday's add beside today's): one source per run,
    // never merged, so two runs of one op stay two lines.
    if (is_run_dir(in) || is_batch_dir(in)) {
      auto runs = load_runs({in});
      check_named_runs({in}, runs);  // html_report's summary too
      loaded.emplace_back(input_name(in), std::move(runs));
      continue;
    }
    auto runs = load_runs({in});
    if (runs.size() > 1)
      folders.push_back(input_name(in) + " (" + std::to_string(runs.size()) + " runs)");
    for (auto& r : runs) {
      std::string name = input_name(r.dir);
      loaded.emplace_back(std::move(name), std::vector<RunData>{std::move(r)});
    }
  }
  Summary s = summarize_rows(loaded, opt);
  s.split_folders = std::move(folders);
  return s;
}

namespace {
// The second table: where each op's time went (docs/run-log.md, the case rows' phase fields).
Table phase_table(const Summary& s) {
  Table t;
  t.id = "phases";
  t.title = "Where the time went: seconds per op, the case rows' phases summed";
  // host_s (the host cost runs) only where a row has it: a FlagGems run's.
  const bool host = std::any_of(s.phases.begin(), s.phases.end(),
                                [](const auto& g) { return g.phases.host_s.has_value(); });
  t.columns = {"source", "op", "cases", "inputs_s", "prepare_s", "check_s", "settle_s", "timing_s"};
  if (host) t.columns.push_back("host_s");
  t.columns.insert(t.columns.end(), {"other_s", "wall_s"});
  for (const auto& g : s.phases) {
    const core::Phases& p = g.phases;
    std::vector<Cell> row = {text_cell(g.source),      text_cell(g.op),
                             integer_cell(g.cases),    number_cell(p.inputs_s),
                             number_cell(p.prepare_s), number_cell(p.check_s),
                             number_cell(p.settle_s),  number_cell(p.timing_s)};
    if (host) row.push_back(number_cell(p.host_s));
    row.push_back(number_cell(p.other_s));
    row.push_back(number_cell(p.wall_s));
    t.rows.push_back(std::move(row));
  }
  t.notes.push_back(
      "prepare_s includes the tuner's sweeps; settle_s the clock regime's settling; timing_s the "
      "timers' warmup, capture and sampling");
  if (host)
    t.notes.push_back("host_s: the runs that measured the host cost of one eager call (host_ms)");
  return t;
}

// The second table of a run whose rows carry the host cost of one eager call (FlagGems' suite):
// what a call costs the host beside what its kernels cost the device.
Table host_table(const Summary& s) {
  Table t;
  t.id = "host_cost";
  t.title = "Device time and the host cost of one eager call (ms), geometric mean per op and dtype";
  t.columns = {"source",    "op",      "dtype",           "rows", "device_base_ms", "host_base_ms",
               "device_ms", "host_ms", "host_over_device"};
  auto add = [&](const SummaryGroup& g) {
    if (g.with_host == 0) return;
    std::optional<double> ratio;
    if (g.host_ms && g.device_ms) ratio = *g.host_ms / *g.device_ms;
    t.rows.push_back({text_cell(g.source), text_cell(g.op), text_cell(g.dtype),
                      integer_cell(g.with_host), number_cell(g.device_base_ms),
                      number_cell(g.host_base_ms), number_cell(g.device_ms), number_cell(g.host_ms),
                      number_cell(ratio)});
  };
  std::size_t gi = 0;
  for (const auto& o : s.overall) {
    for (; gi < s.groups.size() && s.groups[gi].source == o.source; ++gi) add(s.groups[gi]);
    add(o);
  }
  t.notes.push_back(
      "device: caliber's timers (the kernels); host: the wall time per call of a run of eager "
      "calls enqueued back to back on an idle stream (dispatch, checks, launch); "
      "host_over_device above 1: the candidate's call costs the host more than its kernels cost "
      "the device (docs/flaggems.md)");
  return t;
}

// The summary table's notes: what its rows leave out, and what the runs' logs held.
void add_summary_notes(Table& t, const Summary& s, int excluded, int power_capped, int stop_missed,
                       int device_shared) {
  t.notes.push_back(
      "geomean and its bootstrap 95% CI are over the speedup_rows only; n=1: one row, no "
      "interval across rows (a row's own interval: caliber run's closing table, speedup_ci)");
  if (excluded > 0)
    t.notes.push_back(std::to_string(excluded) +
                      " row(s) have no speedup (baseline-only ops, failed accuracy, failed or "
                      "skipped cases): counted in rows, excluded from the geomean");
  if (power_capped > 0)
    t.notes.push_back(std::to_string(power_capped) +
                      " row(s) carry CLOCK_POWER_CAPPED: some samples ran at a clock that the "
                      "power limit alone held down, so their latency is the sustained one");
  if (stop_missed > 0)
    t.notes.push_back(std::to_string(stop_missed) +
                      " row(s) carry STOP_NOT_CONVERGED: a provider stopped on its timeout below "
                      "--min-samples or above the --max-noise target, so its figure is less "
                      "precise than asked");
  if (device_shared > 0)
    t.notes.push_back(std::to_string(device_shared) +
                      " row(s) carry DEVICE_SHARED: another process had work on the device while "
                      "they were timed, so their figures may read slow even with low noise");
  if (!s.split_folders.empty()) {
    std::string names;
    for (const auto& f : s.split_folders) names += (names.empty() ? "" : ", ") + f;
    t.notes.push_back(names +
                      ": a folder of runs, not a batch: each run is a source of its own (give "
                      "runs as DIR... to choose, or compare two)");
  }
  if (s.bad_lines > 0)
    t.notes.push_back(std::to_string(s.bad_lines) +
                      " run.log line(s) could not be read (not JSON objects" +
                      (s.first_row_error.empty()
                           ? std::string()
                           : ", or not rows of their type; the first: " + s.first_row_error) +
                      "): they are not rows");
  if (s.repaired_lines > 0)
    t.notes.push_back(std::to_string(s.repaired_lines) +
                      " run.log line(s) were read after a repair: invalid UTF-8 bytes read as '?', "
                      "NaN, Infinity or out-of-range numbers read as missing");
  if (!s.duplicates.empty()) t.notes.push_back(s.duplicates);
  if (!s.repeats.empty()) t.notes.push_back(s.repeats);
  if (s.truncated_logs > 0)
    t.notes.push_back(
        std::to_string(s.truncated_logs) +
        " run.log(s) end in a cut line (the run was interrupted); that line is ignored");
  if (s.unfinished_runs > 0)
    t.notes.push_back(std::to_string(s.unfinished_runs) +
                      " run(s) have no footer: they did not finish (crash, timeout or interrupt)");
}
}  // namespace

Report summary_report(const Summary& s) {
  Report r;
  Table t;
  t.id = "summary";
  t.title = "Speedup (baseline latency / candidate latency), geometric mean per op and dtype";
  t.columns = {"source",   "op",       "dtype",       "rows",   "speedup_rows",
               "geomean",  "ci95_lo",  "ci95_hi",     "min",    "max",
               "fallback", "poisoned", "stop_missed", "failed", "skipped"};
  int excluded = 0, power_capped = 0, stop_missed = 0, device_shared = 0;
  // One row has no interval across rows: its cells say n=1 (null in JSON and CSV), never a
  // bootstrap of one value ("1.518-1.518").
  const auto ci_cell = [](const SummaryGroup& g, const std::optional<double>& v) {
    return g.with_speedup == 1 ? Cell{"n=1", nullptr} : number_cell(v);
  };
  auto add = [&](const SummaryGroup& g) {
    t.rows.push_back({text_cell(g.source), text_cell(g.op), text_cell(g.dtype),
                      integer_cell(g.rows), integer_cell(g.with_speedup), number_cell(g.geomean),
                      ci_cell(g, g.ci_lo), ci_cell(g, g.ci_hi), number_cell(g.min),
                      number_cell(g.max), integer_cell(g.fallback), integer_cell(g.poisoned),
                      integer_cell(g.stop_missed), integer_cell(g.failed),
                      integer_cell(g.skipped)});
  };
  std::size_t gi = 0;
  for (const auto& o : s.overall) {
    for (; gi < s.groups.size() && s.groups[gi].source == o.source; ++gi) add(s.groups[gi]);
    add(o);
    excluded += o.no_speedup;
    power_capped += o.power_capped;
    stop_missed += o.stop_missed;
    device_shared += o.device_shared;
  }
  for (; gi < s.groups.size(); ++gi) add(s.groups[gi]);
  add_summary_notes(t, s, excluded, power_capped, stop_missed, device_shared);
  r.tables.push_back(std::move(t));
  if (!s.phases.empty()) r.tables.push_back(phase_table(s));
  if (std::any_of(s.overall.begin(), s.overall.end(),
                  [](const SummaryGroup& g) { return g.with_host > 0; }))
    r.tables.push_back(host_table(s));
  return r;
}

}  // namespace caliber::report
