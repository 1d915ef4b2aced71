// Backend registry: every backend, alias resolution, auto selection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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

// A process-wide wrapper around every device a run opens (open_device): a host program that
// embeds caliber installs one where it must own the device's graph captures (the Python package
// captures through torch's graph API and memory pool, docs/python.md). None by default.
using DeviceDecorator = std::function<std::unique_ptr<Device>(std::unique_ptr<Device>)>;
void set_device_decorator(DeviceDecorator decorator);
// backend.open(visible_index, seed), passed through the decorator when one is installed.
[[nodiscard]] std::unique_ptr<Device> open_device(const Backend& backend, int visible_index,
                                                  std::uint64_t seed);

}  // namespace caliber::backends
