// The run driver: one `caliber run`, one run directory (docs/architecture.md, the path of one run).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "settings/knobs.hpp"

namespace caliber::backends {
class Backend;
struct DeviceDesc;
}  // namespace caliber::backends

namespace caliber::run {

// Bad usage or input found before anything is written: exit code 2 (settings/usage_error.hpp).
using core::UsageError;

struct RunRequest {
  core::Knobs knobs;
  // Parallel-warmup child: "i/N" tunes shard i of N into `shard_cache` and measures nothing.
  std::string tune_shard;
  std::filesystem::path shard_cache;
  // Paired A/B in this one process (caliber ab --ops-lib-a A --ops-lib-b B, docs/ab.md): side B's
  // op library, the name of side B's run directory (beside side A's, which the knobs name) and the
  // blocks per side. Empty paired_lib: an ordinary run.
  std::string paired_lib;
  std::string paired_name;
  int paired_blocks = 8;
  // The placement crossover (docs/ab.md): time each case in two phases, each side in the other
  // side's memory in the second.
  bool paired_crossover = true;
  // caliber run --dry-run: print what the run would cost (run/estimate.hpp) and write nothing.
  bool dry_run = false;
};

struct RunOutcome {
  int exit_code = 0;  // 0 all ok, 1 a case failed (error or accuracy)
  std::filesystem::path run_dir;
  std::filesystem::path paired_run_dir;  // side B's, in a paired A/B
  int ok = 0, failed = 0, skipped = 0;
};

// The backend --backend (ZL_BACKEND) names ("auto": the first with a device); a bad name is a
// UsageError naming the flag and the names allowed.
[[nodiscard]] const backends::Backend& resolve_backend_knob(const core::Knobs& k);

// Every device --devices names is one the backend enumerates (`--devices 0,7` on a machine of one
// device is a mistake, whatever uses the others later); returns the devices. Throws UsageError.
// With `only_if_any`, a backend that enumerates no device passes (caliber plan needs none).
std::vector<backends::DeviceDesc> check_devices(const backends::Backend& backend,
                                                const core::Knobs& k, bool only_if_any = false);

// A replay source (--tune replay) must be a run directory (or file) holding a readable tune cache;
// throws UsageError otherwise.
void check_replay_source(const core::Knobs& k);
// Before a batch claims its directory: every op is one of the corpus, the shape file reads, the
// replay source is usable. Throws UsageError (or core::ShapeError).
void check_batch_ops(const core::Knobs& k, const std::vector<std::string>& ops);

// Throws UsageError (and core::KnobError, core::ShapeError) for bad input, before writing anything.
[[nodiscard]] RunOutcome run_benchmark(const RunRequest& req, std::ostream& out, std::ostream& err);

}  // namespace caliber::run
