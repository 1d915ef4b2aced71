// Autotune: pick a config per (op, provider, backend, device model, dtype, key) by sweeping the
// provider's config space, and keep the winner in a cache according to the mode
// (docs/architecture.md).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "caliber/config.hpp"
#include "settings/settings.hpp"
#include "tune/cache.hpp"

namespace caliber::tune {

// The autotune mode is a run setting, spelled once in settings/settings.hpp.
using Mode = core::TuneMode;
using core::to_string;
// "off", "live", "record", "replay"; nullopt for anything else.
[[nodiscard]] inline std::optional<Mode> parse_mode(std::string_view s) noexcept {
  return core::parse_word<core::TuneMode>(s);
}

// The marker a row carries when a failing config could not be evicted ("compile_<stage>_no_evict").
[[nodiscard]] std::string no_evict_marker(const std::string& stage);

struct Selection {
  Config config;
  std::string source;  // "default" | "cache" | "tuned" | "replay" | "replay-missing"
  int tried = 0;       // configs timed by this call's sweep (rejected ones included)
  int rejected = 0;
  double sweep_s = 0;  // wall time of this call's sweep; 0 when nothing was swept
  std::vector<Trial> trials;
  std::vector<std::string> markers;  // e.g. "compile_tune_no_evict"
  std::string note;                  // human text for the row and the log
  std::string swept_by;              // who swept when not caliber ("triton"); empty otherwise
};

struct Settings {
  Mode mode = Mode::live;
  std::filesystem::path shared_cache;  // live: the shared cache file; empty: default_cache_path()
  std::filesystem::path run_dir;       // record: <run_dir>/tune.db
  std::filesystem::path replay_from;   // replay: <dir>/tune.db (or the file itself), read-only
  bool show_progress = true;           // progress line on stderr, only when it is a terminal
  // live-mode parallel-warmup shards: the shared cache, consulted read-only before sweeping, so a
  // shard tunes only what the shared cache lacks while writing its winners to its own cache.
  // Ignored in record mode (isolated from the shared cache) and in replay mode.
  std::filesystem::path read_also;
};

// Returns the latency in ms of one config, with a short budget; throws caliber::ConfigRejected
// (or any std::exception) for a config that cannot run here.
using TimeConfig = std::function<double(const Config&)>;

// A sweep's cheaper first pass (docs/timing.md, "Autotune sweeps"): every config timed with
// `time` (a screening budget), then the fastest `keep` fraction of those that ran, at least
// `min_keep`, timed again with the sweep's own TimeConfig; the winner is the fastest of the
// second pass. A space of fewer than `from` configs, or an empty `time`, is swept in one pass.
struct Screen {
  TimeConfig time;
  int from = 12;
  double keep = 0.25;
  int min_keep = 4;
};

// Which configs of a screening pass go on to the sweep's own pass: the indices of the fastest
// max(min_keep, ceil(keep x valid)) valid trials (rejected ones never), in the order of
// `trials`; all of them when that many or fewer ran. Ties keep the earlier config.
[[nodiscard]] std::vector<std::size_t> screen_survivors(const std::vector<Trial>& trials,
                                                        const Screen& screen);

// A sweep a provider runs itself: Triton's @triton.autotune benchmarks its configs in the
// provider's first call (docs/python.md, "Autotuning and the tune cache"). The provider times and
// chooses; the tuner keeps the cache rules (when to sweep, what to store, what to reuse).
struct ExternalSweep {
  std::optional<Config> winner;  // the config the provider will launch; nullopt: it chose none
  std::vector<Trial> trials;     // what it timed (rejected ones included)
  double sweep_s = 0;            // wall time of its sweep
  std::string by;                // who swept ("triton")
  std::string detail;            // what the provider said about it (its own key), for the note
};
using RunSweep = std::function<ExternalSweep()>;

// A workload whose providers may sweep their configs themselves (a Python suite's Triton
// autotuner, src/capi/host_op.cpp). The run driver asks it instead of timing configs itself.
class SelfTuning {
 public:
  virtual ~SelfTuning() = default;
  // Whether provider p sweeps its own configs when prepared by prepare_and_sweep.
  [[nodiscard]] virtual bool sweeps_itself(std::size_t p) const = 0;
  // Prepares provider p letting it sweep and choose; the winner stays prepared.
  virtual ExternalSweep prepare_and_sweep(std::size_t p) = 0;
};

class Tuner {
 public:
  explicit Tuner(Settings s);
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // The config to use for `key`. An empty key.key is filled from space.key (tune_key()).
  // Never sweeps in replay mode; never touches a cache in off mode or for an untunable space.
  [[nodiscard]] Selection select(const CacheKey& key, const ConfigSpace& space,
                                 const TimeConfig& time_config, const Screen& screen = {});
  // The same rules for a provider that sweeps itself: `run` is called where select would sweep
  // (live or record, no usable cached config); its winner is stored like a sweep's. Source
  // "tuned" then, with ExternalSweep::by in the selection.
  [[nodiscard]] Selection select_external(const CacheKey& key, const ConfigSpace& space,
                                          const RunSweep& run);

