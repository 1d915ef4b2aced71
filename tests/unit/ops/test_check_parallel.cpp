// The host threads of a check (caliber/check.hpp's parallel_for, docs/writing-ops.md "The gate's
// cost"): the ranges it hands out, and the comparison and references built on it giving the same
// verdict and the same figures on any number of threads as the one-element-after-another loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "caliber/check.hpp"
#include "caliber/reference.hpp"

namespace {

namespace check = caliber::check;
namespace ref = caliber::ref;
using caliber::DType;

// The comparison as one loop over the elements in order (the check before it had threads): the
// oracle for the first bad index, the counts and the largest error.
check::CompareStats serial_stats(const std::vector<double>& out, const std::vector<double>& r,
                                 const check::Tolerance& tol) {
  check::CompareStats s;
  s.n = out.size();
  double diff2 = 0, ref2 = 0;
  bool first = true;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = out[i], x = r[i];
    if (!std::isfinite(o) && !(std::isinf(x) && o == x)) {
      ++s.nonfinite;
      if (first) s.first_bad = i, first = false;
      continue;
    }
    if (!std::isfinite(x)) continue;
    const double d = std::fabs(o - x);
    s.max_abs = std::max(s.max_abs, d);
    const double dn = std::max(0.0, d - tol.abs_floor);
    diff2 += dn * dn;
    ref2 += x * x;
    if (!(d <= tol.atol + tol.rtol * std::fabs(x))) {
      ++s.violations;
      if (first) s.first_bad = i, first = false;
    }
  }
  s.rel_norm = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return s;
}

// A correct f32 output: every element within tolerance, most not exact; neighbours differ by
// at least 0.005 (far beyond the f32 tolerance), so an off-by-one read fails.
std::pair<std::vector<double>, std::vector<double>> clean(std::size_t n) {
  std::vector<double> r(n), out(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i] = 1.5 + 0.01 * static_cast<double>(i % 97) + 1e-9 * static_cast<double>(i % 13);
    out[i] = check::round_to(r[i], DType::f32);
  }
  return {out, r};
}

const std::size_t kSizes[] = {1,
                              100,
                              check::kCompareBlock - 1,
                              check::kCompareBlock,
                              check::kCompareBlock + 1,
                              5 * check::kCompareBlock + 3};
const unsigned kThreads[] = {1, 2, 3, 7, 16};

// Planted errors, each a list of (index, kind) at positions relative to the size.
enum class Plant { poison, off_by_one, nan, wrong_inf };

void plant(std::vector<double>& out, const std::vector<double>& r, std::size_t i, Plant p) {
  switch (p) {
    case Plant::poison:
      out[i] = check::poison_value<double>();
      break;
    case Plant::off_by_one:  // the neighbour's value: an indexing bug
      // A one-element output has no neighbour: its value is moved off by a whole unit instead.
      if (r.size() == 1) {
        out[i] = check::round_to(r[i] + 1.0, DType::f32);
      } else {
        out[i] = check::round_to(r[i + 1 < r.size() ? i + 1 : i - 1], DType::f32);
      }
      break;
    case Plant::nan:
      out[i] = std::numeric_limits<double>::quiet_NaN();
      break;
    case Plant::wrong_inf:
      out[i] = std::numeric_limits<double>::infinity();
      break;
  }
}

void expect_same(const check::CompareStats& got, const check::CompareStats& want,
                 const std::string& where) {
  EXPECT_EQ(got.n, want.n) << where;
  EXPECT_EQ(got.nonfinite, want.nonfinite) << where;
  EXPECT_EQ(got.violations, want.violations) << where;
  EXPECT_EQ(got.bad(), want.bad()) << where;
  if (want.bad()) {
    EXPECT_EQ(got.first_bad, want.first_bad) << where;
  }
  EXPECT_EQ(got.max_abs, want.max_abs) << where;
}

TEST(CheckParallel, RangesCoverEverythingOnceInOrder) {
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1000}, std::size_t{1} << 20}) {
    for (const unsigned threads : kThreads) {
      for (const std::size_t grain : {std::size_t{1}, std::size_t{64}, check::kParallelGrain}) {
        std::vector<std::pair<std::size_t, std::size_t>> seen(threads + 1);
        std::vector<std::atomic<int>> hits(n);
        std::atomic<std::size_t> ranges{0};
        check::parallel_for(
            n,
            [&](std::size_t b, std::size_t e) {
              ++ranges;
              for (std::size_t i = b; i < e; ++i) ++hits[i];
            },
            grain, threads);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << n << " " << i;
        const std::size_t want = n == 0 ? 0 : std::clamp<std::size_t>(n / grain, 1, threads);
        EXPECT_EQ(ranges, want) << "n=" << n << " threads=" << threads << " grain=" << grain;
      }
    }
  }
}

TEST(CheckParallel, AnExceptionOfARangeReachesTheCaller) {
  EXPECT_THROW(check::parallel_for(
                   1000,
                   [](std::size_t b, std::size_t) {
                     if (b > 0) throw std::runtime_error("range");
                   },
                   1, 4),
               std::runtime_error);
}

