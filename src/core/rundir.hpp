// Claiming a run directory: a bare mkdir, never over an existing one; -2, -3, ... on collision.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace caliber::core {

// "<parent>/<name>-<YYYYmmdd-HHMMSS>" claimed atomically, or with "-2", "-3", ... appended.
// Creates `parent` (and its parents) if missing. Throws std::runtime_error when it cannot.
[[nodiscard]] std::filesystem::path claim_run_dir(
    const std::filesystem::path& parent, const std::string& name,
    std::chrono::system_clock::time_point when = std::chrono::system_clock::now());

// Writes `content` to `file` atomically (temporary file in the same folder, then rename).
void write_file_atomic(const std::filesystem::path& file, const std::string& content);

// "2026-11-29T15:28:25Z"
[[nodiscard]] std::string iso8601_utc(std::chrono::system_clock::time_point t);

}  // namespace caliber::core
