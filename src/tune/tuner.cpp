#include "tune/tuner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <set>

#include "core/format.hpp"

namespace caliber::tune {

namespace fs = std::filesystem;

namespace {

std::string format_seconds(double s) {
  return core::fixed(s, 1) + " s";
}

std::string format_ms(double ms) {
  return core::general(ms, 4) + " ms";
}

// Why `c` cannot be one of the space's configs as the op reads them: a parameter no config of the
// op declares (the op would ignore it and run its default), or one every config has that it
// lacks; "" when it fits.
std::string parameter_misfit(const ConfigSpace& space, const Config& c) {
  std::set<std::string> declared;
  std::map<std::string, std::size_t> in_configs;  // name -> configs that have it
  std::vector<const Config*> all{&space.default_config};
  for (const auto& cfg : space.configs) all.push_back(&cfg);
  for (const auto* cfg : all)
    for (const auto& [k, v] : cfg->values) {
      declared.insert(k);
      ++in_configs[k];
    }
  std::set<std::string> given;
  for (const auto& [k, v] : c.values) {
    given.insert(k);
    if (!declared.count(k)) {
      std::string names;
      for (const auto& d : declared) names += (names.empty() ? "" : ", ") + d;
      return "has the parameter '" + k.substr(0, 200) + "', which the op does not declare (its " +
             "parameters: " + (names.empty() ? std::string("none") : names) + ")";
    }
  }
  for (const auto& [d, n] : in_configs)
    if (n == all.size() && !given.count(d))
      return "lacks the parameter '" + d + "' the op declares";
  return "";
}

bool contains(const ConfigSpace& space, const Config& c) {
  for (const auto& x : space.configs)
    if (x == c) return true;
  return false;
}

// Why a recorded `c` is not a config the op could have chosen itself: its parameters do not fit
// (parameter_misfit), or, for a space the tuner sweeps, its values are none of the space's
// configs nor its default (a tampered tune.db: tm=2^62); "" when it is one.
std::string replay_misfit(const ConfigSpace& space, const Config& c, bool self_sweeping) {
  std::string misfit = parameter_misfit(space, c);
  if (!misfit.empty() || self_sweeping || contains(space, c) || c == space.default_config)
    return misfit;
  std::string some;
  for (std::size_t i = 0; i < space.configs.size() && i < 4; ++i)
    some += (i ? "; " : "") + space.configs[i].str();
  if (space.configs.size() > 4) some += "; ...";
  return "is not one of the op's " + std::to_string(space.configs.size()) +
         " configs nor its default (" + some + ")";
}

}  // namespace

std::string no_evict_marker(const std::string& stage) {
  return "compile_" + stage + "_no_evict";
}

std::string progress_line(const CacheKey& key, int done, int total, double seconds) {
  return "tune " + key.op + " " + key.provider + " " + key.key + ": " + std::to_string(done) + "/" +
         std::to_string(total) + " configs, " + format_seconds(seconds);
}

Tuner::Tuner(Settings s) : settings_(std::move(s)) {}

Tuner::~Tuner() {
  // A recorded tune.db is archived with the run and replayed later, possibly from a read-only copy.
  if (cache_ && settings_.mode == Mode::record) cache_->make_portable();
}

fs::path Tuner::cache_file() const {
  switch (settings_.mode) {
    case Mode::off:
      return {};
    case Mode::live:
      return settings_.shared_cache.empty() ? default_cache_path() : settings_.shared_cache;
    case Mode::record:
      return settings_.run_dir / "tune.db";
    case Mode::replay:
      return replay_source_file(settings_.replay_from);
  }
  return {};
}

ConfigCache* Tuner::cache() {
  if (!cache_opened_) {
    cache_opened_ = true;
    if (settings_.mode != Mode::off) {
      auto access = settings_.mode == Mode::replay ? ConfigCache::Access::read_only
                                                   : ConfigCache::Access::read_write;
      cache_ = ConfigCache::open(cache_file(), access, warnings_);
    }
  }
  return cache_.get();
}

ConfigCache* Tuner::read_also() {
  if (!read_also_opened_) {
    read_also_opened_ = true;
    if (settings_.mode == Mode::live && !settings_.read_also.empty() &&
        settings_.read_also != cache_file()) {
      std::error_code ec;
      // A shared cache that does not exist yet simply has nothing to offer: no warning.
      if (std::filesystem::exists(settings_.read_also, ec))
        read_also_ =
            ConfigCache::open(settings_.read_also, ConfigCache::Access::read_only, warnings_);
    }
  }
  return read_also_.get();
}

std::vector<std::string> Tuner::take_warnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

std::vector<std::size_t> screen_survivors(const std::vector<Trial>& trials, const Screen& screen) {
  std::vector<std::size_t> valid;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (!trials[i].rejected) valid.push_back(i);
  const auto want = static_cast<std::size_t>(std::max<double>(
      screen.min_keep, std::ceil(screen.keep * static_cast<double>(valid.size()))));
  if (valid.size() <= want) return valid;
  std::stable_sort(valid.begin(), valid.end(),
                   [&](std::size_t a, std::size_t b) { return trials[a].ms < trials[b].ms; });
  valid.resize(want);
  std::sort(valid.begin(), valid.end());
  return valid;
}

namespace {

// One config timed by `time`, its failure a rejected trial.
Trial time_one(const Config& c, const TimeConfig& time) {
  Trial t{c, 0, false, {}};
  try {
    t.ms = time(c);
    if (!(t.ms > 0) || t.ms == std::numeric_limits<double>::infinity()) {
      t.rejected = true;
      t.error = "no valid latency";
    }
  } catch (const std::exception& e) {
    t.rejected = true;
    t.error = e.what();
  }
  return t;
}

}  // namespace

Selection Tuner::sweep(const CacheKey& key, const ConfigSpace& space, const TimeConfig& time_config,
                       const Config* excluded, const Screen& screen) {
  Selection sel;
  const bool progress = settings_.show_progress && ::isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const bool screening =
      screen.time && static_cast<int>(space.configs.size()) >= std::max(2, screen.from);
  const int total = static_cast<int>(space.configs.size());
  int done = 0;
  auto show = [&] {
    ++done;
    if (progress)
      std::fprintf(stderr, "\r%s\x1b[K", progress_line(key, done, total, elapsed()).c_str());
  };
  // The first pass: every config, by the screen's budget where there is a screen.
  for (const auto& c : space.configs) {
    Trial t{c, 0, false, {}};
    if (excluded && c == *excluded) {
      t.rejected = true;
      t.error = "failed at launch earlier; excluded";
    } else {
      t = time_one(c, screening ? screen.time : time_config);
      ++sel.tried;
    }
    if (t.rejected) ++sel.rejected;
    sel.trials.push_back(std::move(t));
    show();
  }
  // The second pass: the screen's survivors, by the sweep's own budget.
  std::vector<std::size_t> finalists;
  if (screening) {
    finalists = screen_survivors(sel.trials, screen);
    std::vector<bool> kept(sel.trials.size(), false);
    for (std::size_t i : finalists) kept[i] = true;
    for (std::size_t i = 0; i < sel.trials.size(); ++i)
      if (!sel.trials[i].rejected && !kept[i]) sel.trials[i].screened_out = true;
    for (std::size_t i : finalists) {
      Trial t = time_one(sel.trials[i].config, time_config);
      if (t.rejected) ++sel.rejected;
      sel.trials[i] = std::move(t);
    }
  }
  // The winner: the fastest trial of the last pass (a screened-out trial's figure is the screen's).
  double best = std::numeric_limits<double>::infinity();
  const Config* winner = nullptr;
  for (const Trial& t : sel.trials) {
    if (!t.rejected && !t.screened_out && t.ms < best) {
      best = t.ms;
      winner = &t.config;
    }
  }
  sel.sweep_s = elapsed();
  sweep_seconds_ += sel.sweep_s;
  if (progress) std::fprintf(stderr, "\r\x1b[K");

  const std::string tried =
      "tried " + std::to_string(sel.tried) + " configs in " + format_seconds(sel.sweep_s) +
      (sel.rejected ? " (" + std::to_string(sel.rejected) + " rejected)" : "") +
      (screening ? ", the fastest " + std::to_string(finalists.size()) + " of a screen timed again"
                 : "");
  if (!winner) {
    sel.config = space.default_config;
    sel.source = "default";
    sel.note = "tune " + key.str() + ": " + tried + "; no config ran, using the default " +
               space.default_config.str() + "; nothing stored";
    return sel;
  }
  sel.config = *winner;
  sel.source = "tuned";
  sel.note =
      "tune " + key.str() + ": " + tried + "; winner " + winner->str() + " at " + format_ms(best);
  keep(key, sel.config, best, sel.trials);
  return sel;
}

void Tuner::keep(const CacheKey& key, const Config& winner, double ms,
                 const std::vector<Trial>& trials) {
  ++keys_tuned_;
  if (auto* c = cache()) {
    if (!c->store(key, CacheRecord{winner, ms, trials, 0}))
      warnings_.push_back("tune cache " + c->file().string() + ": could not store " + key.str() +
                          " (" + c->last_error() + ")");
  }
}

Selection Tuner::adopt(const CacheKey& key, const ConfigSpace& space, ExternalSweep ext) {
  Selection sel;
  sel.swept_by = ext.by.empty() ? "the provider" : ext.by;
  sel.tried = static_cast<int>(ext.trials.size());
  double ms = 0;
  for (const auto& t : ext.trials) {
    if (t.rejected) ++sel.rejected;
    if (ext.winner && t.config == *ext.winner && !t.rejected) ms = t.ms;
  }
  sel.sweep_s = ext.sweep_s;
  sweep_seconds_ += ext.sweep_s;
  sel.trials = std::move(ext.trials);
  const std::string who = "tune " + key.str() + " by " + sel.swept_by;
  const std::string detail = ext.detail.empty() ? "" : " (" + ext.detail + ")";
  if (!ext.winner) {
    sel.config = space.default_config;
    sel.source = "default";
    sel.note = who + ": it chose no config" + detail + "; the default " +
               space.default_config.str() + " is recorded, nothing stored";
    return sel;
  }
  sel.config = *ext.winner;
  sel.source = "tuned";
  sel.note = who + detail + ": tried " + std::to_string(sel.tried) + " configs in " +
             format_seconds(sel.sweep_s) +
             (sel.rejected ? " (" + std::to_string(sel.rejected) + " rejected)" : "") +
             "; winner " + ext.winner->str() + (ms > 0 ? " at " + format_ms(ms) : "");
  // A winner outside the declared configs (a pruning hook that made new ones) is kept for the
  // record, but a later lookup sees it as stale and sweeps again.
  if (!contains(space, *ext.winner)) sel.note += "; not among the declared configs";
  keep(key, *ext.winner, ms, sel.trials);
  return sel;
}

Selection Tuner::select(const CacheKey& key, const ConfigSpace& space,
                        const TimeConfig& time_config, const Screen& screen) {
  return choose(key, space, false,
                [&](const CacheKey& k) { return sweep(k, space, time_config, nullptr, screen); });
}

Selection Tuner::select_external(const CacheKey& key, const ConfigSpace& space,
                                 const RunSweep& run) {
  return choose(key, space, true, [&](const CacheKey& k) { return adopt(k, space, run()); });
}

Selection Tuner::choose(const CacheKey& key_in, const ConfigSpace& space, bool self_sweeping,
                        const std::function<Selection(const CacheKey&)>& sweep_now) {
  CacheKey key = key_in;
  if (key.key.empty()) key.key = tune_key(space.key);

  Selection sel;
  if (settings_.mode == Mode::off || !space.tunable()) {
    sel.config = space.configs.size() == 1 ? space.configs.front() : space.default_config;
    sel.source = "default";
    sel.note = settings_.mode == Mode::off ? "autotune off: default config" : "";
    return sel;
  }

  ConfigCache* c = cache();
  std::optional<CacheRecord> hit = c ? c->find(key) : std::nullopt;

  if (settings_.mode == Mode::replay) return replay(key, space, hit, c, self_sweeping);

  // A config the provider no longer declares is stale (the space changed under the same version).
  fs::path hit_file = cache_file();
  if (!(hit && contains(space, hit->config)) && settings_.mode == Mode::live) {
    if (auto* also = read_also()) {
      hit = also->find(key);
      hit_file = also->file();
    }
  }
  if (hit && contains(space, hit->config)) {
    ++cache_hits_;
    sel.config = hit->config;
    sel.source = "cache";
    sel.trials = hit->trials;
    sel.note = "cached " + hit->config.str() + " from " + hit_file.string();
    return sel;
  }
  return sweep_now(key);
}

// A replay: the recorded config when it fits the op's parameters, else the default, with a note
// (and, for a record that is there but cannot be what runs, a warning) saying why.
Selection Tuner::replay(const CacheKey& key, const ConfigSpace& space,
                        const std::optional<CacheRecord>& hit, ConfigCache* c, bool self_sweeping) {
  Selection sel;
  const std::string misfit = hit ? replay_misfit(space, hit->config, self_sweeping) : "";
  if (hit && misfit.empty()) {
    sel.config = hit->config;
    sel.source = "replay";
    sel.trials = hit->trials;
    sel.note = "replayed " + hit->config.str() + " from " + cache_file().string();
    return sel;
  }
  ++replay_missing_;
  sel.config = space.default_config;
  sel.source = "replay-missing";
  const std::string fallback = "; using the default " + space.default_config.str() + "; not tuned";
  if (hit) {
    sel.note = "the recorded config " + hit->config.str() + " for key " + key.str() + " in " +
               cache_file().string() + " " + misfit + fallback;
  } else if (c && !c->unparseable().empty()) {
    sel.note = "the recorded config for key " + key.str() + " in " + cache_file().string() +
               " is unparseable ('" + c->unparseable().substr(0, 200) + "')" + fallback;
  } else {
    sel.note =
        "no recorded config for key " + key.str() + " in " + cache_file().string() + fallback;
    return sel;
  }
  warnings_.push_back(sel.note);
  return sel;
}

Selection Tuner::on_launch_failure(const CacheKey& key_in, const ConfigSpace& space,
                                   const Config& failed, const std::string& stage,
                                   const TimeConfig& time_config) {
  CacheKey key = key_in;
  if (key.key.empty()) key.key = tune_key(space.key);

  Selection sel;
  if (settings_.mode == Mode::off || !space.tunable()) {
    // Nothing was chosen by tuning, so there is nothing to evict or to choose instead.
    sel.config = failed;
    sel.source = "default";
    sel.note = "config " + failed.str() + " failed at " + stage +
               "; it is the only config, nothing to evict";
    return sel;
  }

  ConfigCache* c = cache();
  if (settings_.mode == Mode::replay || !c || !c->writable()) {
    sel.config = failed;
    sel.source = settings_.mode == Mode::replay ? "replay" : "cache";
    sel.markers.push_back(no_evict_marker(stage));
    sel.note = "config " + failed.str() + " for " + key.str() + " failed at " + stage +
               " and could not be evicted: " + cache_file().string() +
               " is a read-only source; the config was kept, no fallback to live tuning";
    return sel;
  }

  if (!c->evict(key)) {
    sel.config = failed;
    sel.source = "cache";
    sel.markers.push_back(no_evict_marker(stage));
    sel.note = "config " + failed.str() + " for " + key.str() + " failed at " + stage +
               " and could not be evicted (" + c->last_error() + "); the config was kept";
    return sel;
  }
  sel = sweep(key, space, time_config, &failed, Screen{});
  sel.note =
      "config " + failed.str() + " failed at " + stage + "; evicted and retuned: " + sel.note;
  return sel;
}

}  // namespace caliber::tune
