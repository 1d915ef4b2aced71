// Parsers of the ROCm tools' machine-readable output. Pure: tested on sample outputs.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends::rocm {

// `amd-smi list --json`: a list of {gpu, bdf, uuid, ...}; older releases wrap it in "gpu_data".
// physical_id = the "gpu" index. Throws std::invalid_argument on text that is not that JSON.
[[nodiscard]] std::vector<DeviceDesc> parse_amd_smi_list(const std::string& json_text);
// `rocm-smi --showproductname --json`: {"card0": {"Card Series": ..., "GFX Version": ...}, ...}.
[[nodiscard]] std::vector<DeviceDesc> parse_rocm_smi_productname(const std::string& json_text);
// Names (and gfx versions) from rocm-smi folded into amd-smi's list, matched by index.
void merge_product_names(std::vector<DeviceDesc>& devices, const std::vector<DeviceDesc>& names);

}  // namespace caliber::backends::rocm
