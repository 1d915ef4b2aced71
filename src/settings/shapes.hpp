// Shapes from YAML, by level. FlagGems' core_shapes.yaml pattern: keyed by op, falling back to
// the op's family default; comprehensive = core plus the additions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "settings/settings.hpp"
#include "settings/usage_error.hpp"

namespace caliber::core {

// The file name of the archived shapes inside a run directory.
inline constexpr const char* shapes_file = "shapes.yaml";

// Level, parse_level and its to_string: settings/settings.hpp.

using Shape = std::vector<std::int64_t>;

// Ceilings of a shape file (docs/limits.md): past one, loading fails with a ShapeError naming it.
inline constexpr std::size_t kMaxShapeFileBytes = 16u << 20;  // one file, 16 MiB
inline constexpr std::size_t kMaxDims = 16;                   // dimensions of one shape
inline constexpr std::size_t kMaxShapesPerList = 100000;      // shapes of one op or family list
// Shapes of one file and all it includes, each list counted every time it is used (a YAML alias
// `*L` of a 100000-shape list repeated 2000 times took 284 s and 11 GB to expand).
inline constexpr std::size_t kMaxShapesPerFile = 1000000;
inline constexpr std::size_t kMaxIncludeDepth = 32;   // nested includes
inline constexpr std::size_t kMaxIncludeFiles = 256;  // distinct included files

// An unreadable or malformed shape file: bad input (exit 2).
class ShapeError : public UsageError {
 public:
  using UsageError::UsageError;
};

// A shape file:
//   families: {pointwise: [[1073741824], [64, 64]], blas: [[2, 384, 384, 384]]}
//   ops: {mm: [[...]], softmax: {family: norm}}       # an op's own list, or its family
//   comprehensive:                                     # additions at the comprehensive level
//     families: {...}
//     ops: {...}
//     include: [models/llama3_8b.yaml]                 # files of further additions (same layout
//                                                      # as `comprehensive`), relative to this file
class ShapeSet {
 public:
  // Throws ShapeError with the file name and what is wrong (unreadable, malformed YAML, bad entry).
  [[nodiscard]] static ShapeSet load(const std::filesystem::path& file);
  [[nodiscard]] static ShapeSet parse(const std::string& yaml_text,
                                      const std::filesystem::path& base_dir);
  // As above, naming `source_name` in errors (parse() alone names "<text>").
  [[nodiscard]] static ShapeSet parse(const std::string& yaml_text,
                                      const std::filesystem::path& base_dir,
                                      const std::string& source_name);

  // The `level:` written in the file (an archived shapes.yaml carries one), if any.
  [[nodiscard]] std::optional<Level> declared_level() const { return declared_level_; }

  // The shapes of `op` (of `family`) at `level`: the op's own list or its family's, then at
  // comprehensive the additions, in order, without duplicates.
  [[nodiscard]] std::vector<Shape> shapes_for(const std::string& op, const std::string& family,
                                              Level level) const;
  // Whether the file has a list of the op's own name (at core or among the additions).
  [[nodiscard]] bool names_op(const std::string& op) const {
    return core_.ops.count(op) > 0 || extra_.ops.count(op) > 0;
  }

  // YAML of exactly the shapes used, with the level written in it (the archived shapes.yaml).
  [[nodiscard]] static std::string archive_yaml(
      Level level, const std::string& source,
      const std::map<std::string, std::vector<Shape>>& used);

 private:
  struct Table {
    std::map<std::string, std::vector<Shape>> families;
    std::map<std::string, std::vector<Shape>> ops;
    std::map<std::string, std::string> op_family;  // ops: {softmax: {family: norm}}
  };
  Table core_;
  Table extra_;
  std::optional<Level> declared_level_;
  friend class ShapeLoader;  // the YAML reader in shapes.cpp fills the tables
};

}  // namespace caliber::core
