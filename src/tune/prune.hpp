// Capability pruning of config spaces (the cluster-fix stage).
#pragma once

#include "caliber/config.hpp"

namespace caliber::tune {

// Drops configs that need thread-block clusters where the backend has none, or whose cluster
// size exceeds `max_cluster` (the largest the device can launch). A pruned default is replaced
// by the first surviving config, so the default stays launchable.
[[nodiscard]] ConfigSpace prune_for_clusters(const ConfigSpace& space, bool clusters_available,
                                             int max_cluster);

}  // namespace caliber::tune
