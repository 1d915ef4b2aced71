// Parser of `mthreads-gmi -q --json`. Pure: tested on sample output.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends::musa {

// The GPU entries of `mthreads-gmi -q --json`. Values carry units ("81920MiB", "1750MHz"), keys
// vary in spelling between driver releases. physical_id = the GPU's index. Throws
// std::invalid_argument on text that is not JSON or holds no GPU list.
[[nodiscard]] std::vector<DeviceDesc> parse_mthreads_gmi(const std::string& json_text);

}  // namespace caliber::backends::musa
