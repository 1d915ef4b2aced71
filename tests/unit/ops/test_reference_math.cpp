// Float64 host references: pointwise functions, row reductions, norms and the GEMM sample.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "caliber/reference.hpp"

namespace ref = caliber::ref;
namespace check = caliber::check;
using caliber::DType;

TEST(ReferencePointwise, KnownValues) {
  EXPECT_DOUBLE_EQ(ref::gelu_erf(0.0), 0.0);
  EXPECT_NEAR(ref::gelu_erf(1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(ref::gelu_erf(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(ref::gelu_tanh(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(ref::silu(1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(ref::silu(-2.0), -0.2384058440442351, 1e-15);
  EXPECT_EQ(ref::zip({1, 2}, {3, 4}, [](double a, double b) { return a * b; }),
            (std::vector<double>{3, 8}));
  EXPECT_EQ(ref::map({0.0}, [](double x) { return std::exp(x); }), (std::vector<double>{1.0}));
}

TEST(ReferenceRows, SumAmaxArgmaxCumsum) {
  const std::vector<double> x{1,  5,  -2, 5,  // row 0: first max at index 1
                              -3, -1, -7, -9};
  EXPECT_EQ(ref::row_sum(x, 2, 4), (std::vector<double>{9, -20}));
  EXPECT_EQ(ref::row_amax(x, 2, 4), (std::vector<double>{5, -1}));
  EXPECT_EQ(ref::row_argmax(x, 2, 4), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(ref::row_cumsum(x, 2, 4), (std::vector<double>{1, 6, 4, 9, -3, -4, -11, -20}));
  // One row for a 1-D tensor.
  EXPECT_EQ(ref::row_sum(x, 1, 8), (std::vector<double>{-11}));
}

TEST(ReferenceRows, SoftmaxRowsSumToOneAndLogMatches) {
  const std::vector<double> x{1000.0, 1001.0, 1002.0, -1.0, 0.0, 1.0};  // large values: stable
  const auto s = ref::row_softmax(x, 2, 3);
  const auto l = ref::row_log_softmax(x, 2, 3);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) {
      sum += s[r * 3 + c];
      EXPECT_NEAR(std::log(s[r * 3 + c]), l[r * 3 + c], 1e-12);
    }
    EXPECT_NEAR(sum, 1.0, 1e-15);
  }
  // Softmax is shift invariant: both rows are the same distribution.
  EXPECT_NEAR(s[0], s[3], 1e-15);
  EXPECT_NEAR(s[2], 0.6652409557748219, 1e-15);
}

TEST(ReferenceRows, LayerNormAndRmsNorm) {
  const std::vector<double> x{1, 2, 3, 4};
  const auto y = ref::row_layer_norm(x, 1, 4, 0.0);
  double mean = 0, var = 0;
  for (double v : y) mean += v;
  for (double v : y) var += v * v;
  EXPECT_NEAR(mean / 4, 0.0, 1e-15);
  EXPECT_NEAR(var / 4, 1.0, 1e-12);
  EXPECT_NEAR(y[0], -1.5 / std::sqrt(1.25), 1e-15);
  const auto ya = ref::row_layer_norm(x, 1, 4, 0.0, {2, 2, 2, 2}, {1, 1, 1, 1});
  EXPECT_NEAR(ya[0], 2 * y[0] + 1, 1e-15);
  const auto r = ref::row_rms_norm(x, 1, 4, 0.0);
  EXPECT_NEAR(r[3], 4.0 / std::sqrt(7.5), 1e-15);
  const auto re = ref::row_rms_norm(x, 1, 4, 1e-5, {1, 1, 1, 3});
  EXPECT_NEAR(re[3], 12.0 / std::sqrt(7.5 + 1e-5), 1e-14);
}

TEST(ReferenceGemm, ElementRowMajorAndColumnMajorB) {
  // A 2x3, B 3x2 row-major.
  const std::vector<double> a{1, 2, 3, 4, 5, 6};
  const std::vector<double> b_row{7, 8, 9, 10, 11, 12};
  // The same B stored column-major: column j holds B[0..2][j].
  const std::vector<double> b_col{7, 9, 11, 8, 10, 12};
  const double c[2][2] = {{58, 64}, {139, 154}};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_DOUBLE_EQ(ref::gemm_element(a, b_row, 2, 3, false, i, j).ref, c[i][j]);
      EXPECT_DOUBLE_EQ(ref::gemm_element(a, b_col, 2, 3, true, i, j).ref, c[i][j]);
    }
  }
  // addmm: alpha*AB + beta*bias[j].
  const auto s = ref::gemm_element(a, b_row, 2, 3, false, 1, 0, 2.0, 0.5, {10, 20});
  EXPECT_DOUBLE_EQ(s.ref, 2 * 139 + 5);
  EXPECT_DOUBLE_EQ(s.scale, 2 * 139 + 5);  // all terms positive here
  EXPECT_DOUBLE_EQ(s.pre_bias, 2 * 139);
  EXPECT_DOUBLE_EQ(ref::gemm_element(a, b_row, 2, 3, false, 1, 0).pre_bias, 0.0);  // no bias
}

// addmm whose product is rounded to fp16 before a bias that nearly cancels it (cuBLAS's beta = 1
// path on the H200): within one rounding of the product, so it passes; twice that error fails.
TEST(ReferenceGemm, AddmmAllowsOneRoundingOfTheProduct) {
  const std::vector<double> a{0.5, 0.25};
  const std::vector<double> b{0.4, 0.2};  // column of B, K = 2: product 0.25
  const auto s = ref::gemm_element(a, b, 1, 2, true, 0, 0, 1.0, 1.0, {-0.2312});
  ASSERT_DOUBLE_EQ(s.pre_bias, 0.25);
  const auto tol = check::gemm_tolerance(DType::f16, 2);
  const double one_rounding = 0x1p-11 * 0.25;  // f16 unit roundoff times the product
  // 100 samples, one of them off (the norm gate sees the whole sample, as on the device).
  auto check = [&](double err, double pre_bias) {
    auto g = s;
    g.pre_bias = pre_bias;
    std::vector<ref::GemmSample> samples(100, g);
    std::vector<double> out(100, s.ref);
    out[37] += err;
    return ref::compare_gemm(out, samples, tol, "addmm").passed;
  };
  EXPECT_TRUE(check(0.9 * one_rounding, s.pre_bias));
  // Without the allowance the same error fails: |ref| is only 0.0188.
  EXPECT_FALSE(check(0.9 * one_rounding, 0.0));
  EXPECT_FALSE(check(6 * one_rounding, s.pre_bias));
}

TEST(ReferenceGemm, CompareAcceptsRoundingRejectsWrongElement) {
  std::vector<ref::GemmSample> samples;
  std::vector<double> out;
  for (int s = 0; s < 64; ++s) {
    ref::GemmSample g;
    g.i = s;
    g.j = s;
    g.ref = 10.0 + s;
    g.scale = 4096.0 * 0.25;
    samples.push_back(g);
    out.push_back(check::round_to(g.ref * (1 + 1e-4), DType::bf16));
  }
  const auto tol = check::gemm_tolerance(DType::bf16, 4096);
  const auto ok = ref::compare_gemm(out, samples, tol, "bf16 sample");
  EXPECT_TRUE(ok.passed) << ok.detail;
  out[10] = -out[10];
  const auto bad = ref::compare_gemm(out, samples, tol, "bf16 sample");
  EXPECT_FALSE(bad.passed);
  EXPECT_NE(bad.detail.find("first bad (10,10)"), std::string::npos) << bad.detail;
  out[10] = std::nan("");
  EXPECT_FALSE(ref::compare_gemm(out, samples, tol, "nan").passed);
  // fp32 tolerance is much tighter: a bf16-rounded result fails it.
  std::vector<double> rounded;
  for (const auto& g : samples) rounded.push_back(check::round_to(g.ref * (1 + 3e-3), DType::bf16));
  EXPECT_FALSE(
      ref::compare_gemm(rounded, samples, check::gemm_tolerance(DType::f32, 4096), "f32").passed);
}
