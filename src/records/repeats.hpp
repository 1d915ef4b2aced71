// Inputs measured twice in one run: FlagGems' benchmarks may yield the same sizes a second time
// within one test (mm's core shapes ignore their batch count), which caliber keys `SHAPE#2`
// (docs/flaggems.md, "What a row is"). The two rows time the same work, so they are a free check
// of the run against itself: a provider whose two figures differ beyond their noise says the
// device's state changed between them (docs/report.md#repeated-inputs).
#pragma once

#include <string>
#include <vector>

#include "records/runlog_rows.hpp"

namespace caliber::core {

struct RepeatPair {
  std::string op, dtype, shape, provider;  // shape: the first row's (no `#N`)
  double first_ms = 0, again_ms = 0;       // the first row's figure and the later one's
  double limit = 0;                        // the relative difference allowed (0.05: 5%)
  bool first_converged = true, again_converged = true;
  [[nodiscard]] double ratio() const;  // the larger figure over the smaller
};

struct RepeatCheck {
  int pairs = 0;                     // provider figures compared
  std::vector<RepeatPair> disagree;  // those beyond their limit, in run order
};

// The relative difference two figures of one input may show: 5%, or three times their noises
// combined (each the relative standard error of its median) where that is more.
[[nodiscard]] double repeat_limit(double noise_a, double noise_b);

// Every later row of an input (same op, dtype, shape without its `#N` and parameters other than
// `ordinal`) against the first row of it among one run's rows, provider by provider (ok rows,
// figures above 0). Adds to `into` (a summary checks several runs).
void check_repeats(const std::vector<CaseRow>& rows, RepeatCheck& into);

// The note of `caliber summary` and of the run's closing table: "" when no run repeats an input,
// and with agreeing=false also "" when every repeated figure agrees.
[[nodiscard]] std::string repeats_note(const RepeatCheck& c, bool agreeing = true);

}  // namespace caliber::core
