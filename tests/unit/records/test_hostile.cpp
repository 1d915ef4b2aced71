// Hostile input at the core's level (docs/limits.md): overflow-checked sizes, the run.log line
// repair, the fast bootstrap of large samples, output paths that are not regular files, --out
// checks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "caliber/caliber.hpp"
#include "core/stats.hpp"
#include "records/rundir.hpp"
#include "records/runlog.hpp"
#include "settings/shapes.hpp"
#include "temp_dir.hpp"

using caliber::testing::TempDir;

using namespace caliber;
namespace fs = std::filesystem;

TEST(Sizes, CheckedArithmeticRefusesWhatWraps) {
  EXPECT_EQ(count_mul(1 << 20, 1 << 20), std::int64_t{1} << 40);
  EXPECT_EQ(count_add(3, 4), 7);
  EXPECT_EQ(bytes_of(1000, DType::f64), 8000u);
  // (2^32 + 1)^2 wraps to 2^33 + 1 in 64 bits; 2^32 * 2^32 wraps to 0 ("empty shape").
  EXPECT_THROW((void)count_mul(4294967297LL, 4294967297LL), SizeOverflow);
  EXPECT_THROW((void)count_of({4294967296LL, 4294967296LL}), SizeOverflow);
  EXPECT_THROW((void)count_add(kMaxCount, 1), SizeOverflow);
  EXPECT_THROW((void)count_mul(-1, 5), SizeOverflow);
  EXPECT_THROW((void)bytes_of(kMaxCount, DType::f32), SizeOverflow);
  EXPECT_EQ(count_of({}), 1);
  EXPECT_EQ(count_of({7, 0, 9}), 0);
  // SizeOverflow is a CaseSkipped: the runner skips the case rather than failing it.
  try {
    (void)count_of({4294967297LL, 4294967297LL});
    FAIL() << "no throw";
  } catch (const CaseSkipped& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("4294967297 x 4294967297"), std::string::npos) << what;
    EXPECT_NE(what.find("1.84e+19"), std::string::npos) << what;
  }
  Case c;
  c.shape = {1, 4294967296LL, 4294967296LL, 4294967296LL};
  EXPECT_THROW((void)c.numel(), SizeOverflow);
}

TEST(RunLogRepair, BadBytesAndNonJsonNumbersBecomeReadable) {
  EXPECT_EQ(core::repair_json_line("{\"a\":NaN,\"b\":-Infinity,\"c\":1e999999,\"d\":1.5}"),
            "{\"a\":null,\"b\":null,\"c\":null,\"d\":1.5}");
  // Inside strings nothing but bad bytes changes.
  EXPECT_EQ(core::repair_json_line("{\"s\":\"NaN \\\" 1e999999 \xff\"}"),
            "{\"s\":\"NaN \\\" 1e999999 ?\"}");
  TempDir dir;
  const auto file = dir.path() / "run.log";
  std::ofstream(file) << "{\"type\":\"header\"}\n"
                      << "{\"type\":\"case\",\"op\":\"a\xfe\",\"latency_ms\":NaN}\n"
                      << "{\"type\":\"case\",\"op\":\"b\",\"latency_ms\":Infinity}\n"
                      << "{\"type\":\"case\",\"op\":\"c\",\"latency_ms\":1.0}\n"
                      << "{\"type\":\"case\", cut\n"
                      << "{\"type\":\"footer\"}\n";
  const auto log = core::read_run_log(file);
  EXPECT_EQ(log.cases.size(), 3u);
  EXPECT_EQ(log.repaired_lines, 2);
  EXPECT_EQ(log.bad_lines, 1);
  EXPECT_FALSE(log.cases[1].latency_ms.has_value());
  EXPECT_TRUE(log.cases[1].extra.at("latency_ms").is_null());  // kept as written
}

// The process's CPU time in seconds: what the bootstrap costs, which other work on the host
// cannot stretch (a wall-clock bound failed beside a build on a loaded 2-core host).
namespace {
double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}
}  // namespace

TEST(Bootstrap, HundredThousandSamplesAreFastAndRight) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> a_dist(1.0, 0.01), b_dist(1.1, 0.01);
  std::vector<double> a(100000), b(100000);
  for (auto& x : a) x = a_dist(rng);
  for (auto& x : b) x = b_dist(rng);
  const double t0 = cpu_seconds();
  const auto ci = core::bootstrap_median_ratio_ci(a, b, 0.95, 2000, 3);
  const double s = cpu_seconds() - t0;
  EXPECT_LT(s, 2.0) << "CPU seconds";
  // The median ratio is 1.1; its standard error with 100k samples of 1% spread is ~0.004%.
  EXPECT_LT(ci.lo, 1.1 * 1.0005);
  EXPECT_GT(ci.hi, 1.1 * 0.9995);
  EXPECT_LT(ci.hi - ci.lo, 0.001);
  EXPECT_LE(ci.lo, ci.hi);
  // Grouped sides of that size too.
  const double t1 = cpu_seconds();
  const auto g = core::bootstrap_median_ratio_ci_grouped({a, a}, {b, b}, 0.95, 2000, 3);
  const double gs = cpu_seconds() - t1;
  EXPECT_LT(gs, 5.0) << "CPU seconds";
  EXPECT_LT(g.lo, 1.1 * 1.001);
  EXPECT_GT(g.hi, 1.1 * 0.999);
}

