// From knobs to the list of cases: which ops (OP, OP_FILE, TEST_NODE, --ops-lib), which dtypes,
// which shapes (level, shape file). Shared by run, list and batch. No device needed.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "caliber/caliber.hpp"
#include "settings/knobs.hpp"
#include "settings/shapes.hpp"

namespace caliber::run {

// Bad input found while selecting cases: the CLI exits 2 with this message, nothing written.
class SelectionError : public core::UsageError {
 public:
  using core::UsageError::UsageError;
};

struct OpEntry {
  std::unique_ptr<Op> op;
  OpInfo info;
  std::string source;  // "built-in", or the path of the op library that registered it
};

struct Selection {
  std::vector<OpEntry> ops;        // the selected ops, in corpus order
  std::vector<Case> cases;         // every case, op by op
  std::vector<const Op*> case_op;  // the op of each case
  std::filesystem::path shapes_file;
  core::Level level = core::Level::core;
  std::map<std::string, std::vector<core::Shape>> used_shapes;  // per op, for shapes.yaml
};

// The source of the built-in corpus in listings and errors.
inline constexpr const char* kBuiltinSource = "built-in";
// Why `name` may not name an op (empty, over 128 characters, not starting with a letter, digit or
// '_', or holding a character other than letters, digits, '_', '.', '-', '+'); nullopt when it
// may. Every registration (an --ops-lib library, a Python suite) is checked against it.
[[nodiscard]] std::optional<std::string> op_name_problem(const std::string& name);
// Throws SelectionError (naming `knob`) when `path` is no loadable library: its ELF headers are
// checked (core::shared_library_problem), then it is loaded once in a child process, which must
// survive its constructors.
void check_loadable(const std::string& path, const std::string& knob);
// Loads one op library (once per path and process), after check_loadable. Throws SelectionError
// when it cannot be loaded, or when it registers an op whose name (for the same backend) the
// built-in corpus or an earlier library already registered: the message names the op and both
// sources.
void load_ops_library(const std::string& path);
// Paired A/B in one process (caliber ab --ops-lib-a A --ops-lib-b B, docs/ab.md): loads side B's
// library apart from everything else. Its ops may carry the names side A's library (or the corpus)
// registered; corpus() never lists them, paired_ops() does. Names are unique within it. Throws
// SelectionError (not a file, cannot be loaded, already loaded as side A's, registers no op).
void load_paired_library(const std::string& path);
// Side B's ops for `backend`, by name (empty when no paired library is loaded).
[[nodiscard]] std::map<std::string, OpEntry> paired_ops(const std::string& backend);
// Loads --ops-lib / CALIBER_OPS_LIB: the knob's paths, in order.
void load_ops_libraries(const std::vector<std::filesystem::path>& paths);
// Names must be unique per backend: throws SelectionError (prefixed with `knob`) when an op
// registered at index >= first has the name of an earlier one, naming both sources.
void check_unique_names(std::size_t first, const std::string& source, const std::string& knob);
// Ops a host program registered at run time (the Python package's suites, docs/python.md): the
// registrations from index `first` on are credited to `source` (listings, run_identity.json's
// ops_libs) and checked for name collisions as a loaded library's are. Throws SelectionError.
void adopt_registered_ops(std::size_t first, const std::string& source);
// Shapes an op carries itself (a suite's inline shapes): used at every level instead of the
// shape file's lists; --shape still wins.
void set_op_shapes(const std::string& op, std::vector<core::Shape> shapes);
// Where registered_ops()[index] came from: kBuiltinSource or a library path.
[[nodiscard]] std::string op_source(std::size_t index);
// Every op registered for `backend`, in registration order.
[[nodiscard]] std::vector<OpEntry> corpus(const std::string& backend);
// The shape file used when --shapes is not given: shapes/core.yaml, or shapes/host/core.yaml for a
// host backend. Looked for in `shapes_dir` (CALIBER_SHAPES_DIR; empty: skipped), beside the binary
// (../share/caliber/shapes), then in the source tree.
[[nodiscard]] std::filesystem::path default_shapes_file(bool host_backend,
                                                        const std::string& shapes_dir);
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
