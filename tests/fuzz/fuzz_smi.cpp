// The vendor tools' output parsers (amd-smi, rocm-smi, mthreads-gmi JSON; npu-smi text): any
// output gives a device list (possibly empty) or std::invalid_argument, never a crash. The first
// byte picks the parser.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "backends/ascend/ascend_tools.hpp"
#include "backends/musa/musa_tools.hpp"
#include "backends/rocm/rocm_tools.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace b = caliber::backends;
  // std::invalid_argument is the parsers' documented answer to output that is not theirs (the
  // backends catch it); any other exception, crash or sanitizer report is a finding.
  try {
    switch (data[0] % 5) {
      case 0:
        (void)b::rocm::parse_amd_smi_list(text);
        break;
      case 1:
        (void)b::rocm::parse_rocm_smi_productname(text);
        break;
      case 2: {
        auto devs = b::rocm::parse_amd_smi_list(text);
        b::rocm::merge_product_names(devs, b::rocm::parse_rocm_smi_productname(text));
        break;
      }
      case 3:
        (void)b::musa::parse_mthreads_gmi(text);
        break;
      default:
        (void)b::ascend::parse_npu_smi_info(text);
        break;
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
