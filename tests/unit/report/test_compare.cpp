// caliber compare on hand-made runs: pairing, exclusion counts, fallback annotation, identity
// refusal, verdicts on synthetic sample sets with known differences, the regression gate.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "report/command.hpp"
#include "report/compare.hpp"
#include "unit/report/fixtures.hpp"

namespace fs = std::filesystem;

using namespace caliber::testing;
using namespace caliber::report;

namespace {

json timed_row(const std::string& op, const std::string& shape, double cand_ms, double rel_noise,
               int n, std::uint32_t seed, std::vector<std::string> markers = {},
               const std::string& dtype = "f32") {
  RowSpec s;
  s.op = op;
  s.dtype = dtype;
  s.shape = shape;
  s.cand = samples(cand_ms, rel_noise, n, seed);
  s.base = samples(2.0, rel_noise, n, seed + 1000);
  s.markers = std::move(markers);
  return make_row(s);
}

const PairResult* find_pair(const CompareResult& r, const std::string& op, const std::string& shape,
                            const std::string& role = "candidate") {
  for (const auto& p : r.pairs)
    if (p.op == op && p.shape == shape && p.role == role) return &p;
  return nullptr;
}

}  // namespace

// The rule: FASTER/SLOWER when the CI excludes 1 and the effect is at least min_effect; SAME
// when the CI lies inside the band; else UNSURE.
TEST(Verdict, RuleWithMinEffectAndBand) {
  using caliber::core::ab_verdict;
  EXPECT_EQ(ab_verdict({0.90, 0.95}, 0.92, 0.01, 0.03), Verdict::faster);
  EXPECT_EQ(ab_verdict({1.03, 1.10}, 1.06, 0.01, 0.03), Verdict::slower);
  // A 2% change with a tight CI is SLOWER, inside the band or not: the band decides only SAME.
  EXPECT_EQ(ab_verdict({1.015, 1.025}, 1.02, 0.01, 0.03), Verdict::slower);
  // Real but below --min-effect: not SLOWER; SAME when the CI sits inside the band.
  EXPECT_EQ(ab_verdict({1.002, 1.008}, 1.005, 0.01, 0.03), Verdict::same);
  EXPECT_EQ(ab_verdict({1.002, 1.040}, 1.005, 0.01, 0.03), Verdict::unsure);
  EXPECT_EQ(ab_verdict({0.99, 1.01}, 1.0, 0.01, 0.03), Verdict::same);
  EXPECT_EQ(ab_verdict({0.98, 1.04}, 1.01, 0.01, 0.03), Verdict::unsure);  // straddles an edge
  EXPECT_EQ(ab_verdict({0.90, 1.10}, 1.0, 0.01, 0.03), Verdict::unsure);   // too wide to say
  EXPECT_EQ(ab_verdict({0.90, 1.10}, -1, 0.01, 0.03), Verdict::unsure);    // no ratio
}

// What would settle an UNSURE pair: more runs when the run-to-run part dominates, a longer window
// when the samples' part does, nothing at an edge.
TEST(Verdict, ResolutionEstimates) {
  using caliber::core::resolve_unsure;
  // 2% effect, samples +/-0.2%, run-to-run +/-2.5%: more runs, not a longer window.
  auto r = resolve_unsure(1.02, 0.002, 0.025, 1, 0.01, 0.03);
  EXPECT_TRUE(r.possible);
  EXPECT_FALSE(r.toward_same);
  EXPECT_GE(r.rounds, 3);
  EXPECT_LE(r.rounds, 3);  // (2.5/1.98)^2 = 1.6 -> the floor of three
  EXPECT_EQ(r.min_time_factor, 0);
  // 2% effect, samples +/-4%, no run-to-run part (three rounds done): a 4x longer window or ~12
  // runs.
  r = resolve_unsure(1.02, 0.04, 0.0, 3, 0.01, 0.03);
  EXPECT_NEAR(r.min_time_factor, std::pow(0.04 / std::log(1.02), 2), 1e-9);
  EXPECT_EQ(r.rounds, static_cast<int>(std::ceil(3 * std::pow(0.04 / std::log(1.02), 2))));
  // Below min_effect: only SAME can come of it.
  r = resolve_unsure(1.005, 0.001, 0.06, 1, 0.01, 0.03);
  EXPECT_TRUE(r.toward_same);
  EXPECT_GT(r.rounds, 3);
  // An effect exactly on the band's edge below min_effect cannot be settled.
  r = resolve_unsure(1.03, 0.001, 0.03, 1, 0.05, 0.03);
  EXPECT_FALSE(r.possible);
}

