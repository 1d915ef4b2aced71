// run_identity.json: read_identity either returns a JSON object or throws std::runtime_error.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "fuzz_util.hpp"
#include "records/identity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = caliber::fuzz::scratch_dir();
  caliber::fuzz::write_file(dir / caliber::core::identity_file, data, size);
  try {
    const auto j = caliber::core::read_identity(dir);
    if (!j.is_object()) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