TEST(Bootstrap, ExactMedianDrawMatchesTheSortingBootstrap) {
  // Just past the threshold the median's law is drawn through beta variates; just below it (a
  // subset of the same data) through its table: the two intervals must agree within bootstrap
  // noise. (Both against real resampling: core.Stats.BootstrapMedianRatioCiMatchesResampling.)
  std::mt19937_64 rng(9);
  std::lognormal_distribution<double> d(0.0, 0.2);
  std::vector<double> a(core::kDirectBootstrapMax + 1), b(core::kDirectBootstrapMax + 1);
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = 1.05 * d(rng);
  const auto fast = core::bootstrap_median_ratio_ci(a, b, 0.95, 2000, 3);
  a.pop_back();
  b.pop_back();
  const auto direct = core::bootstrap_median_ratio_ci(a, b, 0.95, 2000, 3);
  const double width = direct.hi - direct.lo;
  EXPECT_NEAR(fast.lo, direct.lo, 0.15 * width);
  EXPECT_NEAR(fast.hi, direct.hi, 0.15 * width);
}

TEST(WriteFileAtomic, NeverReplacesWhatIsNotARegularFile) {
  TempDir dir;
  const auto fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_THROW(core::write_file_atomic(fifo, "x"), std::runtime_error);
  EXPECT_TRUE(fs::is_fifo(fifo));
  const auto target = dir.path() / "target";
  std::ofstream(target) << "keep";
  const auto link = dir.path() / "link";
  fs::create_symlink(target, link);
  EXPECT_THROW(core::write_file_atomic(link, "x"), std::runtime_error);
  EXPECT_TRUE(fs::is_symlink(link));
  std::ifstream in(target);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "keep");
  fs::create_directory(dir.path() / "d");
  EXPECT_THROW(core::write_file_atomic(dir.path() / "d", "x"), std::runtime_error);
  core::write_file_atomic(dir.path() / "new", "ok");  // a new file, and a regular one, are fine
  core::write_file_atomic(dir.path() / "new", "again");
  // Nothing left behind by the refusals.
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++n;
  EXPECT_EQ(n, 5);  // fifo, target, link, d, new
}

TEST(CheckOutDir, RefusesWhatCannotHoldARunAndCreatesNothing) {
  TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  EXPECT_THROW(core::check_out_dir(dir.path() / "file" / "runs"), std::invalid_argument);
  EXPECT_THROW(core::check_out_dir(""), std::invalid_argument);
  EXPECT_THROW(core::check_out_dir(dir.path() / std::string(300, 'x')), std::invalid_argument);
  std::string deep = dir.path().string();
  while (deep.size() <= core::kMaxOutPath) deep += "/abcdefghij";
  EXPECT_THROW(core::check_out_dir(deep), std::invalid_argument);
  core::check_out_dir(dir.path() / "a" / "b" / "c");  // missing folders are fine
  EXPECT_FALSE(fs::exists(dir.path() / "a"));
  if (::geteuid() != 0) {  // root writes anywhere; the CLI test covers it with chattr
    fs::create_directory(dir.path() / "ro");
    fs::permissions(dir.path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THROW(core::check_out_dir(dir.path() / "ro" / "runs"), std::invalid_argument);
  }
}

TEST(ShapeLimits, IncludesAreReadOnceAndCeilingsAreNamed) {
  TempDir dir;
  // f1 includes f2 twice, f2 includes f3 twice, ... 30 deep: 2^30 reads unmemoized.
  for (int i = 1; i <= 30; ++i)
    std::ofstream(dir.path() / ("f" + std::to_string(i) + ".yaml"))
        << "include: [f" << i + 1 << ".yaml, f" << i + 1 << ".yaml]\nfamilies: {pointwise: [[" << i
        << "]]}\n";
  std::ofstream(dir.path() / "f31.yaml") << "families: {pointwise: [[31]]}\n";
  // CPU time, not wall time (a loaded host stretches the wall; 2^30 reads cost hours of CPU).
  const std::clock_t c0 = std::clock();
  const auto set = core::ShapeSet::parse(
      "families: {pointwise: [[64]]}\ncomprehensive: {include: [f1.yaml]}\n", dir.path());
  EXPECT_LT(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC, 2.0);
  EXPECT_EQ(set.shapes_for("add", "pointwise", core::Level::comprehensive).size(), 32u);
  // Past the depth ceiling: a chain of kMaxIncludeDepth + 2 files.
  for (std::size_t i = 1; i <= core::kMaxIncludeDepth + 2; ++i)
    std::ofstream(dir.path() / ("c" + std::to_string(i) + ".yaml"))
        << "include: [c" << i + 1 << ".yaml]\n";
  std::ofstream(dir.path() / ("c" + std::to_string(core::kMaxIncludeDepth + 3) + ".yaml"))
      << "families: {pointwise: [[1]]}\n";
  EXPECT_THROW((void)core::ShapeSet::parse("comprehensive: {include: [c1.yaml]}\n", dir.path()),
               core::ShapeError);
  // Too many dimensions in one shape.
  std::string dims = "[";
  for (std::size_t i = 0; i <= core::kMaxDims; ++i) dims += (i ? ", " : "") + std::string("2");
  dims += "]";
  EXPECT_THROW((void)core::ShapeSet::parse("families: {pointwise: [" + dims + "]}\n", dir.path()),
               core::ShapeError);
}
