// The flags of a comparison, shared by compare, summary --ab and ab, so the three take the same
// flags with the same meaning.
#pragma once

#include <CLI/CLI.hpp>

#include "report/command.hpp"

namespace caliber::cli {

// --format, --noise-band, --device-band, --run-noise, --fail-on-regression and, unless `ab` (whose
// rounds share one caliber by construction), --allow-mismatch.
inline void add_compare_options(CLI::App& sub, report::CompareCommand& cmp, bool ab = false) {
  sub.add_option("--format", cmp.format, "Output: table, md, csv, json")->group("Output");
  sub.add_option("--noise-band", cmp.noise_band_pct,
                 "Noise band in percent: a CI wholly inside +/- it is SAME, wholly outside "
                 "FASTER/SLOWER\n(default 3)")
      ->group("Compare");
  sub.add_option("--device-band", cmp.device_band_pct,
                 "Noise band in percent when A and B ran on different physical devices (default 6; "
                 "why: docs/measurements.md)")
      ->group("Compare");
  sub.add_option(
         "--run-noise", cmp.run_noise,
         "Run-to-run noise per side in percent, added to the CI of a side with fewer than\n"
         "three runs: PCT[,CLASS=PCT...], CLASS a family, fallback (a direct-timer fallback\n"
         "row) or tiny (a median below 5 us); a pair takes the largest that applies.\n"
         "Default 0.8,blas=4,fallback=5,tiny=1.5 (why: docs/measurements.md)")
      ->group("Compare");
  sub.add_option("--fail-on-regression", cmp.fail_on_regression_pct,
                 "Exit 1 when a pair is SLOWER with a ratio above 1 + PCT/100 (for CI)")
      ->group("Compare");
  if (!ab)
    sub.add_flag("--allow-mismatch", cmp.allow_mismatch,
                 "Compare even when the two calibers differ (the difference is still printed)")
        ->group("Compare");
}

}  // namespace caliber::cli
