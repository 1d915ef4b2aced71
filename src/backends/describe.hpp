// What `caliber devices` shows: every backend, whether its runtime is there, its devices and
// capabilities, and why it has none.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"

namespace caliber::backends {

[[nodiscard]] nlohmann::json describe_device(const DeviceDesc& d);
[[nodiscard]] nlohmann::json describe_capabilities(const Capabilities& c);
// One backend: name, aliases, visibility variables (with the caller's values), availability,
// capabilities, devices, and "why_none" when it has no device.
[[nodiscard]] nlohmann::json describe_backend(const Backend& b);
// {"backends": [...]} over every backend in auto-selection order.
[[nodiscard]] nlohmann::json describe_backends();
// The terminal form of describe_backends()' output (or of one backend wrapped the same way).
[[nodiscard]] std::string format_backends(const nlohmann::json& described);

}  // namespace caliber::backends
