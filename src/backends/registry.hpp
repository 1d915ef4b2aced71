// Backend registry: every backend, alias resolution, auto selection.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends {

// All backends in auto-selection order: cuda, rocm, musa, ascend, cpu.
[[nodiscard]] const std::vector<const Backend*>& all_backends();
// The backend with this name or alias (case-insensitive), or nullptr.
[[nodiscard]] const Backend* find_backend(std::string_view name_or_alias);
// "auto" (or empty): the first backend with a device, else cpu. Otherwise by name or alias;
// an unknown name throws std::invalid_argument listing the valid names and aliases.
[[nodiscard]] const Backend& resolve_backend(std::string_view requested);
// "cuda (nvidia), rocm (amd, hip), ..." for messages.
[[nodiscard]] std::string valid_backend_names();

}  // namespace caliber::backends
