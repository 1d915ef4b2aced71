#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <optional>

#include "caliber/context.hpp"
#include "tune/cache.hpp"
#include "tune/tuner.hpp"
#include "tune_test_util.hpp"

namespace caliber::tune {
namespace {

namespace fs = std::filesystem;
using testing::cfg;
using testing::key_for;
using testing::make_settings;
using testing::space4;
using testing::TempDir;

// Latency model for tests: block 256 is fastest, so the sweep has a unique winner to find.
double fake_ms(const Config& c) {
  return 1.0 + std::abs(static_cast<double>(c.get("block")) - 256.0) / 100.0;
}

struct CountingTimer {
  int calls = 0;
  TimeConfig fn() {
    return [this](const Config& c) {
      ++calls;
      return fake_ms(c);
    };
  }
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(TuneCache, RoundTrip) {
  TempDir dir;
  std::vector<std::string> w;
  const auto file = dir.path() / "sub" / "tune.db";
  const auto k = key_for("mm", "M=4096,N=4096");
  std::vector<Trial> trials = {{cfg(64), 2.5, false, ""},
                               {cfg(128, 4), 0, true, "too many registers"}};
  {
    auto c = ConfigCache::open(file, ConfigCache::Access::read_write, w);
    ASSERT_TRUE(c->writable());
    EXPECT_FALSE(c->find(k).has_value());
    ASSERT_TRUE(c->store(k, {cfg(64), 2.5, trials, 0})) << c->last_error();
  }
  EXPECT_TRUE(w.empty());
  auto c = ConfigCache::open(file, ConfigCache::Access::read_only, w);
  EXPECT_TRUE(w.empty()) << w.front();
  EXPECT_FALSE(c->writable());
  auto r = c->find(k);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config, cfg(64));
  EXPECT_DOUBLE_EQ(r->ms, 2.5);
  EXPECT_EQ(r->trials, trials);
  EXPECT_GT(r->created, 1.6e9);
  auto other_version = k;
  other_version.provider_version = "1.1";
  EXPECT_FALSE(c->find(other_version).has_value()) << "the provider version is part of the key";
  auto other_device = k;
  other_device.device_model = "other";
  EXPECT_FALSE(c->find(other_device).has_value());
  EXPECT_FALSE(c->store(k, {cfg(1), 1, {}, 0})) << "a read-only cache refuses writes";
  EXPECT_FALSE(c->evict(k));
  EXPECT_EQ(c->all().size(), 1u);
}

TEST(TuneCache, TwoProcessesWritingConcurrentlyKeepEveryKey) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  constexpr int kPerProcess = 200;
  pid_t pids[2];
  for (int p = 0; p < 2; ++p) {
    pids[p] = ::fork();
    ASSERT_GE(pids[p], 0);
    if (pids[p] == 0) {
      std::vector<std::string> w;
      auto c = ConfigCache::open(file, ConfigCache::Access::read_write, w);
      int failures = (c->writable() && !c->in_memory()) ? 0 : 1000;
      for (int i = 0; i < kPerProcess; ++i) {
        auto k = key_for("mm", "P=" + std::to_string(p) + ",M=" + std::to_string(i));
        if (!c->store(k, {cfg(64 + i), 1.0 + i, {{cfg(64 + i), 1.0 + i, false, ""}}, 0}))
          ++failures;
      }
      c.reset();
      ::_exit(failures == 0 ? 0 : 1);
    }
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a writer lost a store";
  }
  std::vector<std::string> w;
  auto c = ConfigCache::open(file, ConfigCache::Access::read_only, w);
  EXPECT_EQ(c->all().size(), 2u * kPerProcess);
  EXPECT_EQ(c->find(key_for("mm", "P=1,M=199"))->config, cfg(64 + 199));
}

TEST(TuneCache, CorruptFileIsSetAsideWarnedAndRebuilt) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  std::string garbage(8192, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<char>((i * 7919 + 13) % 251);
  // A damaged SQLite database (its header, then garbage): only such a file is ours to move.
  garbage.replace(0, 16, std::string("SQLite format 3\0", 16));
  { std::ofstream(file, std::ios::binary) << garbage; }

  Tuner t(make_settings(Mode::live, file));
  CountingTimer timer;
  auto s = t.select(key_for("mm", "M=1"), space4(), timer.fn());
  EXPECT_EQ(s.source, "tuned") << "the run goes on with a fresh cache";
  auto w = t.take_warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("corrupt"), std::string::npos) << w[0];
  EXPECT_TRUE(t.take_warnings().empty()) << "warnings are handed out once";

