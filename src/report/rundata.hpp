// Reading run and batch directories for the reports: which run directories an argument names,
// and the facts of a case row the reports need (status, speedup, markers, samples per provider).
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "records/markers.hpp"
#include "records/runlog.hpp"

namespace caliber::report {

inline constexpr const char* kFallbackMarker = core::markers::direct_no_graph;
inline constexpr const char* kPoisonedMarker = core::markers::capture_poisoned;
inline constexpr const char* kPowerCappedMarker = core::markers::power_capped;
inline constexpr const char* kStopMissedMarker = core::markers::stop_missed;

struct RunData {
  std::filesystem::path dir;
  nlohmann::json identity;  // null when run_identity.json is missing or unreadable
  std::string identity_error;
  core::RunLog log;
  // Case rows set aside because an earlier row of the same run.log is the same case (op, dtype,
  // shape, node and parameters alike): a case's first row counts, in every report (load_run).
  int duplicate_rows = 0;
  std::string first_duplicate;  // the node (else op, dtype, shape) of the first one set aside
};

// A run directory holds run.log. Any other directory holds run directories: every one of them,
// except in a batch directory (it holds ops_status.csv), where the runs its `run` column names
// count (a group's run only for its ops' rows: load_runs), or in a batch without that column a
// name run more than once (a resumed batch) counts only in its newest run. Throws
// std::runtime_error naming an argument that is neither.
[[nodiscard]] std::vector<std::filesystem::path> expand_run_dirs(
    const std::vector<std::filesystem::path>& dirs);
[[nodiscard]] bool is_run_dir(const std::filesystem::path& dir);
// A directory `caliber batch` wrote: it holds ops_status.csv.
[[nodiscard]] bool is_batch_dir(const std::filesystem::path& dir);
[[nodiscard]] RunData load_run(const std::filesystem::path& run_dir);
// The readers' check of the run directories a command names itself (summary, export, report;
// compare and history have their own stricter one): a run.log of which no line reads (no header,
// no row, no footer: not a caliber run.log at all) throws std::invalid_argument naming it, rather
// than reading as a run of nothing. A run inside a batch is left to the batch's reading: one
// op's broken log must not hide the others. `runs`: what load_runs read of them.
void check_named_runs(const std::vector<std::filesystem::path>& dirs,
                      const std::vector<RunData>& runs);
[[nodiscard]] std::vector<RunData> load_runs(const std::vector<std::filesystem::path>& dirs);
// The duplicate case rows of a set of runs, and the note a report prints about them.
struct DuplicateRows {
  int rows = 0, runs = 0;
  std::string first;  // the first one set aside and its run
  void add(const RunData& run);
  [[nodiscard]] std::string note() const;  // "" when there are none
};
[[nodiscard]] std::string duplicate_rows_note(const std::vector<RunData>& runs);

// "<name>-YYYYmmdd-HHMMSS[-N]" -> name, stamp, N (1 without suffix); nullopt when not that form.
struct RunDirName {
  std::string name;
  std::string stamp;
  int collision = 1;
};
[[nodiscard]] std::optional<RunDirName> parse_run_dir_name(const std::string& dirname);

// --- case rows (core::CaseRow, core/runlog_rows.hpp)
[[nodiscard]] std::string row_status(const core::CaseRow& row);  // "ok" when absent
// The pairing key: op, dtype and the size detail.
[[nodiscard]] std::string row_key(const core::CaseRow& row);
// Every marker on the row and on its providers, each once, in first-seen order.
[[nodiscard]] std::vector<std::string> row_markers(const core::CaseRow& row);
// A marker equal to `marker` or starting with it ("BENCHMARK_DIRECT_NO_CUDAGRAPH repeat=3").
[[nodiscard]] bool row_has_marker(const core::CaseRow& row, const std::string& marker);
// The row's speedup when it has a meaningful one: status ok, accuracy not false, finite and > 0.
[[nodiscard]] std::optional<double> row_speedup(const core::CaseRow& row);
[[nodiscard]] std::optional<double> positive_number(const nlohmann::json& v);
[[nodiscard]] std::optional<double> positive_number(const std::optional<double>& v);
// The row's first provider of that role (core::role), or nullptr.
[[nodiscard]] const core::ProviderRow* provider_with_role(const core::CaseRow& row,
                                                          const char* role);
// j[key] when j is an object holding it, else a null (an identity or row object read leniently).
[[nodiscard]] const nlohmann::json& json_member(const nlohmann::json& j, const char* key);

struct ProviderSamples {
  std::string name;
  std::string role;  // candidate | baseline
  double latency_ms = 0;
  std::vector<double> samples_ms;  // the stored samples, or the latency alone when none were stored
  bool raw_samples = false;        // samples_ms came from the row (not the latency alone)
  int samples_total = 0;           // the samples latency_ms is the median of (0: not recorded)
};
// The providers of a row; rows without a "providers" list give their latency_ms (candidate) and
// latency_base_ms (baseline).
[[nodiscard]] std::vector<ProviderSamples> row_providers(const core::CaseRow& row);

// The figure of a provider over several runs (a compare side, a history point): the median of
// the runs' own latency_ms, so one run reads as the figure its table, summary and export print
// (its kept samples, at most 200 of those its latency is the median of, may not; docs/ab.md).
[[nodiscard]] double figure_of_runs(std::span<const double> latencies_ms);

}  // namespace caliber::report