TEST(Compare, ZeroDifferenceIsSame) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 1)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 2)});
  // One run a side cannot prove equivalence within 3% against the default run-to-run terms
  // (+/-6% for an ordinary row): UNSURE. With the terms of a quieter device it is SAME.
  EXPECT_EQ(find_pair(compare_dirs({a}, {b}), "add", "1")->verdict, Verdict::unsure);
  CompareOptions quiet;
  parse_run_noise("0.5,floor_us=0.15", quiet);
  const auto r = compare_dirs({a}, {b}, quiet);
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->verdict, Verdict::same) << p->ci.lo << " " << p->ci.hi;
  EXPECT_NEAR(p->ratio, 1.0, 0.005);
  EXPECT_EQ(p->n_a, 200u);
  EXPECT_FALSE(r.any_difference());
  EXPECT_EQ(compare_exit_code(r), 0);
}

TEST(Compare, EightPercentSlowerWith200SamplesIsSlower) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 3)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.08, 0.005, 200, 4)});
  const auto r = compare_dirs({a}, {b});
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->verdict, Verdict::slower) << p->ci.lo << " " << p->ci.hi;
  EXPECT_NEAR(p->ratio, 1.08, 0.005);
  EXPECT_GT(p->ci.lo, 1.0);
  EXPECT_TRUE(r.any_difference());
  // The baseline did not change: its own pair is never FASTER/SLOWER.
  const auto* base = find_pair(r, "add", "1", "baseline");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->verdict, Verdict::unsure);
  EXPECT_FALSE(base->primary);
}

TEST(Compare, EightPercentFasterIsFaster) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 5)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 0.92, 0.005, 200, 6)});
  const auto r = compare_dirs({a}, {b});  // find_pair points into it: keep it alive
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->verdict, Verdict::faster);
}

TEST(Compare, NoisySmallDifferenceIsUnsure) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.10, 10, 7)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.02, 0.10, 10, 8)});
  const auto r = compare_dirs({a}, {b});  // find_pair points into it: keep it alive
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->verdict, Verdict::unsure);
}

TEST(Compare, SingleSampleGivesNoVerdict) {
  TempDir t;
  const auto a = write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.0, 1, 1)});
  const auto b = write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 2.0, 0.0, 1, 1)});
  const auto r = compare_dirs({a}, {b});
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(p->ratio, 2.0, 1e-12);
  EXPECT_EQ(p->verdict, Verdict::unsure);
}