  fs::path aside;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().filename().string().starts_with("tune.db.corrupt-") &&
        e.path().filename().string().find("-wal") == std::string::npos &&
        e.path().filename().string().find("-shm") == std::string::npos)
      aside = e.path();
  ASSERT_FALSE(aside.empty()) << "the corrupt file is kept aside";
  EXPECT_EQ(read_all(aside), garbage);

  // The rebuilt cache works: a new tuner finds the winner stored after the rebuild.
  Tuner again(make_settings(Mode::live, file));
  CountingTimer timer2;
  auto s2 = again.select(key_for("mm", "M=1"), space4(), timer2.fn());
  EXPECT_EQ(s2.source, "cache");
  EXPECT_EQ(s2.config, s.config);
  EXPECT_EQ(timer2.calls, 0);
  EXPECT_TRUE(again.take_warnings().empty());
}

TEST(TuneCache, CorruptReadOnlySourceIsLeftUntouched) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  { std::ofstream(file, std::ios::binary) << std::string(4096, 'x'); }
  std::vector<std::string> w;
  auto c = ConfigCache::open(file, ConfigCache::Access::read_only, w);
  EXPECT_FALSE(c->usable());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(read_all(file), std::string(4096, 'x'));
  EXPECT_FALSE(c->find(key_for("mm", "M=1")).has_value());
}

TEST(TuneTuner, OffModeUsesDefaultAndTouchesNothing) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  Tuner t(make_settings(Mode::off, file, dir.path() / "run"));
  CountingTimer timer;
  auto s = t.select(key_for("mm", ""), space4(), timer.fn());
  EXPECT_EQ(s.source, "default");
  EXPECT_EQ(s.config, cfg(128));
  EXPECT_EQ(timer.calls, 0);
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dir.path() / "run"));
}

TEST(TuneTuner, UntunableSpaceHasNoDatabaseTraffic) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  Tuner t(make_settings(Mode::live, file));
  ConfigSpace one;
  one.configs = {cfg(32)};
  one.default_config = cfg(32);
  CountingTimer timer;
  auto s = t.select(key_for("add", ""), one, timer.fn());
  EXPECT_EQ(s.source, "default");
  EXPECT_EQ(s.config, cfg(32));
  EXPECT_EQ(timer.calls, 0);
  EXPECT_FALSE(fs::exists(file));
}

TEST(TuneTuner, LiveSweepsPicksFastestStoresThenHitsCache) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  const auto k = key_for("mm", "M=4096,N=4096");
  {
    Tuner t(make_settings(Mode::live, file));
    CountingTimer timer;
    auto s = t.select(k, space4(), timer.fn());
    EXPECT_EQ(s.source, "tuned");
    EXPECT_EQ(s.config, cfg(256));
    EXPECT_EQ(timer.calls, 4);
    EXPECT_EQ(s.tried, 4);
    EXPECT_EQ(s.trials.size(), 4u);
    EXPECT_GE(s.sweep_s, 0.0);
    EXPECT_NE(s.note.find("tried 4 configs"), std::string::npos) << s.note;
    EXPECT_EQ(t.keys_tuned(), 1);
  }
  std::vector<std::string> w;
  auto c = ConfigCache::open(file, ConfigCache::Access::read_only, w);
  auto r = c->find(k);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config, cfg(256));
  EXPECT_DOUBLE_EQ(r->ms, fake_ms(cfg(256)));
  EXPECT_EQ(r->trials.size(), 4u);

  Tuner t2(make_settings(Mode::live, file));
  CountingTimer timer2;
  auto s2 = t2.select(k, space4(), timer2.fn());
  EXPECT_EQ(s2.source, "cache");
  EXPECT_EQ(s2.config, cfg(256));
  EXPECT_EQ(timer2.calls, 0);
}

