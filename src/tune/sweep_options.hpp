// The timing budget of one config's measurement in a sweep (docs/timing.md, "Autotune sweeps"):
// enough to rank configs, a fraction of a full measurement's cost.
#pragma once

#include "timing/timer.hpp"

namespace caliber::tune {

// `full` (the run's options for the provider) cut to a sweep's budget.
[[nodiscard]] timing::TimingOptions sweep_options(timing::TimingOptions full);

}  // namespace caliber::tune