TEST(Compare, PairingByOpDtypeShapeAndExclusionCounts) {
  TempDir t;
  RowSpec failed;
  failed.op = "add";
  failed.shape = "3";
  failed.status = "failed";
  RowSpec skipped;
  skipped.op = "add";
  skipped.shape = "4";
  skipped.status = "skipped";
  RowSpec zero;  // ok but no positive latency
  zero.op = "add";
  zero.shape = "5";
  json zero_row = make_row(zero);
  const auto a = write_run(
      t.path(), "a-20261129-101010",
      {timed_row("add", "1", 1.0, 0.005, 50, 1), timed_row("add", "2", 1.0, 0.005, 50, 2),
       timed_row("add", "2", 1.0, 0.005, 50, 2, {}, "f16"),  // dtype differs
       make_row(failed), timed_row("add", "4", 1.0, 0.005, 50, 3),
       timed_row("add", "5", 1.0, 0.005, 50, 4), timed_row("add", "only-a", 1.0, 0.005, 50, 5)});
  const auto b = write_run(
      t.path(), "b-20261129-101010",
      {timed_row("add", "2", 1.0, 0.005, 50, 12),  // order differs from A
       timed_row("add", "1", 1.0, 0.005, 50, 11), timed_row("add", "3", 1.0, 0.005, 50, 13),
       make_row(skipped), zero_row, timed_row("add", "only-b", 1.0, 0.005, 50, 15),
       timed_row("add", "2", 1.0, 0.005, 50, 16, {}, "bf16")});
  const auto r = compare_dirs({a}, {b});
  EXPECT_EQ(r.paired, 2);    // add f32 1 and add f32 2
  EXPECT_EQ(r.only_a, 2);    // only-a, add f16 2
  EXPECT_EQ(r.only_b, 2);    // only-b, add bf16 2
  EXPECT_EQ(r.excluded, 3);  // 3 (failed in A), 4 (skipped in B), 5 (no latency in B)
  EXPECT_EQ(r.excluded_a.failed, 1);
  EXPECT_EQ(r.excluded_b.skipped, 1);
  EXPECT_EQ(r.excluded_b.no_latency, 1);
  EXPECT_EQ(r.excluded_a.total(), 1);
  EXPECT_NE(find_pair(r, "add", "1"), nullptr);
  EXPECT_EQ(find_pair(r, "add", "3"), nullptr);
  const std::string text = render_text(compare_report(r));
  EXPECT_NE(text.find("2 only in A, 2 only in B; excluded 3"), std::string::npos) << text;
}

TEST(Compare, FallbackAnnotationOnEitherSide) {
  TempDir t;
  const auto a = write_run(
      t.path(), "a-20261129-101010",
      {timed_row("sort", "1", 1.0, 0.005, 50, 1), timed_row("sort", "2", 1.0, 0.005, 50, 2),
       timed_row("add", "1", 1.0, 0.005, 50, 3)});
  const auto b = write_run(
      t.path(), "b-20261129-101010",
      {timed_row("sort", "1", 1.0, 0.005, 50, 4),
       timed_row("sort", "2", 1.1, 0.005, 50, 5, {"BENCHMARK_DIRECT_NO_CUDAGRAPH", "repeat=3"}),
       timed_row("add", "1", 1.0, 0.005, 50, 6)});
  const auto r = compare_dirs({a}, {b});
  ASSERT_EQ(r.ops.size(), 2u);
  const auto& sort = r.ops[0].op == "sort" ? r.ops[0] : r.ops[1];
  const auto& add = r.ops[0].op == "sort" ? r.ops[1] : r.ops[0];
  EXPECT_TRUE(sort.fallback);
  EXPECT_FALSE(add.fallback);
  EXPECT_EQ(sort.pairs, 2);
  EXPECT_LT(sort.min, 1.01);
  EXPECT_GT(sort.max, 1.09);
  const std::string text = render_text(compare_report(r));
  EXPECT_NE(text.find("(fallback rows)"), std::string::npos) << text;
  const auto* p1 = find_pair(r, "sort", "1");
  const auto* p2 = find_pair(r, "sort", "2");
  ASSERT_TRUE(p1 && p2);
  EXPECT_FALSE(p1->fallback);
  EXPECT_TRUE(p2->fallback);
}

TEST(Compare, IdentityMismatchIsRefused) {
  TempDir t;
  const auto a = write_run(t.path(), "a-20261129-101010",
                           {timed_row("add", "1", 1.0, 0.005, 50, 1)}, identity("core"));
  const auto b = write_run(t.path(), "b-20261129-101010",
                           {timed_row("add", "1", 1.0, 0.005, 50, 2)}, identity("comprehensive"));
  const auto r = compare_dirs({a}, {b});
  ASSERT_TRUE(r.mismatch());
  const auto lines = mismatch_lines(r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "CALIBER MISMATCH: level: core vs comprehensive");
  EXPECT_EQ(compare_exit_code(r), 2);
  CompareOptions allow;
  allow.allow_mismatch = true;
  EXPECT_EQ(compare_exit_code(r, allow), 0);
  const std::string text = render_text(compare_report(r));
  EXPECT_EQ(text.find("CALIBER MISMATCH: level: core vs comprehensive"), text.find('\n') + 1)
      << text;
}

