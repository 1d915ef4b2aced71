// caliber summary: per op and dtype, the geometric-mean speedup with a bootstrap CI (never an
// arithmetic mean of ratios, so one pathological baseline cannot dominate), min and max, and the
// counts of rows that fell back, were poisoned, failed or were skipped; an overall line per input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "report/rundata.hpp"
#include "report/table.hpp"

namespace caliber::report {

struct SummaryOptions {
  double confidence = 0.95;
  int resamples = 2000;
  std::uint64_t seed = 1;
};

struct SummaryGroup {
  std::string source;  // the input directory's name (a run's, within a folder of runs)
  std::string op;      // "(all)" on the overall line
  std::string dtype;
  int rows = 0;
  int with_speedup = 0;  // rows that enter the geomean
  int no_speedup = 0;  // rows counted but excluded: baseline-only, failed accuracy, failed, skipped
  int fallback = 0;
  int poisoned = 0;
  int power_capped = 0;   // rows marked CLOCK_POWER_CAPPED (said in a note)
  int stop_missed = 0;    // rows marked STOP_NOT_CONVERGED (a column and a note)
  int device_shared = 0;  // rows marked DEVICE_SHARED (said in a note)
  int failed = 0;
  int skipped = 0;
  std::optional<double> geomean, ci_lo, ci_hi, min, max;
  // Rows carrying the host cost of one eager call (a FlagGems run, docs/flaggems.md): the
  // geometric means of the baseline's and the candidate's host cost and device time, in ms.
  int with_host = 0;
  std::optional<double> host_base_ms, host_ms, device_base_ms, device_ms;
};

// Where the time of one op's cases went (the rows' phase fields summed), per input.
struct PhaseGroup {
  std::string source;
  std::string op;  // "(all)" on the overall line
  int cases = 0;   // rows that carry phase times
  core::Phases phases;
};

struct Summary {
  std::vector<SummaryGroup> groups;   // per input, op, dtype
  std::vector<PhaseGroup> phases;     // per input and op, then "(all)"; empty for older runs
  std::vector<SummaryGroup> overall;  // one per input
  int bad_lines = 0;            // run.log lines that could not be read (not rows, not counted)
  std::string first_row_error;  // the first of them that was JSON but not a row of its type
  int repaired_lines = 0;       // lines read after a repair (invalid UTF-8, NaN, Infinity)
  int truncated_logs = 0;       // run.logs whose last line was cut (an interrupted run)
  int unfinished_runs = 0;      // run.logs without a footer
  std::string duplicates;       // duplicate_rows_note of every input's runs; "" when none
  std::string repeats;          // repeats_note of every input's runs (repeats.hpp); "" when none
  // Inputs that were folders of runs (neither a run nor a batch), "runs (3 runs)": each of their
  // runs became a source of its own (summarize), and a note says so.
  std::vector<std::string> split_folders;
};

// Summarizes rows already loaded (one input = a list of runs).
[[nodiscard]] Summary summarize_rows(
    const std::vector<std::pair<std::string, std::vector<RunData>>>& inputs,
    const SummaryOptions& opt = {});
// Reads each directory (a run, a batch, or a folder of runs: one source per run) and summarizes
// it. Throws std::runtime_error on a bad input.
[[nodiscard]] Summary summarize(const std::vector<std::filesystem::path>& inputs,
                                const SummaryOptions& opt = {});
[[nodiscard]] Report summary_report(const Summary& s);

}  // namespace caliber::report
