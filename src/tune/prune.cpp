#include "tune/prune.hpp"

#include <algorithm>

namespace caliber::tune {

namespace {
bool launchable(const Config& c, bool clusters_available, int max_cluster) {
  if (!c.needs_clusters()) return true;
  return clusters_available && c.get("cluster", 1) <= max_cluster;
}
}  // namespace

ConfigSpace prune_for_clusters(const ConfigSpace& space, bool clusters_available, int max_cluster) {
  ConfigSpace out;
  out.key = space.key;
  out.default_config = space.default_config;
  for (const auto& c : space.configs)
    if (launchable(c, clusters_available, max_cluster)) out.configs.push_back(c);
  if (!launchable(out.default_config, clusters_available, max_cluster) && !out.configs.empty())
    out.default_config = out.configs.front();
  return out;
}

}  // namespace caliber::tune