TEST(Compare, MissingIdentityIsAMismatch) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 50, 1)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 50, 2)}, json());
  const auto r = compare_dirs({a}, {b});
  EXPECT_TRUE(r.mismatch());
  EXPECT_EQ(compare_exit_code(r), 2);
}

TEST(Compare, SameIdentityIsNoMismatch) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 50, 1)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 50, 2)});
  EXPECT_FALSE(compare_dirs({a}, {b}).mismatch());
}

TEST(Compare, FailOnRegression) {
  TempDir t;
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 3)});
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.08, 0.005, 200, 4)});
  CompareOptions gate;
  gate.fail_on_regression_pct = 3.0;
  auto r = compare_dirs({a}, {b}, gate);
  EXPECT_EQ(r.regressions.size(), 1u);
  EXPECT_EQ(compare_exit_code(r, gate), 1);
  gate.fail_on_regression_pct = 10.0;  // 8% is within what this gate tolerates
  r = compare_dirs({a}, {b}, gate);
  EXPECT_TRUE(r.regressions.empty());
  EXPECT_EQ(compare_exit_code(r, gate), 0);
  CompareOptions none;  // no gate, no failure
  EXPECT_EQ(compare_exit_code(compare_dirs({a}, {b}, none), none), 0);
  // Faster is never a regression.
  gate.fail_on_regression_pct = 1.0;
  EXPECT_EQ(compare_exit_code(compare_dirs({b}, {a}, gate), gate), 0);
}

TEST(Compare, RoundsArePooledPerSide) {
  TempDir t;
  std::vector<fs::path> as, bs;
  for (int round = 1; round <= 3; ++round) {
    as.push_back(write_run(t.path(), "A-" + std::to_string(round) + "-20261129-101010",
                           {timed_row("add", "1", 1.0, 0.005, 40, 100 + round)}));
    bs.push_back(write_run(t.path(), "B-" + std::to_string(round) + "-20261129-101010",
                           {timed_row("add", "1", 1.05, 0.005, 40, 200 + round)}));
  }
  const auto r = compare_dirs(as, bs);
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->n_a, 120u);
  EXPECT_EQ(p->n_b, 120u);
  EXPECT_EQ(p->verdict, Verdict::slower);
  EXPECT_EQ(r.paired, 1);
  EXPECT_EQ(r.runs_a, 3);
}

// A side's figure is its run's own latency_ms (the median of every sample it took), not the
// median of the at most 200 it kept: compare quotes what the run's table and summary print, and
// the interval stands around that ratio. Several runs a side: the median of their figures.
TEST(Compare, ASideQuotesItsRunsOwnLatency) {
  TempDir t;
  auto ra = timed_row("add", "1", 1.0, 0.002, 200, 11);
  auto rb = timed_row("add", "1", 1.0, 0.002, 200, 12);
  // Thinned: the kept samples' median reads 1.0, the run's 1.03 (as a drifting run can).
  ra["providers"][0]["latency_ms"] = 1.03;
  ra["providers"][0]["samples_total"] = 1000;
  const auto a = write_run(t.path(), "a-20261129-101010", {ra});
  const auto b = write_run(t.path(), "b-20261129-101010", {rb});
  const auto r = compare_dirs({a}, {b});
  const auto* p = find_pair(r, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->median_a, 1.03);
  EXPECT_DOUBLE_EQ(p->median_b, rb["providers"][0]["latency_ms"].get<double>());
  EXPECT_NEAR(p->ratio, p->median_b / 1.03, 1e-12);
  EXPECT_LT(p->ci.lo, p->ratio);
  EXPECT_GT(p->ci.hi, p->ratio);
  // Three runs a side: the median of the three figures.
  std::vector<fs::path> as;
  for (int round = 1; round <= 3; ++round) {
    auto row = timed_row("add", "1", 1.0, 0.002, 40, 300 + round);
    row["providers"][0]["latency_ms"] = 1.0 + 0.01 * round;
    as.push_back(write_run(t.path(), "A-" + std::to_string(round) + "-20261129-101010", {row}));
  }
  const auto rq = compare_dirs(as, {b});
  const auto* q = find_pair(rq, "add", "1");
  ASSERT_NE(q, nullptr);
  EXPECT_DOUBLE_EQ(q->median_a, 1.02);
}

