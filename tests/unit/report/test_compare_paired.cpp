// Paired A/B (caliber ab of two libraries in one process, docs/ab.md): the t quantile, the
// blocks' estimate and interval, and compare taking a paired pair's CI from its blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/stats.hpp"
#include "report/compare.hpp"
#include "unit/report/fixtures.hpp"

namespace fs = std::filesystem;

using namespace caliber::testing;
using namespace caliber::report;

TEST(PairedStats, StudentTQuantileMatchesTables) {
  EXPECT_NEAR(caliber::core::student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(caliber::core::student_t_quantile(0.975, 2), 4.3027, 1e-3);
  EXPECT_NEAR(caliber::core::student_t_quantile(0.975, 7), 2.3646, 1e-3);
  EXPECT_NEAR(caliber::core::student_t_quantile(0.975, 30), 2.0423, 1e-3);
  EXPECT_NEAR(caliber::core::student_t_quantile(0.025, 7), -2.3646, 1e-3);
}

TEST(PairedStats, EstimateIsTheMeanWithATInterval) {
  // 8 blocks: mean 0.02, sd of {0.01, 0.03} x4 = 0.010690; hw = 2.3646 * sd / sqrt(8).
  const std::vector<std::vector<double>> d = {{0.01, 0.03, 0.01, 0.03, 0.01, 0.03, 0.01, 0.03}};
  const auto e = caliber::core::paired_log_ratio(d);
  EXPECT_EQ(e.blocks, 8);
  EXPECT_EQ(e.rounds, 1);
  EXPECT_NEAR(e.log_ratio, 0.02, 1e-12);
  EXPECT_NEAR(e.half_width, 2.3646 * 0.0106904 / std::sqrt(8.0), 1e-5);
  // Three rounds that disagree as wholes: the rounds' spread sets the width.
  const std::vector<std::vector<double>> r = {{0.0, 0.0}, {0.05, 0.05}, {0.1, 0.1}};
  const auto er = caliber::core::paired_log_ratio(r);
  EXPECT_EQ(er.rounds, 3);
  EXPECT_NEAR(er.half_width, 4.3027 * 0.05 / std::sqrt(3.0), 1e-4);
  EXPECT_EQ(caliber::core::paired_log_ratio({{0.1}}).blocks, 0);
}

// The crossover (phases 2): a placement effect of +/-4% that flips sign between the halves
// cancels in the estimate and stays out of the spread; read as one phase, it is all spread.
TEST(PairedStats, TheCrossoverCancelsAnEffectThatFlipsBetweenItsHalves) {
  const double p = 0.04, r = 0.01;
  const std::vector<std::vector<double>> d = {{r + p + 0.001, r + p - 0.001, r + p + 0.001,
                                               r + p - 0.001, r - p + 0.001, r - p - 0.001,
                                               r - p + 0.001, r - p - 0.001}};
  const auto x = caliber::core::paired_log_ratio(d, 0.95, 2);
  EXPECT_EQ(x.phases, 2);
  EXPECT_NEAR(x.log_ratio, r, 1e-12);
  EXPECT_NEAR(x.placement, p, 1e-12);
  // Residuals +/-0.001 around each half's mean: s = sqrt(8e-6 / 6); t(0.975, 6) = 2.4469.
  EXPECT_NEAR(x.half_width, 2.4469 * std::sqrt(8e-6 / 6) / std::sqrt(8.0), 1e-5);
  const auto one = caliber::core::paired_log_ratio(d, 0.95, 1);
  EXPECT_GT(one.half_width, 10 * x.half_width);
  // Halves of one block cannot show a spread: no estimate.
  EXPECT_EQ(caliber::core::paired_log_ratio({{0.1, 0.2}}, 0.95, 2).blocks, 0);
}

namespace {
json paired_row(double cand_ms, const std::vector<double>& blocks, std::uint32_t seed) {
  RowSpec s;
  s.op = "add";
  s.shape = "1024";
  s.cand = samples(cand_ms, 0.002, 40, seed);
  s.base = samples(2.0, 0.002, 40, seed + 1000);
  json row = make_row(s);
  for (auto& p : row["providers"]) p["block_medians_ms"] = blocks;
  return row;
}
json paired_identity(const std::string& side, const std::string& id) {
  json ident = identity();
  ident["paired"] = {{"id", id}, {"side", side}, {"blocks", 4}};
  return ident;
}
// Side B's block medians: 3% above side A's in every block.
const std::vector<double> kBlocksA = {1.0, 1.01, 0.99, 1.0}, kBlocksB = {1.03, 1.04, 1.02, 1.03};

// One paired round (pairing id "x"): A-1 and B-1 under `parent`, B 3% slower in every block.
std::pair<fs::path, fs::path> write_paired_round(const fs::path& parent) {
  return {write_run(parent, "A-1-20261130-101010", {paired_row(1.0, kBlocksA, 1)},
                    paired_identity("A", "x")),
          write_run(parent, "B-1-20261130-101010", {paired_row(1.03, kBlocksB, 2)},
                    paired_identity("B", "x"))};
}

// One paired round whose rows carry block medians `a` and `b`; with phases 2 every provider says
// paired_phases 2 (the crossover), else one phase.
std::pair<fs::path, fs::path> write_phased_round(const fs::path& parent,
                                                 const std::vector<double>& a,
                                                 const std::vector<double>& b, int phases) {
  auto row = [&](const std::vector<double>& blocks, std::uint32_t seed) {
    json r = paired_row(1.0, blocks, seed);
    if (phases == 2)
      for (auto& p : r["providers"]) p["paired_phases"] = 2;
    return r;
  };
  return {write_run(parent, "A-1-20261130-101010", {row(a, 1)}, paired_identity("A", "x")),
          write_run(parent, "B-1-20261130-101010", {row(b, 2)}, paired_identity("B", "x"))};
}

// Whether a note of the compare report contains `what`.
bool noted(const CompareResult& r, const CompareOptions& opt, const std::string& what) {
  for (const auto& table : compare_report(r, opt).tables)
    for (const auto& n : table.notes)
      if (n.find(what) != std::string::npos) return true;
  return false;
}
}  // namespace

// Block medians 3% apart in every block: SLOWER from one paired round (the blocks' interval and
// the default residual), where the same samples without the pairing carry the run-to-run term
// (about +/-6%) and stay UNSURE.
TEST(ComparePaired, BlocksGiveTheIntervalAndTheRunNoiseIsNotAdded) {
  TempDir t;
  const auto [da, db] = write_paired_round(t.path());
  const auto r = compare_dirs({da}, {db});
  EXPECT_EQ(r.paired_rounds, 1);
  const PairResult* p = nullptr;
  for (const auto& x : r.pairs)
    if (x.role == "candidate") p = &x;
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->paired);
  EXPECT_EQ(p->blocks, 4);
  EXPECT_NEAR(p->ratio, 1.03, 1e-3);
  EXPECT_EQ(p->verdict, Verdict::slower);
  // Different pairing ids: not paired, the run-to-run term applies.
  const fs::path dc = write_run(t.path(), "B-2-20261130-101010", {paired_row(1.03, kBlocksB, 2)},
                                paired_identity("B", "y"));
  const auto u = compare_dirs({da}, {dc});
  EXPECT_EQ(u.paired_rounds, 0);
  for (const auto& x : u.pairs) {
    EXPECT_FALSE(x.paired);
    if (x.role == "candidate") {
      EXPECT_EQ(x.verdict, Verdict::unsure);
    }
  }
}

