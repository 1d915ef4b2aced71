#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "tune/cache.hpp"
#include "tune/prune.hpp"
#include "tune/tuner.hpp"
#include "tune/warmup.hpp"
#include "tune_test_util.hpp"

namespace caliber::tune {
namespace {

using testing::cfg;
using testing::key_for;
using testing::make_settings;
using testing::TempDir;

TEST(TuneKeys, BucketStrategies) {
  EXPECT_EQ(bucket(4096, KeyStrategy::log2), 4096);
  EXPECT_EQ(bucket(4097, KeyStrategy::log2), 8192);
  EXPECT_EQ(bucket(3000, KeyStrategy::log2), 4096);
  EXPECT_EQ(bucket(1, KeyStrategy::log2), 1);
  EXPECT_EQ(bucket(33, KeyStrategy::align32), 64);
  EXPECT_EQ(bucket(32, KeyStrategy::align32), 32);
  EXPECT_EQ(bucket(1, KeyStrategy::align32), 32);
  EXPECT_EQ(bucket(4097, KeyStrategy::exact), 4097);
}

TEST(TuneKeys, TuneKeyBucketsEachArgument) {
  EXPECT_EQ(tune_key({{"M", 3000, KeyStrategy::log2},
                      {"N", 100, KeyStrategy::align32},
                      {"K", 7, KeyStrategy::exact}}),
            "M=4096,N=128,K=7");
}

TEST(TuneKeys, NearbyShapesShareATunedConfig) {
  TempDir dir;
  Tuner t(make_settings(Mode::live, dir.path() / "tune.db"));
  int calls = 0;
  auto timer = [&](const Config& c) {
    ++calls;
    return static_cast<double>(c.get("block"));
  };
  auto a = t.select(key_for("mm", ""), testing::space4(3000), timer);
  EXPECT_EQ(a.source, "tuned");
  EXPECT_EQ(calls, 4);
  auto b = t.select(key_for("mm", ""), testing::space4(4000), timer);  // same log2 bucket
  EXPECT_EQ(b.source, "cache");
  EXPECT_EQ(calls, 4);
  auto c = t.select(key_for("mm", ""), testing::space4(5000), timer);  // next bucket: tuned again
  EXPECT_EQ(c.source, "tuned");
  EXPECT_EQ(calls, 8);
}

TEST(TuneModes, ParseAndPrintRoundTrip) {
  for (Mode m : {Mode::off, Mode::live, Mode::record, Mode::replay})
    EXPECT_EQ(parse_mode(to_string(m)), m);
  EXPECT_FALSE(parse_mode("on").has_value());
  EXPECT_FALSE(parse_mode("").has_value());
  EXPECT_EQ(no_evict_marker("tune"), "compile_tune_no_evict");
}

TEST(TuneProgress, LineNamesKeyCountAndTime) {
  CacheKey k{"mm", "lt-tuned", "1", "cuda", "H200", "bf16", "M=4096,N=4096"};
  EXPECT_EQ(progress_line(k, 7, 16, 0.84), "tune mm lt-tuned M=4096,N=4096: 7/16 configs, 0.8 s");
}

TEST(TunePrune, DropsClusterConfigsWithoutClusters) {
  ConfigSpace s;
  s.configs = {Config{{{"block", 128}}}, Config{{{"block", 128}, {"cluster", 2}}},
               Config{{{"block", 256}, {"cluster", 1}}}, Config{{{"block", 256}, {"cluster", 16}}}};
  s.default_config = s.configs[1];
  s.key = {{"M", 10, KeyStrategy::exact}};

  auto none = prune_for_clusters(s, false, 8);
  ASSERT_EQ(none.configs.size(), 2u);
  for (const auto& c : none.configs) EXPECT_FALSE(c.needs_clusters());
  EXPECT_EQ(none.default_config, s.configs[0])
      << "a pruned default is replaced by a launchable one";
  EXPECT_EQ(none.key.size(), 1u);

  auto upto8 = prune_for_clusters(s, true, 8);
  ASSERT_EQ(upto8.configs.size(), 3u);
  EXPECT_EQ(upto8.configs[1], s.configs[1]);
  EXPECT_EQ(upto8.default_config, s.configs[1]);

  auto upto16 = prune_for_clusters(s, true, 16);
  EXPECT_EQ(upto16.configs.size(), 4u);
}

TEST(TuneWarmup, RoundRobinShardsAreBalancedAndComplete) {
  auto shards = plan_shards(10, 3);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0], (std::vector<std::size_t>{0, 3, 6, 9}));
  EXPECT_EQ(shards[1], (std::vector<std::size_t>{1, 4, 7}));
  EXPECT_EQ(shards[2], (std::vector<std::size_t>{2, 5, 8}));
  EXPECT_EQ(plan_shards(10, 3), shards) << "deterministic";

