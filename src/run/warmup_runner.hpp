// Parallel warmup (README.md, Autotune): the autotune sweep sharded over N devices in child
// processes, the winners merged into the cache, then measurement serially on one device.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "run/cases.hpp"
#include "run/driver.hpp"
#include "tune/tune.hpp"
#include "tune/warmup_settings.hpp"

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

// One shard's end, as the merge sees it (a local child, or a Slurm array task).
struct ShardEnd {
  int index = 0;
  std::string where;          // "device 1", "array task 1 on node7"
  std::filesystem::path db;   // its cache (may be missing: the shard wrote nothing)
  std::filesystem::path log;  // its output; empty: none
  std::string failure;        // empty: ok (or nothing to tune); else "failed: exit 1", ...
};

// The merge phase of a parallel warmup, wherever the shards ran: merges the shards' caches into
// `merge_into`, counts failed shards and disagreeing keys, and words the notes and the WARNING
// (wall_s is the caller's).
[[nodiscard]] WarmupOutcome merge_warmup(const std::vector<ShardEnd>& shards,
                                         const std::filesystem::path& merge_into);
// "parallel warmup: note: ..." lines, then "parallel warmup: N shards, K keys, D disagreements,
// S s; merged into FILE".
void print_warmup_summary(const WarmupOutcome& w, const std::filesystem::path& merge_into,
                          std::ostream& out);
// The result as run_identity.json's parallel_warmup_result and a Slurm merge job's result.json
// hold it (plus the notes).
[[nodiscard]] nlohmann::json warmup_json(const WarmupOutcome& w);
[[nodiscard]] WarmupOutcome warmup_from_json(const nlohmann::json& j);

// The merge job of a parallel warmup across Slurm nodes (`caliber run --merge-warmup DIR
// --merge-shards N`, run/batch_slurm.cpp): each shard's end from its exit record
// (DIR/shard-i.exit; none: killed, past its time limit, or its node failed), the merge into the
// run's tune cache (live only), the summary on `out` and the WARNING on `err`, and
// DIR/result.json (warmup_json plus "merged_into"). Returns 0; 2 (UsageError) in record mode.
[[nodiscard]] int run_warmup_merge(const core::Knobs& k, const std::filesystem::path& dir,
                                   int shards, std::ostream& out, std::ostream& err);
inline constexpr const char* kWarmupResultFile = "result.json";

// The arguments that make a `caliber run` a shard child: --devices D --tune-shard s/n
// --shard-cache DB --quiet.
[[nodiscard]] std::vector<std::string> shard_args(int device, int s, int n,
                                                  const std::filesystem::path& db);
// Variables a shard child must not inherit: the arguments carry the whole selection, and a child
// never starts a warmup of its own.
inline constexpr const char* kShardUnsetEnv[] = {"OP", "OP_FILE", "TEST_NODE", "REPLAY_FROM",
                                                 "PARALLEL_WARMUP_GPUS"};

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

}  // namespace caliber::run