TEST(TuneTuner, StaleCachedConfigOutsideTheSpaceIsRetuned) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  const auto k = key_for("mm", "M=1");
  {
    std::vector<std::string> w;
    auto c = ConfigCache::open(file, ConfigCache::Access::read_write, w);
    ASSERT_TRUE(c->store(k, {cfg(1024), 0.1, {}, 0}));  // a config the provider no longer declares
  }
  Tuner t(make_settings(Mode::live, file));
  CountingTimer timer;
  auto s = t.select(k, space4(), timer.fn());
  EXPECT_EQ(s.source, "tuned");
  EXPECT_EQ(s.config, cfg(256));
  EXPECT_EQ(timer.calls, 4);
}

TEST(TuneTuner, WarmupShardReadsSharedCacheButWritesOnlyItsOwn) {
  TempDir dir;
  const auto shared = dir.path() / "shared.db";
  const auto shard = dir.path() / "shard-0.db";
  const auto cached = key_for("mm", "M=1"), fresh = key_for("mm", "M=2");
  {
    std::vector<std::string> w;
    auto c = ConfigCache::open(shared, ConfigCache::Access::read_write, w);
    ASSERT_TRUE(c->store(cached, {cfg(512), 0.5, {}, 0}));
  }
  Settings st = make_settings(Mode::live, shard);
  st.read_also = shared;
  {
    Tuner t(st);
    CountingTimer timer;
    auto a = t.select(cached, space4(), timer.fn());
    EXPECT_EQ(a.source, "cache");
    EXPECT_EQ(a.config, cfg(512));
    EXPECT_EQ(timer.calls, 0);
    auto b = t.select(fresh, space4(), timer.fn());
    EXPECT_EQ(b.source, "tuned");
    EXPECT_EQ(timer.calls, 4);
    EXPECT_EQ(t.cache_hits(), 1);
    EXPECT_EQ(t.keys_tuned(), 1);
  }
  std::vector<std::string> w;
  EXPECT_EQ(ConfigCache::open(shared, ConfigCache::Access::read_only, w)->all().size(), 1u)
      << "the shared cache is only read";
  auto own = ConfigCache::open(shard, ConfigCache::Access::read_only, w)->all();
  ASSERT_EQ(own.size(), 1u) << "the shard holds only what it tuned";
  EXPECT_EQ(own[0].first, fresh);

  // record mode stays isolated even when given the shared cache to read.
  Settings rec = make_settings(Mode::record, {}, dir.path() / "run");
  rec.read_also = shared;
  fs::create_directories(rec.run_dir);
  Tuner r(rec);
  CountingTimer timer;
  EXPECT_EQ(r.select(cached, space4(), timer.fn()).source, "tuned");
  EXPECT_EQ(timer.calls, 4);
}

TEST(TuneTuner, RejectedConfigsAreSkippedAndRecorded) {
  TempDir dir;
  Tuner t(make_settings(Mode::live, dir.path() / "tune.db"));
  auto timer = [](const Config& c) -> double {
    if (c.get("block") == 256) throw ConfigRejected("out of shared memory");
    if (c.get("block") == 512) throw std::runtime_error("invalid configuration argument");
    return fake_ms(c);
  };
  auto s = t.select(key_for("mm", "M=1"), space4(), timer);
  EXPECT_EQ(s.source, "tuned");
  EXPECT_EQ(s.config, cfg(128)) << "fastest of the configs that ran";
  EXPECT_EQ(s.rejected, 2);
  int rejected = 0;
  for (const auto& tr : s.trials)
    if (tr.rejected) {
      ++rejected;
      EXPECT_FALSE(tr.error.empty());
    }
  EXPECT_EQ(rejected, 2);
}

TEST(TuneTuner, AllConfigsRejectedFallsBackToDefaultWithoutStoring) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  Tuner t(make_settings(Mode::live, file));
  auto s = t.select(key_for("mm", "M=1"), space4(),
                    [](const Config&) -> double { throw ConfigRejected("no"); });
  EXPECT_EQ(s.source, "default");
  EXPECT_EQ(s.config, cfg(128));
  std::vector<std::string> w;
  EXPECT_TRUE(ConfigCache::open(file, ConfigCache::Access::read_only, w)->all().empty());
}

