// Visibility variables: which physical devices a caller sees, and how a child is pinned to one.
// Pure functions of the variable's value, so every vendor's rule is testable without a device.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends {

// The devices a caller sees, by physical id ("7", "GPU-5a3f..."), in the order the caller sees
// them. `all` is true when the variable is unset: every physical device is visible, index ==
// physical id.
struct Visibility {
  bool all = true;
  std::vector<std::string> ids;
  bool operator==(const Visibility&) const = default;
};

// CUDA_VISIBLE_DEVICES: indices or UUID prefixes ("GPU-...", "MIG-..."); the first invalid entry
// (not a number, negative, >= physical_count when known, an unknown prefix) ends the list, as the
// CUDA runtime does. An empty string hides every device. physical_count < 0: unknown.
[[nodiscard]] Visibility parse_cuda_visible(std::optional<std::string_view> value,
                                            int physical_count = -1);
// ROCm: ROCR_VISIBLE_DEVICES (indices or UUIDs) is applied first by the ROCr runtime, then
// HIP_VISIBLE_DEVICES indexes into what ROCr left visible. The result is in physical ids.
[[nodiscard]] Visibility parse_rocm_visible(std::optional<std::string_view> rocr,
                                            std::optional<std::string_view> hip,
                                            int physical_count = -1);
// MUSA_VISIBLE_DEVICES: indices only; the first invalid entry ends the list.
[[nodiscard]] Visibility parse_musa_visible(std::optional<std::string_view> value,
                                            int physical_count = -1);
// ASCEND_RT_VISIBLE_DEVICES: logical ids in strictly ascending order; parsing stops at the first
// entry that is not a number or not above the previous one.
[[nodiscard]] Visibility parse_ascend_visible(std::optional<std::string_view> value,
                                              int physical_count = -1);

// The physical id behind the caller's visible index. `visible_count` is how many devices the
// caller sees (from enumeration). Throws std::out_of_range listing the visible devices.
[[nodiscard]] std::string physical_id_for(const Visibility& vis, int visible_index,
                                          int visible_count);

// Devices as the caller sees them: `physical` is every device the vendor tool reports (physical_id
// = the tool's index, uuid when known), filtered and reordered by `vis`; index = the caller's
// index.
[[nodiscard]] std::vector<DeviceDesc> apply_visibility(const std::vector<DeviceDesc>& physical,
                                                       const Visibility& vis);

// The process environment, one variable (nullopt when unset).
[[nodiscard]] std::optional<std::string> env_value(const char* name);

}  // namespace caliber::backends
