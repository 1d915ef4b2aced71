// Node ids (--node / TEST_NODE) against the cpu corpus: a case, or SelectionError naming it.
#include <cstdint>
#include <string>

#include "run/cases.hpp"
#include "settings/knobs.hpp"
#include "settings/shapes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  caliber::core::Knobs k;
  k.backend = "cpu";
  k.node = std::string(reinterpret_cast<const char*>(data), size);
  try {
    (void)caliber::run::select_cases(k, "cpu", true);
  } catch (const caliber::run::SelectionError&) {
  } catch (const caliber::core::ShapeError&) {
  }
  return 0;
}
