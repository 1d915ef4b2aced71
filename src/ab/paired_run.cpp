// The paired A/B run (docs/ab.md): one process, two run directories, the phases of one run
// (run/driver_parts.hpp) with each case timed on both sides.
#include "ab/paired_run.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "records/identity.hpp"
#include "records/rundir.hpp"
#include "records/runlog.hpp"
#include "run/case_runner.hpp"
#include "run/cases.hpp"
#include "run/driver_parts.hpp"
#include "run/estimate.hpp"
#include "run/peaks.hpp"
#include "tune/tuner.hpp"
#include "tune/warmup_settings.hpp"

namespace caliber::run {

using nlohmann::json;
using namespace driver_parts;

namespace {

// A paired run's rows, side A's and side B's, in case order.
struct PairedRows {
  std::vector<core::CaseRow> a, b;
};

// The paired run's cases: each timed on both sides (an op side B lacks runs as the same op on
// both), both rows appended to their run.log before the next case starts.
PairedRows run_paired_cases(const core::Knobs& k, const Setup& s,
                            const std::map<std::string, OpEntry>& side_b, CaseRunner& runner,
                            tune::Tuner& tuner_b, const Peaks& peaks, RunFiles& fa, RunFiles& fb,
                            RunOutcome& oa, RunOutcome& ob, std::ostream& out, int blocks,
                            bool crossover) {
  PairedRows rows;
  // A paired case runs both sides: twice the estimate.
  std::vector<double> est = estimate_cases(cost_model(s.caps.host, k), s.sel, k);
  for (double& e : est) e *= 2;
  const std::size_t n = s.sel.cases.size();
  const auto cases_start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    const Case& c = s.sel.cases[i];
    const Op* op_a = s.sel.case_op[i];
    const auto it = side_b.find(c.op);
    const Op* op_b = it != side_b.end() ? it->second.op.get() : op_a;
    auto [ra, rb] = runner.run_case_paired(*op_a, *op_b, c, blocks, crossover, tuner_b);
    annotate_with_peaks(ra, peaks);
    annotate_with_peaks(rb, peaks);
    fa.log->append_case(ra);
    fb.log->append_case(rb);
    const std::string st_a = tally(oa, ra);
    const std::string st_b = tally(ob, rb);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - cases_start).count();
    print_progress(out, k, c, ra, "A " + st_a, i, n, elapsed, est);
    print_progress(out, k, c, rb, "B " + st_b, i, n, elapsed, est);
    rows.a.push_back(std::move(ra));
    rows.b.push_back(std::move(rb));
  }
  return rows;
}

// What a paired run refuses of its own before the run's setup: the modes it does not take, the
// blocks, side B's name, side B's library (loaded here).
void check_paired_request(const RunRequest& req) {
  const core::Knobs& k = req.knobs;
  if (k.profile > 0 || k.parallel_warmup > 0 || !req.tune_shard.empty())
    throw UsageError(
        "--ops-lib-b (paired A/B): not with --profile or --parallel-warmup; "
        "allowed: caliber ab --isolate");
  if (req.paired_blocks < 2 || req.paired_blocks > 1000)
    throw UsageError("--blocks: '" + std::to_string(req.paired_blocks) +
                     "' is not allowed (an integer from 2 to 1000)");
  if (req.paired_name.empty() || req.paired_name == k.name)
    throw UsageError("--paired-name: side B's run needs a name of its own");
  try {
    load_paired_library(req.paired_lib);
  } catch (const SelectionError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

// A paired A/B (docs/ab.md): side A's ops (the knobs' --ops-lib) and side B's (req.paired_lib)
// in this one process, each case timed block by block, A and B alternately; two run directories,
// each an ordinary run whose identity carries "paired" (the pair's id, its side, the blocks).
RunOutcome run_paired(const RunRequest& req, std::ostream& out, std::ostream& err) {
  const core::Knobs& k = req.knobs;
  const auto t_start = std::chrono::steady_clock::now();
  const auto wall_start = std::chrono::system_clock::now();
  check_paired_request(req);
  const Setup s = resolve_setup(req);
  if (req.dry_run) {  // each case runs on both sides, block by block: twice the estimate
    print_dry_run(out, k, s,
                  " (paired A/B with side B's " + req.paired_lib + ", " +
                      std::to_string(req.paired_blocks) + " blocks a side: each case twice)");
    return RunOutcome{};
  }
  const auto side_b = paired_ops(s.backend->name());
  const std::uint64_t seed = k.seed != 0 ? k.seed : fresh_seed();
  const std::string id = std::to_string(seed) + "@" + core::iso8601_utc(wall_start);
  auto paired_key = [&](const char* side) {
    return json{{"id", id},
                {"side", side},
                {"blocks", req.paired_blocks},
                {"crossover", req.paired_crossover}};
  };
  std::vector<std::string> libs_b;  // side B's identity names side B's libraries
  for (const auto& e : s.sel.ops) {
    const auto it = side_b.find(e.info.name);
    const std::string src = it != side_b.end() ? it->second.source : e.source;
    if (src != kBuiltinSource && std::find(libs_b.begin(), libs_b.end(), src) == libs_b.end())
      libs_b.push_back(src);
  }
  RunFiles fa = claim_run(k, s, seed, wall_start, json{{"paired", paired_key("A")}});
  core::Knobs kb = k;
  kb.name = req.paired_name;
  RunFiles fb =
      claim_run(kb, s, seed, wall_start, json{{"paired", paired_key("B")}, {"ops_libs", libs_b}});
  fa.identity["paired"]["partner"] = fb.dir.filename().string();
  fb.identity["paired"]["partner"] = fa.dir.filename().string();
  core::write_identity(fa.dir, fa.identity);
  core::write_identity(fb.dir, fb.identity);
  print_banner(out, k, s, fa.dir, seed);
  out << "  paired A/B: side B " << fb.dir.string() << " (" << req.paired_lib << "), "
      << req.paired_blocks << " blocks a side"
      << (req.paired_crossover ? ", in two placement phases (crossover)" : "") << "\n";
  CaseRunner runner(*s.backend, s.dev_index, seed, k, s.timer, tune_settings(k, fa.dir));
  tune::Tuner tuner_b(tune_settings(kb, fb.dir));
  const Peaks peaks = run_peaks(k, *s.backend, s.device, s.timer, runner, fa, out, err);
  if (fa.identity.contains("peaks")) {
    fb.identity["peaks"] = fa.identity["peaks"];
    core::write_identity(fb.dir, fb.identity);
  }
  RunOutcome oa, ob;
  oa.run_dir = fa.dir;
  oa.paired_run_dir = fb.dir;
  ob.run_dir = fb.dir;
  PairedRows rows = run_paired_cases(k, s, side_b, runner, tuner_b, peaks, fa, fb, oa, ob, out,
                                     req.paired_blocks, req.paired_crossover);
  record_end_load(fa);
  record_end_load(fb);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  out << "side A:\n";
  finish_run(k, runner, nullptr, rows.a, wall_s, *fa.log, oa, out, err);
  out << "side B:\n";
  finish_run(kb, runner, nullptr, rows.b, wall_s, *fb.log, ob, out, err, &tuner_b);
  oa.ok += ob.ok;
  oa.failed += ob.failed;
  oa.skipped += ob.skipped;
  oa.exit_code = oa.failed > 0 ? 1 : 0;
  return oa;
}

RunOutcome run_requested(const RunRequest& req, std::ostream& out, std::ostream& err) {
  if (!req.paired_lib.empty()) return run_paired(req, out, err);
  return run_benchmark(req, out, err);
}

}  // namespace caliber::run
