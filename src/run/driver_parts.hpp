// The phases of one run that the paired A/B run (ab/paired_run.cpp) and a fed run
// (run/fed_run.cpp, caliber run --flaggems) reuse: what phase 1 resolves, the run directory
// claimed in phase 2, the banner, the peaks, the progress line, the tally and the closing footer
// and table. Internal to run/driver.cpp, ab/paired_run.cpp and run/fed_run.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "records/runlog.hpp"
#include "records/runlog_rows.hpp"
#include "run/case_runner.hpp"
#include "run/cases.hpp"
#include "run/driver.hpp"
#include "run/peaks.hpp"
#include "settings/knobs.hpp"
#include "tune/tuner.hpp"

namespace caliber::run {

namespace driver_parts {

namespace fs = std::filesystem;
using nlohmann::json;

// What phase 1 resolves before anything is written: the backend, the device, the cases, the timer.
struct Setup {
  const backends::Backend* backend = nullptr;
  backends::Capabilities caps;
  backends::DeviceDesc device;
  int dev_index = 0;
  Selection sel;
  core::TimerKind timer = core::TimerKind::direct;  // the resolved timer: graph or direct
  std::string timer_note;      // why auto chose the direct timer on a device ("" otherwise)
  bool sequence_mode = false;  // --quantiles or --return-mode all: repetition is skipped
};

// The run directory claimed in phase 2, with what is written into it as the run goes.
struct RunFiles {
  fs::path dir;
  json identity;
  std::unique_ptr<core::RunLogWriter> log;
};

[[nodiscard]] std::uint64_t fresh_seed();
[[nodiscard]] Setup resolve_setup(const RunRequest& req);
[[nodiscard]] RunFiles claim_run(const core::Knobs& k, const Setup& s, std::uint64_t seed,
                                 std::chrono::system_clock::time_point wall_start,
                                 const json& extra = json());
void print_banner(std::ostream& out, const core::Knobs& k, const Setup& s, const fs::path& dir,
                  std::uint64_t seed);
// --dry-run: what the run would cost (cases, GB and seconds per op, whether the peaks are
// cached); `what` is said after the run's name ("" for a plain run). Nothing is run or written.
void print_dry_run(std::ostream& out, const core::Knobs& k, const Setup& s,
                   const std::string& what = "");
[[nodiscard]] Peaks run_peaks(const core::Knobs& k, const backends::Backend& backend,
                              const backends::DeviceDesc& device, core::TimerKind timer,
                              CaseRunner& runner, RunFiles& f, std::ostream& out,
                              std::ostream& err);
// One progress line, its ETA from the cases' estimates (run/estimate.hpp).
void print_progress(std::ostream& out, const core::Knobs& k, const Case& c,
                    const core::CaseRow& row, const std::string& status, std::size_t i,
                    std::size_t n, double elapsed, const std::vector<double>& est);
// The same for a case known by its node id (a fed run: n 0, the count is not known ahead).
void print_progress(std::ostream& out, const core::Knobs& k, const std::string& node,
                    const core::CaseRow& row, const std::string& status, std::size_t i,
                    std::size_t n, double elapsed, const std::vector<double>& est = {});
[[nodiscard]] std::string tally(RunOutcome& o, const core::CaseRow& row);
// The host's load when the cases are done, beside the one at the start (run_identity.json
// "host_load"; compare warns about a side whose host was loaded).
void record_end_load(RunFiles& f);
// Phase 6: the footer, the warnings and the closing table. `tune_footer`: the footer's tune object
// when the tuning was not caliber's tuner's (a FlagGems run's LibTuner totals); `startup`: a fed
// run's start-up phases (named seconds) for the footer and the closing line.
void finish_run(const core::Knobs& k, CaseRunner& runner, const json& warmup_result,
                const std::vector<core::CaseRow>& rows, double wall_s, core::RunLogWriter& log,
                const RunOutcome& outcome, std::ostream& out, std::ostream& err,
                tune::Tuner* tuner = nullptr, const core::FooterTune* tune_footer = nullptr,
                const json* startup = nullptr);

}  // namespace driver_parts

}  // namespace caliber::run
