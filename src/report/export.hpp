// caliber export: one row per case and provider of one or more runs, in formats other tools read
// (docs/run-log.md, "Exports"): CSV (one table, nothing else in the file), JSON (an array of row
// objects) and Google Benchmark's JSON (so its tools/compare.py and dashboards built for it read
// caliber's results). What is worth saying about the data but is not a row (a run that did not
// finish, a run without measured peaks) is returned as notes, for stderr.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/rundata.hpp"

namespace caliber::report {

enum class ExportFormat { csv, json, gbench, flaggems_log };
[[nodiscard]] std::optional<ExportFormat> parse_export_format(std::string_view s) noexcept;
// "csv, json, gbench, flaggems-log"
[[nodiscard]] const char* export_format_names() noexcept;

// Column kinds, so that every writer keeps a column's type: an int column never holds an empty
// cell (pandas would turn it into floats), a number column holds a number or nothing.
enum class ColumnKind { text, integer, number, boolean, json };

struct ExportColumn {
  std::string name;
  ColumnKind kind = ColumnKind::text;
};

struct ExportTable {
  std::vector<ExportColumn> columns;
  std::vector<std::vector<nlohmann::json>> rows;  // one value per column; null is empty
  std::vector<std::string> notes;                 // for stderr, never inside the table
};

// Every (case, provider) of the runs, in run.log order. A case with no provider object (skipped
// before setup, failed in setup) gives one row with an empty provider, so it is not lost. The
// quantile columns (p50_ms, p99_ms, ...) are those any run asked for with --quantiles.
[[nodiscard]] ExportTable export_table(const std::vector<RunData>& runs);

// RFC 4180 CSV: a header line, then one line per row; fields with a comma, quote or line break
// are quoted. Booleans are written true/false, JSON values (params, clock_reasons) compact.
[[nodiscard]] std::string render_export_csv(const ExportTable& t);
// An array with one object per row, keyed by column name, null for empty cells.
[[nodiscard]] nlohmann::json render_export_json(const ExportTable& t);
// Google Benchmark's JSON: {"context": {...}, "benchmarks": [...]}. Each timed provider of a
// case is a benchmark named "<node>/<provider>" with one "iteration" entry per stored sample
// (repetitions, so compare.py's U test has them) and the aggregates median, mean and stddev;
// a provider that failed is an entry with error_occurred. Times are in ns.
[[nodiscard]] nlohmann::json render_export_gbench(const std::vector<RunData>& runs);
// The same document as text (render_export_gbench(runs).dump(2) and a line break), written to
// `out` entry by entry, never held whole in memory (one entry per stored sample).
void write_export_gbench(std::ostream& out, const std::vector<RunData>& runs);

// Loads the directories (runs or batches) and renders one format. Throws std::runtime_error on a
// path that holds no run.
struct ExportResult {
  std::string text;
  std::vector<std::string> notes;
  // Where set (gbench), the output is written by it as it is made, not held in `text`.
  std::function<void(std::ostream&)> stream;
  void write(std::ostream& out) const {
    if (stream)
      stream(out);
    else
      out << text;
  }
};
// FlagGems' `--record log` lines: "[INFO] {json}" per (op, dtype) of a run, first-seen order, the
// fields FlagGems' BenchmarkResult and BenchmarkMetrics write (op_name, dtype as torch prints it,
// mode, level; per input shape_detail, latency_base, latency, gbps_base, gbps, speedup, tflops,
// error_msg), so FlagGems' summary_for_plot.py reads a caliber run. A FlagGems run's rows keep
// FlagGems' own dtype text and shape detail (their "flaggems" object); skipped rows are left out
// (FlagGems records none), failed ones carry error_msg. Notes say what was left out.
[[nodiscard]] ExportResult render_export_flaggems_log(const std::vector<RunData>& runs);
[[nodiscard]] ExportResult export_dirs(const std::vector<std::filesystem::path>& dirs,
                                       ExportFormat format);

}  // namespace caliber::report
