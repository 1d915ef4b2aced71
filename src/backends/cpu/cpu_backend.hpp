// The cpu backend: the host as a device, the default where no accelerator is present.
// CALIBER_CPU_DEVICES=N cuts the allowed cores into N devices (disjoint groups, so parallel-warmup
// shards do not share cores); CALIBER_CPU_VISIBLE_DEVICES selects among them as
// CUDA_VISIBLE_DEVICES does among GPUs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_host_info.hpp"

namespace caliber::backends {

[[nodiscard]] const Backend& cpu_backend();

namespace cpu {

struct Layout {
  int groups = 1;
  std::vector<std::vector<int>> group_cores;  // by physical group index
  std::vector<int> visible;                   // caller's index -> physical group index
  std::string error;                          // a bad CALIBER_CPU_DEVICES, else empty
};

// Pure: the groups and the visible list from the host facts and the two variables' values.
[[nodiscard]] inline Layout make_layout(const HostFacts& facts,
                                        const std::optional<std::string>& devices_env,
                                        const std::optional<std::string>& visible_env) {
  Layout l;
  if (const auto n = parse_device_count(devices_env)) {
    l.groups = *n;
  } else {
    l.error = std::string(kDevicesEnv) + "='" + devices_env.value_or("") +
              "' is not a device count (a positive integer)";
    l.groups = 1;
  }
  l.group_cores = split_cores(facts.cores, l.groups);
  l.visible = parse_visible(visible_env, l.groups);
  return l;
}

[[nodiscard]] inline DeviceDesc describe_device(const HostFacts& facts, const Layout& l,
                                                int visible_index) {
  const int g = l.visible.at(static_cast<std::size_t>(visible_index));
  const auto& cores = l.group_cores.at(static_cast<std::size_t>(g));
  DeviceDesc d;
  d.index = visible_index;
  d.physical_id = std::to_string(g);
  d.name = facts.model_name;
  d.mem_total = facts.mem_total;
  d.mem_used = facts.mem_total >= facts.mem_available ? facts.mem_total - facts.mem_available : 0;
  d.driver_version = facts.kernel;
#if defined(__clang__)
  d.runtime_version = std::string("built with ") + __VERSION__;
#else
  d.runtime_version = std::string("built with gcc ") + __VERSION__;
#endif
  d.sm_count = static_cast<int>(cores.size());
  d.l2_bytes = facts.llc_bytes;
  d.extra["cores"] = format_cpu_list(cores);
  d.extra["core_count"] = std::to_string(cores.size());
  d.extra["group"] = std::to_string(g) + " of " + std::to_string(l.groups);
  if (facts.llc_bytes != 0) {
    d.extra["llc"] = "L" + std::to_string(facts.llc_level) + " " +
                     std::to_string(facts.llc_bytes >> 10) + " KiB";
  }
  if (static_cast<std::size_t>(l.groups) > facts.cores.size()) {
    d.extra["note"] = "more devices than cores: groups share cores, timings couple";
  }
  return d;
}

}  // namespace cpu
}  // namespace caliber::backends
