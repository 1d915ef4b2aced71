// run_identity.json: the caliber of a run. Two runs are comparable only when these agree.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace caliber::core {

// The file name inside a run directory.
inline constexpr const char* identity_file = "run_identity.json";

// The keys that make two runs comparable (DESIGN.md): a difference in any is a caliber mismatch.
[[nodiscard]] const std::vector<std::string>& caliber_keys();  // level, timer, backend,
                                                               // device_model, tune, repeat, l2
struct IdentityDiff {
  std::string key;
  std::string a, b;
};
// Differences of the caliber keys between two identities (device_model read from device.name).
[[nodiscard]] std::vector<IdentityDiff> diff_identity(const nlohmann::json& a,
                                                      const nlohmann::json& b);
// Throws std::runtime_error when the file is missing, not a regular file, larger than
// kMaxIdentityBytes or not a JSON object.
inline constexpr std::uintmax_t kMaxIdentityBytes = 16u << 20;
[[nodiscard]] nlohmann::json read_identity(const std::filesystem::path& run_dir);
void write_identity(const std::filesystem::path& run_dir, const nlohmann::json& identity);
// The run header printed at start, one line from the identity: backend, device, timer, level,
// autotune mode, repeat and L2 policy ("?" where the identity lacks a key).
[[nodiscard]] std::string run_header_text(const nlohmann::json& identity);
[[nodiscard]] std::string caliber_version();
[[nodiscard]] std::string caliber_git_commit();
[[nodiscard]] std::string host_name();

}  // namespace caliber::core
