// One case, start to finish: skip guards and compat rules, memory check, inputs, tuned configs,
// the correctness gate, the timers, and the row written to run.log.
#pragma once

#include <exception>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "records/runlog_rows.hpp"

#include "backends/backend.hpp"
#include "caliber/caliber.hpp"
#include "run/run_table.hpp"
#include "settings/knobs.hpp"
#include "timing/timer.hpp"

#include "tune/tuner.hpp"

namespace caliber::run {

class PlacementPool;

// The one mapping from the knobs to a measurement's timing options (timer, repetition, return
// mode, quantiles, L2, sample method, stopping rule, clock regime, throttle): the case runner's,
// and the C ABI's for caliber.bench (capi/capi.cpp). What is the case's own (the op, the capture
// deny list, the regime carried) the caller adds.
[[nodiscard]] timing::TimingOptions timing_options_of(const core::Knobs& k,
                                                      const backends::Capabilities& caps);

class CaseRunner {
 public:
  CaseRunner(const backends::Backend& backend, int device_index, std::uint64_t seed,
             const core::Knobs& knobs, core::TimerKind timer, const tune::Settings& tune_settings);
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
  // Paired A/B (docs/ab.md): one case of two builds of an op, side A's `a` and side B's `b`, in
  // this one process. Both workloads are set up (from the same seeds) and checked; then each
  // provider both sides share (same role and name) is timed with both sides in one captured graph
  // (else in ABBA blocks), so both see the same clock and power state. With `crossover`, the time
  // is split into two phases: the second sets each side up again in the memory the other side had
  // in the first (PlacementPool), so where the buffers landed weighs on both sides alike. Returns
  // A's row and B's row, ordinary run.log rows whose paired providers also carry block_medians_ms
  // (`blocks` a side, in time order; paired_phases says how many placement phases they split
  // into). Side B's tuned configs come from `tuner_b` (its own cache). Never throws for a failure
  // of the case itself. The paired half is defined in ab/case_runner_paired.cpp.
  [[nodiscard]] std::pair<core::CaseRow, core::CaseRow> run_case_paired(const Op& a, const Op& b,
                                                                        const Case& c, int blocks,
                                                                        bool crossover,
                                                                        tune::Tuner& tuner_b);
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

