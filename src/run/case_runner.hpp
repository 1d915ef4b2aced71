// One case, start to finish: skip guards and compat rules, memory check, inputs, tuned configs,
// the correctness gate, the timers, and the row written to run.log.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "caliber/caliber.hpp"
#include "core/knobs.hpp"
#include "timing/timer.hpp"

#include "tune/tuner.hpp"

namespace caliber::run {

class CaseRunner {
 public:
  CaseRunner(const backends::Backend& backend, int device_index, std::uint64_t seed,
             const core::Knobs& knobs, std::string timer, const tune::Settings& tune_settings);
  ~CaseRunner();
  CaseRunner(const CaseRunner&) = delete;
  CaseRunner& operator=(const CaseRunner&) = delete;

  // The run.log row of one case. Never throws for a failure of the case itself.
  [[nodiscard]] nlohmann::json run_case(const Op& op, const Case& c);
  // --profile: the case's providers prepared as for a run (the same configs), then each launched
  // `launches` times inside a device range "<node>/<provider>" and synchronized, with no timing
  // and no correctness check. The row has status, the providers (name, role, config, range,
  // launches) and no latency. Never throws for a failure of the case itself.
  [[nodiscard]] nlohmann::json profile_case(const Op& op, const Case& c, int launches);
  // Tune only (parallel-warmup shard): selects the configs of every tunable candidate of the case.
  void tune_case(const Op& op, const Case& c);
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }
  [[nodiscard]] backends::Device& device() { return *device_; }
  [[nodiscard]] tune::Tuner& tuner() { return *tuner_; }
  // The run's timing options for a probe that is not a case (the peak measurements).
  [[nodiscard]] timing::TimingOptions timing_options_for_probe() const {
    OpInfo info;
    info.name = "probe";
    return timing_options(info, false);
  }

 private:
  [[nodiscard]] timing::TimingOptions timing_options(const OpInfo& info, bool short_budget) const;
  [[nodiscard]] Config choose_config(const OpInfo& info, const Case& c, Workload& w, std::size_t p,
                                     const ProviderInfo& pi, nlohmann::json& prow);

  const backends::Backend& backend_;
  core::Knobs knobs_;
  std::string timer_;
  std::unique_ptr<backends::Device> device_;
  std::unique_ptr<tune::Tuner> tuner_;
  std::vector<std::string> deny_;
  std::string fatal_;  // node id of the case after which the device context is unusable
  std::vector<std::string> warnings_;
};

// The table printed at the end of a run: one line per case row, with the given columns
// (core::run_table_columns(); empty: the default set). `quantiles` are the q of --quantiles,
// for the quantiles column.
void print_run_table(std::ostream& out, const std::vector<nlohmann::json>& rows,
                     const std::vector<std::string>& columns = {},
                     const std::vector<double>& quantiles = {});
// Why a case row's stopping rule was missed: the first provider whose stop_reason is not
// "converged" (or that says converged false, or carries STOP_NOT_CONVERGED); "" when none.
[[nodiscard]] std::string stop_rule_miss(const nlohmann::json& row);
// Spelled once, in core/markers.hpp.
inline constexpr const char* kMarkerStopNotConverged = core::markers::stop_missed;
// On a long run, when the rest should end: "eta ~4m10s" from the mean time per case so far times
// the cases left (cases differ in length: a guide, said with ~). "" before kEtaAfterS of cases
// or after the last case.
inline constexpr double kEtaAfterS = 10.0;
[[nodiscard]] std::string eta_text(double elapsed_s, std::size_t done, std::size_t total);
// 75 -> "1m15s", 3700 -> "1h01m", 8 -> "8s".
[[nodiscard]] std::string duration_text(double seconds);

}  // namespace caliber::run
