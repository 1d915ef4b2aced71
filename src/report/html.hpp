// The HTML reporter and `caliber report`: one self-contained page (no scripts, no external files)
// with the run's caliber, the summary and every case row, for sharing a run with people who will
// not open run.log.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "report/rundata.hpp"
#include "report/table.hpp"

namespace caliber::report {

// "&" -> "&amp;" and so on, for text placed in HTML.
[[nodiscard]] std::string html_escape(const std::string& s);
// The whole report as an HTML page titled `title`.
[[nodiscard]] std::string render_html(const Report& r, const std::string& title);
// One table of every case row of the runs: op, dtype, shape, latencies, speedup, TFLOPS, GB/s,
// percent of peak, status and markers.
[[nodiscard]] Table cases_table(const std::vector<RunData>& runs);
// The page of `caliber report`: each run's caliber, the summary, every case. Throws
// std::invalid_argument when the paths hold no run.
[[nodiscard]] std::string html_report(const std::vector<std::filesystem::path>& dirs);
// One table of each run's caliber (backend, device, timer, level, tune, repeat, l2, peaks).
[[nodiscard]] Table caliber_table(const std::vector<RunData>& runs);

}  // namespace caliber::report
