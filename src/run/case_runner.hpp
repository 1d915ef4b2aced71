// One case, start to finish: skip guards and compat rules, memory check, inputs, tuned configs,
// the correctness gate, the timers, and the row written to run.log.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/runlog_rows.hpp"

#include "backends/backend.hpp"
#include "caliber/caliber.hpp"
#include "core/knobs.hpp"
#include "run/run_table.hpp"
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
  [[nodiscard]] core::CaseRow run_case(const Op& op, const Case& c);
  // --profile: the case's providers prepared as for a run (the same configs), then each launched
  // `launches` times inside a device range "<node>/<provider>" and synchronized, with no timing
  // and no correctness check. The row has status, the providers (name, role, config, range,
  // launches) and no latency. Never throws for a failure of the case itself.
  [[nodiscard]] core::CaseRow profile_case(const Op& op, const Case& c, int launches);
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
  struct CaseWork;  // one case's workload, providers and provider objects, between run_case's
                    // phases
  // run_case's phases, in order (docs/architecture.md). Each returns false when the row is
  // finished (skipped or failed) and the case goes no further.
  [[nodiscard]] bool admit(const Op& op, const Case& c, core::CaseRow& row);
  [[nodiscard]] bool prepare_and_check(const Op& op, const OpInfo& info, const Case& c,
                                       CaseWork& work, core::CaseRow& row);
  void prepare_providers(const OpInfo& info, const Case& c, CaseWork& work, core::CaseRow& row);
  void check_candidates(CaseWork& work);
  void time_providers(const OpInfo& info, const Case& c, CaseWork& work, core::CaseRow& row);
  void profile_prepare(const OpInfo& info, const Case& c, Workload& w,
                       const std::vector<ProviderInfo>& providers,
                       std::vector<core::ProviderRow>& prows);
  void profile_launch(const Case& c, Workload& w, const std::vector<ProviderInfo>& providers,
                      int launches, std::vector<core::ProviderRow>& prows);
  [[nodiscard]] timing::TimingOptions timing_options(const OpInfo& info, bool short_budget) const;
  [[nodiscard]] Config choose_config(const OpInfo& info, const Case& c, Workload& w, std::size_t p,
                                     const ProviderInfo& pi, core::ProviderRow& prow);

  const backends::Backend& backend_;
  core::Knobs knobs_;
  std::string timer_;
  std::unique_ptr<backends::Device> device_;
  std::unique_ptr<tune::Tuner> tuner_;
  std::vector<std::string> deny_;
  std::string fatal_;  // node id of the case after which the device context is unusable
  std::vector<std::string> warnings_;
};

}  // namespace caliber::run
