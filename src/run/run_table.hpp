// What a run prints about its case rows: the closing table (laid out by core::TextTable, the same
// layout as the reports' text tables), the stopping-rule miss of a row, and the progress line's
// eta.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "records/markers.hpp"
#include "records/runlog_rows.hpp"

namespace caliber::run {

// The table printed at the end of a run: one line per case row, with the given columns
// (core::run_table_columns(); empty: the default set). `quantiles` are the q of --quantiles,
// for the quantiles column.
void print_run_table(std::ostream& out, const std::vector<core::CaseRow>& rows,
                     const std::vector<std::string>& columns = {},
                     const std::vector<double>& quantiles = {});
// Why a case row's stopping rule was missed: the first provider whose stop_reason is not
// "converged" (or that says converged false, or carries STOP_NOT_CONVERGED); "" when none.
[[nodiscard]] std::string stop_rule_miss(const core::CaseRow& row);
// Spelled once, in records/markers.hpp.
inline constexpr const char* kMarkerStopNotConverged = core::markers::stop_missed;
// On a long run, when the rest should end: "eta ~4m10s" from the mean time per case so far times
// the cases left (cases differ in length: a guide, said with ~). "" before kEtaAfterS of cases
// or after the last case.
inline constexpr double kEtaAfterS = 10.0;
[[nodiscard]] std::string eta_text(double elapsed_s, std::size_t done, std::size_t total);
// 75 -> "1m15s", 3700 -> "1h01m", 8 -> "8s" (core/format.hpp).
using core::duration_text;

}  // namespace caliber::run
