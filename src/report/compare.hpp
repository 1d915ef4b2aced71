// caliber compare A B: an A/B of two runs (or batches, or the rounds of `caliber ab`). The two
// calibers are checked first; rows are paired by op, dtype and size detail; only rows that
// succeeded on both sides with a positive latency count, and the unpaired and excluded counts are
// shown so an incomplete pairing cannot look complete. Each pair gets the ratio
// median(B) / median(A) of its samples, a bootstrap CI of that ratio and a verdict against a
// noise band.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "records/identity.hpp"
#include "report/calibration.hpp"
#include "report/rundata.hpp"
#include "report/table.hpp"

namespace caliber::report {

using core::Verdict;
[[nodiscard]] const char* to_string(Verdict v) noexcept;  // FASTER, SLOWER, SAME, UNSURE

// The noise terms of a comparison. Unless the user gives them (--run-noise, --paired-noise),
// compare takes them from the calibration file of the runs' device model (report/calibration.hpp,
// docs/ab.md "Calibration files"); a CompareResult carries the terms it used and whence.
struct NoiseModel {
  // Run-to-run noise: the relative standard deviation between two runs of the same code on one
  // device, which one run's samples cannot show (clock and power state, memory placement, host
  // jitter). A side of R runs of a case gets it divided by sqrt(R) added to its interval in
  // quadrature (with two or more, the grouped bootstrap also measures the spread it drew). A pair
  // takes the largest that applies: `run_noise`, its family's entry (the row's "family"),
  // "fallback" when either row fell back to the direct timer (BENCHMARK_DIRECT_NO_CUDAGRAPH); then
  // the floor term below.
  double run_noise = 0;
  std::map<std::string, double> run_noise_class;
  // The timer floor's jitter between processes (microseconds), added to every class in
  // quadrature as floor_us / median: it is what makes short kernels move.
  double run_noise_floor_us = 0;
  // Paired A/B (caliber ab of two libraries in one process, docs/ab.md): the interval comes from
  // the blocks' log ratios, widened in quadrature by this residual per round (relative standard
  // deviation of a paired ratio between rounds that the blocks of one round cannot show), in
  // quadrature with paired_noise_floor_us / the median, divided by sqrt(rounds); per family as
  // run_noise_class. These hold for a pair timed in two placement phases (the crossover).
  double paired_noise = 0;
  std::map<std::string, double> paired_noise_class;
  double paired_noise_floor_us = 0;
  // The residual of a paired pair timed in one placement phase: the buffers' placement is then
  // in its ratio, so it needs more. --paired-noise sets both.
  double paired_one_phase = 0;
  std::map<std::string, double> paired_one_phase_class;
  double paired_one_phase_floor_us = 0;
  // Set by parse_run_noise / parse_paired_noise: the user's terms win over the calibration file.
  // A spec without a default PCT ("blas=5") keeps the file's default term.
  bool run_noise_given = false, run_noise_pct_given = false;
  bool paired_noise_given = false, paired_noise_pct_given = false;
  // Where the terms not given came from (the calibration files and their derivation), and one
  // line per device without a file of its own; filled by calibrate().
  std::string run_noise_from, paired_from, paired_one_phase_from;
  std::vector<std::string> calibration_notes;
};

struct CompareOptions : NoiseModel {
  // The equivalence band (fraction): a CI wholly inside it is SAME. It decides nothing about
  // FASTER/SLOWER, which need the CI to exclude 1 and an effect of at least min_effect.
  double noise_band = 0.03;
  // The smallest effect reported as FASTER/SLOWER (fraction): 0.5%, about the 90th percentile
  // of what the same code moved between two runs on rows of 20 us or more in the calibration set
  // (docs/ab.md); below it a difference is real but too small to name.
  double min_effect = 0.005;
  // When the two sides ran on different physical devices (uuid) or on different nodes (the Slurm
  // node name, else the host name), the band is at least this:
  // chip-to-chip differences are not in a CI built from one run's samples. Two runs of the same
  // code on two H200s differed by up to 5.8% (cuBLAS f16 4096^3 baseline, 2026-11-29).
  double device_band = 0.06;
  double confidence = 0.95;
  int resamples = 2000;
  std::uint64_t seed = 1;
  int min_samples = 2;  // fewer samples on a side: the verdict is UNSURE
  bool allow_mismatch = false;
  std::optional<double> fail_on_regression_pct;
  // Called after each case of side A is paired (done, total); empty: no progress is shown.
  std::function<void(std::size_t, std::size_t)> progress;
};

// "0.5,blas=1.5,fallback=3,floor_us=0.2" -> default 0.5%, then per class (a family or
// "fallback"), fractions in the result, and the floor in microseconds (0 when not given); the
// terms then count as given. Throws std::invalid_argument.
void parse_run_noise(const std::string& spec, NoiseModel& opt);

// --paired-noise, the same syntax as --run-noise, into the paired_noise fields and the one-phase
// ones (a term the user gives holds for every paired pair).
void parse_paired_noise(const std::string& spec, NoiseModel& opt);

// The terms not given, from the calibration files of the devices both sides ran on
// (choose_calibration); throws CalibrationError when there is none to take.
void calibrate(NoiseModel& noise, const std::vector<RunData>& a, const std::vector<RunData>& b);

struct PairResult {
  std::string op, dtype, shape;
  std::string role, provider;
  bool primary = false;  // the candidate (or the baseline of a baseline-only op): gates and ranges
  std::size_t n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0, ratio = 0;
  core::Interval ci;
  Verdict verdict = Verdict::unsure;
  bool fallback = false;  // either side's row carries BENCHMARK_DIRECT_NO_CUDAGRAPH
  bool grouped = false;   // the CI resampled runs, then samples (several runs on both sides)
  double run_noise = 0;   // the run-to-run term added to the CI (log scale half-width), 0 if none
  double sample_hw = 0;   // the samples' own half width toward no change (log scale)
  int runs = 1;           // runs (or rounds) on the side with fewer
  bool paired = false;    // the CI came from paired blocks (one process per round, docs/ab.md)
  int blocks = 0;         // paired: block pairs over all rounds
  int phases = 1;         // paired: 2 when timed in the two placement phases (crossover)
  double placement = 0;   // crossover: the relative effect of placement it cancelled
  core::Resolution resolution;  // UNSURE: what would resolve it
};

struct OpRange {
  std::string op;
  int pairs = 0;
  double min = 0, max = 0;
  bool fallback = false;
  int faster = 0, slower = 0, same = 0, unsure = 0;
};

struct ExclusionCounts {
  int failed = 0, skipped = 0, no_latency = 0;
  [[nodiscard]] int total() const noexcept { return failed + skipped + no_latency; }
};

struct CompareResult {
  std::vector<core::IdentityDiff> mismatches;  // A's caliber vs B's
  std::vector<std::string>
      identity_problems;  // a missing identity, or a side disagreeing with itself
  std::vector<PairResult> pairs;
  std::vector<OpRange> ops;
  // duplicate_rows_note of each side; "" when none.
  std::string duplicates_a, duplicates_b;
  int runs_a = 0, runs_b = 0;
  int cases_a = 0, cases_b = 0;  // distinct (op, dtype, shape) per side
  int paired = 0;                // cases that were compared
  int only_a = 0, only_b = 0;    // cases present on one side only
  int excluded = 0;              // cases on both sides, not ok with a positive latency on both
  ExclusionCounts excluded_a, excluded_b;  // why, per side (a case may count on both)
  std::vector<std::string> regressions;    // "op dtype shape: ratio 1.083 (SLOWER)"
  // "op dtype shape" of the cases that ran in A and failed in B: a regression gate fails on them.
  std::vector<std::string> broken;
  bool cross_device = false;    // the sides ran on different physical devices (uuid) or nodes
  std::string cross_nodes;      // "nodeA vs nodeB" when the nodes differ (Slurm node, else host)
  double band_used = 0;         // the noise band the verdicts used
  int unsure_by_run_noise = 0;  // pairs UNSURE only because the run-to-run noise was added
  int paired_rounds = 0;        // paired A/B: rounds whose runs were paired in one process
  NoiseModel noise;             // the terms the verdicts used, and whence (calibrate)
  std::string loaded_host;      // one line when a side's host was loaded (identity host_load)

