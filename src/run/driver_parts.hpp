// The phases of one run (run/driver.cpp), shared by the run whose cases an embedding feeds
// (run/fed_run.cpp): one owner for the run directory, identity, banner, progress and footer.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "core/runlog.hpp"
#include "run/cases.hpp"
#include "run/driver.hpp"
#include "run/peaks.hpp"

namespace caliber::tune {
class Tuner;
}

namespace caliber::run {

class CaseRunner;

namespace parts {

// What phase 1 resolves before anything is written: the backend, the device, the cases, the timer.
struct Setup {
  const backends::Backend* backend = nullptr;
  backends::Capabilities caps;
  backends::DeviceDesc device;
  int dev_index = 0;
  Selection sel;
  std::string timer;           // the resolved timer, "graph" or "direct"
  std::string timer_note;      // why auto chose the direct timer on a device ("" otherwise)
  bool sequence_mode = false;  // --quantiles or --return-mode all: repetition is skipped
};

// The run directory claimed in phase 2, with what is written into it as the run goes.
struct RunFiles {
  std::filesystem::path dir;
  nlohmann::json identity;
  std::unique_ptr<core::RunLogWriter> log;
};

// Phase 1: every knob checked, nothing written; throws UsageError.
[[nodiscard]] Setup resolve_setup(const RunRequest& req);
// Phase 2: the run directory, run_identity.json (with `extra`'s keys), shapes.yaml, the header.
[[nodiscard]] RunFiles claim_run(const core::Knobs& k, const Setup& s, std::uint64_t seed,
                                 std::chrono::system_clock::time_point wall_start,
                                 const nlohmann::json& extra = nlohmann::json());
void print_banner(std::ostream& out, const core::Knobs& k, const Setup& s,
                  const std::filesystem::path& dir, std::uint64_t seed);
// Phase 4: the device's peaks and the timer's floor, recorded in the identity.
[[nodiscard]] Peaks run_peaks(const core::Knobs& k, const backends::Backend& backend,
                              CaseRunner& runner, RunFiles& f, std::ostream& out);
// One progress line of case i of n (n 0: the count is not known ahead).
void print_progress(std::ostream& out, const core::Knobs& k, const std::string& node,
                    const core::CaseRow& row, const std::string& status, std::size_t i,
                    std::size_t n, double elapsed);
// Counts a finished row into `o`; returns its status.
std::string tally(RunOutcome& o, const core::CaseRow& row);
// Phase 6: the footer, the warnings and the closing table. `tune_footer`: the footer's tune object
// when the tuning was not caliber's tuner's (a FlagGems run's LibTuner totals).
void finish_run(const core::Knobs& k, CaseRunner& runner, const nlohmann::json& warmup_result,
                const std::vector<core::CaseRow>& rows, double wall_s, core::RunLogWriter& log,
                const RunOutcome& outcome, std::ostream& out, std::ostream& err,
                tune::Tuner* tuner = nullptr, const core::FooterTune* tune_footer = nullptr);

}  // namespace parts
}  // namespace caliber::run
