// Shared by the op tests (host ops in tests/unit, the cuda corpus in tests/gpu): a case of an op
// built the way the runner builds it, and a shape printer for messages.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "caliber/caliber.hpp"

namespace caliber::test_support {

// A case of `op` in dtype `t` at `shape` (canonicalized as the corpus does), with `params`.
inline Case case_of(const Op& op, DType t, const std::vector<std::int64_t>& shape,
                    std::map<std::string, std::string> params = {}) {
  Case c;
  c.op = op.info().name;
  c.dtype = t;
  c.shape = op.canonical_shape(shape);
  c.dim_names = op.info().dim_names;
  c.params = std::move(params);
  return c;
}

// "33x1" for messages.
inline std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

}  // namespace caliber::test_support