// A class may name a provider: a provider whose speed depends on where its buffers land (thrust's
// add in the fresh-machine check, docs/ab.md) takes its larger term; the others keep the default.
TEST(ComparePaired, AProviderClassWidensOnlyThatProvider) {
  TempDir t;
  const auto [da, db] = write_paired_round(t.path());
  CompareOptions opt;
  parse_paired_noise("0.88,mine=5,floor_us=0.15", opt);
  const auto r = compare_dirs({da}, {db}, opt);
  int seen = 0;
  for (const auto& x : r.pairs) {
    ASSERT_TRUE(x.paired);
    if (x.provider == "mine") {
      ++seen;
      EXPECT_EQ(x.verdict, Verdict::unsure) << "the 5% class of 'mine' must widen its interval";
    } else {
      ++seen;
      EXPECT_EQ(x.verdict, Verdict::slower) << x.provider << " keeps the 0.88% default";
    }
  }
  EXPECT_EQ(seen, 2);
}

// The placement crossover through compare: side B 4% faster in the first phase's blocks and 4%
// slower in the second's (the same code in swapped memory). With paired_phases 2 on both sides
// the ratio is 1 and the note names the placement it removed; the same blocks without the
// phases read as one wide spread and never as FASTER.
TEST(ComparePaired, CrossedBlocksCancelTheirPlacement) {
  const std::vector<double> a = {1.0, 1.001, 0.999, 1.0, 1.0, 1.001, 0.999, 1.0};
  std::vector<double> b;
  for (std::size_t k = 0; k < a.size(); ++k) b.push_back(a[k] * (k < 4 ? 0.96 : 1.0 / 0.96));
  for (int phases : {2, 1}) {
    TempDir t;
    const auto [da, db] = write_phased_round(t.path(), a, b, phases);
    CompareOptions opt;
    parse_paired_noise("0.2", opt);
    const auto r = compare_dirs({da}, {db}, opt);
    const PairResult* p = nullptr;
    for (const auto& x : r.pairs)
      if (x.role == "candidate") p = &x;
    ASSERT_NE(p, nullptr);
    ASSERT_TRUE(p->paired);
    if (phases == 2) {
      EXPECT_EQ(p->phases, 2);
      EXPECT_NEAR(p->ratio, 1.0, 1e-9);
      EXPECT_NEAR(p->placement, 1 / 0.96 - 1, 1e-9);
      EXPECT_EQ(p->verdict, Verdict::same);
      EXPECT_TRUE(noted(r, opt, "placement crossover: 2 pair(s)"))
          << "the pairs table's notes name the crossover";
    } else {
      EXPECT_EQ(p->phases, 1);
      EXPECT_NE(p->verdict, Verdict::faster);
      EXPECT_NE(p->verdict, Verdict::slower);
      EXPECT_EQ(p->placement, 0.0);
    }
  }
}

