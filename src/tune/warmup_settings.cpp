// Which cache each autotune mode reads and writes, for a run and for a parallel-warmup shard.
#include "tune/warmup_settings.hpp"

#include "tune/cache.hpp"

namespace caliber::run {

namespace fs = std::filesystem;

tune::Settings tune_settings(const core::Knobs& k, const fs::path& run_dir) {
  tune::Settings s;
  s.mode = k.tune;
  s.shared_cache = k.tune_cache;
  s.run_dir = run_dir;
  s.replay_from = k.replay_from;
  s.show_progress = !k.quiet;
  return s;
}

tune::Settings shard_tune_settings(const core::Knobs& k, const fs::path& shard_cache) {
  tune::Settings s;
  s.show_progress = false;  // N children sharing one terminal would garble it
  // Each shard writes only its own file. Live: it also reads the shared cache, so it tunes only
  // what that lacks. Record: isolated from the shared cache, as a record run is.
  s.mode = tune::Mode::live;
  s.shared_cache = shard_cache;
  if (k.tune != core::TuneMode::record)
    s.read_also = k.tune_cache.empty() ? tune::default_cache_path() : fs::path(k.tune_cache);
  else if (!k.replay_from.empty())  // a resumed record: what it resumes from is not swept again
    s.read_also = tune::replay_source_file(k.replay_from);
  return s;
}

fs::path merge_target(const core::Knobs& k, const fs::path& run_dir) {
  if (k.tune == core::TuneMode::record) return run_dir / "tune.db";
  return k.tune_cache.empty() ? tune::default_cache_path() : fs::path(k.tune_cache);
}

}  // namespace caliber::run