TEST(TuneTuner, RecordIsIsolatedAndReplayGivesIdenticalConfigs) {
  TempDir dir;
  const auto shared = dir.path() / "shared" / "tune.db";
  const auto run = dir.path() / "run-1";
  fs::create_directories(run);
  // A different latency model per key, so each key has its own winner.
  auto model = [](const Config& c, std::int64_t m) {
    return 1.0 + std::abs(static_cast<double>(c.get("block")) - static_cast<double>(m / 16)) / 10.0;
  };
  std::vector<std::int64_t> ms = {1024, 2048, 4096, 8192};
  std::vector<Config> recorded;
  {
    Tuner rec(make_settings(Mode::record, shared, run));
    for (auto m : ms) {
      auto s =
          rec.select(key_for("mm", ""), space4(m), [&](const Config& c) { return model(c, m); });
      EXPECT_EQ(s.source, "tuned");
      recorded.push_back(s.config);
    }
    EXPECT_EQ(rec.cache_file(), run / "tune.db");
  }
  EXPECT_EQ(recorded[0], cfg(64));
  EXPECT_EQ(recorded[3], cfg(512));
  EXPECT_TRUE(fs::exists(run / "tune.db"));
  EXPECT_FALSE(fs::exists(run / "tune.db-wal")) << "a recorded tune.db is self-contained";
  EXPECT_FALSE(fs::exists(shared)) << "record mode never touches the shared cache";

  // Replay from a directory we cannot write to.
  fs::permissions(run, fs::perms::owner_read | fs::perms::owner_exec);
  Tuner rep(make_settings(Mode::replay, shared, {}, run));
  CountingTimer timer;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    auto s = rep.select(key_for("mm", ""), space4(ms[i]), timer.fn());
    EXPECT_EQ(s.source, "replay");
    EXPECT_EQ(s.config, recorded[i]);
  }
  EXPECT_EQ(timer.calls, 0);
  EXPECT_TRUE(rep.take_warnings().empty());
  EXPECT_FALSE(fs::exists(shared));
  // Root ignores the permission bits above, so also check that replay wrote nothing beside it.
  EXPECT_FALSE(fs::exists(run / "tune.db-wal"));
  EXPECT_FALSE(fs::exists(run / "tune.db-shm"));
  fs::permissions(run, fs::perms::owner_all);
}

TEST(TuneTuner, ReplayMissingKeyIsReportedAndNeverTuned) {
  TempDir dir;
  const auto run = dir.path() / "run-1";
  {
    Tuner rec(make_settings(Mode::record, {}, run));
    fs::create_directories(run);
    CountingTimer timer;
    (void)rec.select(key_for("mm", ""), space4(1024), timer.fn());
  }
  Tuner rep(make_settings(Mode::replay, {}, {}, run));
  CountingTimer timer;
  auto s = rep.select(key_for("mm", ""), space4(65536), timer.fn());
  EXPECT_EQ(timer.calls, 0) << "replay must never sweep";
  EXPECT_EQ(s.source, "replay-missing");
  EXPECT_EQ(s.config, cfg(128));
  EXPECT_NE(s.note.find("no recorded config for key"), std::string::npos) << s.note;
  EXPECT_NE(s.note.find("M=65536"), std::string::npos) << s.note;
  EXPECT_NE(s.note.find("not tuned"), std::string::npos) << s.note;
}

TEST(TuneTuner, ReplayWithoutTuneDbWarnsAndNeverTunes) {
  TempDir dir;
  Tuner rep(make_settings(Mode::replay, {}, {}, dir.path()));
  CountingTimer timer;
  auto s = rep.select(key_for("mm", ""), space4(), timer.fn());
  EXPECT_EQ(s.source, "replay-missing");
  EXPECT_EQ(timer.calls, 0);
  EXPECT_EQ(rep.take_warnings().size(), 1u);
  EXPECT_FALSE(fs::exists(dir.path() / "tune.db")) << "a replay source is never created";
}

