#include "backends/visibility.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include "settings/knobs.hpp"

namespace caliber::backends {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out = core::split_fields(s, ',');
  for (auto& f : out) f = trim(f);
  return out;
}

// A non-negative decimal index, or -1.
long parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  if (!std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return -1;
  }
  return std::strtol(s.c_str(), nullptr, 10);
}

bool has_prefix_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

bool is_uuid_entry(const std::string& s) {
  return (has_prefix_ci(s, "GPU-") || has_prefix_ci(s, "MIG-")) && s.size() > 4;
}

bool index_in_range(long idx, int count) {
  return idx >= 0 && (count < 0 || idx < count);
}

// Indices (and, when allowed, UUID prefixes) up to the first invalid entry.
Visibility parse_list(std::optional<std::string_view> value, int physical_count, bool allow_uuid) {
  Visibility vis;
  if (!value) return vis;
  vis.all = false;
  if (trim(*value).empty()) return vis;
  for (const std::string& entry : split_commas(*value)) {
    const long idx = parse_index(entry);
    if (idx >= 0) {
      if (!index_in_range(idx, physical_count)) break;
      vis.ids.push_back(std::to_string(idx));
    } else if (allow_uuid && is_uuid_entry(entry)) {
      vis.ids.push_back(entry);
    } else {
      break;
    }
  }
  return vis;
}

}  // namespace

Visibility parse_cuda_visible(std::optional<std::string_view> value, int physical_count) {
  return parse_list(value, physical_count, /*allow_uuid=*/true);
}

Visibility parse_musa_visible(std::optional<std::string_view> value, int physical_count) {
  return parse_list(value, physical_count, /*allow_uuid=*/false);
}

Visibility parse_rocm_visible(std::optional<std::string_view> rocr,
                              std::optional<std::string_view> hip, int physical_count) {
  const Visibility first = parse_list(rocr, physical_count, /*allow_uuid=*/true);
  if (!hip) return first;
  // HIP indexes into what ROCr left visible: count that list when ROCr restricted it.
  const int hip_space = first.all ? physical_count : static_cast<int>(first.ids.size());
  const Visibility second = parse_list(hip, hip_space, /*allow_uuid=*/first.all);
  if (first.all) return second;
  Visibility out;
  out.all = false;
  for (const std::string& id : second.ids) {
    out.ids.push_back(first.ids[static_cast<std::size_t>(parse_index(id))]);
  }
  return out;
}

Visibility parse_ascend_visible(std::optional<std::string_view> value, int physical_count) {
  Visibility vis;
  if (!value) return vis;
  vis.all = false;
  if (trim(*value).empty()) return vis;
  long previous = -1;
  for (const std::string& entry : split_commas(*value)) {
    const long idx = parse_index(entry);
    if (idx < 0 || idx <= previous || !index_in_range(idx, physical_count)) break;
    vis.ids.push_back(std::to_string(idx));
    previous = idx;
  }
  return vis;
}

std::string physical_id_for(const Visibility& vis, int visible_index, int visible_count) {
  const int count = vis.all ? visible_count : static_cast<int>(vis.ids.size());
  if (visible_index < 0 || visible_index >= count) {
    std::string listing;
    for (int i = 0; i < count; ++i) {
      if (!listing.empty()) listing += ", ";
      listing += std::to_string(i) + " (physical " +
                 (vis.all ? std::to_string(i) : vis.ids[static_cast<std::size_t>(i)]) + ")";
    }
    throw std::out_of_range(
        "device " + std::to_string(visible_index) + " is out of range; " +
        (count == 0 ? std::string("no device is visible") : "visible devices: " + listing));
  }
  return vis.all ? std::to_string(visible_index) : vis.ids[static_cast<std::size_t>(visible_index)];
}

std::vector<DeviceDesc> apply_visibility(const std::vector<DeviceDesc>& physical,
                                         const Visibility& vis) {
  std::vector<DeviceDesc> out;
  if (vis.all) {
    out = physical;
    for (std::size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<int>(i);
    return out;
  }
  for (const std::string& id : vis.ids) {
    const DeviceDesc* match = nullptr;
    for (const DeviceDesc& d : physical) {
      const bool by_index = parse_index(id) >= 0 && d.physical_id == id;
      // UUID entries are prefixes; tools differ on whether they print the "GPU-" part.
      const bool by_uuid = !by_index && parse_index(id) < 0 && !d.uuid.empty() &&
                           (has_prefix_ci(d.uuid, id) || has_prefix_ci("GPU-" + d.uuid, id));
      if (by_index || by_uuid) {
        match = &d;
        break;
      }
    }
    if (match == nullptr) break;  // the runtime would stop here too
    DeviceDesc d = *match;
    d.index = static_cast<int>(out.size());
    d.physical_id = id;
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace caliber::backends
