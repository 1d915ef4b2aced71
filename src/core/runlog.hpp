// run.log: JSON Lines. header, one case row per case (appended and flushed), footer.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace caliber::core {

// The file name inside a run directory.
inline constexpr const char* run_log_file = "run.log";

// Field names of a case row (DESIGN.md, Files). Every writer and reader uses these.
namespace field {
inline constexpr const char* type = "type";  // header | case | footer
inline constexpr const char* op = "op";
inline constexpr const char* dtype = "dtype";
inline constexpr const char* shape = "shape";  // the size detail string
inline constexpr const char* dims = "dims";    // the shape as a list of integers
inline constexpr const char* node = "node";
inline constexpr const char* status = "status";  // ok | failed | skipped
inline constexpr const char* timer = "timer";
inline constexpr const char* markers = "markers";
inline constexpr const char* providers = "providers";    // list of per-provider objects, below
inline constexpr const char* latency_ms = "latency_ms";  // the candidate's
inline constexpr const char* latency_base_ms = "latency_base_ms";  // the baseline's
inline constexpr const char* speedup = "speedup";
inline constexpr const char* tflops = "tflops";
inline constexpr const char* gbps = "gbps";
inline constexpr const char* accuracy = "accuracy";  // true | false | null (baseline-only)
inline constexpr const char* repeat = "repeat";
inline constexpr const char* error = "error";
inline constexpr const char* reason = "reason";          // why skipped
inline constexpr const char* samples_ms = "samples_ms";  // inside a provider object
}  // namespace field

// A per-provider object inside "providers":
// {"name","role","latency_ms","samples_ms":[...],"timer","markers":[...],"noise","stop_reason",
//  "throttled_discarded","power_capped_samples" (when >
//  0),"repeat","tflops","gbps","accuracy","config","tune":{...},"error"}

class RunLogWriter {
 public:
  explicit RunLogWriter(const std::filesystem::path& file);  // creates or appends
  ~RunLogWriter();
  RunLogWriter(const RunLogWriter&) = delete;
  RunLogWriter& operator=(const RunLogWriter&) = delete;
  // Appends one line and flushes it to the OS before returning.
  void append(const nlohmann::json& row);

 private:
  std::FILE* f_ = nullptr;
};

struct RunLog {
  nlohmann::json header;              // null when absent
  std::vector<nlohmann::json> cases;  // rows of type "case"
  nlohmann::json footer;              // null when absent (a run that did not finish)
  bool truncated = false;             // the last line was cut and ignored
  int bad_lines = 0;                  // unparsable lines other than a truncated last one
  // Lines kept after a repair: invalid UTF-8 bytes replaced by '?', non-JSON numbers (NaN,
  // Infinity, 1e999999) read as null. One bad value must not lose a row, let alone the file.
  int repaired_lines = 0;
};

// The repair read_run_log applies to a line that does not parse (exposed for the fuzz targets
// and tests): invalid UTF-8 -> '?', NaN / Infinity / numbers past double -> null.
[[nodiscard]] std::string repair_json_line(const std::string& line);

// Reads a run.log, tolerating a truncated last line. Throws std::runtime_error if unreadable.
[[nodiscard]] RunLog read_run_log(const std::filesystem::path& file);

}  // namespace caliber::core
