// caliber history DIR...: results over time. Runs of one caliber, ordered by their start time (or
// grouped by the commit they were built from), and per (op, dtype, shape, provider) the series of
// medians, the compare verdict between consecutive points (compare's own rule) and at most one
// change-point over the series (docs/report.md, "History").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "report/compare.hpp"
#include "report/html.hpp"
#include "report/rundata.hpp"
#include "report/table.hpp"

namespace caliber::report {

enum class HistoryOrder { time, commit };
[[nodiscard]] std::optional<HistoryOrder> parse_history_order(const std::string& s) noexcept;

struct HistoryOptions {
  CompareOptions compare;  // the verdict rule of steps and change-points (compare's flags)
  HistoryOrder order = HistoryOrder::time;
  // The smallest change-point reported, a fraction: a split whose pooled compare is FASTER or
  // SLOWER but moved less than this is not called a change-point (compare's --noise-band, 3%).
  double min_step = 0.03;
  // A series of at least kMinSpreadPoints values also judges a move against its own run-to-run
  // spread (compare's run-to-run terms are calibrated on one kind of device; a busy host moves
  // far more): a step must be at least step_z spreads of a difference of two points, a
  // change-point at least change_z standard errors of the difference of its segments' means.
  double step_z = 5.0;
  double change_z = 5.0;
};

// Points a series needs before its own spread is estimated (five consecutive differences).
inline constexpr int kMinSpreadPoints = 6;

// One point of the history: a run, a batch, or (order commit) every run of one commit.
struct HistoryPoint {
  std::string label;       // the directory's name, or the commit
  std::string start_time;  // the earliest of its runs' (ISO 8601 UTC)
  std::string commit;      // run_identity.json's git_commit ("" when not recorded)
  std::vector<RunData> runs;
};

// The compare verdict between a point and the one before it where the row has a value.
struct HistoryStep {
  int at = 0;  // index of the later point
  double ratio = 0;
  core::Interval ci;
  Verdict verdict = Verdict::unsure;
  bool flagged = false;  // FASTER/SLOWER by compare and, with a spread, beyond step_z of it
};

// The most likely single split of a row's series, with the pooled compare of the two segments.
struct ChangePoint {
  int at = 0;  // index of the first point after the split
  double ratio = 0;
  core::Interval ci;
  Verdict verdict = Verdict::unsure;
  double z = 0;           // |mean difference of the segments' logs| / its standard error
  bool reported = false;  // FASTER/SLOWER by the segments' compare, at least min_step, and
                          // (with a spread) z at least change_z
};

struct HistoryRow {
  std::string op, dtype, shape, role, provider;
  bool primary = false;
  std::vector<std::optional<double>> median_ms;  // one per point; nullopt where it has no value
  std::vector<HistoryStep> steps;                // one per consecutive pair of values
  std::optional<ChangePoint> change;             // with two values or more
  // The run-to-run spread of the series (log scale): 1.4826 x the median of its consecutive
  // |log differences| / sqrt(2) (a normal's standard deviation from the median absolute
  // difference of two points), robust to a step among them; with kMinSpreadPoints values or more.
  std::optional<double> spread;
  [[nodiscard]] bool moved() const noexcept { return change && change->reported; }
};

struct HistoryResult {
  std::vector<HistoryPoint> points;
  std::vector<std::string> left_out;  // "DIR: not comparable (level: core vs comprehensive)"
  std::vector<HistoryRow> rows;
  std::vector<std::string> regressions;  // the newest point against the one before it
};

// The points the arguments name: a run directory is one point, a batch directory (it holds
// ops_status.csv) one point of all its runs, any other directory every run or batch directly
// inside it. Throws std::invalid_argument naming an argument that holds none.
[[nodiscard]] std::vector<HistoryPoint> history_points(
    const std::vector<std::filesystem::path>& dirs, HistoryOrder order);
// The whole history. Points whose caliber differs from the newest point's are left out (and
// listed) unless compare.allow_mismatch. Throws std::invalid_argument for bad input.
[[nodiscard]] HistoryResult history_of(std::vector<HistoryPoint> points, const HistoryOptions& opt);
[[nodiscard]] Report history_report(const HistoryResult& h, const HistoryOptions& opt,
                                    bool series_first = false);
// One small chart per row that moved: its medians, point by point, against the first segment's.
[[nodiscard]] std::vector<Figure> history_figures(const HistoryResult& h);
[[nodiscard]] std::string history_html(const HistoryResult& h, const HistoryOptions& opt);
// 1 when the newest point regressed past compare.fail_on_regression_pct, else 0.
[[nodiscard]] int history_exit_code(const HistoryResult& h, const HistoryOptions& opt);

}  // namespace caliber::report
