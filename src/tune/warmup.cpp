#include "tune/warmup.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "tune/cache.hpp"

namespace caliber::tune {

std::vector<std::vector<std::size_t>> plan_shards(std::size_t n_items, int n_shards) {
  if (n_shards < 1)
    throw std::invalid_argument("plan_shards: need at least one shard, got " +
                                std::to_string(n_shards));
  std::vector<std::vector<std::size_t>> shards(static_cast<std::size_t>(n_shards));
  for (std::size_t i = 0; i < n_items; ++i) shards[i % shards.size()].push_back(i);
  return shards;
}

std::vector<std::vector<std::size_t>> plan_shards_by_cost(const std::vector<double>& costs,
                                                          int n_shards) {
  if (n_shards < 1)
    throw std::invalid_argument("plan_shards: need at least one shard, got " +
                                std::to_string(n_shards));
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<std::vector<std::size_t>> shards(static_cast<std::size_t>(n_shards));
  std::vector<double> load(shards.size(), 0.0);
  for (std::size_t i : order) {
    auto s = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shards[s].push_back(i);
    load[s] += std::max(costs[i], 0.0);
  }
  for (auto& s : shards) std::sort(s.begin(), s.end());
  return shards;
}

namespace {
using KeyTuple = std::tuple<std::string, std::string, std::string, std::string, std::string,
                            std::string, std::string>;
KeyTuple as_tuple(const CacheKey& k) {
  return {k.op, k.provider, k.provider_version, k.backend, k.device_model, k.dtype, k.key};
}
}  // namespace

MergeResult merge_shard_caches(const std::vector<std::filesystem::path>& shard_dbs,
                               const std::filesystem::path& into) {
  MergeResult r;
  struct Seen {
    CacheKey key;
    CacheRecord best;
    bool differ = false;
  };
  std::map<KeyTuple, Seen> merged;
  for (const auto& shard : shard_dbs) {
    auto db = ConfigCache::open(shard, ConfigCache::Access::read_only, r.warnings);
    for (auto& [key, rec] : db->all()) {
      auto [it, inserted] = merged.try_emplace(as_tuple(key), Seen{key, rec, false});
      if (inserted) continue;
      Seen& s = it->second;
      if (!(rec.config == s.best.config)) s.differ = true;
      if (rec.ms < s.best.ms) s.best = std::move(rec);
    }
  }
  auto target = ConfigCache::open(into, ConfigCache::Access::read_write, r.warnings);
  for (auto& [_, s] : merged) {
    ++r.keys;
    if (s.differ) {
      ++r.disagreements;
      r.disagreeing_keys.push_back(s.key.str());
    }
    if (!target->store(s.key, s.best))
      r.warnings.push_back("parallel warmup: could not store " + s.key.str() + " in " +
                           into.string() + " (" + target->last_error() + ")");
  }
  return r;
}

std::string warmup_warning(const MergeResult& r) {
  return "WARNING: parallel warmup: " + std::to_string(r.disagreements) + " of " +
         std::to_string(r.keys) + " tuned keys have winners that differ between shards";
}

void validate_parallel_warmup(int n, int devices_selected) {
  const std::string knob = "--parallel-warmup (PARALLEL_WARMUP_GPUS): '" + std::to_string(n) + "'";
  if (n < 0) throw std::invalid_argument(knob + " is not allowed; allowed: 0 (off) or more");
  if (n > devices_selected)
    throw std::invalid_argument(knob + " is more than the " + std::to_string(devices_selected) +
                                " device(s) selected with --devices; select at least that many "
                                "or lower N");
}

}  // namespace caliber::tune
