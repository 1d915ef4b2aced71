#include "report/command.hpp"

#include <cmath>
#include <iostream>
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

CompareOptions CompareCommand::options() const {
  CompareOptions o;
  if (!std::isfinite(noise_band_pct) || noise_band_pct < 0 || noise_band_pct >= 100)
    throw std::invalid_argument("--noise-band: '" + std::to_string(noise_band_pct) +
                                "' is not allowed (a percentage from 0 to below 100)");
  o.noise_band = noise_band_pct / 100.0;
  if (!std::isfinite(device_band_pct) || device_band_pct < 0 || device_band_pct >= 100)
    throw std::invalid_argument("--device-band: '" + std::to_string(device_band_pct) +
                                "' is not allowed (a percentage from 0 to below 100)");
  o.device_band = device_band_pct / 100.0;
  if (!std::isfinite(min_effect_pct) || min_effect_pct < 0 || min_effect_pct >= 100)
    throw std::invalid_argument("--min-effect: '" + std::to_string(min_effect_pct) +
                                "' is not allowed (a percentage from 0 to below 100)");
  o.min_effect = min_effect_pct / 100.0;
  parse_run_noise(run_noise, o);
  if (!paired_noise.empty()) parse_paired_noise(paired_noise, o);
  if (fail_on_regression_pct >= 0) o.fail_on_regression_pct = fail_on_regression_pct;
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
    l.res = compare_dirs(a, b, l.opt);
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
  emit(compare_report(res, opt), fmt, out, err);
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
  emit(rep, fmt, out, err);
  if (switch_may_be_dead(res))
    err << "WARNING: no row differs between A and B beyond noise: the switch may not be live\n";
  return compare_exit_code(res, opt);
}

}  // namespace caliber::report
