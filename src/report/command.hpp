// The end-to-end logic behind `caliber compare`, `caliber summary --ab` and `caliber ab`, so the
// CLI files only declare flags.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "report/compare.hpp"
#include "report/table.hpp"

namespace caliber::report {

struct CompareCommand {
  std::string format = "table";
  double noise_band_pct = 3.0;
  double device_band_pct = 6.0;
  double min_effect_pct = 0.5;  // the smallest effect called FASTER/SLOWER  // band when the sides
                                // ran on different physical devices
  // Run-to-run noise per side, percent: the default, then CLASS=PCT (a family, a provider or
  // fallback). Empty: the calibration file of the runs' device model (report/calibration.hpp).
  std::string run_noise;
  // Paired A/B's residual per round, percent (docs/ab.md): PCT[,CLASS=PCT...][,floor_us=US].
  // Empty: the calibration file's, for crossed and for one-phase pairs; a given term holds for
  // both.
  std::string paired_noise;
  std::optional<double> fail_on_regression_pct;  // absent: not given
  bool allow_mismatch = false;

  // "A1,A2,A3" -> the directories of one side (repeated runs of the same code). Empty items are
  // dropped.
  [[nodiscard]] static std::vector<std::filesystem::path> side_paths(const std::string& arg);
  // Validated options; throws std::invalid_argument naming the flag.
  [[nodiscard]] CompareOptions options() const;
  [[nodiscard]] Format output_format() const;  // throws std::invalid_argument

  // compare A B end to end. Returns the exit code: 0; 1 regression past --fail-on-regression;
  // 2 caliber mismatch (without --allow-mismatch) or bad input. The mismatch lines also go to
  // `err`.
  int run(const std::vector<std::filesystem::path>& a, const std::vector<std::filesystem::path>& b,
          std::ostream& out, std::ostream& err) const;
  // `caliber ab`: the same, with the sides' descriptions and the dead-switch warning; a caliber
  // mismatch is reported but not refused (a switch may be a caliber flag on purpose).
  int run_ab(const std::vector<std::filesystem::path>& a,
             const std::vector<std::filesystem::path>& b, const std::string& a_desc,
             const std::string& b_desc, int rounds, std::ostream& out, std::ostream& err) const;
  // `caliber compare AB_DIR`: run_ab again on a directory `caliber ab` wrote (its ab.json names
  // the sides); exit 2 naming the argument when it is not one.
  int run_ab_dir(const std::filesystem::path& dir, std::ostream& out, std::ostream& err) const;

 private:
  struct Loaded {
    CompareOptions opt;
    Format fmt{};
    CompareResult res;
  };
  [[nodiscard]] std::optional<Loaded> load(const std::vector<std::filesystem::path>& a,
                                           const std::vector<std::filesystem::path>& b,
                                           bool allow_mismatch, std::ostream& err) const;
};

}  // namespace caliber::report
