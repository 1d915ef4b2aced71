// Host float64 reference of the batched complex FFT: an iterative radix-2 transform for
// power-of-two lengths and a direct DFT of selected bins for any length. Plain C++ so it is
// unit-tested without a GPU.
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace caliber::ops::fftref {

using cd = std::complex<double>;

[[nodiscard]] inline bool is_pow2(std::int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Forward transform (sign -1, unnormalized, like cuFFT's CUFFT_FORWARD), in place.
inline void fft_pow2(std::vector<cd>& a) {
  const std::size_t n = a.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  const double pi = 3.14159265358979323846;
  for (std::size_t len = 2; len <= n; len <<= 1) {
    for (std::size_t i = 0; i < n; i += len) {
      for (std::size_t k = 0; k < len / 2; ++k) {
        // Twiddles computed directly (not by repeated multiplication) to keep float64 exactness.
        const double ang = -2.0 * pi * static_cast<double>(k) / static_cast<double>(len);
        const cd w(std::cos(ang), std::sin(ang));
        const cd u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
      }
    }
  }
}

// Bin k of the forward DFT of x, directly: O(n) per bin.
[[nodiscard]] inline cd dft_bin(const std::vector<cd>& x, std::int64_t k) {
  const double pi = 3.14159265358979323846;
  const auto n = static_cast<std::int64_t>(x.size());
  cd s(0, 0);
  for (std::int64_t j = 0; j < n; ++j) {
    const double ang = -2.0 * pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
    s += x[static_cast<std::size_t>(j)] * cd(std::cos(ang), std::sin(ang));
  }
  return s;
}

}  // namespace caliber::ops::fftref
