// The shapes YAML loader: any text either loads or throws ShapeError, and a loaded set answers.
#include <cstdint>
#include <string>

#include "fuzz_util.hpp"
#include "settings/shapes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Includes resolve against an empty scratch directory: the loader reads nothing else.
  try {
    const auto set = caliber::core::ShapeSet::parse(text, caliber::fuzz::scratch_dir(), "fuzz");
    for (const char* op : {"mm", "add", "sum", "softmax"})
      for (auto level : {caliber::core::Level::core, caliber::core::Level::comprehensive})
        (void)set.shapes_for(op, "pointwise", level);
  } catch (const caliber::core::ShapeError&) {
  }
  return 0;
}
