// ops_status.csv: parsing either gives rows (which write back and parse again to the same ops)
// or throws std::runtime_error. The run column (where an op's rows are) survives the round trip.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "records/ops_status.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rows = caliber::core::parse_ops_status_csv(text);
    const auto again = caliber::core::parse_ops_status_csv(caliber::core::ops_status_csv(rows));
    if (again.size() != rows.size()) std::abort();
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (again[i].op != rows[i].op || again[i].status != rows[i].status ||
          again[i].run != rows[i].run)
        std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
