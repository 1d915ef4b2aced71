// The HTML reporter and `caliber report`: one self-contained page (no scripts, no external files)
// with the run's caliber, the summary, charts drawn as inline SVG (report/svg.hpp) and every case
// row, for sharing a run with people who will not open run.log (docs/report.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/compare.hpp"
#include "report/rundata.hpp"
#include "report/svg.hpp"
#include "report/table.hpp"

namespace caliber::report {

// "&" -> "&amp;" and so on, for text placed in HTML.
[[nodiscard]] std::string html_escape(const std::string& s);
// A chart with its heading, placed in the page.
struct Figure {
  std::string heading;
  std::string note;  // under the heading: what the chart shows and how to read it
  std::string svg;   // render_svg's output
};
// The whole report as an HTML page titled `title`; the figures come after the first
// `tables_before_figures` tables.
[[nodiscard]] std::string render_html(const Report& r, const std::string& title,
                                      const std::vector<Figure>& figures = {},
                                      std::size_t tables_before_figures = 0);
// The charts of runs: per op, the speedup per shape with its bootstrap 95% interval and the
// latency distributions (candidate and baseline samples); one chart of % of peak when the runs
// measured peaks. Charts with nothing to draw are left out.
[[nodiscard]] std::vector<Figure> run_figures(const std::vector<RunData>& runs);
// The chart of a comparison: the ratio B/A of every pair with its interval, coloured by verdict.
[[nodiscard]] std::vector<Figure> compare_figures(const CompareResult& r);
// One table of every case row of the runs: op, dtype, shape, latencies, speedup, TFLOPS, GB/s,
// percent of peak, status and markers.
[[nodiscard]] Table cases_table(const std::vector<RunData>& runs);
// The page of `caliber report`: each run's caliber, the summary, the charts, every case. Throws
// std::invalid_argument when the paths hold no run. A single directory written by `caliber ab`
// (it holds ab.json) gives the A/B page of its A rounds against its B rounds.
[[nodiscard]] std::string html_report(const std::vector<std::filesystem::path>& dirs);
// The A/B page (`caliber report --ab A B`): the comparison's tables and its ratio chart, then each
// side's charts. A caliber mismatch is shown as a banner, not refused: the page says what differs.
// `title` empty: "caliber A/B: A = <what A was> vs B = <what B was>, N rounds", the sides
// described by describe_side (report/ab_report.hpp), which the pairs table's first note repeats.
[[nodiscard]] std::string html_ab_report(const std::vector<std::filesystem::path>& a,
                                         const std::vector<std::filesystem::path>& b,
                                         const CompareOptions& opt = {},
                                         const std::string& title = "");
// The sides of a `caliber ab` directory (run directories named A-<round>-... and B-<round>-...);
// nullopt when `dir` holds no ab.json.
[[nodiscard]] std::optional<
    std::pair<std::vector<std::filesystem::path>, std::vector<std::filesystem::path>>>
ab_sides(const std::filesystem::path& dir);
// One table of each run's caliber (backend, device, timer, level, tune, repeat, l2, peaks).
[[nodiscard]] Table caliber_table(const std::vector<RunData>& runs);

}  // namespace caliber::report
