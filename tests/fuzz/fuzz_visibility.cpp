// The visibility variables of every vendor (CUDA_VISIBLE_DEVICES, ROCR/HIP_VISIBLE_DEVICES,
// MUSA_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES) and the index mapping behind --devices.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backends/visibility.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int physical = static_cast<int>(data[0] % 10) - 1;  // -1: unknown
  const int index = static_cast<int>(data[1] % 10);
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto half = text.size() / 2;
  namespace b = caliber::backends;
  for (const auto& vis :
       {b::parse_cuda_visible(text, physical), b::parse_musa_visible(text, physical),
        b::parse_ascend_visible(text, physical),
        b::parse_rocm_visible(text.substr(0, half), text.substr(half), physical)}) {
    try {
      (void)b::physical_id_for(vis, index, static_cast<int>(vis.ids.size()));
    } catch (const std::out_of_range&) {
    }
  }
  return 0;
}
