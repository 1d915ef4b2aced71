// Host references and tolerance logic of the CUDA corpus's correctness gate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "caliber/reference.hpp"

namespace ref = caliber::ref;
namespace check = caliber::check;
using caliber::DType;

TEST(ReferenceConvert, HalfKnownBitPatterns) {
  EXPECT_EQ(check::half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(check::half_to_float(0xC000), -2.0f);
  EXPECT_EQ(check::half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(check::half_to_float(0x0001), 5.9604644775390625e-8f);  // smallest subnormal
  EXPECT_TRUE(std::isinf(check::half_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(check::half_to_float(0xFFFF)));  // the poison pattern
  EXPECT_EQ(check::float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(check::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(check::float_to_half(70000.0f), 0x7C00);
  EXPECT_EQ(check::float_to_half(5.9604644775390625e-8f), 0x0001);
  EXPECT_EQ(check::float_to_half(-0.0f), 0x8000);
}

TEST(ReferenceConvert, HalfRoundsToNearestEven) {
  // 1 + 2^-11 is exactly halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
  EXPECT_EQ(check::float_to_half(1.0f + 0x1p-11f), 0x3C00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
  EXPECT_EQ(check::float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(check::float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  // Every half value round-trips exactly.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = check::half_to_float(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(check::float_to_half(f), b) << "half bits " << h;
  }
}

TEST(ReferenceConvert, Bf16RoundTripAndRounding) {
  EXPECT_EQ(check::bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(check::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(check::float_to_bf16(1.0f + 0x1p-8f), 0x3F80);             // tie to even
  EXPECT_EQ(check::float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);         // tie to even (up)
  EXPECT_EQ(check::float_to_bf16(1.0f + 0x1p-8f + 0x1p-16f), 0x3F81);  // above the tie
  EXPECT_TRUE(std::isnan(check::bf16_to_float(check::float_to_bf16(std::nanf("")))));
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = check::bf16_to_float(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(check::float_to_bf16(f), b) << "bf16 bits " << h;
  }
}

TEST(ReferenceConvert, ToDoubleReadsEachDtype) {
  const std::uint16_t h[2] = {0x3C00, 0xC000};
  EXPECT_EQ(check::to_double(h, DType::f16, 2), (std::vector<double>{1.0, -2.0}));
  const std::uint16_t b[2] = {0x3F80, 0x4040};
  EXPECT_EQ(check::to_double(b, DType::bf16, 2), (std::vector<double>{1.0, 3.0}));
  const std::int64_t i[3] = {7, -1, 1LL << 40};
  EXPECT_EQ(check::to_double(i, DType::i64, 3), (std::vector<double>{7.0, -1.0, 1099511627776.0}));
  const float c[4] = {1.f, 2.f, 3.f, 4.f};
  EXPECT_EQ(check::to_double(c, DType::c64, 2).size(), 4u);
  EXPECT_DOUBLE_EQ(check::round_to(1.0 + 1e-4, DType::bf16), 1.0);
  EXPECT_NE(check::round_to(1.0 + 1e-4, DType::f32), 1.0);
}

TEST(ReferenceCompare, PassesWithinToleranceAndReportsErrors) {
  std::vector<double> r{1.0, -2.0, 3.0, 4.0};
  std::vector<double> o{1.0 + 1e-7, -2.0, 3.0, 4.0 - 1e-7};
  const auto a = check::compare(o, r, check::pointwise_tolerance(DType::f32), "test");
  EXPECT_TRUE(a.passed) << a.detail;
  EXPECT_NEAR(a.max_abs_err, 1e-7, 1e-12);
  EXPECT_GT(a.rel_err, 0.0);
  EXPECT_LT(a.rel_err, 1e-7);
}

TEST(ReferenceCompare, FailsOnOneWrongElement) {
  std::vector<double> r(1000, 1.0);
  std::vector<double> o = r;
  o[517] = 1.01;
  const auto a = check::compare(o, r, check::pointwise_tolerance(DType::f32), "test");
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.detail.find("first bad index 517"), std::string::npos) << a.detail;
  // The same error is within bf16's tolerance.
  EXPECT_TRUE(check::compare(o, r, check::pointwise_tolerance(DType::bf16), "bf16").passed);
}

TEST(ReferenceCompare, NaNNeverPasses) {
  std::vector<double> r{1.0, 2.0};
  std::vector<double> o{1.0, std::numeric_limits<double>::quiet_NaN()};
  check::Tolerance loose{1e9, 1e9, 1e9};
  const auto a = check::compare(o, r, loose, "nan");
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.detail.find("1 unwritten/NaN"), std::string::npos) << a.detail;
  // Poisoned fp16 memory reads as NaN and is counted.
  const std::uint16_t poisoned[2] = {0xFFFF, 0xFFFF};
  const auto p = check::compare(check::to_double(poisoned, DType::f16, 2), r, loose, "poison");
  EXPECT_FALSE(p.passed);
  // Infinity where the reference is finite fails too.
  o[1] = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(check::compare(o, r, loose, "inf").passed);
}

TEST(ReferenceCompare, SizeMismatchAndEmptyFail) {
  EXPECT_FALSE(
      check::compare({1.0}, {1.0, 2.0}, check::pointwise_tolerance(DType::f32), "x").passed);
  EXPECT_FALSE(check::compare({}, {}, check::pointwise_tolerance(DType::f32), "x").passed);
}

TEST(ReferenceCompare, NormGateCatchesSmallWidespreadError) {
  // Every element within the per-element bound of a loose rtol but the norm above the gate.
  std::vector<double> r(100, 1.0), o(100, 1.0 + 5e-5);
  check::Tolerance t{1e-4, 0, 1e-5};
  const auto a = check::compare(o, r, t, "norm");
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.detail.find("norm error above tolerance"), std::string::npos) << a.detail;
}

TEST(ReferenceCompare, SubnormalOutputsAreJudgedBeyondTheFormatsResolution) {
  // fp16 softmax over a 151936-column row: every probability ~6.6e-6 is subnormal in fp16, so a
  // correctly rounded output is up to 0.5% off, far above the 1e-3 norm gate. The gate must pass
  // it and still fail an output that is two subnormal steps off everywhere.
  const auto tol = check::reduction_tolerance(DType::f16, 151936);
  std::vector<double> r(4096), rounded(4096), off(4096);
  for (std::size_t i = 0; i < r.size(); ++i) {
    r[i] = (1.0 + 0.37 * std::sin(0.1 * static_cast<double>(i))) / 151936.0;
    rounded[i] = check::round_to(r[i], DType::f16);
    off[i] = rounded[i] + 2 * 0x1p-24;
  }
  double d2 = 0, r2 = 0;
  for (std::size_t i = 0; i < r.size(); ++i) d2 += (rounded[i] - r[i]) * (rounded[i] - r[i]);
  for (double v : r) r2 += v * v;
  ASSERT_GT(std::sqrt(d2 / r2), tol.norm_rel);  // the plain norm error would fail the gate
  const auto a = check::compare(rounded, r, tol, "subnormal");
  EXPECT_TRUE(a.passed) << a.detail;
  const auto b = check::compare(off, r, tol, "two steps off");
  EXPECT_FALSE(b.passed) << b.detail;
  EXPECT_NE(b.detail.find("norm error above tolerance"), std::string::npos) << b.detail;
  // fp32 has no such floor at these magnitudes: a 1e-4 relative error still fails.
  std::vector<double> f32off(r);
  for (double& v : f32off) v *= 1.0 + 1e-4;
  EXPECT_FALSE(
      check::compare(f32off, r, check::reduction_tolerance(DType::f32, 151936), "f32").passed);
}

TEST(ReferenceSampling, ConsecutiveRunsCoverEveryRowOnce) {
  using R = check::IndexRun;
  EXPECT_TRUE(check::consecutive_runs({}).empty());
  EXPECT_EQ(check::consecutive_runs({7}), (std::vector<R>{{0, 1}}));
  EXPECT_EQ(check::consecutive_runs({0, 1, 2, 5, 6, 9}), (std::vector<R>{{0, 3}, {3, 2}, {5, 1}}));
  EXPECT_EQ(check::consecutive_runs({3, 2, 2}), (std::vector<R>{{0, 1}, {1, 1}, {2, 1}}));
  // Every row of a tensor (what sample_indices gives for small rows): one run.
  EXPECT_EQ(check::consecutive_runs(check::sample_indices(100003, 100003, 1)),
            (std::vector<R>{{0, 100003}}));
  // A sparse sample: the runs cover its positions exactly once, in order.
  const auto idx = check::sample_indices(1 << 20, 4096, 5);
  std::size_t next = 0;
  for (const auto& r : check::consecutive_runs(idx)) {
    EXPECT_EQ(r.at, next);
    for (std::size_t k = 1; k < r.count; ++k) EXPECT_EQ(idx[r.at + k], idx[r.at] + k);
    next = r.at + r.count;
  }
  EXPECT_EQ(next, idx.size());
}

TEST(ReferenceCompare, ExactIntegerCompare) {
  std::vector<std::int64_t> r{0, 5, 9}, o{0, 5, 9};
  EXPECT_TRUE(check::compare_exact(o, r, "idx").passed);
  o[2] = -1;  // poisoned int64 reads as -1
  const auto a = check::compare_exact(o, r, "idx");
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.detail.find("first at 2"), std::string::npos) << a.detail;
}

TEST(ReferenceTolerance, OrderedByPrecisionAndGrowWithLength) {
  EXPECT_LT(check::pointwise_tolerance(DType::f32).rtol,
            check::pointwise_tolerance(DType::f16).rtol);
  EXPECT_LT(check::pointwise_tolerance(DType::f16).rtol,
            check::pointwise_tolerance(DType::bf16).rtol);
  EXPECT_DOUBLE_EQ(check::reduction_tolerance(DType::f32, 1024).norm_rel, 1e-5);
  EXPECT_DOUBLE_EQ(check::reduction_tolerance(DType::f16, 1024).norm_rel, 1e-3);
  EXPECT_DOUBLE_EQ(check::reduction_tolerance(DType::bf16, 1024).norm_rel, 1e-2);
  EXPECT_LT(check::reduction_tolerance(DType::f32, 64).rtol,
            check::reduction_tolerance(DType::f32, 1 << 20).rtol);
  EXPECT_DOUBLE_EQ(check::gemm_tolerance(DType::f32, 4096).norm_rel, 1e-5);
  EXPECT_GT(check::gemm_tolerance(DType::f32, 151936).norm_rel, 1e-5);
  EXPECT_LT(check::gemm_tolerance(DType::f32, 151936).norm_rel, 1e-3);
  EXPECT_DOUBLE_EQ(check::gemm_tolerance(DType::bf16, 4096).norm_rel, 1e-2);
}

TEST(ReferenceSample, DeterministicSortedDistinctWithEdges) {
  const auto a = check::sample_indices(1000000, 256, 42);
  const auto b = check::sample_indices(1000000, 256, 42);
  const auto c = check::sample_indices(1000000, 256, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  ASSERT_EQ(a.size(), 256u);
  EXPECT_EQ(a.front(), 0);
  EXPECT_EQ(a.back(), 999999);
  for (std::size_t i = 1; i < a.size(); ++i) EXPECT_LT(a[i - 1], a[i]);
  EXPECT_EQ(check::sample_indices(5, 256, 1), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(check::sample_indices(0, 10, 1).empty());
}
