// Node ids (--node / TEST_NODE) against the cpu corpus: a case, or SelectionError naming it.
#include <cstdint>
#include <string>

#include "core/knobs.hpp"
#include "core/shapes.hpp"
#include "run/cases.hpp"

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
