// caliber identity RUN [--diff OTHER]: a run's caliber (the keys that make two runs comparable,
// and the device), and the differences between two runs.
#pragma once

#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "report/table.hpp"

namespace caliber::report {

// Throws std::runtime_error when a run_identity.json cannot be read.
[[nodiscard]] Report identity_report(const nlohmann::json& identity, const std::string& source);
[[nodiscard]] Report identity_diff_report(const nlohmann::json& a, const std::string& source_a,
                                          const nlohmann::json& b, const std::string& source_b);

}  // namespace caliber::report
