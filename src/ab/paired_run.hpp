// The paired A/B run (docs/ab.md): side A's ops and side B's op library in one process, two run
// directories, each case timed on both sides block by block (ab/case_runner_paired.cpp).
#pragma once

#include <iosfwd>

#include "run/driver.hpp"

namespace caliber::run {

// A paired A/B: req.paired_lib is side B's op library. Throws UsageError for bad input before
// anything is written.
[[nodiscard]] RunOutcome run_paired(const RunRequest& req, std::ostream& out, std::ostream& err);

// What `caliber run` runs: run_paired when req.paired_lib names side B's library, else
// run_benchmark (one run).
[[nodiscard]] RunOutcome run_requested(const RunRequest& req, std::ostream& out, std::ostream& err);

}  // namespace caliber::run
