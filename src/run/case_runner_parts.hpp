// The parts of the case runner that its paired A/B half (ab/case_runner_paired.cpp) shares with
// the one-case path (run/case_runner.cpp): one case's work between the phases, the exception a
// sweep raises when the device context is unusable, and the run.log row helpers. Internal to
// those two files.
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "records/runlog_rows.hpp"
#include "run/case_runner.hpp"
#include "timing/timer.hpp"

namespace caliber::run {

namespace case_parts {

// Raised out of a sweep when a measurement left the device context unusable.
struct DeviceBroken : std::runtime_error {
  DeviceBroken(const std::string& what, backends::Failure f)
      : std::runtime_error(what), failure(f) {}
  backends::Failure failure;
};

void add_markers(core::CaseRow& row, const std::vector<std::string>& ms);
// A provider's timing fields on its run.log object (docs/run-log.md lists them).
void write_timing(core::ProviderRow& prow, const timing::Measurement& m, double flops,
                  double bytes);
[[nodiscard]] core::CaseRow case_row_head(const OpInfo& info, const Case& c);
void summarize_row(core::CaseRow& row, const std::vector<core::ProviderRow>& prows, bool any_fail,
                   const std::string& first_error);
void end_skipped(core::CaseRow& row, const std::string& reason);

}  // namespace case_parts

// What a case's measurements cost: their settling, and the rest of their wall time (the timers'
// warmup, capture and sampling): a row's settle_s and timing_s. A native case and a fed one
// (run/fed_run.cpp) count them the same way.
struct MeasuredTime {
  double settle_s = 0, timed_s = 0;
  void count(const timing::Measurement& m) {
    settle_s += m.settle_s;
    timed_s += std::max(0.0, m.wall_s - m.settle_s);
  }
};

// The work of one case between run_case's phases.
struct CaseRunner::CaseWork : MeasuredTime {
  std::unique_ptr<Workload> w;
  std::vector<ProviderInfo> providers;
  std::vector<core::ProviderRow> prows;  // the provider objects, one per provider
  std::vector<Config> configs;           // the config each provider was prepared with
  std::vector<timing::Measurement> measured;
  bool any_fail = false;
  bool fell_back = false;   // a provider fell back to the direct timer under the graph timer
  std::string first_error;  // "<provider>: <error>" of the first provider that failed
  // Seconds spent per phase (the row's inputs_s, prepare_s, ...).
  double inputs_s = 0, prepare_s = 0, check_s = 0;  // settle_s, timed_s: MeasuredTime
};

}  // namespace caliber::run
