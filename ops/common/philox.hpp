// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), usable on
// the host and the device, so that the device generator is unit-tested against the published
// known-answer vectors without a GPU, and the host can recompute what the device drew.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CALIBER_HD __host__ __device__ __forceinline__
#else
#define CALIBER_HD inline
#endif
#if defined(__CUDA_ARCH__)  // the device pass: the host compiler does not know the pragma
#define CALIBER_UNROLL _Pragma("unroll")
#else
#define CALIBER_UNROLL
#endif

namespace caliber::ops::philox {

struct U32x4 {
  std::uint32_t v[4];
};

// The high half of a 32x32-bit product (on the device one instruction, no 64-bit arithmetic).
CALIBER_HD std::uint32_t mulhi(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
#endif
}

// Ten rounds on a 128-bit counter with a 64-bit key; round r uses the key plus r Weyl steps.
// Written the way cuRAND writes it, unrolled with 32-bit product halves: the earlier loop with a
// running key and 64-bit products stayed a loop in the device code, with 64-bit masks and XORs.
CALIBER_HD U32x4 philox4x32_10(U32x4 c, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  CALIBER_UNROLL
  for (std::uint32_t r = 0; r < 10; ++r) {
    const std::uint32_t hi0 = mulhi(kM0, c.v[0]), lo0 = kM0 * c.v[0];
    const std::uint32_t hi1 = mulhi(kM1, c.v[2]), lo1 = kM1 * c.v[2];
    c = U32x4{{hi1 ^ c.v[1] ^ (k0 + r * kW0), lo1, hi0 ^ c.v[3] ^ (k1 + r * kW1), lo0}};
  }
  return c;
}

// caliber's stream layout: group g of four outputs uses counter (offset + g) as a 64-bit value in
// the low words and the seed as the key. A launch reserves ceil(n / 4) counters.
CALIBER_HD U32x4 draw(std::uint64_t seed, std::uint64_t offset, std::uint64_t group) {
  const std::uint64_t ctr = offset + group;
  return philox4x32_10(
      U32x4{{static_cast<std::uint32_t>(ctr), static_cast<std::uint32_t>(ctr >> 32), 0u, 0u}},
      static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// 24 random bits to a float in [0, 1): exact in fp32, never 1.
CALIBER_HD float to_unit(std::uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1p-24f;
}
// The same in (0, 1]: safe under log().
CALIBER_HD float to_unit_open0(std::uint32_t x) {
  return static_cast<float>((x >> 8) + 1u) * 0x1p-24f;
}

[[nodiscard]] inline std::uint64_t counters_for(std::uint64_t n) {
  return (n + 3) / 4;
}

}  // namespace caliber::ops::philox
