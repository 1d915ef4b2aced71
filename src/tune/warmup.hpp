// Parallel warmup: the pure parts (shard planning, merging shard caches, the warning). The run
// driver spawns one child per shard, each tuning into its own shard cache; the parent merges.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace caliber::tune {

// Item indices per shard: round-robin, deterministic, sizes differ by at most one. Shards may be
// empty when n_items < n_shards. Throws std::invalid_argument when n_shards < 1.
[[nodiscard]] std::vector<std::vector<std::size_t>> plan_shards(std::size_t n_items, int n_shards);

// By estimated cost (e.g. configs x flops): longest first onto the least-loaded shard, ties to
// the lower index, so the plan is deterministic. Each shard's indices come out ascending.
[[nodiscard]] std::vector<std::vector<std::size_t>> plan_shards_by_cost(
    const std::vector<double>& costs, int n_shards);

struct MergeResult {
  int keys = 0;           // distinct keys found across the shards
  int disagreements = 0;  // keys tuned by several shards whose winners differ
  std::vector<std::string> disagreeing_keys;
  std::vector<std::string> warnings;  // unreadable shard files, failed writes
};

// Merges the winners of every shard cache into the cache at `into` (created when missing). A key
// tuned by several shards keeps the fastest winner. Shard files are only read.
[[nodiscard]] MergeResult merge_shard_caches(const std::vector<std::filesystem::path>& shard_dbs,
                                             const std::filesystem::path& into);

// "WARNING: parallel warmup: N of M tuned keys have winners that differ between shards"
[[nodiscard]] std::string warmup_warning(const MergeResult& r);

// Throws std::invalid_argument when n < 0 or n exceeds the devices selected; 0 means unset.
void validate_parallel_warmup(int n, int devices_selected);

}  // namespace caliber::tune