TEST(TuneTuner, LiveEvictionRetunesAndDropsTheFailedConfig) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  const auto k = key_for("mm", "M=4096,N=4096");
  Tuner t(make_settings(Mode::live, file));
  CountingTimer timer;
  auto first = t.select(k, space4(), timer.fn());
  ASSERT_EQ(first.config, cfg(256));

  CountingTimer retune;
  auto s = t.on_launch_failure(k, space4(), first.config, "tune", retune.fn());
  EXPECT_NE(s.config, cfg(256));
  EXPECT_EQ(s.source, "tuned");
  EXPECT_TRUE(s.markers.empty());
  EXPECT_EQ(retune.calls, 3) << "the failed config is not timed again";
  EXPECT_NE(s.note.find("evicted"), std::string::npos) << s.note;

  std::vector<std::string> w;
  auto c = ConfigCache::open(file, ConfigCache::Access::read_only, w);
  auto r = c->find(k);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config, s.config);
  EXPECT_NE(r->config, cfg(256)) << "the failed config is gone from the cache";

  Tuner later(make_settings(Mode::live, file));
  CountingTimer none;
  auto again = later.select(k, space4(), none.fn());
  EXPECT_EQ(again.source, "cache");
  EXPECT_EQ(again.config, s.config);
}

TEST(TuneTuner, ReplayLaunchFailureCarriesNoEvictMarker) {
  TempDir dir;
  const auto run = dir.path() / "run-1";
  fs::create_directories(run);
  Config recorded;
  {
    Tuner rec(make_settings(Mode::record, {}, run));
    CountingTimer timer;
    recorded = rec.select(key_for("mm", ""), space4(), timer.fn()).config;
  }
  Tuner rep(make_settings(Mode::replay, {}, {}, run));
  CountingTimer timer;
  auto chosen = rep.select(key_for("mm", ""), space4(), timer.fn());
  ASSERT_EQ(chosen.config, recorded);
  auto s = rep.on_launch_failure(key_for("mm", ""), space4(), chosen.config, "tune", timer.fn());
  EXPECT_EQ(timer.calls, 0);
  EXPECT_EQ(s.config, recorded) << "the config could not be dropped, so it is what the row used";
  ASSERT_EQ(s.markers.size(), 1u);
  EXPECT_EQ(s.markers[0], "compile_tune_no_evict");
  EXPECT_NE(s.note.find("could not be evicted"), std::string::npos) << s.note;
  EXPECT_EQ(s.note.find("evicted and retuned"), std::string::npos)
      << "never claim a clean fallback";

  std::vector<std::string> w;
  auto c = ConfigCache::open(run / "tune.db", ConfigCache::Access::read_only, w);
  EXPECT_EQ(c->all().size(), 1u) << "the replay source is unchanged";
}

// A provider that sweeps itself (a Python suite's Triton autotuner): the tuner's cache rules,
// the provider's trials and winner.
struct ExternalSweeper {
  int calls = 0;
  std::optional<Config> winner = cfg(512);
  RunSweep fn() {
    return [this] {
      ++calls;
      ExternalSweep e;
      e.winner = winner;
      e.by = "triton";
      e.sweep_s = 0.5;
      e.detail = "key (4096,)";
      e.trials = {{cfg(64), 3.0, false, ""},
                  {cfg(512), 1.5, false, ""},
                  {cfg(1024), 0, true, "out of resources"}};
      return e;
    };
  }
};

