// Which cache each autotune mode reads and writes, for a run and for a parallel-warmup shard.
#include "run/warmup_runner.hpp"

namespace caliber::run {

namespace fs = std::filesystem;

tune::Settings tune_settings(const core::Knobs& k, const fs::path& run_dir) {
  tune::Settings s;
  s.mode = tune::parse_mode(k.tune).value_or(tune::Mode::live);
  s.shared_cache = k.tune_cache;
  s.run_dir = run_dir;
  s.replay_from = k.replay_from;
  s.show_progress = !k.quiet;
  return s;
}

tune::Settings shard_tune_settings(const core::Knobs& k, const fs::path& shard_cache) {
  tune::Settings s;
  s.show_progress = false;  // N children sharing one terminal would garble it
  if (k.tune == "record") {
    // Isolated from the shared cache: the shard's own <dir>/tune.db, as a record run.
    s.mode = tune::Mode::record;
    s.run_dir = shard_cache.parent_path();
  } else {
    s.mode = tune::Mode::live;
    s.shared_cache = shard_cache;
    s.read_also = k.tune_cache.empty() ? tune::default_cache_path() : fs::path(k.tune_cache);
  }
  return s;
}

fs::path merge_target(const core::Knobs& k, const fs::path& run_dir) {
  if (k.tune == "record") return run_dir / "tune.db";
  return k.tune_cache.empty() ? tune::default_cache_path() : fs::path(k.tune_cache);
}

}  // namespace caliber::run
