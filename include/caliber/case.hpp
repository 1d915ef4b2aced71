// caliber public API: a case is op x dtype x shape (x extra parameters).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "caliber/dtype.hpp"

namespace caliber {

struct Case {
  std::string op;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  // Names of the shape's dimensions ("M","N","K"); empty means an anonymous tensor shape.
  std::vector<std::string> dim_names;
  // Extra parameters that change the work (e.g. {"B","col"} for a column-major B operand).
  std::map<std::string, std::string> params;

  // The size detail: "M4096-N4096-K4096-Bcol" with dim names, "4096x4096" without.
  [[nodiscard]] std::string size_detail() const;
  // The stable node id: "mm[bf16-M4096-N4096-K4096-Bcol]".
  [[nodiscard]] std::string node_id() const;
  // Product of the shape's dimensions (1 for an empty shape); throws SizeOverflow (a CaseSkipped,
  // caliber/size.hpp) when it is past 2^56.
  [[nodiscard]] std::int64_t numel() const;
  [[nodiscard]] std::string param(const std::string& key, const std::string& fallback = "") const;
};

}  // namespace caliber
