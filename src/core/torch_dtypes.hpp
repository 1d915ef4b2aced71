// caliber's dtype names and torch's (the torch module's attribute: f16 -> "float16"): one table
// for the C++ side (export --format flaggems-log writes "torch.<name>", as FlagGems' records do)
// and the Python package (caliber_c_settings' "torch_dtypes", read by caliber/_dtypes.py). Beside
// the corpus's dtypes (include/caliber/dtype.hpp) it names those FlagGems' benchmarks also use,
// so that their rows carry caliber's short names too.
#pragma once

#include <string_view>

namespace caliber::core {

struct TorchDtypeName {
  std::string_view ours, torch;
};

inline constexpr TorchDtypeName kTorchDtypes[] = {
    {"f16", "float16"},   {"bf16", "bfloat16"}, {"f32", "float32"}, {"f64", "float64"},
    {"c64", "complex64"}, {"i32", "int32"},     {"i64", "int64"},   {"i16", "int16"},
    {"i8", "int8"},       {"bool", "bool"},     {"u8", "uint8"}};

}  // namespace caliber::core
