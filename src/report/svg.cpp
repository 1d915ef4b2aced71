#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/format.hpp"
#include "report/html.hpp"

namespace caliber::report {

namespace {

constexpr double kWidth = 860;
constexpr double kLane = 12;    // height of one series' lane
constexpr double kRowPad = 8;   // space between rows
constexpr double kTop = 26;     // the legend
constexpr double kBottom = 42;  // the axis and its label
constexpr double kRight = 24;
constexpr std::size_t kMaxDots = 400;  // per box: more are thinned (the title says so)

std::string num(double v) {
  return core::fixed(v, 1);
}

std::string tick_text(double v) {
  return core::general(v, 4);
}

struct Scale {
  bool log = false;
  double lo = 0, hi = 1;  // the domain
  double x0 = 0, x1 = 1;  // the pixels
  [[nodiscard]] double operator()(double v) const {
    double t;
    if (log) {
      v = std::max(v, lo);
      t = (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
    } else {
      t = (v - lo) / (hi - lo);
    }
    return x0 + std::clamp(t, 0.0, 1.0) * (x1 - x0);
  }
};

double nice_step(double span, int target) {
  const double raw = span / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nice = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return nice * mag;
}

std::vector<double> linear_ticks(double lo, double hi, int target) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double step = nice_step(hi - lo, target);
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  // Less than a decade: evenly spaced nice values read better than one or two powers of ten.
  if (hi / lo < 10) return linear_ticks(lo, hi, 5);
  std::vector<double> t;
  const int k0 = static_cast<int>(std::floor(std::log10(lo)));
  const int k1 = static_cast<int>(std::ceil(std::log10(hi)));
  const bool dense = k1 - k0 <= 3;
  for (int k = k0; k <= k1; ++k)
    for (double m : dense ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
    }
  return t;
}

void extend(double& lo, double& hi, double v, bool log) {
  if (!std::isfinite(v) || (log && v <= 0)) return;
  lo = std::min(lo, v);
  hi = std::max(hi, v);
}

// A deterministic jitter in [-1, 1] for the i-th dot, so a page is the same on every render.
double jitter(std::size_t i) {
  const double g = std::fmod(static_cast<double>(i) * 0.6180339887498949, 1.0);
  return 2 * g - 1;
}

// The x domain of a chart: every mark, its interval, box and samples, the reference line, the
// chart's fixed ends, padded. False when no mark can be drawn.
bool x_domain(const Chart& c, double& lo, double& hi) {
  bool any = false;
  lo = INFINITY;
  hi = -INFINITY;
  for (const auto& r : c.rows)
    for (const auto& m : r.marks) {
      extend(lo, hi, m.value, c.log_x);
      if (std::isfinite(m.value) && (!c.log_x || m.value > 0)) any = true;
      for (const auto& v : {m.lo, m.hi, m.q1, m.q3})
        if (v) extend(lo, hi, *v, c.log_x);
      for (double s : m.samples) extend(lo, hi, s, c.log_x);
      if (m.kind == Mark::Kind::bar && !c.log_x) extend(lo, hi, 0, false);
    }
  if (!any) return false;
  if (c.reference) extend(lo, hi, *c.reference, c.log_x);
  if (c.x_min) lo = *c.x_min;
  if (c.x_max) hi = std::max(hi, *c.x_max);
  if (c.log_x) {
    if (hi <= lo) {
      lo *= 0.8;
      hi *= 1.25;
    }
    const double pad = std::pow(hi / lo, 0.04);
    lo /= pad;
    hi *= pad;
  } else {
    if (hi <= lo) hi = lo + 1;
    const double pad = (hi - lo) * 0.04;
    if (!c.x_min && lo != 0) lo -= pad;
    hi += pad;
  }
  return true;
}

// Where things go: the label column's width, one lane per series in every row, the scale.
struct Layout {
  double lo = 0, hi = 1;
  double left = 80;
  std::size_t lanes = 1;
  double row_h = 0, plot_h = 0, height = 0;
  Scale x;
};

Layout layout(const Chart& c, double lo, double hi) {
  Layout l;
  l.lo = lo;
  l.hi = hi;
  std::size_t longest = 0;
  for (const auto& r : c.rows) longest = std::max(longest, r.label.size());
  l.left = std::clamp(7.0 * static_cast<double>(longest) + 14, 80.0, 330.0);
  l.lanes = std::max<std::size_t>(1, c.series.size());
  l.row_h = kLane * static_cast<double>(l.lanes) + kRowPad;
  l.plot_h = l.row_h * static_cast<double>(c.rows.size());
  l.height = kTop + l.plot_h + kBottom;
  l.x = Scale{c.log_x, lo, hi, l.left, kWidth - kRight};
  return l;
}

void write_legend(std::ostream& o, const Chart& c, const Layout& l) {
  double lx = l.left;
  auto legend = [&](const std::string& color, const std::string& text) {
    o << "<rect x=\"" << num(lx) << "\" y=\"8\" width=\"10\" height=\"10\" fill=\"" << color
      << "\"/><text x=\"" << num(lx + 14) << "\" y=\"17\">" << html_escape(text) << "</text>";
    lx += 24 + 6.5 * static_cast<double>(text.size());
  };
  for (const auto& s : c.series) legend(s.color, s.name);
  for (const auto& [color, text] : c.legend_extra) legend(color, text);
  o << "\n";
}

// Rows: the grid lines, a light band on every other row, the labels, and the reference line.
void write_rows(std::ostream& o, const Chart& c, const Layout& l,
                const std::vector<double>& ticks) {
  const Scale& x = l.x;
  for (double t : ticks)
    o << "<line x1=\"" << num(x(t)) << "\" y1=\"" << num(kTop) << "\" x2=\"" << num(x(t))
      << "\" y2=\"" << num(kTop + l.plot_h) << "\" stroke=\"#e4e4e4\"/>";
  o << "\n";
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const double y = kTop + l.row_h * static_cast<double>(i);
    if (i % 2 == 1)
      o << "<rect x=\"0\" y=\"" << num(y) << "\" width=\"" << num(kWidth) << "\" height=\""
        << num(l.row_h) << "\" fill=\"#f6f6f6\" fill-opacity=\"0.7\"/>";
    o << "<text x=\"" << num(l.left - 6) << "\" y=\"" << num(y + l.row_h / 2 + 4)
      << "\" text-anchor=\"end\">" << html_escape(c.rows[i].label) << "</text>\n";
  }
  if (c.reference && *c.reference >= l.lo && *c.reference <= l.hi)
    o << "<line x1=\"" << num(x(*c.reference)) << "\" y1=\"" << num(kTop) << "\" x2=\""
      << num(x(*c.reference)) << "\" y2=\"" << num(kTop + l.plot_h)
      << "\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>\n";
}

void write_bar(std::ostream& o, const Chart& c, const Layout& l, const Mark& m, double cy,
               const std::string& color, const std::string& title) {
  const double base = c.log_x ? l.lo : std::max(l.lo, 0.0);
  const double a = l.x(base), b = l.x(m.value);
  o << "<rect class=\"mark\" x=\"" << num(std::min(a, b)) << "\" y=\"" << num(cy - kLane / 2 + 1)
    << "\" width=\"" << num(std::max(1.0, std::fabs(b - a))) << "\" height=\"" << num(kLane - 2)
    << "\" fill=\"" << color << "\">" << title << "</rect>\n";
}

void write_point(std::ostream& o, const Layout& l, const Mark& m, double cy,
                 const std::string& color, const std::string& title) {
  o << "<g class=\"mark\">" << title;
  if (m.lo && m.hi) {
    const double a = l.x(*m.lo), b = l.x(*m.hi);
    o << "<line x1=\"" << num(a) << "\" y1=\"" << num(cy) << "\" x2=\"" << num(b) << "\" y2=\""
      << num(cy) << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>"
      << "<line x1=\"" << num(a) << "\" y1=\"" << num(cy - 4) << "\" x2=\"" << num(a) << "\" y2=\""
      << num(cy + 4) << "\" stroke=\"" << color << "\"/>"
      << "<line x1=\"" << num(b) << "\" y1=\"" << num(cy - 4) << "\" x2=\"" << num(b) << "\" y2=\""
      << num(cy + 4) << "\" stroke=\"" << color << "\"/>";
  }
  o << "<circle cx=\"" << num(l.x(m.value)) << "\" cy=\"" << num(cy) << "\" r=\"4\" fill=\""
    << color << "\"/></g>\n";
}

void write_box(std::ostream& o, const Layout& l, const Mark& m, double cy, const std::string& color,
               const std::string& title) {
  const Scale& x = l.x;
  o << "<g class=\"mark\">" << title;
  const std::size_t n = m.samples.size();
  const std::size_t stride = n > kMaxDots ? (n + kMaxDots - 1) / kMaxDots : 1;
  for (std::size_t s = 0; s < n; s += stride)
    o << "<circle cx=\"" << num(x(m.samples[s])) << "\" cy=\""
      << num(cy + jitter(s) * (kLane / 2 - 2)) << "\" r=\"1.4\" fill=\"" << color
      << "\" fill-opacity=\"0.35\"/>";
  if (m.lo && m.hi)
    o << "<line x1=\"" << num(x(*m.lo)) << "\" y1=\"" << num(cy) << "\" x2=\"" << num(x(*m.hi))
      << "\" y2=\"" << num(cy) << "\" stroke=\"" << color << "\"/>";
  if (m.q1 && m.q3)
    o << "<rect x=\"" << num(x(*m.q1)) << "\" y=\"" << num(cy - kLane / 2 + 1) << "\" width=\""
      << num(std::max(1.0, x(*m.q3) - x(*m.q1))) << "\" height=\"" << num(kLane - 2)
      << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\"/>";
  o << "<line x1=\"" << num(x(m.value)) << "\" y1=\"" << num(cy - kLane / 2) << "\" x2=\""
    << num(x(m.value)) << "\" y2=\"" << num(cy + kLane / 2)
    << "\" stroke=\"#000\" stroke-width=\"2\"/></g>\n";
}

// Every mark, in its row and its series' lane.
void write_marks(std::ostream& o, const Chart& c, const Layout& l) {
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const double y0 = kTop + l.row_h * static_cast<double>(i) + kRowPad / 2;
    for (const auto& m : c.rows[i].marks) {
      if (!std::isfinite(m.value) || (c.log_x && m.value <= 0)) continue;
      const std::size_t lane =
          std::min<std::size_t>(static_cast<std::size_t>(std::max(0, m.series)), l.lanes - 1);
      const double cy = y0 + kLane * (static_cast<double>(lane) + 0.5);
      std::string color = m.color;
      if (color.empty())
        color = lane < c.series.size() ? c.series[lane].color : std::string(kCandidateColor);
      const std::string title = "<title>" + html_escape(m.title) + "</title>";
      switch (m.kind) {
        case Mark::Kind::bar:
          write_bar(o, c, l, m, cy, color, title);
          break;
        case Mark::Kind::point:
          write_point(o, l, m, cy, color, title);
          break;
        case Mark::Kind::box:
          write_box(o, l, m, cy, color, title);
          break;
      }
    }
  }
}

