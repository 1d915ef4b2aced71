// Helpers for backends whose runtime this binary does not link: find the runtime library by
// loading it, and read the vendor tool's output. Nothing is linked against the vendor.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends {

// dlopen each name in turn (then close it); returns the first that loads, or nullopt.
[[nodiscard]] std::optional<std::string> find_library(const std::vector<std::string>& names);

// Availability of a runtime found by loading one of `names`; `what` names it ("HIP runtime").
[[nodiscard]] Availability library_availability(const std::vector<std::string>& names,
                                                const std::string& what);

// Runs `command` through the shell (stderr discarded, a 20 s limit) and returns its stdout, or
// nullopt when it could not run or exited non-zero.
[[nodiscard]] std::optional<std::string> run_tool(const std::string& command);

// The devices a vendor tool lists: run_tool's output through `parse`; none when the tool is
// missing or fails, or its output does not parse (a tool's format drifts between versions).
[[nodiscard]] std::vector<DeviceDesc> devices_from_tool(
    const std::string& command, std::vector<DeviceDesc> (*parse)(const std::string&));

// "81920MiB", "80 GB", "1024 KiB", "65536" (with default_unit) -> bytes; 0 when unparsable.
[[nodiscard]] std::uint64_t parse_bytes(const std::string& text, std::uint64_t default_unit = 1);
// "1500MHz", "1.5 GHz", "1500" -> MHz; 0 when unparsable.
[[nodiscard]] int parse_mhz(const std::string& text);

}  // namespace caliber::backends

#include <nlohmann/json.hpp>

namespace caliber::backends {

// Vendor tools change key spelling between versions ("Card Series" / "Card series" /
// "card_series"): find a key ignoring case, spaces, underscores and dashes. nullptr when absent.
[[nodiscard]] const nlohmann::json* find_key(const nlohmann::json& object, std::string_view key);
// The first present key among `keys`, as text (numbers printed), or "".
[[nodiscard]] std::string text_of(const nlohmann::json& object,
                                  std::initializer_list<std::string_view> keys);

}  // namespace caliber::backends
