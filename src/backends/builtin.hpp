// The built-in backend objects, one per vendor folder. The registry orders them; nothing else
// should reach for them by name.
#pragma once

#include "backends/backend.hpp"

namespace caliber::backends {

[[nodiscard]] const Backend& cuda_backend();    // src/backends/cuda/ (or cuda/stub/ without CUDA)
[[nodiscard]] const Backend& rocm_backend();    // src/backends/rocm/
[[nodiscard]] const Backend& musa_backend();    // src/backends/musa/
[[nodiscard]] const Backend& ascend_backend();  // src/backends/ascend/
[[nodiscard]] const Backend& cpu_backend();     // src/backends/cpu/

}  // namespace caliber::backends