  // A failure of a case outside the timers (set-up, preparation, tuning, the check): its message,
  // the backend's class of a device error, and whether the op skipped the case instead.
  struct CaseFailure {
    std::string what;
    std::optional<backends::Failure> failure;  // a device error: the backend's class of it
    bool skipped = false;                      // CaseSkipped: the op declined the case
    // "what [class]" for a device error, else what.
    [[nodiscard]] std::string text() const {
      return failure ? what + " [" + backends::to_string(*failure) + "]" : what;
    }
  };
  [[nodiscard]] backends::Device& device() { return *device_; }
  [[nodiscard]] tune::Tuner& tuner() { return *tuner_; }
  // The clock regime state carried from one measurement to the next (--settle carry).
  [[nodiscard]] const timing::RegimeCarry& regime_carry() const { return *carry_; }
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
                                       CaseWork& work, core::CaseRow& row,
                                       DeviceContext* ctx = nullptr);
  void prepare_providers(const OpInfo& info, const Case& c, CaseWork& work, core::CaseRow& row);
  void check_candidates(CaseWork& work);
  static void write_phases(core::CaseRow& row, const CaseWork& work, double wall_s);
  void time_providers(const OpInfo& info, const Case& c, CaseWork& work, core::CaseRow& row);
  void profile_prepare(const OpInfo& info, const Case& c, Workload& w,
                       const std::vector<ProviderInfo>& providers,
                       std::vector<core::ProviderRow>& prows);
  void profile_launch(const Case& c, Workload& w, const std::vector<ProviderInfo>& providers,
                      int launches, std::vector<core::ProviderRow>& prows);
  // Paired A/B: times the providers of both sides (run_case_paired), pair by pair
  // (ab/case_runner_paired.cpp).
  struct PairSide;
  [[nodiscard]] timing::Measurement measure_side(PairSide& s, std::size_t p,
                                                 const timing::TimingOptions& o);
  [[nodiscard]] timing::TimingOptions block_options(const OpInfo& info, int blocks,
                                                    bool first_of_side, bool first_overall) const;
  struct PairTiming;
  [[nodiscard]] std::optional<PairTiming> time_interleaved(PairSide& a, PairSide& b, std::size_t pa,
                                                           std::size_t pb, int blocks, int phase,
                                                           int phases);
  [[nodiscard]] PairTiming time_pair(PairSide& a, PairSide& b, std::size_t pa, std::size_t pb,
                                     int blocks, int phase, int phases);
  bool record_pair(PairSide& a, PairSide& b, std::size_t pa, std::size_t pb, const Case& c,
                   const PairTiming& t1, const std::optional<PairTiming>& t2, bool partial);
  [[nodiscard]] bool set_up_crossed(const Op& oa, const Op& ob, const Case& c, CaseWork& wa,
                                    CaseWork& wb, PlacementPool& pool, std::uint64_t seeds);
  bool time_alone(PairSide& s, std::size_t p, const Case& c);
  void time_paired(const Op& oa, const Op& ob, const Case& c, CaseWork& wa, CaseWork& wb,
                   core::CaseRow& ra, core::CaseRow& rb, int blocks, PlacementPool* pool,
                   std::uint64_t seeds);
  // One measurement of provider p of `w`; an exception is a failed measurement.
  [[nodiscard]] timing::Measurement measure_provider(Workload& w, std::size_t p,
                                                     const timing::TimingOptions& o);
  // Writes one provider's measurement into its row (a direct fallback under the graph timer marks
  // the row timer=direct, a failure is counted); false when the process must time nothing more.
  bool record_timing(CaseWork& work, core::CaseRow& row, std::size_t p, const Case& c,
                     const timing::Measurement& m, double flops, double bytes);
  [[nodiscard]] timing::TimingOptions timing_options(const OpInfo& info, bool short_budget) const;
  // The one case-error path: the exception `e` (in flight in a catch block) as a CaseFailure. A
  // device error (a NativeError the backend classifies, or a DeviceBroken a sweep raised) whose
  // class leaves the process unusable marks the device unusable after this case (fatal_). An
  // exception that is no std::exception is rethrown.
  [[nodiscard]] CaseFailure failure_of(const Case& c, const std::exception_ptr& e);
  // The providers with their configs the device cannot launch left out (the plan's cluster_fix
  // stage: a config asking for thread-block clusters the backend lacks, or a larger cluster than
  // it launches), before any sweep, replay or cache lookup; a default pruned away is the first
  // config left.
  [[nodiscard]] std::vector<ProviderInfo> launchable(std::vector<ProviderInfo> providers) const;
  [[nodiscard]] Config choose_config(const OpInfo& info, const Case& c, Workload& w, std::size_t p,
                                     const ProviderInfo& pi, core::ProviderRow& prow);

  const backends::Backend& backend_;
  core::Knobs knobs_;
  core::TimerKind timer_;  // the run's resolved timer: graph or direct
  std::unique_ptr<backends::Device> device_;
  std::unique_ptr<tune::Tuner> tuner_;
  tune::Tuner* side_tuner_ = nullptr;  // paired A/B: side B's tuner while B's case is prepared
  [[nodiscard]] tune::Tuner& active_tuner() { return side_tuner_ ? *side_tuner_ : *tuner_; }
  std::vector<std::string> deny_;
  std::string fatal_;  // node id of the case after which the device context is unusable
  std::vector<std::string> warnings_;
  std::unique_ptr<timing::RegimeCarry> carry_ = std::make_unique<timing::RegimeCarry>();
};

}  // namespace caliber::run
