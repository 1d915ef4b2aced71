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

#include "core/identity.hpp"
#include "core/stats.hpp"
#include "report/rundata.hpp"
#include "report/table.hpp"

namespace caliber::report {

enum class Verdict { faster, slower, same, unsure };
[[nodiscard]] const char* to_string(Verdict v) noexcept;  // FASTER, SLOWER, SAME, UNSURE

// FASTER: the CI lies entirely below 1 - band; SLOWER: entirely above 1 + band; SAME: entirely
// inside [1 - band, 1 + band]; otherwise UNSURE.
[[nodiscard]] Verdict verdict_for(core::Interval ratio_ci, double band) noexcept;

// The CI of a ratio widened by run-to-run noise: each side with fewer than three runs adds its
// relative standard deviation `sd_a` / `sd_b`; the extra half-width z*sqrt(sd_a^2 + sd_b^2) is
// combined in quadrature with each half of `ci` on a log scale around `ratio`.
[[nodiscard]] core::Interval widen_for_run_noise(core::Interval ci, double ratio, double sd_a,
                                                 double sd_b, double confidence);

struct CompareOptions {
  // fraction. 3%: with the run-to-run noise below, no pair of two runs of the same code on one
  // H200 came out FASTER or SLOWER (900+ pairs, 2026-11-29), and an A/B of a real switch still
  // found every row it changed; 2% called a few.
  double noise_band = 0.03;
  // When the two sides ran on different physical devices (uuid) or on different nodes (the Slurm
  // node name, else the host name), the band is at least this:
  // chip-to-chip differences are not in a CI built from one run's samples. Two runs of the same
  // code on two H200s differed by up to 5.8% (cuBLAS f16 4096^3 baseline, 2026-11-29).
  double device_band = 0.06;
  // Run-to-run noise: the relative standard deviation between two runs of the same code on one
  // device, which one run's samples cannot show (clock and power state, memory placement, host
  // jitter). A side with fewer than three runs of a case gets it added to its interval in
  // quadrature; with three or more, the grouped bootstrap measures it. A pair takes the largest
  // that applies: `run_noise`, its family's entry (the row's "family"), "fallback" when either
  // row fell back to the direct timer (BENCHMARK_DIRECT_NO_CUDAGRAPH), "tiny" when either median
  // is below kTinyMs. Same code, one H200, 2026-11-29 (900+ pairs): |log ratio| max 2.9% for
  // graph-timed rows of 5 us or more in single runs, once 5% between two rounds of an A/B;
  // 4.8% below 5 us; GEMMs 11.8% (p99 6.6%); fallback rows (nonzero, which syncs with the host)
  // 12.9%.
  double run_noise = 0.008;
  std::map<std::string, double> run_noise_class{
      {"blas", 0.04}, {"fallback", 0.05}, {"tiny", 0.015}};
  static constexpr double kTinyMs = 0.005;
  double confidence = 0.95;
  int resamples = 2000;
  std::uint64_t seed = 1;
  int min_samples = 2;  // fewer samples on a side: the verdict is UNSURE
  bool allow_mismatch = false;
  std::optional<double> fail_on_regression_pct;
};

// "0.8,blas=4,fallback=5,tiny=1.5" -> default 0.8%, then per class (a family, "fallback" or
// "tiny"); fractions in the result. Throws std::invalid_argument.
void parse_run_noise(const std::string& spec, CompareOptions& opt);

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