void write_axis(std::ostream& o, const Chart& c, const Layout& l,
                const std::vector<double>& ticks) {
  const Scale& x = l.x;
  const double ay = kTop + l.plot_h;
  o << "<line x1=\"" << num(l.left) << "\" y1=\"" << num(ay) << "\" x2=\"" << num(kWidth - kRight)
    << "\" y2=\"" << num(ay) << "\" stroke=\"#000\"/>";
  for (double t : ticks)
    o << "<line x1=\"" << num(x(t)) << "\" y1=\"" << num(ay) << "\" x2=\"" << num(x(t))
      << "\" y2=\"" << num(ay + 4) << "\" stroke=\"#000\"/><text x=\"" << num(x(t)) << "\" y=\""
      << num(ay + 15) << "\" text-anchor=\"middle\">" << tick_text(t) << "</text>";
  o << "<text x=\"" << num((l.left + kWidth - kRight) / 2) << "\" y=\"" << num(ay + 34)
    << "\" text-anchor=\"middle\">" << html_escape(c.x_label + (c.log_x ? " (log scale)" : ""))
    << "</text>\n</svg>\n";
}

}  // namespace

std::string render_svg(const Chart& c) {
  double lo = 0, hi = 0;
  if (!x_domain(c, lo, hi)) return "";
  const Layout l = layout(c, lo, hi);
  std::ostringstream o;
  o << "<svg class=\"chart\" id=\"" << html_escape(c.id)
    << "\" xmlns=\"http://www.w3.org/2000/svg\""
    << " width=\"" << num(kWidth) << "\" height=\"" << num(l.height) << "\" viewBox=\"0 0 "
    << num(kWidth) << " " << num(l.height) << "\" role=\"img\" font-family=\"sans-serif\" "
    << "font-size=\"11\"><title>" << html_escape(c.title) << "</title>\n";
  write_legend(o, c, l);
  const std::vector<double> ticks = c.log_x ? log_ticks(lo, hi) : linear_ticks(lo, hi, 6);
  write_rows(o, c, l, ticks);
  write_marks(o, c, l);
  write_axis(o, c, l, ticks);
  return o.str();
}

}  // namespace caliber::report