TEST(Compare, FailedRoundExcludesTheCase) {
  TempDir t;
  RowSpec failed;
  failed.op = "add";
  failed.shape = "1";
  failed.status = "failed";
  const auto a1 =
      write_run(t.path(), "A-1-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 40, 1)});
  const auto a2 = write_run(t.path(), "A-2-20261129-101010", {make_row(failed)});
  const auto b1 =
      write_run(t.path(), "B-1-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 40, 2)});
  const auto r = compare_dirs({a1, a2}, {b1});
  EXPECT_EQ(r.paired, 0);
  EXPECT_EQ(r.excluded, 1);
  EXPECT_EQ(r.excluded_a.failed, 1);
}

TEST(Compare, BaselineOnlyOpIsComparedOnItsBaseline) {
  TempDir t;
  RowSpec fa, fb;
  fa.op = fb.op = "fft";
  fa.shape = fb.shape = "4096";
  fa.base = samples(1.0, 0.005, 100, 1);
  fb.base = samples(1.2, 0.005, 100, 2);
  const auto a = write_run(t.path(), "a-20261129-101010", {make_row(fa)});
  const auto b = write_run(t.path(), "b-20261129-101010", {make_row(fb)});
  CompareOptions gate;
  gate.fail_on_regression_pct = 5;
  const auto r = compare_dirs({a}, {b}, gate);
  ASSERT_EQ(r.paired, 1);
  const auto* p = find_pair(r, "fft", "4096", "baseline");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->primary);
  EXPECT_EQ(p->verdict, Verdict::slower);
  EXPECT_EQ(compare_exit_code(r, gate), 1);
}

// Two physical devices (uuids differ): no change widens to --device-band, so a 6.5% difference
// that is SLOWER on one device is no verdict across two; on one device it stays SLOWER.
TEST(Compare, DifferentPhysicalDevicesWidenTheBand) {
  TempDir t;
  json ia = identity();
  json ib = identity();
  ia["device"]["uuid"] = "GPU-aaaa";
  ib["device"]["uuid"] = "GPU-bbbb";
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 3)}, ia);
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.065, 0.005, 200, 4)}, ib);
  const auto cross = compare_dirs({a}, {b});
  EXPECT_TRUE(cross.cross_device);
  EXPECT_DOUBLE_EQ(cross.band_used, 0.06);
  const auto* p = find_pair(cross, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->verdict, Verdict::slower);
  const auto b_same =
      write_run(t.path(), "c-20261129-101010", {timed_row("add", "1", 1.065, 0.005, 200, 4)}, ia);
  const auto same_dev = compare_dirs({a}, {b_same});
  EXPECT_FALSE(same_dev.cross_device);
  const auto* q = find_pair(same_dev, "add", "1");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->verdict, Verdict::slower);
}

// Runs from two Slurm nodes are runs on two devices even where no uuid is recorded (the cpu
// backend has none): the band widens and the note names the nodes. Two runs on one node do not.
TEST(Compare, DifferentNodesWidenTheBandLikeDifferentDevices) {
  TempDir t;
  json ia = identity();
  json ib = identity();
  ia["host"] = "login1";
  ib["host"] = "login1";
  ia["slurm"] = {{"node", "gpu01"}, {"job_id", "11"}};
  ib["slurm"] = {{"node", "gpu02"}, {"job_id", "12"}};
  const auto a =
      write_run(t.path(), "a-20261129-101010", {timed_row("add", "1", 1.0, 0.005, 200, 3)}, ia);
  const auto b =
      write_run(t.path(), "b-20261129-101010", {timed_row("add", "1", 1.065, 0.005, 200, 4)}, ib);
  const auto cross = compare_dirs({a}, {b});
  EXPECT_TRUE(cross.cross_device);
  EXPECT_EQ(cross.cross_nodes, "gpu01 vs gpu02");
  EXPECT_DOUBLE_EQ(cross.band_used, 0.06);
  const auto* p = find_pair(cross, "add", "1");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->verdict, Verdict::slower);
  bool noted = false;
  for (const auto& tbl : compare_report(cross).tables)
    for (const auto& n : tbl.notes) noted = noted || n.find("gpu01 vs gpu02") != std::string::npos;
  EXPECT_TRUE(noted);

  json ic = ib;
  ic["slurm"]["node"] = "gpu01";
  const auto c =
      write_run(t.path(), "c-20261129-101010", {timed_row("add", "1", 1.065, 0.005, 200, 4)}, ic);
  const auto same_node = compare_dirs({a}, {c});
  EXPECT_FALSE(same_node.cross_device);
  EXPECT_DOUBLE_EQ(same_node.band_used, 0.03);
  const auto* q = find_pair(same_node, "add", "1");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->verdict, Verdict::slower);
}

