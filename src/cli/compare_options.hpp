// The flags of a comparison, shared by compare, summary --ab and ab, so the three take the same
// flags with the same meaning.
#pragma once

#include <CLI/CLI.hpp>

#include "report/command.hpp"

namespace caliber::cli {

// --format, --noise-band, --device-band, --run-noise, --fail-on-regression and, unless `ab` (whose
// rounds share one caliber by construction), --allow-mismatch.
// An explicitly empty value (`--min-effect ""`) is a mistake, not the default.
inline std::string refuse_empty(const std::string& v) {
  return v.empty() ? std::string("is empty; give a value or leave the flag out") : std::string();
}

inline void add_compare_options(CLI::App& sub, report::CompareCommand& cmp, bool ab = false) {
  sub.add_option("--format", cmp.format, "Output: table, md, csv, json")
      ->check(refuse_empty)
      ->group("Output");
  sub.add_option("--min-effect", cmp.min_effect_pct,
                 "The smallest change in percent called FASTER/SLOWER (default 0.5). The rule: "
                 "FASTER/SLOWER\nwhen the 95% CI of the ratio excludes 1 and the effect is at "
                 "least this; SAME when the CI\nlies inside +/- --noise-band; else UNSURE (each "
                 "UNSURE pair says what would settle it).\nGuarantee: the CI carries the "
                 "run-to-run terms below, so the same code on both sides comes\nout "
                 "FASTER/SLOWER only where it moved more than any calibration pair of its class "
                 "did;\nits detection power: docs/ab.md")
      ->check(refuse_empty)
      ->group("Compare");
  sub.add_option("--noise-band", cmp.noise_band_pct,
                 "Equivalence band in percent: a CI wholly inside +/- it is SAME (default 3)")
      ->check(refuse_empty)
      ->group("Compare");
  sub.add_option("--device-band", cmp.device_band_pct,
                 "Equivalence band in percent when A and B ran on different physical devices "
                 "(default 6; why:\ndocs/measurements.md)")
      ->check(refuse_empty)
      ->group("Compare");
  sub.add_option("--run-noise", cmp.run_noise,
                 "Run-to-run noise per side in percent, added to the CI (divided by sqrt(runs) "
                 "for a\nside of several runs): PCT[,CLASS=PCT...][,floor_us=US], CLASS a family, "
                 "a provider or fallback\n(a direct-timer fallback row); a pair takes the largest "
                 "that applies, in quadrature with\nUS / its median. Default: the calibration "
                 "file of the runs' device model\n(share/caliber/calibration/<model>.yaml; a "
                 "device without one takes the largest terms of\nall files; docs/ab.md)")
      ->check(refuse_empty)
      ->group("Compare");
  sub.add_option(
         "--paired-noise", cmp.paired_noise,
         "Paired A/B (one process per round, A and B block by block): the residual per "
         "round in\npercent added to the blocks' interval, PCT[,CLASS=PCT...][,floor_us=US] "
         "as --run-noise,\ndivided by sqrt(rounds); a given term holds for every paired "
         "pair. Default: the\ncalibration file's, one for pairs timed in two placement "
         "phases (the crossover) and one\nfor pairs timed in one (--crossover off, "
         "Python suites)")
      ->check(refuse_empty)
      ->group("Compare");
  sub.add_option("--fail-on-regression", cmp.fail_on_regression_pct,
                 "Exit 1 when a pair is SLOWER with a ratio above 1 + PCT/100, a case ok in A "
                 "failed in B,\nor no case was paired at all (for CI); a percentage from 0 "
                 "to below 1000000 (NaN, inf and\nnegative values are refused)")
      ->check(refuse_empty)
      ->group("Compare");
  if (!ab)
    sub.add_flag("--allow-mismatch", cmp.allow_mismatch,
                 "Compare even when the two calibers differ (the difference is still printed)")
        ->group("Compare");
}

}  // namespace caliber::cli
