#include "backends/musa/musa_tools.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "backends/probe.hpp"

namespace caliber::backends::musa {

using nlohmann::json;

namespace {

// The GPU objects, wherever this release of the tool put them.
std::vector<const json*> gpu_objects(const json& doc) {
  std::vector<const json*> out;
  const json* list = nullptr;
  if (doc.is_array()) {
    list = &doc;
  } else if (doc.is_object()) {
    for (std::string_view k : {"GPU", "GPUs", "gpu_list", "Attached GPU List"}) {
      const json* v = find_key(doc, k);
      if (v != nullptr && (v->is_array() || v->is_object())) {
        list = v;
        break;
      }
    }
    if (list == nullptr) {
      // nvidia-smi style: one key per GPU ("GPU 00000000:3B:00.0").
      for (auto it = doc.begin(); it != doc.end(); ++it) {
        if (it.key().rfind("GPU", 0) == 0 && it.value().is_object()) out.push_back(&it.value());
      }
      return out;
    }
  }
  if (list == nullptr) return out;
  if (list->is_object()) {
    out.push_back(list);  // a single GPU
  } else {
    for (const json& g : *list) {
      if (g.is_object()) out.push_back(&g);
    }
  }
  return out;
}

}  // namespace

std::vector<DeviceDesc> parse_mthreads_gmi(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw std::invalid_argument("mthreads-gmi: output is not JSON");
  const auto gpus = gpu_objects(doc);
  if (gpus.empty()) throw std::invalid_argument("mthreads-gmi: no GPU list in the output");
  const std::string driver = doc.is_object() ? text_of(doc, {"Driver Version", "Driver"}) : "";
  std::vector<DeviceDesc> out;
  for (const json* g : gpus) {
    DeviceDesc d;
    const std::string idx = text_of(*g, {"Index", "GPU Index", "Minor Number", "id"});
    d.physical_id = idx.empty() ? std::to_string(out.size()) : idx;
    d.index = static_cast<int>(out.size());
    d.name = text_of(*g, {"Product Name", "Name", "Product"});
    d.uuid = text_of(*g, {"GPU UUID", "UUID"});
    d.driver_version = text_of(*g, {"Driver Version"});
    if (d.driver_version.empty()) d.driver_version = driver;
    for (std::string_view mem_key : {"Memory Usage", "FB Memory Usage", "Memory"}) {
      if (const json* mem = find_key(*g, mem_key); mem != nullptr && mem->is_object()) {
        d.mem_total = parse_bytes(text_of(*mem, {"Total"}), 1024 * 1024);
        d.mem_used = parse_bytes(text_of(*mem, {"Used"}), 1024 * 1024);
        break;
      }
    }
    if (const json* clocks = find_key(*g, "Clocks"); clocks != nullptr && clocks->is_object()) {
      d.sm_clock_mhz = parse_mhz(text_of(*clocks, {"Graphics", "GPU", "SM"}));
      d.mem_clock_mhz = parse_mhz(text_of(*clocks, {"Memory", "Mem"}));
    }
    if (const json* mx = find_key(*g, "Max Clocks"); mx != nullptr && mx->is_object()) {
      d.sm_clock_max_mhz = parse_mhz(text_of(*mx, {"Graphics", "GPU", "SM"}));
    }
    const std::string bus = text_of(*g, {"PCI Bus Id", "Bus Id"});
    if (!bus.empty()) d.extra["pci_bus_id"] = bus;
    if (const json* pci = find_key(*g, "PCI"); pci != nullptr && pci->is_object()) {
      const std::string b = text_of(*pci, {"Bus Id", "Bus"});
      if (!b.empty()) d.extra["pci_bus_id"] = b;
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace caliber::backends::musa