  auto few = plan_shards(2, 4);
  EXPECT_EQ(few[0].size() + few[1].size(), 2u);
  EXPECT_TRUE(few[2].empty() && few[3].empty());
  EXPECT_THROW((void)plan_shards(5, 0), std::invalid_argument);
}

TEST(TuneWarmup, CostShardsBalanceLoad) {
  std::vector<double> cost = {10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};  // 10 vs ten 1s
  auto shards = plan_shards_by_cost(cost, 2);
  ASSERT_EQ(shards.size(), 2u);
  std::set<std::size_t> all;
  for (const auto& s : shards)
    for (auto i : s) EXPECT_TRUE(all.insert(i).second) << "item " << i << " in two shards";
  EXPECT_EQ(all.size(), cost.size());
  auto load = [&](const std::vector<std::size_t>& s) {
    double l = 0;
    for (auto i : s) l += cost[i];
    return l;
  };
  EXPECT_EQ(load(shards[0]), 10);
  EXPECT_EQ(load(shards[1]), 10);
  EXPECT_EQ(plan_shards_by_cost(cost, 2), shards);
}

TEST(TuneWarmup, MergeKeepsFastestAndCountsDisagreements) {
  TempDir dir;
  std::vector<std::string> warnings;
  const auto a = key_for("mm", "M=1024"), b = key_for("mm", "M=2048"), c = key_for("mm", "M=4096");
  std::vector<std::filesystem::path> shards = {dir.path() / "s0.db", dir.path() / "s1.db",
                                               dir.path() / "s2.db"};
  {
    auto s0 = ConfigCache::open(shards[0], ConfigCache::Access::read_write, warnings);
    auto s1 = ConfigCache::open(shards[1], ConfigCache::Access::read_write, warnings);
    auto s2 = ConfigCache::open(shards[2], ConfigCache::Access::read_write, warnings);
    ASSERT_TRUE(s0->store(a, {cfg(64), 1.0, {}, 0}));
    ASSERT_TRUE(s1->store(a, {cfg(256), 0.8, {}, 0}));  // differs, and faster
    ASSERT_TRUE(s0->store(b, {cfg(128), 2.0, {}, 0}));
    ASSERT_TRUE(s2->store(b, {cfg(128), 2.1, {}, 0}));  // agrees
    ASSERT_TRUE(s1->store(c, {cfg(512), 3.0, {}, 0}));
  }
  const auto into = dir.path() / "merged" / "tune.db";
  auto r = merge_shard_caches(shards, into);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.keys, 3);
  EXPECT_EQ(r.disagreements, 1);
  ASSERT_EQ(r.disagreeing_keys.size(), 1u);
  EXPECT_NE(r.disagreeing_keys[0].find("M=1024"), std::string::npos);
  EXPECT_EQ(warmup_warning(r),
            "WARNING: parallel warmup: 1 of 3 tuned keys have winners that differ between shards");

  auto merged = ConfigCache::open(into, ConfigCache::Access::read_only, warnings);
  EXPECT_EQ(merged->all().size(), 3u);
  EXPECT_EQ(merged->find(a)->config, cfg(256));
  EXPECT_DOUBLE_EQ(merged->find(a)->ms, 0.8);
  EXPECT_EQ(merged->find(b)->config, cfg(128));
  EXPECT_EQ(merged->find(c)->config, cfg(512));
}

TEST(TuneWarmup, MergeReportsAnUnreadableShard) {
  TempDir dir;
  auto r = merge_shard_caches({dir.path() / "missing.db"}, dir.path() / "into.db");
  EXPECT_EQ(r.keys, 0);
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(TuneWarmup, ValidateRefusesMoreShardsThanDevices) {
  EXPECT_NO_THROW(validate_parallel_warmup(0, 1));
  EXPECT_NO_THROW(validate_parallel_warmup(2, 2));
  try {
    validate_parallel_warmup(3, 2);
    FAIL() << "3 shards over 2 devices must be refused";
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("3"), std::string::npos);
    EXPECT_NE(m.find("2 device"), std::string::npos);
  }
  EXPECT_THROW(validate_parallel_warmup(-1, 2), std::invalid_argument);
}

}  // namespace
}  // namespace caliber::tune
