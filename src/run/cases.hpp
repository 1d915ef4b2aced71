// From knobs to the list of cases: which ops (OP, OP_FILE, TEST_NODE, --ops-lib), which dtypes,
// which shapes (level, shape file). Shared by run, list and batch. No device needed.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "caliber/caliber.hpp"
#include "core/knobs.hpp"
#include "core/shapes.hpp"

namespace caliber::run {

// Bad input found while selecting cases: the CLI exits 2 with this message, nothing written.
class SelectionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct OpEntry {
  std::unique_ptr<Op> op;
  OpInfo info;
};

struct Selection {
  std::vector<OpEntry> ops;        // the selected ops, in corpus order
  std::vector<Case> cases;         // every case, op by op
  std::vector<const Op*> case_op;  // the op of each case
  std::filesystem::path shapes_file;
  core::Level level = core::Level::core;
  std::map<std::string, std::vector<core::Shape>> used_shapes;  // per op, for shapes.yaml
};

// Loads --ops-lib (once per process). Throws SelectionError when it cannot be loaded.
void load_ops_library(const std::string& path);
// Every op registered for `backend`, in registration order.
[[nodiscard]] std::vector<OpEntry> corpus(const std::string& backend);
// The shape file used when --shapes is not given: shapes/core.yaml, or shapes/host/core.yaml for a
// host backend. Looked for beside the binary (../share/caliber/shapes), then in the source tree.
[[nodiscard]] std::filesystem::path default_shapes_file(bool host_backend);
// Reads --op-file: one op per line, '#' comments. Throws SelectionError.
[[nodiscard]] std::vector<std::string> read_op_file(const std::string& path);
// `text` matches `pattern`, where * matches any run of characters and ? any one (every other
// character, '[' included, stands for itself: node ids contain brackets).
[[nodiscard]] bool glob_match(std::string_view pattern, std::string_view text) noexcept;
// Selects ops and builds cases. Throws SelectionError (unknown op, unknown node, dtype that no
// selected op supports) or core::ShapeError (unreadable or malformed shape file).
[[nodiscard]] Selection select_cases(const core::Knobs& k, const std::string& backend,
                                     bool host_backend);

}  // namespace caliber::run
