#include "backends/rocm/rocm_tools.hpp"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "backends/probe.hpp"

namespace caliber::backends::rocm {

using nlohmann::json;

std::vector<DeviceDesc> parse_amd_smi_list(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw std::invalid_argument("amd-smi list: output is not JSON");
  const json* list = &doc;
  if (doc.is_object()) list = find_key(doc, "gpu_data");
  if (list == nullptr || !list->is_array()) {
    throw std::invalid_argument("amd-smi list: expected a list of GPUs (or \"gpu_data\")");
  }
  std::vector<DeviceDesc> out;
  for (const json& g : *list) {
    if (!g.is_object()) continue;
    DeviceDesc d;
    std::string idx = text_of(g, {"gpu", "gpu_id", "index"});
    d.physical_id = idx.empty() ? std::to_string(out.size()) : idx;
    d.index = static_cast<int>(out.size());
    d.uuid = text_of(g, {"uuid"});
    const std::string bdf = text_of(g, {"bdf", "pci_bdf"});
    if (!bdf.empty()) d.extra["pci_bus_id"] = bdf;
    const std::string partition = text_of(g, {"partition_id"});
    if (!partition.empty()) d.extra["partition_id"] = partition;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<DeviceDesc> parse_rocm_smi_productname(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw std::invalid_argument("rocm-smi --showproductname: output is not a JSON object");
  }
  std::vector<DeviceDesc> out;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    // Only "cardN" entries are devices; rocm-smi adds "system" entries in some releases.
    if (key.rfind("card", 0) != 0 || key.size() == 4 || !it.value().is_object()) continue;
    const std::string number = key.substr(4);
    // Digits only, and few enough for an int (the sort below reads them as one).
    if (number.size() > 9 ||
        !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    DeviceDesc d;
    d.physical_id = number;
    d.name = text_of(it.value(), {"Card Series", "Card Model", "Device Name"});
    d.compute_capability = text_of(it.value(), {"GFX Version"});
    const std::string sku = text_of(it.value(), {"Card SKU"});
    if (!sku.empty()) d.extra["sku"] = sku;
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const DeviceDesc& a, const DeviceDesc& b) {
    return std::stoi(a.physical_id) < std::stoi(b.physical_id);
  });
  for (std::size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<int>(i);
  return out;
}

void merge_product_names(std::vector<DeviceDesc>& devices, const std::vector<DeviceDesc>& names) {
  for (DeviceDesc& d : devices) {
    for (const DeviceDesc& n : names) {
      if (n.physical_id != d.physical_id) continue;
      if (d.name.empty()) d.name = n.name;
      if (d.compute_capability.empty()) d.compute_capability = n.compute_capability;
      for (const auto& [k, v] : n.extra) d.extra.emplace(k, v);
    }
  }
}

}  // namespace caliber::backends::rocm