// Rounds that drift between themselves (+-4%) around the same level: pooling their samples makes a
// narrow CI that calls a 2% shift SLOWER; resampling the rounds first widens it, so the verdict
// is not SLOWER, and the grouped CI is wider than the flat one.
TEST(Compare, DriftBetweenRoundsWidensTheInterval) {
  TempDir t;
  const double a_levels[] = {1.00, 1.04, 0.97};
  const double b_levels[] = {1.05, 0.99, 1.03};
  std::vector<fs::path> a, b;
  for (int i = 0; i < 3; ++i) {
    a.push_back(write_run(t.path(), "a" + std::to_string(i) + "-20261129-101010",
                          {timed_row("add", "1", a_levels[i], 0.003, 100, 10 + i)}));
    b.push_back(write_run(t.path(), "b" + std::to_string(i) + "-20261129-101010",
                          {timed_row("add", "1", b_levels[i], 0.003, 100, 20 + i)}));
  }
  const auto grouped = compare_dirs(a, b);
  const auto* g = find_pair(grouped, "add", "1");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->grouped);
  EXPECT_NE(g->verdict, Verdict::slower) << g->ci.lo << " " << g->ci.hi;
  // The same samples, pooled into one run a side: the flat CI is much narrower.
  std::vector<double> pa, pb;
  for (int i = 0; i < 3; ++i) {
    auto x = samples(a_levels[i], 0.003, 100, 10 + i);
    auto y = samples(b_levels[i], 0.003, 100, 20 + i);
    pa.insert(pa.end(), x.begin(), x.end());
    pb.insert(pb.end(), y.begin(), y.end());
  }
  const auto flat = caliber::core::bootstrap_median_ratio_ci(pa, pb);
  EXPECT_GT(g->ci.hi - g->ci.lo, 2 * (flat.hi - flat.lo));
}

// Run-to-run noise, which one run's samples cannot show, widens a single run's interval:
// in quadrature on a log scale, by z * sqrt(sd_a^2 + sd_b^2).
TEST(RunNoise, WidensInQuadratureOnALogScale) {
  const caliber::core::Interval ci{1.04, 1.06};
  const auto same = caliber::core::widen_for_run_noise(ci, 1.05, 0, 0, 0.95);
  EXPECT_DOUBLE_EQ(same.lo, 1.04);
  EXPECT_DOUBLE_EQ(same.hi, 1.06);
  const auto w = caliber::core::widen_for_run_noise(ci, 1.05, 0.01, 0.01, 0.95);
  const double extra = 1.959964 * std::sqrt(2.0) * 0.01;
  EXPECT_NEAR(std::log(1.05) - std::log(w.lo), std::hypot(std::log(1.05 / 1.04), extra), 1e-6);
  EXPECT_NEAR(std::log(w.hi) - std::log(1.05), std::hypot(std::log(1.06 / 1.05), extra), 1e-6);
  EXPECT_LT(w.lo, ci.lo);
  EXPECT_GT(w.hi, ci.hi);
}

