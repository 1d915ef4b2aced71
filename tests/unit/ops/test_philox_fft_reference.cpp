// Host pieces of the random and fft CUDA ops: the Philox4x32-10 generator against the published
// known-answer vectors (Random123's kat_vectors), its float conversions, and the float64 FFT
// reference against a direct DFT.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <vector>

#include "common/fft_reference.hpp"
#include "common/philox.hpp"

namespace {

using caliber::ops::philox::U32x4;

void expect_kat(U32x4 ctr, std::uint32_t k0, std::uint32_t k1, U32x4 want) {
  const U32x4 got = caliber::ops::philox::philox4x32_10(ctr, k0, k1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], want.v[i]) << "word " << i;
}

TEST(Philox, KnownAnswerVectors) {
  expect_kat({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
  expect_kat({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
             {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
  expect_kat({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
             {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST(Philox, StreamLayoutAndUnitConversions) {
  using namespace caliber::ops::philox;
  // Group g at offset o is counter o + g: shifting the offset shifts the stream.
  const auto a = draw(42, 10, 5), b = draw(42, 15, 0), c = draw(42, 15, 1), d = draw(43, 15, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.v[i], b.v[i]);
  EXPECT_NE(b.v[0], c.v[0]);
  EXPECT_NE(b.v[0], d.v[0]);
  // The counter's high word is used: offsets past 2^32 do not wrap onto small ones.
  const auto lo = draw(1, 0, 7), hi = draw(1, std::uint64_t{1} << 32, 7);
  EXPECT_NE(lo.v[0], hi.v[0]);
  EXPECT_EQ(to_unit(0u), 0.0f);
  EXPECT_LT(to_unit(0xffffffffu), 1.0f);
  EXPECT_GT(to_unit_open0(0u), 0.0f);
  EXPECT_EQ(to_unit_open0(0xffffffffu), 1.0f);
  EXPECT_EQ(counters_for(0), 0u);
  EXPECT_EQ(counters_for(1), 1u);
  EXPECT_EQ(counters_for(8), 2u);
  EXPECT_EQ(counters_for(9), 3u);
  // Uniformity of a small stream: mean within 5 sigma of 1/2.
  double s = 0;
  const int groups = 1 << 16;
  for (int g = 0; g < groups; ++g) {
    const auto r = draw(7, 0, static_cast<std::uint64_t>(g));
    for (int i = 0; i < 4; ++i) s += to_unit(r.v[i]);
  }
  const double n = 4.0 * groups;
  EXPECT_NEAR(s / n, 0.5, 5.0 * std::sqrt(1.0 / 12.0 / n));
}

TEST(FftReference, RadixTwoMatchesDirectDft) {
  using caliber::ops::fftref::cd;
  for (std::size_t n : {1u, 2u, 8u, 64u, 1024u}) {
    std::vector<cd> x(n);
    for (std::size_t j = 0; j < n; ++j) {
      x[j] =
          cd(std::sin(0.37 * static_cast<double>(j) + 1.0), std::cos(1.3 * static_cast<double>(j)));
    }
    auto f = x;
    caliber::ops::fftref::fft_pow2(f);
    for (std::size_t k = 0; k < n; ++k) {
      const cd want = caliber::ops::fftref::dft_bin(x, static_cast<std::int64_t>(k));
      EXPECT_NEAR(f[k].real(), want.real(), 1e-9 * static_cast<double>(n)) << n << " bin " << k;
      EXPECT_NEAR(f[k].imag(), want.imag(), 1e-9 * static_cast<double>(n)) << n << " bin " << k;
    }
  }
  // A pure tone lands in one bin with magnitude n.
  const std::size_t n = 256;
  std::vector<cd> tone(n);
  for (std::size_t j = 0; j < n; ++j) {
    tone[j] = std::polar(1.0, 2.0 * 3.14159265358979323846 * 5.0 * static_cast<double>(j) / n);
  }
  caliber::ops::fftref::fft_pow2(tone);
  EXPECT_NEAR(std::abs(tone[5]), static_cast<double>(n), 1e-9);
  EXPECT_NEAR(std::abs(tone[6]), 0.0, 1e-9);
  EXPECT_TRUE(caliber::ops::fftref::is_pow2(1024));
  EXPECT_FALSE(caliber::ops::fftref::is_pow2(1000));
}

}  // namespace
