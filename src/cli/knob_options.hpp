// Turns the knob table into CLI11 options, so every subcommand that takes run flags shows them
// grouped by purpose, with their environment spelling, default and allowed values.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "settings/knobs.hpp"

namespace caliber::cli {

struct KnobOptions {
  std::map<std::string, std::string> values;  // knob name -> raw value, filled by CLI11
  std::map<std::string, CLI::Option*> options;
  std::vector<std::string> positional_ops;
  std::map<std::string, std::vector<std::string>> repeated;  // repeatable knobs, each value given
  bool quiet = false;  // --quiet: a flag of the command line only (no environment spelling)

  // Adds every knob except those in `skip` (and the positional ops unless `with_ops`), and
  // --quiet. run, batch and ab all register their run flags here, so each takes every one.
  // listed = false: the knobs are taken but left out of --help (ab lists them by name in one
  // paragraph, run_knobs_footer, so its own flags come first and its help stays short).
  void add_to(CLI::App& app, const std::set<std::string>& skip = {}, bool with_ops = true,
              bool listed = true);
  // The raw values actually given on the command line (positional ops as "ops").
  [[nodiscard]] std::map<std::string, std::string> given() const;
  // Resolves against the process environment; throws core::KnobError.
  [[nodiscard]] core::Knobs resolve() const;
  // The given flags as arguments again (for child processes), skipping `skip`.
  [[nodiscard]] std::vector<std::string> as_args(const std::set<std::string>& skip = {}) const;
};

// "Every knob of `caliber run` applies, with its meaning there (caliber run --help): --backend
// --level ...", wrapped at 100 columns.
[[nodiscard]] std::string run_knobs_footer();

// "Environment variables, ..." then one line a knob with a variable: "  BENCH_LEVEL  --level" (the
// variables of the old runner, which FlagGems users know, beside caliber's flags).
[[nodiscard]] std::string env_knobs_footer();

}  // namespace caliber::cli