TEST(CheckParallel, CompareFindsThePlantedErrorsOnAnyNumberOfThreads) {
  const auto tol = check::pointwise_tolerance(DType::f32);
  for (const std::size_t n : kSizes) {
    for (const Plant p : {Plant::poison, Plant::off_by_one, Plant::nan, Plant::wrong_inf}) {
      // One error in the last block, one in the middle, and the same with an earlier one added:
      // the first bad index must be the lowest whichever thread finds it.
      const std::vector<std::vector<std::size_t>> layouts = {
          {n - 1}, {n / 2}, {n / 2, n - 1}, {n - 1, n / 3, n / 2}};
      for (const auto& at : layouts) {
        auto [out, r] = clean(n);
        for (const std::size_t i : at) plant(out, r, i, p);
        const auto want = serial_stats(out, r, tol);
        ASSERT_TRUE(want.bad());
        const auto one = check::compare_stats(out, r, tol, nullptr, 1);
        for (const unsigned threads : kThreads) {
          const std::string where =
              "n=" + std::to_string(n) + " plant=" + std::to_string(static_cast<int>(p)) +
              " errors=" + std::to_string(at.size()) + " threads=" + std::to_string(threads);
          const auto got = check::compare_stats(out, r, tol, nullptr, threads);
          expect_same(got, want, where);
          // Bit for bit the one-thread figures, the norm included.
          EXPECT_EQ(got.rel_norm, one.rel_norm) << where;
          const auto a = check::compare(out, r, tol, "planted", nullptr, threads);
          EXPECT_FALSE(a.passed) << where;
          EXPECT_NE(a.detail.find("first bad index " + std::to_string(want.first_bad)),
                    std::string::npos)
              << where << ": " << a.detail;
          EXPECT_EQ(a.detail, check::compare(out, r, tol, "planted", nullptr, 1).detail) << where;
        }
      }
    }
  }
}

TEST(CheckParallel, CleanOutputsPassWithTheSerialFigures) {
  const auto tol = check::pointwise_tolerance(DType::f32);
  for (const std::size_t n : kSizes) {
    const auto [out, r] = clean(n);
    const auto want = serial_stats(out, r, tol);
    for (const unsigned threads : kThreads) {
      const auto got = check::compare_stats(out, r, tol, nullptr, threads);
      expect_same(got, want, "n=" + std::to_string(n));
      // The norm is summed block by block: within rounding of the one running sum.
      EXPECT_NEAR(got.rel_norm, want.rel_norm, 1e-12 * want.rel_norm + 1e-300) << n;
      EXPECT_TRUE(check::compare(out, r, tol, "clean", nullptr, threads).passed) << n;
    }
  }
}

TEST(CheckParallel, ThreadsKnobParsesItsRangeOnly) {
  EXPECT_EQ(check::parse_check_threads("4"), 4u);
  EXPECT_EQ(check::parse_check_threads(" 16 "), 16u);
  EXPECT_EQ(check::parse_check_threads("256"), 256u);
  for (const char* bad : {"", "0", "257", "-1", "four", "4x", "1.5"})
    EXPECT_EQ(check::parse_check_threads(bad), 0u) << bad;
  setenv(check::kCheckThreadsEnv, "3", 1);
  EXPECT_EQ(check::default_threads(), 3u);
  setenv(check::kCheckThreadsEnv, "nonsense", 1);  // refused by the CLI; here: the hardware
  EXPECT_GE(check::default_threads(), 1u);
  EXPECT_LE(check::default_threads(), check::kMaxCheckThreads);
  unsetenv(check::kCheckThreadsEnv);
}

// The references and the conversion on the host's threads: the same bits as on one.
TEST(CheckParallel, ReferencesAndConversionGiveTheSameBitsOnAnyThreads) {
  const std::int64_t rows = 300, cols = 700;
  std::vector<float> raw(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<float>(std::cos(0.37 * static_cast<double>(i)) * 3.0);
  auto run = [&](const char* threads) {
    setenv(check::kCheckThreadsEnv, threads, 1);
    const auto x = check::to_double(raw.data(), DType::f32, raw.size());
    std::vector<std::vector<double>> got = {
        x,
        ref::map(x, ref::gelu_erf),
        ref::zip(x, x, [](double a, double b) { return a * b; }),
        ref::row_sum(x, rows, cols),
        ref::row_amax(x, rows, cols),
        ref::row_cumsum(x, rows, cols),
        ref::row_softmax(x, rows, cols),
        ref::row_log_softmax(x, rows, cols),
        ref::row_layer_norm(x, rows, cols, 1e-5),
        ref::row_rms_norm(x, rows, cols, 1e-6)};
    const auto am = ref::row_argmax(x, rows, cols);
    got.emplace_back(am.begin(), am.end());
    unsetenv(check::kCheckThreadsEnv);
    return got;
  };
  const auto one = run("1");
  for (const char* t : {"2", "5", "16"}) {
    const auto many = run(t);
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t k = 0; k < one.size(); ++k) {
      ASSERT_EQ(many[k].size(), one[k].size()) << k;
      for (std::size_t i = 0; i < one[k].size(); ++i)
        ASSERT_EQ(std::memcmp(&many[k][i], &one[k][i], sizeof(double)), 0)
            << "reference " << k << " element " << i << " threads " << t;
    }
  }
}

}  // namespace
