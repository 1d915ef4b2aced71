// Parallel warmup (README.md, Autotune): the autotune sweep sharded over N devices in child
// processes, the winners merged into the cache, then measurement serially on one device.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "run/cases.hpp"
#include "run/driver.hpp"
#include "tune/tune.hpp"

namespace caliber::run {

struct WarmupOutcome {
  int shards = 0;
  int failed_shards = 0;
  bool interrupted = false;
  double wall_s = 0;
  tune::MergeResult merge;
  std::string warning;  // the disagreement WARNING, empty when none
  std::vector<std::string> notes;
};

// Parent side: one child per shard, each pinned to the physical device behind the caller's
// --devices[i] (backend.child_env), tuning its share of `sel` into <run_dir>/warmup/shard-<i>.db;
// then merges the shards into `merge_into`. SIGINT/SIGTERM terminate and reap every child before
// the exception propagates. Throws std::runtime_error when interrupted (after reaping).
[[nodiscard]] WarmupOutcome run_parallel_warmup(const RunRequest& req,
                                                const backends::Backend& backend,
                                                const Selection& sel,
                                                const std::filesystem::path& run_dir,
                                                const std::filesystem::path& merge_into,
                                                std::ostream& out);

// Child side (`caliber run ... --tune-shard i/N --shard-cache FILE`): tunes shard i of N of the
// cases on this process's device into FILE; measures nothing. Returns the exit code.
[[nodiscard]] int run_tune_shard(const RunRequest& req, const backends::Backend& backend,
                                 const Selection& sel, std::uint64_t seed, std::ostream& out,
                                 std::ostream& err);

// The command-line arguments that rebuild, in a shard child, the knobs that define the case list
// and the tuning (selection, timing, autotune, seed); devices and output are the caller's to add.
[[nodiscard]] std::vector<std::string> knobs_to_args(const core::Knobs& k);

// The shard plan, computed identically by the parent and by each child: cases of one op, dtype
// and shape stay on one shard (their variants share tune keys), groups balanced by `costs`.
[[nodiscard]] std::vector<std::vector<std::size_t>> plan_warmup_shards(
    const std::vector<Case>& cases, const std::vector<double>& costs, int n_shards);

// The tuner settings of a run (and of a shard child: a shard writes only its own cache, reading
// the shared one in live mode; in record mode it is isolated from the shared cache too).
[[nodiscard]] tune::Settings tune_settings(const core::Knobs& k,
                                           const std::filesystem::path& run_dir);
[[nodiscard]] tune::Settings shard_tune_settings(const core::Knobs& k,
                                                 const std::filesystem::path& shard_cache);
// The cache the merged winners go to: the shared cache (live) or <run_dir>/tune.db (record).
[[nodiscard]] std::filesystem::path merge_target(const core::Knobs& k,
                                                 const std::filesystem::path& run_dir);

}  // namespace caliber::run
