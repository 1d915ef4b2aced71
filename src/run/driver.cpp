#include "run/driver.hpp"
#include "run/driver_parts.hpp"
#include "run/fed_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backends/describe.hpp"
#include "backends/registry.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"
#include "plan/plan.hpp"
#include "proc/process.hpp"
#include "records/identity.hpp"
#include "records/rundir.hpp"
#include "records/runlog.hpp"
#include "run/case_runner.hpp"
#include "run/cases.hpp"
#include "run/estimate.hpp"
#include "run/peaks.hpp"
#include "run/py_ops.hpp"
#include "run/warmup_runner.hpp"
#include "timing/timer.hpp"
#include "tune/cache.hpp"
#include "tune/warmup.hpp"

namespace caliber::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace driver_parts {

std::uint64_t fresh_seed() {
  std::random_device rd;
  std::uint64_t s =
      ((static_cast<std::uint64_t>(rd()) << 32) ^ rd()) & ((std::uint64_t{1} << 62) - 1);
  return s == 0 ? 1 : s;
}

// A positive figure with `prec` decimals; "-" for none (0, negative, NaN).
std::string fmt(double v, int prec = 3) {
  if (!std::isfinite(v) || v <= 0) return "-";
  return core::fixed(v, prec);
}

// A latency in ms with more decimals the smaller it is.
std::string fmt_ms(double ms) {
  if (!std::isfinite(ms) || ms <= 0) return "-";
  return core::latency_ms(ms, ms < 0.1 ? 4 : ms < 10 ? 3 : 2);
}

std::string devices_list(const std::vector<backends::DeviceDesc>& devs) {
  std::string s;
  for (const auto& d : devs) s += (s.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name;
  return s.empty() ? "(none)" : s;
}

}  // namespace driver_parts
using namespace driver_parts;

std::vector<backends::DeviceDesc> check_devices(const backends::Backend& backend,
                                                const core::Knobs& k, bool only_if_any) {
  const auto devices = backend.enumerate();
  if (only_if_any && devices.empty()) return devices;
  for (const int want : k.devices.empty() ? std::vector<int>{0} : k.devices)
    if (std::none_of(devices.begin(), devices.end(),
                     [&](const auto& d) { return d.index == want; }))
      throw UsageError("--devices: '" + std::to_string(want) + "' is not a " + backend.name() +
                       " device; devices: " + devices_list(devices));
  return devices;
}

void check_replay_source(const core::Knobs& k) {
  // Replay reads the source; a record resumed from it (--tune record --replay-from) copies it.
  if (k.replay_from.empty()) return;
  // A FlagGems run replays FlagGems' LibTuner database (flaggems_tune.db), which its Python
  // side checks before anything is written (python/caliber/flaggems_tune.py).
  if (!k.flaggems.empty()) return;
  const std::string who = "--replay-from (REPLAY_FROM): '" + k.replay_from + "' ";
  std::error_code ec;
  const fs::path file = tune::replay_source_file(k.replay_from);
  if (!fs::is_regular_file(file, ec))
    throw UsageError(who + "is not a run directory with a tune.db (record one with --tune record)");
  // A text file or a garbage tune.db would replay nothing: every key replay-missing, exit 0.
  std::vector<std::string> warnings;
  auto cache = tune::ConfigCache::open(file, tune::ConfigCache::Access::read_only, warnings);
  if (!cache->usable())
    throw UsageError(who + "holds no readable tune cache (" + file.string() +
                     (warnings.empty() ? std::string() : ": " + warnings.front()) + ")");
}

// The backend the knobs name; a bad name is bad usage.
const backends::Backend& resolve_backend_knob(const core::Knobs& k) {
  try {
    return backends::resolve_backend(k.backend);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--backend (ZL_BACKEND): ") + e.what());
  }
}

void check_batch_ops(const core::Knobs& knobs, const std::vector<std::string>& ops) {
  core::Knobs k = knobs;
  k.ops = ops;
  k.op_file.clear();
  k.node.clear();
  const backends::Backend* backend = &resolve_backend_knob(k);
  if (!k.py_ops.empty() && !py_suites_missing(k.py_ops).empty()) {
    // The executable cannot load a Python suite: a `caliber list` child in Python checks it.
    (void)check_py_suites(caliber_executable(), k, ops);
    check_replay_source(k);
    return;
  }
  try {
    (void)select_cases(k, backend->name(), backend->capabilities().host);
  } catch (const SelectionError& e) {
    throw UsageError(e.what());
  }
  check_replay_source(k);
}

namespace driver_parts {

// Phase 1: backend, setup guard, device, parallel-warmup devices, cases, timer, replay source.
// Everything the knobs name is checked here; a bad one throws UsageError before anything is
// written.
Setup resolve_setup(const RunRequest& req) {
  const core::Knobs& k = req.knobs;
  Setup s;
  s.backend = &resolve_backend_knob(k);
  try {
    s.backend->setup_guard();
  } catch (const backends::BackendUnavailable& e) {
    throw UsageError(e.what());
  }
  s.caps = s.backend->capabilities();
  const auto devices = check_devices(*s.backend, k);
  s.dev_index = k.devices.empty() ? 0 : k.devices.front();
  auto dev_it = std::find_if(devices.begin(), devices.end(),
                             [&](const auto& d) { return d.index == s.dev_index; });
  s.device = *dev_it;
  if (k.parallel_warmup > 0 && req.tune_shard.empty()) {
    try {  // the rule is the tuner's (tune/warmup.hpp); here it refuses before anything is written
      tune::validate_parallel_warmup(k.parallel_warmup,
                                     k.devices.empty() ? 1 : static_cast<int>(k.devices.size()));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    // Every shard's device is checked here, before the run directory is claimed.
    for (int i = 0; i < k.parallel_warmup; ++i) {
      try {
        (void)s.backend->child_env(k.devices.empty() ? 0 : k.devices[static_cast<std::size_t>(i)]);
      } catch (const std::exception& e) {
        throw UsageError(std::string("--devices: ") + e.what());
      }
    }
  }
  try {
    // A fed run's cases come from its embedding (FlagGems' pytest items), not the corpus.
    if (k.flaggems.empty())
      s.sel = select_cases(k, s.backend->name(), s.caps.host);
    else
      s.sel.level = k.level;
  } catch (const SelectionError& e) {
    throw UsageError(e.what());
  }
  // The timer from capabilities, by the planner's rule (caliber plan prints the same choice).
  try {
    s.timer = plan::resolve_timer(*s.backend, k.timer);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--timer: ") + e.what());
  }
  if (k.timer == core::TimerKind::automatic && s.timer == core::TimerKind::direct && !s.caps.host)
    s.timer_note = "backend " + s.backend->name() + " times with the direct timer (timer=direct)";
  check_replay_source(k);
  // Where the run directory goes, here rather than when it is claimed: a fed run claims it only
  // when its embedding opens the run, after FlagGems' session has started.
  if (req.tune_shard.empty()) {
    try {
      core::check_out_dir(k.out);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
  } else if (req.shard_cache.empty()) {
    throw UsageError("--tune-shard: needs --shard-cache FILE");
  }
  s.sequence_mode = !k.quantiles.empty() || k.return_mode == core::ReturnMode::all;
  return s;
}

// The run's caliber and provenance: run_identity.json, and the run.log header (docs/run-log.md).
json make_identity(const core::Knobs& k, const Setup& s, std::uint64_t seed,
                   std::chrono::system_clock::time_point wall_start) {
  std::vector<std::string> op_names, ops_libs;  // ops_libs: the op libraries the ops came from
  for (const auto& e : s.sel.ops) {
    op_names.push_back(e.info.name);
    if (e.source != kBuiltinSource &&
        std::find(ops_libs.begin(), ops_libs.end(), e.source) == ops_libs.end())
      ops_libs.push_back(e.source);
  }
  const auto& caps = s.caps;
  return {
      {"schema", core::schema_version},
      {"backend", s.backend->name()},
      {"device", backends::describe_device(s.device)},
      {"timer", core::to_string(s.timer)},
      {"timer_requested", core::to_string(k.timer)},
      {"tune", core::to_string(k.tune)},
      {"level", core::to_string(k.level)},
      {"shape_mode", core::to_string(k.shape_mode)},
      // A FlagGems run selects no cases of its own (sel is empty): the file it read is the
      // --shapes overlay, if any (docs/flaggems.md).
      {"shapes_file", !s.sel.shapes_file.empty() ? s.sel.shapes_file.string()
                      : k.shapes_file.empty()    ? std::string()
                                                 : fs::absolute(k.shapes_file).string()},
      {"ops", op_names},
      {"ops_libs", ops_libs},
      {"node", k.node},
      {"shapes", k.shapes},
      {"dtypes", k.dtypes},
      {"repeat", k.repeat},
      {"repeat_skipped", s.sequence_mode && k.repeat > 1},
      {"return_mode", core::to_string(k.return_mode)},
      {"quantiles", k.quantiles},
      {"l2", core::to_string(k.l2)},
      {"clock", core::to_string(k.clock)},
      {"stop",
       {{"min_samples", k.min_samples},
        {"min_time_s", k.min_time_s},
        {"max_noise", timing::resolved_max_noise(k.max_noise, caps)},
        {"timeout_s", k.timeout_s},
        {"warmup_s", k.warmup_s}}},
      {"throttle_fraction", k.throttle_fraction},
      {"replay_from", k.replay_from},
      {"parallel_warmup", k.parallel_warmup},
      {"seed", seed},
      {"profile", k.profile > 0},
      {"profile_launches", k.profile},
      {"caliber_version", core::caliber_version()},
      {"git_commit", core::caliber_git_commit()},
      {"start_time", core::iso8601_utc(wall_start)},
      {"host", core::host_name()},
      {"host_load", {{"start", core::host_load()}}},
      {"slurm", core::slurm_identity(core::process_env)},
      {"capabilities",
       {{"graph_capture", caps.graph_capture},
        {"graph_timer_default", caps.graph_timer_default},
        {"clusters", caps.clusters},
        {"default_rng", caps.default_rng},
        {"l2_known", caps.l2_known},
        {"graph_event_nodes", caps.graph_event_nodes},
        {"stream_hold", caps.stream_hold},
        {"host", caps.host}}},
  };
}

// Phase 2: claim the run directory and record the caliber (run_identity.json, shapes.yaml, the
// run.log header).
RunFiles claim_run(const core::Knobs& k, const Setup& s, std::uint64_t seed,
                   std::chrono::system_clock::time_point wall_start, const json& extra) {
  std::string name = k.name;
  if (name.empty()) name = s.sel.ops.size() == 1 ? s.sel.ops.front().info.name : "run";
  RunFiles f;  // --out was checked by resolve_setup
  f.dir = core::claim_run_dir(k.out, name, wall_start);
  // A resumed record (--tune record --replay-from RUN) starts from a copy of RUN's tune.db, so
  // that only the keys it lacks are tuned; a FlagGems run merges LibTuner's database itself.
  if (k.tune == core::TuneMode::record && !k.replay_from.empty() && k.flaggems.empty())
    fs::copy_file(tune::replay_source_file(k.replay_from), f.dir / "tune.db",
                  fs::copy_options::overwrite_existing);
  f.identity = make_identity(k, s, seed, wall_start);
  // What an embedding adds (the Python package: python, torch and triton versions).
  for (const auto& [key, value] : core::identity_extra().items()) f.identity[key] = value;
  if (extra.is_object())
    for (const auto& [key, value] : extra.items()) f.identity[key] = value;
  core::write_identity(f.dir, f.identity);
  core::write_file_atomic(
      f.dir / "shapes.yaml",
      core::ShapeSet::archive_yaml(s.sel.level, s.sel.shapes_file.string(), s.sel.used_shapes));
  f.log = std::make_unique<core::RunLogWriter>(f.dir / core::run_log_file);
  f.log->append_header(core::RunLogHeader{f.identity, s.sel.cases.size()});
  return f;
}

// What the run is about to do, before the first case.
void print_banner(std::ostream& out, const core::Knobs& k, const Setup& s, const fs::path& dir,
                  std::uint64_t seed) {
  out << "caliber run: " << dir.string() << "\n"
      << "  backend " << s.backend->name() << " | device " << s.dev_index << " (" << s.device.name
      << ", physical " << s.device.physical_id << ") | timer " << core::to_string(s.timer)
      << " | level " << core::to_string(k.level) << " | autotune " << core::to_string(k.tune)
      << " | repeat " << k.repeat << " | l2 " << core::to_string(k.l2) << " | clock "
      << core::to_string(k.clock) << "\n"
      << "  ";
  if (!k.flaggems.empty())  // a fed run: the cases come as FlagGems' suite yields them
    out << "cases from FlagGems' benchmark suite at " << k.flaggems << ", mode "
        << core::to_string(k.mode);
  else
    out << s.sel.cases.size() << " cases over " << s.sel.ops.size() << " ops";
  out << ", seed " << seed << "\n";
  if (!s.timer_note.empty()) out << "  note: " << s.timer_note << "\n";
  if (k.profile > 0)
    out << "  profile mode: " << k.profile
        << " launch(es) per case and provider, no timing; ranges named <node>/<provider>\n";
  if (k.shape_mode == core::ShapeMode::upstream && k.flaggems.empty())
    out << "  note: --shape-mode upstream: no provider of this corpus ships its own core shapes, "
           "so "
           "caliber's shape file is used (recorded as shape_mode=upstream)\n";
  if (s.sequence_mode && k.repeat > 1)
    out << "  note: --repeat " << k.repeat
        << " is skipped: --quantiles/--return-mode all return a sequence\n";
  out.flush();
}

// Phase 3: parallel warmup. Shards the sweep over the selected devices, merges the winners into
// the run's cache and records the result in the identity; null when there is none.
json parallel_warmup(const RunRequest& req, const Setup& s, RunFiles& f, std::ostream& out,
                     std::ostream& err) {
  const core::Knobs& k = req.knobs;
  if (k.parallel_warmup <= 0 ||
      !(k.tune == core::TuneMode::live || k.tune == core::TuneMode::record))
    return nullptr;
  WarmupOutcome w = run_parallel_warmup(req, *s.backend, s.sel, f.dir, merge_target(k, f.dir), out);
  json result = {{"shards", w.shards},
                 {"failed_shards", w.failed_shards},
                 {"wall_s", w.wall_s},
                 {"keys", w.merge.keys},
                 {"disagreements", w.merge.disagreements},
                 {"disagreeing_keys", w.merge.disagreeing_keys},
                 {"warning", w.warning}};
  f.identity["parallel_warmup_result"] = result;
  core::write_identity(f.dir, f.identity);
  if (!w.warning.empty()) err << w.warning << "\n";
  return result;
}

// Phase 4: the device's peaks and the timer's floor (not in a profile run, which times nothing),
// recorded in the identity with where they came from: the device's peaks cache (peaks.hpp), or
// measured now and stored there when every part was measured (--peaks refresh: measured always).
Peaks run_peaks(const core::Knobs& k, const backends::Backend& backend,
                const backends::DeviceDesc& device, core::TimerKind timer, CaseRunner& runner,
                RunFiles& f, std::ostream& out, std::ostream& err) {
  Peaks peaks;
  if (!k.peaks || k.profile != 0) return peaks;
  const timing::TimingOptions probe = runner.timing_options_for_probe();
  const fs::path file = peaks_cache_file(backend.name(), device);
  const std::string policy = peaks_policy(timer, probe);
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<Peaks> cached;
  if (!k.peaks_refresh) {
    std::string warning;
    cached = load_cached_peaks(file, policy, &warning);
    if (!warning.empty()) err << "caliber: WARNING: " << warning << "\n";
  }
  std::string source = "cache";
  if (cached) {
    peaks = *cached;
  } else {
    peaks = measure_peaks(runner.device(), backend, probe);
    source = "measured";
    if (peaks.note.empty() && !store_cached_peaks(file, policy, peaks))
      source = "measured, not cached";
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f.identity["peaks"] = peaks.to_json();
  f.identity["peaks_cache"] = {
      {"path", file.string()}, {"policy", policy}, {"source", source}, {"seconds", took}};
  core::write_identity(f.dir, f.identity);
  out << "  peaks (" << (cached ? "cached" : source) << ", " << fmt(took, 1) << " s): copy "
      << fmt(peaks.copy_gbps, 0) << " GB/s, " << peaks.gemm_case << " (" << peaks.gemm_provider
      << ") " << fmt(peaks.gemm_tflops, 3) << " TFLOPS";
  if (!peaks.note.empty()) out << " (" << peaks.note << ")";
  // Below 0.1 us in ns: a 1.7 ns host floor must not read "0.00 us".
  const double floor_us = peaks.timer_floor_us;
  out << "\n  timer floor (an empty kernel): "
      << (floor_us > 0 && floor_us < 0.1 ? fmt(floor_us * 1000, 1) + " ns"
                                         : fmt(floor_us, 2) + " us")
      << "\n";
  return peaks;
}

// One progress line: "[i/n] node status  base .. ms  cand .. ms  x..  <error|reason>  eta ~..".
void print_progress(std::ostream& out, const core::Knobs& k, const Case& c,
                    const core::CaseRow& row, const std::string& status, std::size_t i,
                    std::size_t n, double elapsed, const std::vector<double>& est) {
  print_progress(out, k, c.node_id(), row, status, i, n, elapsed, est);
}

void print_progress(std::ostream& out, const core::Knobs& k, const std::string& node,
                    const core::CaseRow& row, const std::string& status, std::size_t i,
                    std::size_t n, double elapsed, const std::vector<double>& est) {
  // n 0: a fed run, whose case count is not known ahead.
  out << "[" << std::setw(std::to_string(n).size()) << (i + 1);
  if (n > 0) out << "/" << n;
  out << "] " << std::left << std::setw(44) << node << std::right << " " << status;
  if (row.latency_base_ms) out << "  base " << fmt_ms(*row.latency_base_ms) << " ms";
  if (row.latency_ms) out << "  cand " << fmt_ms(*row.latency_ms) << " ms";
  if (row.speedup && *row.speedup) out << "  x" << fmt(**row.speedup, 2);
  if (row.host_base_ms || row.host_ms)
    out << "  host " << (row.host_base_ms ? fmt_ms(*row.host_base_ms) : "-") << "/"
        << (row.host_ms ? fmt_ms(*row.host_ms) : "-") << " ms";
  if (k.profile > 0 && status == core::status::ok)
    out << "  profiled: " << k.profile << " launch(es) per provider in ranges " << node
        << "/<provider>";
  if (row.error) out << "  " << *row.error;
  if (row.reason) out << "  " << *row.reason;
  if (const std::string miss = stop_rule_miss(row); !miss.empty())
    out << "  " << kMarkerStopNotConverged << " (" << miss << ")";
  // When the rest should end, from the first case: the estimate of the cases left, scaled by how
  // the finished ones compared with theirs (run/estimate.hpp).
  if (i + 1 < n) out << "  eta ~" << duration_text(eta_s(est, i + 1, elapsed));
  out << "\n";
  out.flush();
}

// Counts a finished row into `o`; returns its status.
std::string tally(RunOutcome& o, const core::CaseRow& row) {
  const std::string st = row.status.value_or(core::status::failed);
  if (st == core::status::ok)
    ++o.ok;
  else if (st == core::status::skipped)
    ++o.skipped;
  else
    ++o.failed;
  return st;
}

// Phase 5: the cases, one by one; each row appended to run.log and flushed before the next
// starts, and counted into `outcome`.
std::vector<core::CaseRow> run_cases(const core::Knobs& k, const Selection& sel, CaseRunner& runner,
                                     const Peaks& peaks, core::RunLogWriter& log,
                                     RunOutcome& outcome, std::ostream& out,
                                     const std::vector<double>& est) {
  std::vector<core::CaseRow> rows;
  const std::size_t n = sel.cases.size();
  const auto cases_start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    const Case& c = sel.cases[i];
    core::CaseRow row = k.profile > 0 ? runner.profile_case(*sel.case_op[i], c, k.profile)
                                      : runner.run_case(*sel.case_op[i], c);
    annotate_with_peaks(row, peaks);
    log.append_case(row);
    const std::string status = tally(outcome, row);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - cases_start).count();
    print_progress(out, k, c, row, status, i, n, elapsed, est);
    rows.push_back(std::move(row));
  }
  return rows;
}

// The run's closing line on where its time went: the cases' phases summed, the time outside any
// case (set-up, peaks, the footer), and how often the clock regime settled or was carried.
std::string where_time_went(const core::RunLogFooter& f, double wall_s) {
  const core::Phases& p = f.phases;
  const double cases = f.cases_wall_s.value_or(0.0);
  std::ostringstream o;
  auto part = [&](const char* name, const std::optional<double>& v) {
    o << " " << name << " " << core::fixed(v.value_or(0.0), 1);
  };
  o << "time: cases " << core::fixed(cases, 1) << " s (of which";
  part("inputs", p.inputs_s);
  part("prepare", p.prepare_s);
  part("check", p.check_s);
  part("settle", p.settle_s);
  part("timing", p.timing_s);
  if (p.host_s) part("host", p.host_s);
  part("other", p.other_s);
  o << "), outside the cases " << core::fixed(std::max(0.0, wall_s - cases), 1)
    << " s (set-up, peaks); clock regime settled " << f.settles.value_or(0) << "x, carried "
    << f.carries.value_or(0) << "x";
  if (f.startup && !f.startup->empty()) {
    double total = 0;
    std::string parts;
    for (const auto& [name, v] : f.startup->items()) {
      const double s = v.is_number() ? v.get<double>() : 0.0;
      total += s;
      std::string label = name;
      if (label.size() > 2 && label.ends_with("_s")) label.resize(label.size() - 2);
      parts += (parts.empty() ? "" : ", ") + label + " " + core::fixed(s, 1);
    }
    o << "; start-up before the run " << core::fixed(total, 1) << " s (" << parts << ")";
  }
  return o.str();
}

// Phase 6: the run.log footer, the warnings and the closing table.
void record_end_load(RunFiles& f) {
  f.identity["host_load"]["end"] = core::host_load();
  core::write_identity(f.dir, f.identity);
}

void finish_run(const core::Knobs& k, CaseRunner& runner, const json& warmup_result,
                const std::vector<core::CaseRow>& rows, double wall_s, core::RunLogWriter& log,
                const RunOutcome& outcome, std::ostream& out, std::ostream& err, tune::Tuner* tuner,
                const core::FooterTune* tune_footer, const json* startup) {
  tune::Tuner& tn = tuner != nullptr ? *tuner : runner.tuner();  // a paired run's side B: its own
  core::RunLogFooter footer;
  footer.ok = outcome.ok;
  footer.failed = outcome.failed;
  footer.skipped = outcome.skipped;
  footer.cases = rows.size();
  footer.wall_s = wall_s;
  footer.warnings = runner.warnings();
  footer.end_time = core::iso8601_utc(std::chrono::system_clock::now());
  footer.tune = tune_footer != nullptr
                    ? *tune_footer
                    : core::FooterTune{core::to_string(k.tune), tn.keys_tuned(), tn.sweep_seconds(),
                                       tn.cache_file().string()};
  footer.parallel_warmup = warmup_result;
  for (const auto& r : rows) footer.phases.add(r.phases);
  footer.cases_wall_s = footer.phases.wall_s.value_or(0.0);
  footer.settles = runner.regime_carry().settled;
  footer.carries = runner.regime_carry().carried;
  if (startup != nullptr && startup->is_object()) footer.startup = *startup;
  log.append_footer(footer);
  for (const auto& w : runner.warnings()) err << "caliber: WARNING: " << w << "\n";

  print_run_table(out, rows, k.columns, k.quantiles);
  out << "ok " << outcome.ok << ", failed " << outcome.failed << ", skipped " << outcome.skipped
      << " in " << fmt(wall_s, 1) << " s; run directory " << outcome.run_dir.string() << "\n";
  out << where_time_went(footer, wall_s) << "\n";
}

void print_dry_run(std::ostream& out, const core::Knobs& k, const Setup& s,
                   const std::string& what) {
  const CostModel model = cost_model(s.caps.host, k);
  timing::TimingOptions probe;
  probe.l2 = k.l2;
  probe.regime.regime = k.clock;
  const bool cached =
      !k.peaks || k.profile != 0 ||
      (!k.peaks_refresh && load_cached_peaks(peaks_cache_file(s.backend->name(), s.device),
                                             peaks_policy(s.timer, probe)));
  out << "caliber run --dry-run" << what << ": backend " << s.backend->name() << ", device "
      << s.dev_index << " (" << s.device.name << "), level " << core::to_string(k.level)
      << "; nothing is run or written\n";
  print_estimate(out, model, s.sel, estimate_cases(model, s.sel, k), cached);
}

}  // namespace driver_parts

RunOutcome run_benchmark(const RunRequest& req, std::ostream& out, std::ostream& err) {
  const core::Knobs& k = req.knobs;
  const auto t_start = std::chrono::steady_clock::now();
  const auto wall_start = std::chrono::system_clock::now();

  if (!k.flaggems.empty()) return run_fed(req, out, err);
  const Setup s = resolve_setup(req);
  if (req.dry_run) {
    print_dry_run(out, k, s);
    return RunOutcome{};
  }
  const CostModel model = cost_model(s.caps.host, k);
  const std::vector<double> est = estimate_cases(model, s.sel, k);
  // A parallel-warmup child tunes its shard and measures nothing; it claims no run directory.
  if (!req.tune_shard.empty()) {
    RunOutcome shard;
    shard.exit_code =
        run_tune_shard(req, *s.backend, s.sel, k.seed != 0 ? k.seed : fresh_seed(), out, err);
    return shard;
  }
  const std::uint64_t seed = k.seed != 0 ? k.seed : fresh_seed();
  RunFiles files = claim_run(k, s, seed, wall_start);
  print_banner(out, k, s, files.dir, seed);
  out << "  estimate ~" << duration_text(std::accumulate(est.begin(), est.end(), 0.0))
      << " in cases (caliber run --dry-run shows it per op)\n";
  const json warmup_result = parallel_warmup(req, s, files, out, err);

  CaseRunner runner(*s.backend, s.dev_index, seed, k, s.timer, tune_settings(k, files.dir));
  const Peaks peaks = run_peaks(k, *s.backend, s.device, s.timer, runner, files, out, err);
  RunOutcome outcome;
  outcome.run_dir = files.dir;
  const std::vector<core::CaseRow> rows =
      run_cases(k, s.sel, runner, peaks, *files.log, outcome, out, est);
  record_end_load(files);

  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  finish_run(k, runner, warmup_result, rows, wall_s, *files.log, outcome, out, err);
  outcome.exit_code = outcome.failed > 0 ? 1 : 0;
  return outcome;
}

}  // namespace caliber::run
