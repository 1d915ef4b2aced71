// caliber compare A B: an A/B of two runs (or batches, or the rounds of `caliber ab`). The two
// calibers are checked first; rows are paired by op, dtype and size detail; only rows that
// succeeded on both sides with a positive latency count, and the unpaired and excluded counts are
// shown so an incomplete pairing cannot look complete. Each pair gets the ratio
// median(B) / median(A) of its samples, a bootstrap CI of that ratio and a verdict against a
// noise band.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "records/identity.hpp"
#include "report/rundata.hpp"
#include "report/table.hpp"

namespace caliber::report {

using core::Verdict;
[[nodiscard]] const char* to_string(Verdict v) noexcept;  // FASTER, SLOWER, SAME, UNSURE

// How the default run-to-run terms were derived (printed by compare --help and under its table).
inline constexpr const char* kRunNoiseDerivation =
    "derived 2026-11-30 from the calibration set: every same-code pair recorded in the sustained "
    "regime that day on one H200, machines B (17:04-17:09 UTC: mm bmm add gelu sum cumsum softmax "
    "layer_norm), C (17:16-17:22: mm bmm add softmax sort sum) and the 17:55 call (mm bmm), 418 "
    "provider pairs. A side's term is hypot(class %, floor_us / median), the smallest that puts "
    "every pair of its class (quantile 1.0 of the widening it needed) inside the 95% interval: "
    "other 2.2% with 0.15 us (256 pairs; bound by gelu 1 GiB at 1.3 ms, 6.5% apart, and softmax "
    "64x512x512 at 21 us), blas 4.5% (162 pairs; bmm 2x4096^3 at 345 us, 12.3% apart); fallback "
    "4.3% from the burst pairs of machines B and C (72 pairs, the only fallback rows recorded). "
    "Checked on a fresh H200 (docs/ab.md)";

// How the default paired residual was derived (printed by --help and under a paired table).
inline constexpr const char* kPairedNoiseDerivation =
    "derived 2026-12-01 from same-code paired A/Bs with the placement crossover (both sides in "
    "one graph, interleaved, two phases in swapped memory) of the whole core corpus on two H200s, "
    "GPU-4aba6bea (07:37-07:47 UTC, 762 provider pairs) and GPU-9facfc19 (08:38-08:47 UTC, 740): "
    "the smallest terms that put every pair of their class inside the 95% interval (quantile "
    "1.0): 0.73%, bound by embedding f32 32000x4096x4096 (rowcopy, 36 us, 1.6% apart); norm "
    "family 1.26% (rms_norm f16 4096x4096, 21 us, 2.3-2.5% apart on both machines); floor_us "
    "0.121 (sum bf16 1M, cub, 6 us, 4.1% apart); each rounded up. Fitted on the first machine "
    "alone (0.61,norm=1.17) it gave 1 "
    "FASTER of 740 on the second, so both fit it. Verified on a third, GPU-9f0a8b65 (08:53-08:57 "
    "UTC, mm bf16 comprehensive, 178 pairs): 0 FASTER/SLOWER (docs/ab.md)";

// The same for a paired pair timed in one placement phase (--crossover off, Python suites, a
// crossover that could not be set up): where each side's buffers landed stays in its ratio.
inline constexpr const char* kPairedNoiseOnePhaseDerivation =
    "derived 2026-12-01 from one-phase same-code paired A/Bs of the whole core corpus and mm "
    "bf16 at comprehensive on H200 GPU-48915a65/GPU-a5693b1d (02:14-02:23 UTC, 992 provider "
    "pairs), quantile 1.0: 0.96%, bound by mm bf16 M16-N128256-K4096 (cuBLAS, 1.9% apart); sort "
    "family 1.94% (sort i64 1M, 3.8% apart); thrust 2.1% (GPU-2c700bdd, 00:12 UTC: f16/bf16 "
    "elementwise 2.4-4.0% apart); floor_us 0.63. Verified on GPU-caa7802e (688 pairs): 0 "
    "FASTER/SLOWER";

// The default terms, as --run-noise and --paired-noise spell them: the one place they are set
// (CompareOptions parses them; --help prints them).
inline constexpr const char* kDefaultRunNoise = "2.2,blas=4.5,fallback=4.3,floor_us=0.15";
inline constexpr const char* kDefaultPairedNoise = "0.73,norm=1.26,floor_us=0.121";
inline constexpr const char* kDefaultPairedNoiseOnePhase =
    "0.96,sort=1.94,thrust=2.1,floor_us=0.63";

struct CompareOptions {
  CompareOptions();  // the noise terms from kDefaultRunNoise and kDefaultPairedNoise

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
  // Run-to-run noise: the relative standard deviation between two runs of the same code on one
  // device, which one run's samples cannot show (clock and power state, memory placement, host
  // jitter). A side of R runs of a case gets it divided by sqrt(R) added to its interval in
  // quadrature (with two or more, the grouped bootstrap also measures the spread it drew). A pair
  // takes the largest that applies: `run_noise`, its family's entry (the row's "family"),
  // "fallback" when either row fell back to the direct timer (BENCHMARK_DIRECT_NO_CUDAGRAPH); then
  // the floor term below. How the defaults were derived: kRunNoiseDerivation.
  double run_noise = 0;
  std::map<std::string, double> run_noise_class;
  // The timer floor's jitter between processes (microseconds), added to every class in
  // quadrature as floor_us / median: it is what makes short kernels move (about 0.2-0.3 us).
  double run_noise_floor_us = 0;
  // Paired A/B (caliber ab of two libraries in one process, docs/ab.md): the interval comes from
  // the blocks' log ratios, widened in quadrature by this residual per round (relative standard
  // deviation of a paired ratio between rounds that the blocks of one round cannot show), in
  // quadrature with paired_noise_floor_us / the median, divided by sqrt(rounds); per family as
  // run_noise_class. How the defaults were derived: kPairedNoiseDerivation.
  double paired_noise = 0;
  std::map<std::string, double> paired_noise_class;
  double paired_noise_floor_us = 0;
  // The residual of a paired pair timed in one placement phase (kDefaultPairedNoiseOnePhase): the
  // buffers' placement is then in its ratio, so it needs more. --paired-noise sets both.
  double paired_one_phase = 0;
  std::map<std::string, double> paired_one_phase_class;
  double paired_one_phase_floor_us = 0;
  double confidence = 0.95;
  int resamples = 2000;
  std::uint64_t seed = 1;
  int min_samples = 2;  // fewer samples on a side: the verdict is UNSURE
  bool allow_mismatch = false;
  std::optional<double> fail_on_regression_pct;
};

// "0.5,blas=1.5,fallback=4.3,floor_us=0.15" -> default 0.5%, then per class (a family or
// "fallback"), fractions in the result, and the floor in microseconds (0 when not given).
// Throws std::invalid_argument.
void parse_run_noise(const std::string& spec, CompareOptions& opt);

// --paired-noise, the same syntax as --run-noise, into the paired_noise fields and the one-phase
// ones (a term the user gives holds for every paired pair).
void parse_paired_noise(const std::string& spec, CompareOptions& opt);

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
  int runs_a = 0, runs_b = 0;
  int cases_a = 0, cases_b = 0;  // distinct (op, dtype, shape) per side
  int paired = 0;                // cases that were compared
  int only_a = 0, only_b = 0;    // cases present on one side only
  int excluded = 0;              // cases on both sides, not ok with a positive latency on both
  ExclusionCounts excluded_a, excluded_b;  // why, per side (a case may count on both)
  std::vector<std::string> regressions;    // "op dtype shape: ratio 1.083 (SLOWER)"
  bool cross_device = false;    // the sides ran on different physical devices (uuid) or nodes
  std::string cross_nodes;      // "nodeA vs nodeB" when the nodes differ (Slurm node, else host)
  double band_used = 0;         // the noise band the verdicts used
  int unsure_by_run_noise = 0;  // pairs UNSURE only because the run-to-run noise was added
  int paired_rounds = 0;        // paired A/B: rounds whose runs were paired in one process

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
