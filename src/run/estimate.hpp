// What a run will cost before it starts (caliber run --dry-run, the progress line's ETA): a
// per-backend cost model over the selected cases, from their shapes (the bytes each case needs)
// and the timing knobs. docs/measurements.md states the model's terms and its accuracy.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "run/cases.hpp"
#include "settings/knobs.hpp"

namespace caliber::run {

// The model's terms, in seconds (per_gb: seconds per GB the case needs).
struct CostModel {
  double case_s = 0;           // a case's fixed cost: admission, set-up calls, the row
  double per_gb_inputs_s = 0;  // making inputs, per GB of the case's memory
  double per_gb_check_s = 0;   // the gate, per GB, up to check_cap_gb (sampled beyond)
  double check_cap_gb = 0;
  double sample_s = 0;          // one provider's sampling and warmup
  double settle_cool_s = 0;     // the sustained regime's settle of cool work
  double settle_capped_s = 0;   // ... of power-hungry work (the blas family)
  double settle_carried_s = 0;  // a settle carried from the previous measurement
  double peaks_s = 0;           // measuring the peaks (0 when the device's cache has them)
  int providers = 2;            // providers a case is assumed to have (the corpus's norm)
};

// The terms for a backend (host: the cpu backend) under these knobs.
[[nodiscard]] CostModel cost_model(bool host, const core::Knobs& k);

// One case's estimated seconds.
[[nodiscard]] double estimate_case_s(const CostModel& m, const OpInfo& info, const Op& op,
                                     const Case& c, const core::Knobs& k);

// Every case's estimate, in the selection's order.
[[nodiscard]] std::vector<double> estimate_cases(const CostModel& m, const Selection& sel,
                                                 const core::Knobs& k);

// The dry run's table: cases, GB and estimated seconds per op, and the total with the peaks.
void print_estimate(std::ostream& out, const CostModel& m, const Selection& sel,
                    const std::vector<double>& est, bool peaks_cached);

// The ETA from the estimate, honest from the first case: the remaining cases' estimate scaled by
// how the finished ones compared with theirs, that ratio weighed against the model's own 1 by a
// prior of kEtaPrior of the run's estimate (then clamped to [0.25, 4]).
inline constexpr double kEtaPrior = 0.25;
[[nodiscard]] double eta_s(const std::vector<double>& est, std::size_t done, double elapsed_s);

}  // namespace caliber::run
