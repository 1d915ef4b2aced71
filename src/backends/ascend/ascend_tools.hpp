// Parser of `npu-smi info` (a text table; npu-smi has no JSON output). Pure: tested on samples.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends::ascend {

// One device per chip row pair of the first table; physical_id = the logical id in table order
// (what ASCEND_RT_VISIBLE_DEVICES counts). The process table after it is ignored.
[[nodiscard]] std::vector<DeviceDesc> parse_npu_smi_info(const std::string& text);

}  // namespace caliber::backends::ascend
