// A run whose cases an embedding feeds (caliber run --flaggems, docs/flaggems.md): the embedding
// (python/caliber/flaggems.py, FlagGems' benchmark suite under pytest) walks its own loop and, per
// case, asks the run to time each provider and then to write the row. The run directory, the
// identity, the timers and their options, the rows and the footer stay the run driver's: the
// embedding never writes run.log.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "caliber/context.hpp"
#include "run/driver.hpp"

namespace caliber::run {

// The run as the embedding sees it: one entry point taking a JSON request {"call": ...}.
//   plan   {"ops": [{"op", "benchmarks", "files": [paths]}]}: --dry-run only, instead of open:
//          prints what the selection holds; nothing is claimed or written. Reply: {}. Once; in a
//          dry run every other call is refused.
//   open   {"ops": [names], "identity": {key: value}}: claims the run directory and writes the
//          identity (with those keys), the header and the banner; measures the peaks. Reply:
//          {"run_dir", "device": {"backend", "name", "stream", "host"}}. Once.
//   time   {"op", "node", "provider", "rng", "timer": "direct"?}: times `launch` with the run's
//          timing options (the knobs; --mode's L2 and per-launch method). Reply: {"id", "ok",
//          "latency_ms", "timer", "markers", "error", "failure", "note", "unusable"?}, or
//          {"skipped": reason}
//          once the device context is unusable.
//   case   {"op", "dtype", "shape", "dims", "node", "params", "family", "flops", "bytes",
//          "providers": [{"name", "role", "measurement": id, "host_ms", "error"}], "status",
//          "reason", "error"}: builds the row (one regime per row: graph-timed providers of a row
//          where another fell back are timed again by the direct timer through their launches),
//          appends it to run.log, prints the progress line. Reply: {"status", "latency_ms", ...}.
//   shapes {"ops": {op: {...}}}: rewrites shapes.yaml with what the embedding used.
//   tune   {"mode", "keys_tuned", "sweep_s", "cache", "warmup", ...}: the embedding's tuning
//          totals (FlagGems' LibTuner) for the footer's tune object and parallel_warmup.
class FedRun {
 public:
  virtual ~FedRun() = default;
  // Throws UsageError for a request refused before the directory is claimed, std::exception for
  // any other refusal.
  virtual nlohmann::json call(const nlohmann::json& request,
                              const std::function<void()>& launch) = 0;
  // The run's device once open (launches are classified against its capture state), else null.
  [[nodiscard]] virtual DeviceContext* device() = 0;
};

// The embedding's loop: called once with the resolved knobs (JSON) and the run. Returns "" when
// its loop ended, or a message: a refusal before `open` (exit 2, nothing written), or why the loop
// stopped after it (the run is finished and fails).
using CaseFeeder = std::function<std::string(const nlohmann::json& knobs, FedRun& run)>;
void set_case_feeder(CaseFeeder feeder);

// caliber run --flaggems ROOT: needs a feeder (a Python process); UsageError otherwise.
[[nodiscard]] RunOutcome run_fed(const RunRequest& req, std::ostream& out, std::ostream& err);

}  // namespace caliber::run
