// caliber public API: overflow-checked element and byte counts.
//
// Every count an op derives from a shape (elements, bytes, workspace) goes through these helpers,
// host and device ops alike: a shape whose sizes do not fit is skipped with its real size named,
// never wrapped to a small number that passes the memory guard (docs/limits.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "caliber/context.hpp"
#include "caliber/dtype.hpp"

namespace caliber {

// The largest element (or byte) count a case may have: 2^56. No device holds that much, and any
// count at most this times a small factor (dtype size, buffer count) still fits 64 bits.
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 56;

// A count past kMaxCount (or negative): the case is skipped (it is a CaseSkipped).
class SizeOverflow : public CaseSkipped {
 public:
  using CaseSkipped::CaseSkipped;
};

// a * b, a + b of counts in [0, kMaxCount]; throws SizeOverflow past it.
[[nodiscard]] std::int64_t count_mul(std::int64_t a, std::int64_t b);
[[nodiscard]] std::int64_t count_add(std::int64_t a, std::int64_t b);
// The product of dims (1 for none); throws SizeOverflow past kMaxCount.
[[nodiscard]] std::int64_t count_of(const std::vector<std::int64_t>& dims);
// count elements of dtype t in bytes, as a size_t; throws SizeOverflow past kMaxCount bytes.
[[nodiscard]] std::size_t bytes_of(std::int64_t count, DType t);
// The exact product of dims in words ("1.84e+19"), for messages about sizes that do not fit.
[[nodiscard]] std::string real_count(const std::vector<std::int64_t>& dims);

}  // namespace caliber
