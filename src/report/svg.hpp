// Charts for the HTML report as plain inline SVG, drawn here in C++: no script, no library, no
// network, so a page works offline, in a mail attachment and in a browser with scripts off
// (docs/report.md). One chart kind covers every plot of the report: labelled rows against one
// horizontal axis (linear or log), each row holding marks of one or more series (a point with an
// interval, a bar, a box with its samples as a strip). Every mark carries a <title>, which the
// browser shows on hover.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace caliber::report {

struct Mark {
  enum class Kind { point, bar, box };
  Kind kind = Kind::point;
  int series = 0;  // colour and lane within the row
  double value = 0;
  std::optional<double> lo, hi;  // point: the interval; box: the whiskers (min, max)
  std::optional<double> q1, q3;  // box: the quartiles (value is the median)
  std::vector<double> samples;   // box: drawn as a strip of dots
  std::string color;             // empty: the series colour
  std::string title;             // hover text
};

struct ChartRow {
  std::string label;
  std::vector<Mark> marks;
};

struct Series {
  std::string name;
  std::string color;
};

struct Chart {
  std::string id;     // the svg element's id
  std::string title;  // shown above it, and the svg's <title>
  std::string x_label;
  bool log_x = false;
  std::optional<double> reference;     // a vertical line (1 for a ratio, 100 for percent of peak)
  std::optional<double> x_min, x_max;  // forced axis ends (linear axes)
  std::vector<Series> series;          // the legend; a row has one lane per series
  std::vector<ChartRow> rows;
  std::vector<std::pair<std::string, std::string>> legend_extra;  // (colour, text), e.g. verdicts
};

// The chart as an <svg class="chart" ...> element (empty when it has no row with a drawable
// mark). Its size follows from the rows: a chart of 200 rows is tall, never cramped.
[[nodiscard]] std::string render_svg(const Chart& c);

// The colours the report uses: candidate, baseline, and the compare verdicts.
inline constexpr const char* kCandidateColor = "#1f77b4";
inline constexpr const char* kBaselineColor = "#ff7f0e";
inline constexpr const char* kFasterColor = "#2ca02c";
inline constexpr const char* kSlowerColor = "#d62728";
inline constexpr const char* kSameColor = "#7f7f7f";
inline constexpr const char* kUnsureColor = "#bcbd22";

}  // namespace caliber::report
