// run.log: JSON Lines. header, one case row per case (appended and flushed), footer.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "records/runlog_rows.hpp"

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

// Field names of the run.log rows (docs/run-log.md), spelled once. The field lists of the typed
// rows (core/runlog_rows.cpp) use them; writers and readers use the structs, not the keys.
// Case-row fields first, then those of a provider object inside "providers".
namespace field {
inline constexpr const char* type = "type";  // header | case | footer (row_type below)
inline constexpr const char* op = "op";
inline constexpr const char* dtype = "dtype";
inline constexpr const char* shape = "shape";  // the size detail string
inline constexpr const char* dims = "dims";    // the shape as a list of integers
inline constexpr const char* node = "node";
inline constexpr const char* params = "params";
inline constexpr const char* family = "family";
inline constexpr const char* profile = "profile";  // a --profile row
inline constexpr const char* status = "status";    // ok | failed | skipped (status below)
inline constexpr const char* timer = "timer";
inline constexpr const char* markers = "markers";
inline constexpr const char* providers = "providers";    // list of per-provider objects, below
inline constexpr const char* latency_ms = "latency_ms";  // the candidate's
inline constexpr const char* latency_base_ms = "latency_base_ms";  // the baseline's
inline constexpr const char* speedup = "speedup";
inline constexpr const char* tflops = "tflops";
inline constexpr const char* gbps = "gbps";
inline constexpr const char* noise = "noise";
inline constexpr const char* pct_peak_bw = "pct_peak_bw";
inline constexpr const char* pct_peak_flops = "pct_peak_flops";
inline constexpr const char* accuracy = "accuracy";  // true | false | null (baseline-only)
inline constexpr const char* repeat = "repeat";
inline constexpr const char* error = "error";
inline constexpr const char* reason = "reason";  // why skipped
// provider objects
inline constexpr const char* name = "name";
inline constexpr const char* role = "role";  // candidate | baseline (role below)
inline constexpr const char* label = "label";
inline constexpr const char* samples_ms = "samples_ms";
inline constexpr const char* samples_total = "samples_total";  // samples_ms thinned from
inline constexpr const char* quantiles_ms = "quantiles_ms";
inline constexpr const char* config = "config";
inline constexpr const char* tune = "tune";                  // an object: tune_field below
inline constexpr const char* tune_markers = "tune_markers";  // the markers the tuner set
inline constexpr const char* stop_reason = "stop_reason";
inline constexpr const char* converged = "converged";
inline constexpr const char* throttled_discarded = "throttled_discarded";
inline constexpr const char* power_capped_samples = "power_capped_samples";
inline constexpr const char* launches_per_sample = "launches_per_sample";
inline constexpr const char* l2_method = "l2_method";
inline constexpr const char* sample_method = "sample_method";
inline constexpr const char* timer_resolution_us = "timer_resolution_us";
// The kernel trace's (sample_method "kernel-trace"): the events' figure of the same samples, the
// activities of one launch and their summed durations, the records' unit, the host's cost.
inline constexpr const char* event_latency_ms = "event_latency_ms";
inline constexpr const char* kernel_count = "kernel_count";
inline constexpr const char* kernel_sum_ms = "kernel_sum_ms";
inline constexpr const char* record_resolution_us = "record_resolution_us";
inline constexpr const char* trace_host_us = "trace_host_us";
inline constexpr const char* regime = "regime";
inline constexpr const char* regime_discarded = "regime_discarded";
inline constexpr const char* settle_s = "settle_s";
inline constexpr const char* settled = "settled";
// How the provider's clock regime was reached: settled | carried (docs/timing.md).
inline constexpr const char* settle = "settle";
// What the correctness gate compared (docs/run-log.md): the method and the fraction of the
// output's elements compared value by value, and how many.
inline constexpr const char* check_method = "check_method";
inline constexpr const char* check_coverage = "check_coverage";
inline constexpr const char* check_elements = "check_elements";
// Where a case's wall time went (case rows; the footer sums them): making inputs, preparing the
// providers (tuning included), the correctness gate, the clock regime's settling, the timers'
// own sampling, and the rest; wall_s is their sum.
inline constexpr const char* inputs_s = "inputs_s";
inline constexpr const char* prepare_s = "prepare_s";
inline constexpr const char* check_s = "check_s";
inline constexpr const char* timing_s = "timing_s";
inline constexpr const char* host_s = "host_s";
inline constexpr const char* other_s = "other_s";
inline constexpr const char* clock_known = "clock_known";
inline constexpr const char* sm_clock_mean_mhz = "sm_clock_mean_mhz";
inline constexpr const char* sm_clock_min_mhz = "sm_clock_min_mhz";
inline constexpr const char* sm_clock_max_mhz = "sm_clock_max_mhz";
inline constexpr const char* power_w = "power_w";
inline constexpr const char* power_limit_w = "power_limit_w";
inline constexpr const char* other_processes = "other_processes";
inline constexpr const char* clock_reasons = "clock_reasons";
inline constexpr const char* wall_s = "wall_s";
inline constexpr const char* note = "note";
inline constexpr const char* failure = "failure";
inline constexpr const char* accuracy_detail = "accuracy_detail";
inline constexpr const char* rel_err = "rel_err";
inline constexpr const char* max_abs_err = "max_abs_err";
inline constexpr const char* graph_latency_ms = "graph_latency_ms";
inline constexpr const char* graph_launches_per_sample = "graph_launches_per_sample";
inline constexpr const char* range = "range";        // a --profile provider's range name
inline constexpr const char* launches = "launches";  // and its launches
// A paired A/B's provider (docs/ab.md): its blocks' medians in time order, and how many blocks.
inline constexpr const char* block_medians_ms = "block_medians_ms";
inline constexpr const char* paired_blocks = "paired_blocks";
inline constexpr const char* paired_method = "paired_method";
inline constexpr const char* paired_phases = "paired_phases";
// The host cost of one eager call (a provider's wall time per call over a run of launches on an
// idle stream; docs/flaggems.md), and the row's: the candidate's and the baseline's.
inline constexpr const char* host_ms = "host_ms";
inline constexpr const char* host_base_ms = "host_base_ms";
}  // namespace field