// Crossed pairs and one-phase pairs take their own residual from the calibration file: the
// crossover takes the buffers' placement out of the ratio, so the same 1.7% gap in every block is
// SLOWER when crossed (the H200's crossed term: a half width of about 1.4%) and UNSURE in one phase
// (its larger one-phase term: about 1.9%). A term the user gives holds for both.
TEST(ComparePaired, CrossedAndOnePhasePairsTakeTheirOwnResidual) {
  const std::vector<double> a = {1.0, 1.001, 0.999, 1.0, 1.0, 1.001, 0.999, 1.0};
  std::vector<double> b;
  for (const double x : a) b.push_back(x * 1.017);
  auto verdict = [&](int phases, const std::string& spec) {
    TempDir t;
    const auto [da, db] = write_phased_round(t.path(), a, b, phases);
    CompareOptions opt;
    if (!spec.empty()) parse_paired_noise(spec, opt);
    const auto r = compare_dirs({da}, {db}, opt);
    for (const auto& x : r.pairs)
      if (x.role == "candidate") {
        EXPECT_TRUE(x.paired);
        EXPECT_EQ(x.phases, phases);
        EXPECT_EQ(noted(r, opt, "timed in one placement phase"), phases == 1 && spec.empty())
            << "the one-phase note, phases " << phases;
        EXPECT_EQ(noted(r, opt, "residual of a pair timed in two placement phases"), spec.empty())
            << "the paired note says whose residual it names";
        return x.verdict;
      }
    ADD_FAILURE() << "no candidate pair";
    return Verdict::unsure;
  };
  EXPECT_EQ(verdict(2, ""), Verdict::slower);
  EXPECT_EQ(verdict(1, ""), Verdict::unsure);
  const Calibration h =
      load_calibration(fs::path(CALIBER_SOURCE_DIR) / "share/caliber/calibration/nvidia-h200.yaml");
  EXPECT_EQ(verdict(1, h.paired.spec), Verdict::slower);
  EXPECT_EQ(verdict(2, h.paired_one_phase.spec), Verdict::unsure);
}

// The pairs table says what each ratio is (issue #32): a paired pair whose blocks say 3% while
// its pooled medians say about 50% shows the blocks' ratio under ratio_of "blocks", and a note
// says that it is not median_b / median_a; an unpaired pair's ratio is exactly that quotient.
TEST(ComparePaired, TheRatioColumnSaysWhatEachRatioIs) {
  TempDir t;
  const auto da = write_run(t.path(), "A-1-20261130-101010", {paired_row(1.0, kBlocksA, 1)},
                            paired_identity("A", "x"));
  const auto db = write_run(t.path(), "B-1-20261130-101010", {paired_row(1.5, kBlocksB, 2)},
                            paired_identity("B", "x"));
  const auto r = compare_dirs({da}, {db});
  const auto rep = compare_report(r);
  const auto& tbl = rep.tables.front();
  ASSERT_EQ(tbl.id, "pairs");
  const auto col = [&](const std::string& name) {
    const auto it = std::find(tbl.columns.begin(), tbl.columns.end(), name);
    EXPECT_NE(it, tbl.columns.end()) << name;
    return static_cast<std::size_t>(it - tbl.columns.begin());
  };
  bool seen = false;
  for (const auto& row : tbl.rows) {
    if (row[col("role")].text != "candidate") continue;
    seen = true;
    const double ma = row[col("median_a_ms")].value.get<double>();
    const double mb = row[col("median_b_ms")].value.get<double>();
    const double ratio = row[col("ratio")].value.get<double>();
    EXPECT_EQ(row[col("ratio_of")].text, "blocks");
    EXPECT_NEAR(ratio, 1.03, 1e-3);
    EXPECT_GT(mb / ma, 1.4) << "the medians tell another story, and the row says which it shows";
  }
  EXPECT_TRUE(seen);
  EXPECT_TRUE(noted(r, {}, "ratio_of blocks: ratio = exp(mean of ln(B/A)"));
  EXPECT_NE(tbl.title.find("ratio_of"), std::string::npos) << tbl.title;
  EXPECT_EQ(tbl.title.find("median(B) / median(A)"), std::string::npos)
      << "the title must not name one ratio for all rows: " << tbl.title;
  // Unpaired (different pairing ids): ratio_of medians, and the ratio is the quotient shown.
  const auto dc = write_run(t.path(), "B-2-20261130-101010", {paired_row(1.5, kBlocksB, 2)},
                            paired_identity("B", "y"));
  const auto u = compare_report(compare_dirs({da}, {dc}));
  for (const auto& row : u.tables.front().rows) {
    EXPECT_EQ(row[col("ratio_of")].text, "medians");
    EXPECT_NEAR(
        row[col("ratio")].value.get<double>(),
        row[col("median_b_ms")].value.get<double>() / row[col("median_a_ms")].value.get<double>(),
        1e-12);
  }
}
