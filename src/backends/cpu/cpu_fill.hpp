// Random inputs on the host: a counter-based hash, so any element is a pure function of (seed,
// index) and a fill is reproducible from its seed alone. Values are never zero: a zero input hides
// a kernel that forgets to read it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "caliber/dtype.hpp"

namespace caliber::backends::cpu {

[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  // splitmix64's finalizer: every input bit reaches every output bit.
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

[[nodiscard]] constexpr std::uint64_t element_hash(std::uint64_t seed, std::uint64_t i) noexcept {
  return mix64(mix64(seed) ^ (i * 0xD1B54A32D192ED03ull));
}

// [0, 1) with 53 random bits.
[[nodiscard]] constexpr double unit_double(std::uint64_t h) noexcept {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

[[nodiscard]] inline std::uint16_t float_to_half_rne(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u : 0u));
  if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (ax < 0x38800000u) {  // subnormal half: round the value at 2^-24 granularity
    const float a = std::fabs(f) * 16777216.0f;  // exact scaling by 2^24
    const auto m = static_cast<std::uint32_t>(std::nearbyint(a));
    return static_cast<std::uint16_t>(sign | m);
  }
  const std::uint32_t lsb = (ax >> 13) & 1u;
  ax += 0xFFFu + lsb;
  return static_cast<std::uint16_t>(sign | ((ax - 0x38000000u) >> 13));
}

[[nodiscard]] inline std::uint16_t float_to_bf16_rne(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t lsb = (x >> 16) & 1u;
  x += 0x7FFFu + lsb;
  return static_cast<std::uint16_t>(x >> 16);
}

[[nodiscard]] inline float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  std::uint32_t bits;
  if (e == 0x1F) {
    bits = sign | 0x7F800000u | (m << 13);
  } else if (e == 0) {
    const float v = static_cast<float>(m) * 0x1.0p-24f;
    return sign != 0 ? -v : v;
  } else {
    bits = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

[[nodiscard]] inline float bf16_bits_to_float(std::uint16_t b) noexcept {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// A value of [lo, hi) after rounding to the storage type: rounding can land on hi or on zero, so
// the value is pulled back inside the range and away from zero.
template <class Round>
[[nodiscard]] double nonzero_in_range(double v, double lo, double hi, Round round) {
  double r = round(v);
  if (r >= hi) r = round(lo + (hi - lo) * 0.5);
  if (r == 0) r = round(lo + (hi - lo) * 0.5);
  if (r == 0) r = round(lo + (hi - lo) * 0.75);
  return r;
}

// Fills n elements of type t at p with uniform values of [lo, hi) (integers: lo..hi-1).
inline void fill_uniform_host(void* p, DType t, std::size_t n, double lo, double hi,
                              std::uint64_t seed) {
  if (!(lo < hi)) {
    throw std::invalid_argument("fill_uniform: empty range [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + ")");
  }
  const auto real = [&](std::uint64_t i) {
    return lo + (hi - lo) * unit_double(element_hash(seed, i));
  };
  const auto as_float = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  switch (t) {
    case DType::f64: {
      auto* d = static_cast<double*>(p);
      for (std::size_t i = 0; i < n; ++i)
        d[i] = nonzero_in_range(real(i), lo, hi, [](double v) { return v; });
      return;
    }
    case DType::f32: {
      auto* d = static_cast<float*>(p);
      for (std::size_t i = 0; i < n; ++i)
        d[i] = static_cast<float>(nonzero_in_range(real(i), lo, hi, as_float));
      return;
    }
    case DType::c64: {
      auto* d = static_cast<float*>(p);
      for (std::size_t i = 0; i < 2 * n; ++i)
        d[i] = static_cast<float>(nonzero_in_range(real(i), lo, hi, as_float));
      return;
    }
    case DType::f16: {
      auto* d = static_cast<std::uint16_t*>(p);
      const auto round = [](double v) {
        return static_cast<double>(half_bits_to_float(float_to_half_rne(static_cast<float>(v))));
      };
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = float_to_half_rne(static_cast<float>(nonzero_in_range(real(i), lo, hi, round)));
      }
      return;
    }
    case DType::bf16: {
      auto* d = static_cast<std::uint16_t*>(p);
      const auto round = [](double v) {
        return static_cast<double>(bf16_bits_to_float(float_to_bf16_rne(static_cast<float>(v))));
      };
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = float_to_bf16_rne(static_cast<float>(nonzero_in_range(real(i), lo, hi, round)));
      }
      return;
    }
    case DType::i32:
    case DType::i64: {
      const double tmin = t == DType::i32
                              ? static_cast<double>(std::numeric_limits<std::int32_t>::min())
                              : -0x1.0p63;
      const double tmax = t == DType::i32
                              ? static_cast<double>(std::numeric_limits<std::int32_t>::max()) + 1.0
                              : 0x1.0p63;
      const double clo = std::ceil(lo), chi = std::ceil(hi);
      if (clo < tmin || chi > tmax || !(clo < chi)) {
        throw std::invalid_argument("fill_uniform: integer range [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + ") does not fit " +
                                    std::string(to_string(t)));
      }
      const auto ilo = static_cast<std::int64_t>(clo);
      const auto range = static_cast<std::uint64_t>(static_cast<std::int64_t>(chi - 1) - ilo) + 1;
      for (std::size_t i = 0; i < n; ++i) {
        auto v = static_cast<std::int64_t>(static_cast<std::uint64_t>(ilo) +
                                           element_hash(seed, i) % range);
        if (v == 0 && range > 1) v = (1 < static_cast<std::int64_t>(chi)) ? 1 : ilo;
        if (t == DType::i32) {
          static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v);
        } else {
          static_cast<std::int64_t*>(p)[i] = v;
        }
      }
      return;
    }
  }
  throw std::invalid_argument("fill_uniform: unknown dtype");
}

}  // namespace caliber::backends::cpu
