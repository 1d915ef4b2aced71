// Host pieces of cumsum's single-pass look-back scan (ops/reduce/scan_lookback.hpp): status
// words, tickets to (tile, launch tag), column arithmetic for short and long rows, row-start
// bits, and a sequential model of the segmented tile scan built from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "reduce/scan_lookback.hpp"

namespace {

namespace scan = caliber::ops::scan;

TEST(ScanLookback, StatusWordsRoundTripAndTellLaunchesApart) {
  // Zeroed memory is invalid under every tag.
  for (std::uint64_t tag : std::vector<std::uint64_t>{0, 1, 5, scan::kTagMask}) {
    EXPECT_EQ(scan::status_flag(0, tag), scan::kFlagInvalid);
  }
  for (double v : {0.0, -0.0, 1.0, -3.25, 12345.678, -1e-30, 6.0e8, 1.0 / 3.0}) {
    for (std::uint64_t flag : {scan::kFlagAggregate, scan::kFlagPrefix}) {
      for (std::uint64_t tag :
           std::vector<std::uint64_t>{0, 1, 77, scan::kTagMask, scan::kTagMask + 1}) {
        const auto w = scan::pack_status(v, tag, flag);
        EXPECT_EQ(scan::status_flag(w, tag), flag);
        EXPECT_EQ(scan::status_flag(w, tag + 1), scan::kFlagInvalid);  // the next launch
        const double back = scan::status_value(w);
        EXPECT_LE(std::fabs(back - v), std::fabs(v) * 0x1p-36) << v;
        // A float value survives exactly (its mantissa ends 29 bits above the dropped ones).
        const float f = static_cast<float>(v);
        EXPECT_EQ(scan::status_value(scan::pack_status(f, tag, flag)), static_cast<double>(f));
      }
    }
  }
  // Tags wrap at 2^14: launch k and k + 1 always differ.
  EXPECT_EQ(scan::status_flag(scan::pack_status(1.0, scan::kTagMask, scan::kFlagPrefix), 0),
            scan::kFlagInvalid);
}

TEST(ScanLookback, TicketsGiveEveryTileOncePerLaunchInOrder) {
  for (std::int64_t tiles : {1, 2, 7, 4096, 262144}) {
    for (std::uint64_t launch : std::vector<std::uint64_t>{0, 1, 2, 16383, 16384, 1000001}) {
      const std::uint64_t first = launch * static_cast<std::uint64_t>(tiles);
      for (std::int64_t t : {std::int64_t{0}, tiles / 2, tiles - 1}) {
        const auto tt = scan::tile_of_ticket(first + static_cast<std::uint64_t>(t), tiles);
        EXPECT_EQ(tt.tile, t);
        EXPECT_EQ(tt.tag, launch & scan::kTagMask);
      }
      if (launch > 0) {
        EXPECT_NE(scan::tile_of_ticket(first, tiles).tag,
                  scan::tile_of_ticket(first - 1, tiles).tag);
      }
    }
  }
}

TEST(ScanLookback, ShortRowMagicDividesEveryNumeratorBelow2To16) {
  // Every divisor a short row can have is < kMaxTile; check all multiples' edges, and every
  // numerator for a spread of divisors.
  for (std::int64_t d = 1; d < scan::kMaxTile; ++d) {
    const std::uint64_t m = scan::column_magic(d, scan::kMaxTile);
    ASSERT_NE(m, 0u);
    for (std::int64_t q = 0; q * d < (1 << 16); ++q) {
      for (std::int64_t x : {q * d - 1, q * d, q * d + 1}) {
        if (x < 0 || x >= (1 << 16)) continue;
        ASSERT_EQ(scan::column_at(0, x, d, m), x % d) << "x=" << x << " cols=" << d;
      }
    }
  }
  for (std::int64_t d : {1, 2, 3, 5, 7, 100, 511, 1000, 4095, 4097, 8191, 16383, 32767}) {
    const std::uint64_t m = scan::column_magic(d, scan::kMaxTile);
    for (std::int64_t x = 0; x < (1 << 16); ++x) {
      ASSERT_EQ(scan::column_at(0, x, d, m), x % d) << "x=" << x << " cols=" << d;
    }
  }
}

TEST(ScanLookback, ColumnsOfLongRowsAndPlans) {
  const auto p = scan::plan_lookback(std::int64_t{1} << 30, std::int64_t{1} << 30, 256, 16);
  EXPECT_EQ(p.tile, 4096);
  EXPECT_EQ(p.tiles, 262144);
  EXPECT_EQ(p.magic, 0u);  // long rows: one subtraction
  EXPECT_EQ(scan::plan_lookback(4097, 4097, 256, 16).tiles, 2);
  EXPECT_NE(scan::plan_lookback(512 * 64, 512, 256, 16).magic, 0u);
  // Long rows: tile start at col0, offsets up to the tile, at most one wrap.
  const std::int64_t cols = 5000, tile = 4096;
  for (std::int64_t start = 0; start < 3 * cols; start += tile) {
    const std::int64_t col0 = start % cols;
    for (std::int64_t off = 0; off < tile; ++off) {
      ASSERT_EQ(scan::column_at(col0, off, cols, 0), (start + off) % cols);
    }
  }
}

TEST(ScanLookback, HeadBitsMarkRowStarts) {
  for (std::int64_t cols : {1, 2, 3, 4, 5, 7, 8, 9, 16, 1000}) {
    for (std::int64_t c = 0; c < cols; ++c) {
      unsigned want4 = 0, want8 = 0;
      for (int i = 0; i < 8; ++i) {
        if ((c + i) % cols == 0) {
          if (i < 4) want4 |= 1u << i;
          want8 |= 1u << i;
        }
      }
      EXPECT_EQ(scan::head_bits<4>(c, cols), want4) << "c=" << c << " cols=" << cols;
      EXPECT_EQ(scan::head_bits<8>(c, cols), want8) << "c=" << c << " cols=" << cols;
    }
  }
  EXPECT_EQ(scan::valid_bits(0, 8), 0u);
  EXPECT_EQ(scan::valid_bits(3, 8), 7u);
  EXPECT_EQ(scan::valid_bits(8, 8), 255u);
  EXPECT_EQ(scan::valid_bits(100, 4), 15u);
}

TEST(ScanLookback, LastSetAtOrBelow) {
  EXPECT_EQ(scan::last_set_at_or_below(0, 31), -1);
  EXPECT_EQ(scan::last_set_at_or_below(1u, 0), 0);
  EXPECT_EQ(scan::last_set_at_or_below(0x80000000u, 30), -1);
  EXPECT_EQ(scan::last_set_at_or_below(0x80000000u, 31), 31);
  EXPECT_EQ(scan::last_set_at_or_below(0x00010010u, 15), 4);
  EXPECT_EQ(scan::last_set_at_or_below(0x00010010u, 16), 16);
  EXPECT_EQ(scan::last_set_at_or_below(0x00010010u, 3), -1);
}

// A sequential model of the kernel's tile level: each tile first publishes its segmented
// aggregate (already the prefix when it holds a row start), then looks back over windows of 32
// predecessors to the closest prefix, then publishes its prefix. A predecessor is seen at
// random in either of its two states (the race the kernel has); the result must be the per-row
// inclusive scan, and stale words of an earlier launch must never be read as valid.
TEST(ScanLookback, SegmentedTileModelMatchesRowScan) {
  std::mt19937_64 rng(7);
  for (std::int64_t cols : {1, 3, 7, 64, 100, 1000, 4096, 5000, 70000}) {
    const std::int64_t rows = std::max<std::int64_t>(1, 200000 / cols);
    const std::int64_t n = rows * cols;
    const std::int64_t tile = 128;  // small tiles: long look-back chains
    std::vector<double> x(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> u(-8, 8);
    for (auto& v : x) v = u(rng);  // integers: every sum is exact
    const auto plan = scan::plan_lookback(n, cols, 1, static_cast<int>(tile));
    const std::uint64_t tag = 4;
    // The previous launch's words (tag 3) are still there.
    std::vector<std::uint64_t> early(static_cast<std::size_t>(plan.tiles),
                                     scan::pack_status(99.0, tag - 1, scan::kFlagPrefix));
    std::vector<std::uint64_t> final_word = early;
    std::vector<double> y(x.size(), NAN);
    for (std::int64_t t = 0; t < plan.tiles; ++t) {
      const std::int64_t begin = t * tile;
      const std::int64_t col0 = begin % cols;
      for (std::int64_t p = t; p < plan.tiles; ++p) {  // not yet published: stale
        EXPECT_EQ(scan::status_flag(early[static_cast<std::size_t>(p)], tag), scan::kFlagInvalid);
      }
      double run = 0;
      bool reset = false;
      std::vector<double> local;
      std::vector<bool> reached;
      for (std::int64_t off = 0; off < tile && begin + off < n; ++off) {
        const auto c = scan::column_at(col0, off, cols, plan.magic);
        ASSERT_EQ(c, (begin + off) % cols);
        if (scan::head_bits<1>(c, cols) != 0u) {
          run = 0;
          reset = true;
        }
        run += x[static_cast<std::size_t>(begin + off)];
        local.push_back(run);
        reached.push_back(reset);
      }
      const auto ti = static_cast<std::size_t>(t);
      early[ti] = scan::pack_status(run, tag, reset ? scan::kFlagPrefix : scan::kFlagAggregate);
      final_word[ti] = early[ti];
      double excl = 0;
      if (col0 != 0) {
        bool found = false;
        for (std::int64_t pred = t - 1; !found; pred -= 32) {
          for (int lane = 0; lane < 32 && !found; ++lane) {
            const std::int64_t p = pred - lane;
            if (p < 0) {
              found = true;  // the kernel's out-of-range lanes read as prefix 0
              break;
            }
            const auto pi = static_cast<std::size_t>(p);
            const auto w = (rng() & 1) != 0 ? early[pi] : final_word[pi];
            const auto flag = scan::status_flag(w, tag);
            ASSERT_NE(flag, scan::kFlagInvalid);  // every lower tile has published something
            excl += scan::status_value(w);
            found = flag == scan::kFlagPrefix;
          }
        }
      }
      if (!reset) final_word[ti] = scan::pack_status(excl + run, tag, scan::kFlagPrefix);
      for (std::size_t k = 0; k < local.size(); ++k) {
        y[static_cast<std::size_t>(begin) + k] = reached[k] ? local[k] : excl + local[k];
      }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        s += x[static_cast<std::size_t>(r * cols + c)];
        ASSERT_EQ(y[static_cast<std::size_t>(r * cols + c)], s) << "row " << r << " col " << c;
      }
    }
  }
}

}  // namespace
