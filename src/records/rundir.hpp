// Claiming a run directory: a bare mkdir, never over an existing one; -2, -3, ... on collision.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>

namespace caliber::core {

// "<parent>/<name>-<YYYYmmdd-HHMMSS>" claimed atomically, or with "-2", "-3", ... appended.
// Creates `parent` (and its parents) if missing. Throws std::runtime_error when it cannot.
[[nodiscard]] std::filesystem::path claim_run_dir(
    const std::filesystem::path& parent, const std::string& name,
    std::chrono::system_clock::time_point when = std::chrono::system_clock::now());

// Checks, creating nothing, that run directories can be claimed under `parent`: the path is not
// empty or too long (kMaxOutPath characters, each name at most 255), its deepest existing folder
// is a directory we may write to, and nothing on the way is a file. Throws std::invalid_argument
// with the reason (callers name the knob).
inline constexpr std::size_t kMaxOutPath = 3000;
void check_out_dir(const std::filesystem::path& parent);

// Writes `content` to `file` atomically (temporary file in the same folder, then rename). Refuses
// (std::runtime_error) to replace anything but a regular file: a device, a fifo, a directory or
// a symbolic link at `file` is left as it is.
void write_file_atomic(const std::filesystem::path& file, const std::string& content);
// The same, the content written by `write` as it goes (an export of millions of entries is never
// held whole in memory). A failed write (a full disk) leaves `file` as it was.
void write_file_atomic(const std::filesystem::path& file,
                       const std::function<void(std::ostream&)>& write);

// Why read_data_file could not read a file; what(): "cannot read FILE: WHY".
class DataFileError : public std::runtime_error {
 public:
  DataFileError(const std::filesystem::path& file, std::string why)
      : std::runtime_error("cannot read " + file.string() + ": " + why), why_(std::move(why)) {}
  [[nodiscard]] const std::string& why() const noexcept { return why_; }

 private:
  std::string why_;
};

// A data file caliber reads back (run_identity.json, ops_status.csv, batch.json, a peaks cache):
// its whole text. The file is opened without blocking and checked on the open descriptor, so a
// fifo never hangs the reader and a device (/dev/zero) is never read. Throws DataFileError when
// it does not exist, is not a regular file, is a symbolic link (Links::refuse: a file caliber
// also rewrites, which it never writes through a link) or is larger than `max_bytes`
// (docs/limits.md).
enum class Links { follow, refuse };
[[nodiscard]] std::string read_data_file(const std::filesystem::path& file,
                                         std::uintmax_t max_bytes, Links links = Links::follow);

// "2026-11-29T15:28:25Z"
[[nodiscard]] std::string iso8601_utc(std::chrono::system_clock::time_point t);

}  // namespace caliber::core