// A record whose parameter names fit but whose values are none of the op's configs (a tampered
// tune.db: block=2^62) is never handed to the op: the default runs and a warning says why. A
// provider that sweeps itself keeps the names-only check (its configs are its own).
TEST(TuneTuner, ReplayOfAValueOutsideTheSpaceRunsTheDefault) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  const auto k = key_for("mm", "M=4096,N=4096");
  const Config tampered = cfg(std::int64_t{1} << 62);
  {
    std::vector<std::string> w;
    auto c = ConfigCache::open(file, ConfigCache::Access::read_write, w);
    ASSERT_TRUE(c->store(k, {tampered, 1.0, {}, 0})) << c->last_error();
  }
  Tuner rep(make_settings(Mode::replay, {}, {}, file));
  CountingTimer timer;
  auto s = rep.select(k, space4(), timer.fn());
  EXPECT_EQ(timer.calls, 0);
  EXPECT_EQ(s.source, "replay-missing");
  EXPECT_EQ(s.config, cfg(128));
  EXPECT_NE(s.note.find("is not one of the op's 4 configs"), std::string::npos) << s.note;
  EXPECT_NE(s.note.find("block=4611686018427387904"), std::string::npos) << s.note;
  EXPECT_EQ(rep.take_warnings().size(), 1u);
  EXPECT_EQ(rep.replay_missing(), 1);

  ExternalSweeper ext;
  auto e = rep.select_external(k, space4(), ext.fn());
  EXPECT_EQ(e.source, "replay") << e.note;
  EXPECT_EQ(e.config, tampered);
  EXPECT_EQ(ext.calls, 0);
}

TEST(TuneTuner, ExternalSweepUnderTheCacheRules) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  const auto k = key_for("py_add", "d0=4096");
  ExternalSweeper ext;
  {
    Tuner t(make_settings(Mode::live, file));
    auto s = t.select_external(k, space4(), ext.fn());
    EXPECT_EQ(ext.calls, 1);
    EXPECT_EQ(s.source, "tuned");
    EXPECT_EQ(s.swept_by, "triton");
    EXPECT_EQ(s.config, cfg(512));
    EXPECT_EQ(s.tried, 3);
    EXPECT_EQ(s.rejected, 1);
    EXPECT_DOUBLE_EQ(s.sweep_s, 0.5);
    EXPECT_NE(s.note.find("by triton (key (4096,)): tried 3 configs"), std::string::npos) << s.note;
    EXPECT_EQ(t.keys_tuned(), 1);
  }
  std::vector<std::string> w;
  auto r = ConfigCache::open(file, ConfigCache::Access::read_only, w)->find(k);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config, cfg(512));
  EXPECT_DOUBLE_EQ(r->ms, 1.5);  // the winner's own trial
  EXPECT_EQ(r->trials.size(), 3u);
  {
    Tuner t(make_settings(Mode::live, file));
    auto s = t.select_external(k, space4(), ext.fn());
    EXPECT_EQ(ext.calls, 1) << "a cached choice is never swept again";
    EXPECT_EQ(s.source, "cache");
    EXPECT_EQ(s.config, cfg(512));
    EXPECT_TRUE(s.swept_by.empty());
  }
  {
    Tuner t(make_settings(Mode::off, file));
    auto s = t.select_external(k, space4(), ext.fn());
    EXPECT_EQ(ext.calls, 1);
    EXPECT_EQ(s.source, "default");
    EXPECT_EQ(s.config, cfg(128));
  }
  {
    Tuner t(make_settings(Mode::replay, {}, {}, file));
    EXPECT_EQ(t.select_external(k, space4(), ext.fn()).source, "replay");
    auto s = t.select_external(key_for("py_add", "d0=8"), space4(), ext.fn());
    EXPECT_EQ(ext.calls, 1) << "replay never sweeps";
    EXPECT_EQ(s.source, "replay-missing");
    EXPECT_EQ(s.config, cfg(128));
  }
}

TEST(TuneTuner, ExternalSweepWithoutAWinnerStoresNothing) {
  TempDir dir;
  const auto file = dir.path() / "tune.db";
  const auto k = key_for("py_add", "d0=4096");
  ExternalSweeper ext;
  ext.winner.reset();
  Tuner t(make_settings(Mode::live, file));
  auto s = t.select_external(k, space4(), ext.fn());
  EXPECT_EQ(s.source, "default");
  EXPECT_EQ(s.config, cfg(128));
  EXPECT_NE(s.note.find("chose no config"), std::string::npos) << s.note;
  EXPECT_EQ(t.keys_tuned(), 0);
  auto again = t.select_external(k, space4(), ext.fn());
  EXPECT_EQ(ext.calls, 2) << "nothing was stored, so the next lookup sweeps again";
  EXPECT_EQ(again.source, "default");
}

}  // namespace
}  // namespace caliber::tune
