// The timing budget of one config's measurement in a sweep (docs/timing.md, "Autotune sweeps"):
// enough to rank configs, a fraction of a full measurement's cost.
#pragma once

#include "timing/timer.hpp"

namespace caliber::tune {

// `full` (the run's options for the provider) cut to a sweep's budget.
[[nodiscard]] timing::TimingOptions sweep_options(timing::TimingOptions full);

// `full` cut to a sweep's screening pass (tuner.hpp, Screen): the sweep's budget, then three
// samples with no noise target, a 1 ms warmup and the carried regime checked in a 2 ms window.
// Enough to tell the configs worth a second look from the rest, not to rank close ones.
[[nodiscard]] timing::TimingOptions screen_options(timing::TimingOptions full);

}  // namespace caliber::tune
