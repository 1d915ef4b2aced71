// Which cache each autotune mode reads and writes, for a run and for a parallel-warmup shard
// (the knobs into tune::Settings; the parallel warmup itself is run/warmup_runner.hpp).
#pragma once

#include <filesystem>

#include "settings/knobs.hpp"
#include "tune/tuner.hpp"

namespace caliber::run {

// The tuner settings of a run (and of a shard child: a shard writes only its own cache, reading
// the shared one in live mode; in record mode it is isolated from the shared cache too, and reads
// the record it resumes, --replay-from, when there is one).
[[nodiscard]] tune::Settings tune_settings(const core::Knobs& k,
                                           const std::filesystem::path& run_dir);
[[nodiscard]] tune::Settings shard_tune_settings(const core::Knobs& k,
                                                 const std::filesystem::path& shard_cache);
// The cache the merged winners go to: the shared cache (live) or <run_dir>/tune.db (record).
[[nodiscard]] std::filesystem::path merge_target(const core::Knobs& k,
                                                 const std::filesystem::path& run_dir);

}  // namespace caliber::run