TEST(RunNoise, SpecParsesDefaultAndFamilies) {
  CompareOptions o;
  parse_run_noise("0.5,blas=4", o);
  EXPECT_DOUBLE_EQ(o.run_noise, 0.005);
  ASSERT_EQ(o.run_noise_class.size(), 1u);
  EXPECT_DOUBLE_EQ(o.run_noise_class.at("blas"), 0.04);
  EXPECT_DOUBLE_EQ(o.run_noise_floor_us, 0.0);  // not given: none
  parse_run_noise("0.5,floor_us=0.2", o);
  EXPECT_DOUBLE_EQ(o.run_noise_floor_us, 0.2);
  EXPECT_TRUE(o.run_noise_class.empty());
  parse_run_noise("0", o);  // off: no family entries either
  EXPECT_DOUBLE_EQ(o.run_noise, 0.0);
  EXPECT_TRUE(o.run_noise_class.empty());
  parse_run_noise("norm=2", o);  // the default stays as it was
  EXPECT_DOUBLE_EQ(o.run_noise, 0.0);
  EXPECT_DOUBLE_EQ(o.run_noise_class.at("norm"), 0.02);
  for (const char* bad : {"", "x", "1,", "=3", "blas=", "-1", "100", "blas=abc", "1;blas=2"}) {
    CompareOptions b;
    EXPECT_THROW(parse_run_noise(bad, b), std::invalid_argument) << bad;
  }
}

// A GEMM 4% slower in one run against one run of the same code: within what two runs of the same
// code on one H200 did (up to 5.4% in the calibration set), so no verdict; with the run noise off
// it is SLOWER, and with three runs a side the grouped bootstrap measures the run-to-run noise
// instead of assuming it.
TEST(RunNoise, SingleGemmRunsAreNotCalledOnAFourPercentShift) {
  TempDir t;
  auto row = [](double ms, std::uint32_t seed) {
    RowSpec s;
    s.op = "mm";
    s.family = "blas";
    s.shape = "M4096";
    s.cand = samples(ms, 0.003, 100, seed);
    s.base = samples(2.0, 0.003, 100, seed + 1000);
    return make_row(s);
  };
  const auto a = write_run(t.path(), "a-20261129-101010", {row(1.0, 1)});
  const auto b = write_run(t.path(), "b-20261129-101010", {row(1.04, 2)});
  const auto r = compare_dirs({a}, {b});
  const auto* p = find_pair(r, "mm", "M4096");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->verdict, Verdict::unsure) << p->ci.lo << " " << p->ci.hi;
  const NoiseModel& n = r.noise;  // the H200 file's blas term and floor
  EXPECT_NEAR(p->run_noise,
              std::sqrt(2.0) * std::hypot(n.run_noise_class.at("blas"),
                                          n.run_noise_floor_us / (p->median_a * 1e3)),
              1e-3);
  EXPECT_GE(p->resolution.rounds, 3);
  CompareOptions off;
  parse_run_noise("0", off);
  const auto r0 = compare_dirs({a}, {b}, off);
  EXPECT_EQ(find_pair(r0, "mm", "M4096")->verdict, Verdict::slower);
  // A 10% shift in an elementwise op (default 2.2%) is SLOWER.
  RowSpec e;
  e.family = "pointwise";
  e.cand = samples(1.0, 0.003, 100, 5);
  e.base = samples(2.0, 0.003, 100, 6);
  const auto ea = write_run(t.path(), "c-20261129-101010", {make_row(e)});
  e.cand = samples(1.10, 0.003, 100, 7);
  const auto eb = write_run(t.path(), "d-20261129-101010", {make_row(e)});
  EXPECT_EQ(find_pair(compare_dirs({ea}, {eb}), "add", "1024")->verdict, Verdict::slower);
  // Three runs a side that agree within themselves: measured, not assumed.
  std::vector<fs::path> a3, b3;
  for (std::uint32_t i = 0; i < 3; ++i) {
    a3.push_back(
        write_run(t.path(), "a" + std::to_string(i) + "-20261129-101011", {row(1.0, 10 + i)}));
    b3.push_back(
        write_run(t.path(), "b" + std::to_string(i) + "-20261129-101011", {row(1.12, 20 + i)}));
  }
  const auto r3 = compare_dirs(a3, b3);
  const auto* q = find_pair(r3, "mm", "M4096");
  ASSERT_NE(q, nullptr);
  EXPECT_NEAR(q->run_noise, p->run_noise / std::sqrt(3.0), 1e-3);  // a mean of three runs
  EXPECT_EQ(q->verdict, Verdict::slower) << q->ci.lo << " " << q->ci.hi;
}

