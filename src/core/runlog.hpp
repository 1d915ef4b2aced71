// run.log: JSON Lines. header, one case row per case (appended and flushed), footer.
#pragma once

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace caliber::core {

// The file name inside a run directory.
inline constexpr const char* run_log_file = "run.log";

// The version of the run directory's formats (run.log, run_identity.json; docs/run-log.md). The
// run driver writes it as "schema" in the run.log header and in run_identity.json. A file
// without the field is schema 0 (written before it existed) and is read as it is; a file with a
// larger schema than this caliber knows is refused with SchemaError, since its fields may mean
// something this reader would get wrong. Adding a field does not change the schema; renaming,
// removing or changing the meaning of one does.
inline constexpr int schema_version = 1;

// A file written by a newer caliber (or with a schema field that is not an integer).
class SchemaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The schema of a header or identity object: its "schema", 0 when absent. Throws SchemaError
// naming `what` (the file) when it is newer than schema_version or not a non-negative integer.
int check_schema(const nlohmann::json& obj, const std::string& what);

// Field names of a case row (docs/run-log.md). Every writer and reader uses these.
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
  int schema = 0;                     // the header's "schema" (0: absent, or no header)
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

// Reads a run.log, tolerating a truncated last line. Throws std::runtime_error if unreadable,
// SchemaError when its header has a newer schema than this caliber reads.
[[nodiscard]] RunLog read_run_log(const std::filesystem::path& file);

}  // namespace caliber::core
