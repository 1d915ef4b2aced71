// Index and status arithmetic of cumsum's single-pass scan with decoupled look-back
// (reduce.cu, cumsum_lookback_kernel), usable on the host and the device so that it is
// unit-tested without a GPU (tests/unit/ops/test_scan_lookback.cpp).
//
// The scan runs over the flattened rows x cols tensor in tiles of block * items elements; a row
// start (flat index % cols == 0) resets the running sum, so one kernel serves many short rows
// (several rows per tile) and few long ones (many tiles per row, the look-back stops at the tile
// that holds the row's start).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define CALIBER_SCAN_HD __host__ __device__ __forceinline__
#else
#define CALIBER_SCAN_HD inline
#endif

namespace caliber::ops::scan {

// ---------------------------------------------------------------------------------------------
// Tile status: one 64-bit word per tile, written and read whole (single-copy atomic), so a
// reader needs nothing else from the writer and relaxed atomics suffice. The word is a double
// (the tile's value; fp64 so that the chain of 2^18 tile prefixes of a 2^30 row adds no error a
// float chain would) whose low 16 mantissa bits are replaced by a 14-bit launch tag and a 2-bit
// flag. Dropping those bits costs 2^-36 relative, far below fp32's 2^-24.
//
// flag: invalid (nothing published, or published by an earlier launch: another tag), aggregate
// (the tile's own sum; the tile holds no row start), prefix (the inclusive prefix of the row
// through the tile's end; for a tile holding a row start, the sum from its last row start).
// All-zero bytes are invalid under every tag.

constexpr std::uint64_t kFlagInvalid = 0;
constexpr std::uint64_t kFlagAggregate = 1;
constexpr std::uint64_t kFlagPrefix = 2;
constexpr int kTagBits = 14;
constexpr std::uint64_t kTagMask = (std::uint64_t{1} << kTagBits) - 1;
constexpr std::uint64_t kLowBits = 0xFFFF;  // tag << 2 | flag

CALIBER_SCAN_HD std::uint64_t bits_of(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(v));
#else
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}

CALIBER_SCAN_HD double double_of(std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double v = 0;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

CALIBER_SCAN_HD std::uint64_t pack_status(double value, std::uint64_t tag, std::uint64_t flag) {
  return (bits_of(value) & ~kLowBits) | ((tag & kTagMask) << 2) | (flag & 3);
}

// The word's flag as seen by a launch with tag `tag`: invalid when another launch wrote it.
CALIBER_SCAN_HD std::uint64_t status_flag(std::uint64_t word, std::uint64_t tag) {
  return ((word >> 2) & kTagMask) == (tag & kTagMask) ? (word & 3) : kFlagInvalid;
}

CALIBER_SCAN_HD double status_value(std::uint64_t word) {
  return double_of(word & ~kLowBits);
}

// ---------------------------------------------------------------------------------------------
// Tile ids. Every block takes one ticket from a 64-bit counter (atomicAdd) that only prepare()
// zeroes, together with the status words. A launch has exactly `tiles` blocks and launches on
// one stream do not overlap, so launch k (since prepare) takes exactly tickets [k*tiles,
// (k+1)*tiles): the ticket gives the tile (in the order blocks started, so every tile waits
// only on tiles that are already running) and the launch's tag, which tells this launch's
// status words from the previous launch's without clearing them in between (no memset node in
// the timed graph). Consecutive launches' tags differ (mod 2^14).

struct TileTicket {
  std::int64_t tile = 0;
  std::uint64_t tag = 0;
};

CALIBER_SCAN_HD TileTicket tile_of_ticket(std::uint64_t ticket, std::int64_t tiles) {
  const std::uint64_t t = static_cast<std::uint64_t>(tiles);
  const std::uint64_t launch = ticket / t;
  TileTicket r;
  r.tile = static_cast<std::int64_t>(ticket - launch * t);
  r.tag = launch & kTagMask;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Columns. A tile's first element is at column col0 < cols (one 64-bit remainder per block);
// an element at offset off < tile inside the tile is then at col0 + off, reduced once when the
// rows are at least a tile long, or by a multiply-shift division when they are shorter.

constexpr std::int64_t kMaxTile = std::int64_t{1} << 15;  // so col0 + off < 2^16 for short rows

// Magic for short rows (cols < tile <= kMaxTile), 0 for long rows (cols >= tile): m =
// ceil(2^32 / cols) gives floor(x * m / 2^32) == floor(x / cols) for every x < 2^16 (Lemire,
// Kaser and Kurz 2019, "Faster remainder by direct computation", Theorem 1: 32 >= 16 +
// log2(cols)).
CALIBER_SCAN_HD std::uint64_t column_magic(std::int64_t cols, std::int64_t tile) {
  if (cols >= tile) return 0;
  const std::uint64_t d = static_cast<std::uint64_t>(cols);
  return ((std::uint64_t{1} << 32) + d - 1) / d;
}

// Column of the element at offset `off` of a tile whose first element is at column col0.
CALIBER_SCAN_HD std::int64_t column_at(std::int64_t col0, std::int64_t off, std::int64_t cols,
                                       std::uint64_t magic) {
  const std::int64_t x = col0 + off;
  if (magic != 0) {
    const std::uint64_t q = (static_cast<std::uint64_t>(x) * magic) >> 32;
    return x - static_cast<std::int64_t>(q) * cols;
  }
  return x >= cols ? x - cols : x;
}

// Bit i set when element i of V consecutive elements, the first at column c (< cols), starts a
// row.
template <int V>
CALIBER_SCAN_HD unsigned head_bits(std::int64_t c, std::int64_t cols) {
  if (cols >= V) {  // at most one row start among V consecutive elements
    const std::int64_t h = c == 0 ? 0 : cols - c;
    return h < V ? 1u << h : 0u;
  }
  unsigned bits = 0;
  std::int64_t cc = c;
  for (int i = 0; i < V; ++i) {
    if (cc == cols) cc = 0;
    if (cc == 0) bits |= 1u << i;
    ++cc;
  }
  return bits;
}

// Bits of the first `valid` of V elements (the rest lie past the tensor's end).
CALIBER_SCAN_HD unsigned valid_bits(std::int64_t valid, int v) {
  if (valid <= 0) return 0u;
  return (1u << (valid < v ? valid : v)) - 1u;  // v <= 16
}

// Highest set bit of `bits` at or below `lane` (0..31), -1 when none: the lane where the
// segment containing `lane` starts in a segmented warp scan.
CALIBER_SCAN_HD int last_set_at_or_below(std::uint32_t bits, int lane) {
  const std::uint32_t m = bits & ((2u << lane) - 1u);  // 2u << 31 wraps to 0: all 32 lanes
  if (m == 0) return -1;
#if defined(__CUDA_ARCH__)
  return 31 - __clz(m);
#else
  return 31 - __builtin_clz(m);
#endif
}

// ---------------------------------------------------------------------------------------------
// Host planning.

struct LookbackPlan {
  std::int64_t tile = 0;   // elements per tile (block * items)
  std::int64_t tiles = 0;  // blocks of every launch
  std::uint64_t magic = 0;
};

inline LookbackPlan plan_lookback(std::int64_t n, std::int64_t cols, int block, int items) {
  LookbackPlan p;
  p.tile = static_cast<std::int64_t>(block) * items;
  p.tiles = n > 0 ? (n + p.tile - 1) / p.tile : 1;
  p.magic = column_magic(cols, p.tile);
  return p;
}

}  // namespace caliber::ops::scan