  // The selected config failed at launch during `stage`. live/record: evict it and retune without
  // it. replay (or any cache that cannot be written): keep it, add marker compile_<stage>_no_evict,
  // and say in the note that it could not be dropped.
  [[nodiscard]] Selection on_launch_failure(const CacheKey& key, const ConfigSpace& space,
                                            const Config& failed, const std::string& stage,
                                            const TimeConfig& time_config);

  // Warnings gathered since the last call (a corrupt cache set aside, an unreadable replay source).
  [[nodiscard]] std::vector<std::string> take_warnings();

  [[nodiscard]] Mode mode() const noexcept { return settings_.mode; }
  // The cache file this mode reads/writes; empty in off mode.
  [[nodiscard]] std::filesystem::path cache_file() const;
  // Totals over this tuner's life, for the run footer.
  [[nodiscard]] int keys_tuned() const noexcept { return keys_tuned_; }
  [[nodiscard]] int cache_hits() const noexcept { return cache_hits_; }
  [[nodiscard]] int replay_missing() const noexcept { return replay_missing_; }
  [[nodiscard]] double sweep_seconds() const noexcept { return sweep_seconds_; }

 private:
  ConfigCache* cache();
  ConfigCache* read_also();
  // The replay mode's rule for a key and what the cache holds for it. `self_sweeping`: the
  // provider chose among configs of its own (a Python autotuner), so only the parameter names of
  // the record are checked here; otherwise the record must be one of the space's configs.
  Selection replay(const CacheKey& key, const ConfigSpace& space,
                   const std::optional<CacheRecord>& hit, ConfigCache* c, bool self_sweeping);
  // The lookup rules of select; `sweep_now` is called where a sweep is due.
  Selection choose(const CacheKey& key_in, const ConfigSpace& space, bool self_sweeping,
                   const std::function<Selection(const CacheKey&)>& sweep_now);
  Selection sweep(const CacheKey& key, const ConfigSpace& space, const TimeConfig& time_config,
                  const Config* excluded, const Screen& screen);
  Selection adopt(const CacheKey& key, const ConfigSpace& space, ExternalSweep ext);
  // Counts a winner and stores it in the cache (a warning when it cannot).
  void keep(const CacheKey& key, const Config& winner, double ms, const std::vector<Trial>& trials);

  Settings settings_;
  std::unique_ptr<ConfigCache> cache_;
  bool cache_opened_ = false;
  std::vector<std::string> warnings_;
  int keys_tuned_ = 0;
  int cache_hits_ = 0;
  int replay_missing_ = 0;
  std::unique_ptr<ConfigCache> read_also_;
  bool read_also_opened_ = false;
  double sweep_seconds_ = 0;
};

// "tune mm lt-tuned M=4096,N=4096: 7/16 configs, 0.8 s" (the progress line, without terminal
// codes).
[[nodiscard]] std::string progress_line(const CacheKey& key, int done, int total, double seconds);

}  // namespace caliber::tune