// The fields of a provider's "tune" object.
namespace tune_field {
inline constexpr const char* source = "source";  // default, tuned, cache, replay, replay-missing
inline constexpr const char* tried = "tried";
inline constexpr const char* rejected = "rejected";
inline constexpr const char* sweep_s = "sweep_s";
inline constexpr const char* key = "key";
inline constexpr const char* evicted = "evicted";
inline constexpr const char* swept_by = "swept_by";  // who swept when not caliber ("triton")
}  // namespace tune_field

// The values of "type".
namespace row_type {
inline constexpr const char* header = "header";
inline constexpr const char* case_row = "case";
inline constexpr const char* footer = "footer";
}  // namespace row_type

// The values of a case row's "status".
namespace status {
inline constexpr const char* ok = "ok";
inline constexpr const char* failed = "failed";
inline constexpr const char* skipped = "skipped";
}  // namespace status

// The values of a provider's "role".
namespace role {
inline constexpr const char* candidate = "candidate";
inline constexpr const char* baseline = "baseline";
}  // namespace role

class RunLogWriter {
 public:
  explicit RunLogWriter(const std::filesystem::path& file);  // creates or appends
  ~RunLogWriter();
  RunLogWriter(const RunLogWriter&) = delete;
  RunLogWriter& operator=(const RunLogWriter&) = delete;
  // Appends one line and flushes it to the OS before returning.
  void append(const nlohmann::json& row);
  // The typed rows, through their one conversion (core/runlog_rows.hpp).
  void append_header(const RunLogHeader& header) { append(to_json(header)); }
  void append_case(const CaseRow& row) { append(to_json(row)); }
  void append_footer(const RunLogFooter& footer) { append(to_json(footer)); }

 private:
  std::FILE* f_ = nullptr;
};

// A run.log as read: typed rows (core/runlog_rows.hpp).
struct RunLog {
  std::optional<RunLogHeader> header;  // absent when the file has none
  int schema = 0;                      // the header's "schema" (0: absent, or no header)
  std::vector<CaseRow> cases;          // rows of type "case"
  std::optional<RunLogFooter> footer;  // absent when the run did not finish
  bool truncated = false;              // the last line was cut and ignored
  // Unparsable lines other than a truncated last one, and rows that are not of their type
  // (a RowError: a key of the wrong type, a case row without "op"); the first such error.
  int bad_lines = 0;
  std::string first_bad_line_error;
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
