// caliber public API: element types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace caliber {

enum class DType : std::uint8_t { f32, f16, bf16, f64, i32, i64, c64 };

[[nodiscard]] std::string_view to_string(DType t) noexcept;
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view s) noexcept;
[[nodiscard]] std::size_t size_of(DType t) noexcept;
[[nodiscard]] bool is_floating(DType t) noexcept;
[[nodiscard]] std::vector<DType> all_dtypes();

}  // namespace caliber
