#include "report/command.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "report/ab_report.hpp"
#include "settings/knobs.hpp"

namespace caliber::report {

namespace {
// CSV keeps one table on `out`; the rest of the report goes to `err` (render_streams).
void emit(const Report& rep, Format fmt, std::ostream& out, std::ostream& err) {
  const Rendered r = render_streams(rep, fmt);
  out << r.out;
  out.flush();
  err << r.err;
}
}  // namespace

std::vector<std::filesystem::path> CompareCommand::side_paths(const std::string& arg) {
  std::vector<std::filesystem::path> out;
  for (const auto& item : core::split_fields(arg, ','))
    if (!item.empty()) out.emplace_back(item);
  return out;
}

namespace {
// A percentage knob in [0, hi): a NaN, an infinity or a negative value is refused, never read as
// "off" (a gate that turns itself off on NaN passes every regression). The value is shown with
// six significant digits, so 1e308 is "1e+308", not 309 digits.
double percentage(const char* flag, double v, double hi, const char* allowed) {
  if (std::isfinite(v) && v >= 0 && v < hi) return v;
  std::ostringstream shown;
  shown << v;
  throw std::invalid_argument(std::string(flag) + ": '" + shown.str() + "' is not allowed (" +
                              allowed + ")");
}
}  // namespace

namespace {
// Progress of a long compare on `err` (standard error), never on the output: on a terminal, one
// line rewritten in place from kProgressTtyCases cases, erased at the end; elsewhere (a CI log),
// from kProgressLogCases cases, a line at each tenth. A JSON, CSV or Markdown compare writes no
// progress lines off a terminal.
constexpr std::size_t kProgressTtyCases = 2000;
constexpr std::size_t kProgressLogCases = 20000;

std::function<void(std::size_t, std::size_t)> compare_progress(std::ostream& err, Format fmt) {
  const bool tty = &err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
  if (!tty && fmt != Format::table) return {};
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  std::size_t last_tenth = 0;
  return [&err, tty, start, last, last_tenth](std::size_t done, std::size_t total) mutable {
    if (total < (tty ? kProgressTtyCases : kProgressLogCases)) return;
    const auto now = std::chrono::steady_clock::now();
    const std::size_t tenth = done * 10 / total;
    if (tty ? done < total && now - last < std::chrono::milliseconds(200)
            : tenth == last_tenth || done == total)
      return;
    last = now;
    last_tenth = tenth;
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
    std::ostringstream line;
    line << "compare: " << done << " of " << total << " cases paired (" << done * 100 / total
         << "%, " << s << " s)";
    if (!tty) {
      err << line.str() << "\n" << std::flush;
    } else if (done < total) {
      err << "\r" << line.str() << "\x1b[K" << std::flush;
    } else {
      err << "\r\x1b[K" << std::flush;
    }
  };
}
}  // namespace

CompareOptions CompareCommand::options() const {
  CompareOptions o;
  o.noise_band =
      percentage("--noise-band", noise_band_pct, 100, "a percentage from 0 to below 100") / 100.0;
  o.device_band =
      percentage("--device-band", device_band_pct, 100, "a percentage from 0 to below 100") / 100.0;
  o.min_effect =
      percentage("--min-effect", min_effect_pct, 100, "a percentage from 0 to below 100") / 100.0;
  if (!run_noise.empty()) parse_run_noise(run_noise, o);
  if (!paired_noise.empty()) parse_paired_noise(paired_noise, o);
  if (fail_on_regression_pct)
    o.fail_on_regression_pct = percentage("--fail-on-regression", *fail_on_regression_pct, 1e6,
                                          "a percentage from 0 to below 1000000");
  o.allow_mismatch = allow_mismatch;
  return o;
}

Format CompareCommand::output_format() const {
  const auto f = parse_format(format);
  if (!f)
    throw std::invalid_argument("--format: '" + format + "' is not allowed (" + format_names() +
                                ")");
  return *f;
}

// The options, the output format and the comparison of the two sides, the identities'
// differences printed to `err`; nullopt (after printing why) for bad input: exit 2.
std::optional<CompareCommand::Loaded> CompareCommand::load(
    const std::vector<std::filesystem::path>& a, const std::vector<std::filesystem::path>& b,
    bool allow_mismatch, std::ostream& err) const {
  Loaded l;
  try {
    l.opt = options();
    if (allow_mismatch) l.opt.allow_mismatch = true;
    l.fmt = output_format();
    l.opt.progress = compare_progress(err, l.fmt);
    l.res = compare_dirs(a, b, l.opt);
    l.opt.progress = {};
  } catch (const std::exception& e) {
    err << "caliber: " << e.what() << "\n";
    return std::nullopt;
  }
  for (const auto& line : mismatch_lines(l.res)) err << line << "\n";
  return l;
}

int CompareCommand::run(const std::vector<std::filesystem::path>& a,
                        const std::vector<std::filesystem::path>& b, std::ostream& out,
                        std::ostream& err) const {
  const auto loaded = load(a, b, false, err);
  if (!loaded) return 2;
  const auto& [opt, fmt, res] = *loaded;
  if (res.mismatch() && !opt.allow_mismatch) {
    // Refused: show only the identities' differences, no ratios that could be quoted.
    Report rep;
    rep.banners = mismatch_lines(res);
    rep.banners.push_back(
        "The two sides differ in caliber: not comparable (--allow-mismatch to compare anyway)");
    emit(rep, fmt, out, err);
    return compare_exit_code(res, opt);
  }
  Report rep = compare_report(res, opt);
  // Say who A and B are: the ab switch of rounds named by hand, the op libraries, or the runs.
  if (!rep.tables.empty())
    rep.tables.front().notes.insert(rep.tables.front().notes.begin(),
                                    "A = " + describe_side(a, 'A') +
                                        "; B = " + describe_side(b, 'B') +
                                        " (docs/ab.md#reading-the-pairs-table)");
  emit(rep, fmt, out, err);
  return compare_exit_code(res, opt);
}

int CompareCommand::run_ab(const std::vector<std::filesystem::path>& a,
                           const std::vector<std::filesystem::path>& b, const std::string& a_desc,
                           const std::string& b_desc, int rounds, std::ostream& out,
                           std::ostream& err) const {
  const auto loaded = load(a, b, true, err);
  if (!loaded) return 2;
  const auto& [opt, fmt, res] = *loaded;
  Report rep = compare_report(res, opt);
  add_ab_notes(rep, res, a_desc, b_desc, rounds);
  emit(rep, fmt, out, err);  // the report's own warning says when the switch may not be live
  return compare_exit_code(res, opt);
}

int CompareCommand::run_ab_dir(const std::filesystem::path& dir, std::ostream& out,
                               std::ostream& err) const {
  std::optional<AbDir> ab;
  try {
    ab = read_ab_dir(dir);
  } catch (const std::exception& e) {
    err << "caliber: " << e.what() << "\n";
    return 2;
  }
  if (!ab) {
    err << "caliber: compare: '" << dir.string()
        << "' holds no ab.json; allowed: two sides (compare A B) or one directory that caliber ab "
           "wrote\n";
    return 2;
  }
  return run_ab(ab->a, ab->b, ab->a_desc, ab->b_desc, ab->rounds, out, err);
}

}  // namespace caliber::report