  [[nodiscard]] bool mismatch() const noexcept {
    return !mismatches.empty() || !identity_problems.empty();
  }
  [[nodiscard]] bool any_difference() const noexcept;  // some pair FASTER or SLOWER
};

// The identity check alone (a side with several runs is also checked against itself).
void check_identities(const std::vector<RunData>& a, const std::vector<RunData>& b,
                      CompareResult& out);
// Pairs and verdicts on runs already loaded; a side of several runs pools the samples of its rows.
[[nodiscard]] CompareResult compare_loaded(const std::vector<RunData>& a,
                                           const std::vector<RunData>& b,
                                           const CompareOptions& opt = {});
// Throws std::invalid_argument naming the first run made with --profile (it timed nothing).
void refuse_profile_runs(const std::vector<RunData>& runs);
// Reads the directories (runs or batches) and compares them; a profile run is refused.
[[nodiscard]] CompareResult compare_dirs(const std::vector<std::filesystem::path>& a,
                                         const std::vector<std::filesystem::path>& b,
                                         const CompareOptions& opt = {});

// "CALIBER MISMATCH: level: core vs comprehensive", one line per difference.
[[nodiscard]] std::vector<std::string> mismatch_lines(const CompareResult& r);
[[nodiscard]] Report compare_report(const CompareResult& r, const CompareOptions& opt = {});
// 2 on a caliber mismatch (unless allowed), 1 on a regression past --fail-on-regression, else 0.
[[nodiscard]] int compare_exit_code(const CompareResult& r, const CompareOptions& opt = {});

}  // namespace caliber::report