// compare's sides: one directory, or several comma-separated (repeated runs of the same code).
TEST(CompareCommand, SidePathsSplitOnCommas) {
  using caliber::report::CompareCommand;
  EXPECT_EQ(CompareCommand::side_paths("runs/a"), std::vector<fs::path>{"runs/a"});
  EXPECT_EQ(CompareCommand::side_paths("a,b,c"), (std::vector<fs::path>{"a", "b", "c"}));
  EXPECT_EQ(CompareCommand::side_paths(",a,,b,"), (std::vector<fs::path>{"a", "b"}));
  EXPECT_TRUE(CompareCommand::side_paths("").empty());
}

// Three runs a side through the command: the grouped bootstrap, no run-noise note.
TEST(CompareCommand, SeveralRunsASideAreGrouped) {
  TempDir t;
  std::string a, b;
  for (int i = 0; i < 3; ++i) {
    a += (i ? "," : "") + write_run(t.path(), "a" + std::to_string(i) + "-20261129-101010",
                                    {timed_row("add", "1", 1.0, 0.003, 100, 30 + i)})
                              .string();
    b += (i ? "," : "") + write_run(t.path(), "b" + std::to_string(i) + "-20261129-101010",
                                    {timed_row("add", "1", 1.0, 0.003, 100, 40 + i)})
                              .string();
  }
  caliber::report::CompareCommand cmd;
  cmd.run_noise = "0.5,floor_us=0.15";  // a quiet device's terms: three runs can then show SAME
  std::ostringstream out, err;
  EXPECT_EQ(cmd.run(cmd.side_paths(a), cmd.side_paths(b), out, err), 0) << err.str();
  EXPECT_NE(out.str().find("SAME"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("UNSURE only because"), std::string::npos) << out.str();
}

// Classes of rows with more run-to-run noise on the H200: fallback rows (direct timer, host in
// the loop) and kernels below 10 us. The same shifts on an ordinary row are called.
TEST(RunNoise, FallbackAndTinyRowsTakeTheirClass) {
  TempDir t;
  const std::vector<std::string> fb{"BENCHMARK_DIRECT_NO_CUDAGRAPH", "timer=direct"};
  const auto a = write_run(
      t.path(), "a-20261129-101010",
      {timed_row("nonzero", "1", 1.0, 0.003, 100, 1, fb),
       timed_row("exp", "64x64", 0.001, 0.003, 100, 2), timed_row("add", "1", 1.0, 0.003, 100, 3)});
  const auto b = write_run(t.path(), "b-20261129-101010",
                           {timed_row("nonzero", "1", 1.10, 0.003, 100, 4, fb),
                            timed_row("exp", "64x64", 0.00104, 0.003, 100, 5),
                            timed_row("add", "1", 1.08, 0.003, 100, 6)});
  const auto r = compare_dirs({a}, {b});
  const auto* nz = find_pair(r, "nonzero", "1");
  const auto* tiny = find_pair(r, "exp", "64x64");
  const auto* add = find_pair(r, "add", "1");
  ASSERT_TRUE(nz && tiny && add);
  EXPECT_EQ(nz->verdict, Verdict::unsure) << nz->ci.lo;
  // The H200 file's fallback term (2026-12-02: host round trips between a launch's kernels).
  EXPECT_NEAR(nz->run_noise, std::sqrt(2.0) * std::hypot(0.11, 0.15 / (nz->median_a * 1e3)), 1e-3);
  EXPECT_EQ(tiny->verdict, Verdict::unsure) << tiny->ci.lo;
  // 1 us: the timer floor's 0.15 us jitter dominates.
  EXPECT_GT(tiny->run_noise, 0.2);
  EXPECT_EQ(add->verdict, Verdict::slower) << add->ci.lo;
  EXPECT_NEAR(add->run_noise, std::sqrt(2.0) * std::hypot(0.022, 0.15 / (add->median_a * 1e3)),
              1e-3);
  // The two candidates, and the unchanged baselines: SAME on their samples, UNSURE with the terms.
  EXPECT_GE(r.unsure_by_run_noise, 3);
}
