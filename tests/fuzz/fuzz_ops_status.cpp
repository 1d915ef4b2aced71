// ops_status.csv: parsing either gives rows (which write back and parse again to the same ops)
// or throws std::runtime_error.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "batch/batch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rows = caliber::run::parse_ops_status_csv(text);
    const auto again = caliber::run::parse_ops_status_csv(caliber::run::ops_status_csv(rows));
    if (again.size() != rows.size()) std::abort();
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (again[i].op != rows[i].op || again[i].status != rows[i].status) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
