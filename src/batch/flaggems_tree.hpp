// A FlagGems checkout as batch and ab see it (docs/flaggems.md): what makes a directory one, and
// its op list (one op per benchmark file). The runs themselves happen in Python
// (python/caliber/flaggems*.py); batch and ab only start them, one child per op or round, and
// check their input before anything is written.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace caliber::run {

// The flag a FlagGems run takes, spelled once here for batch and ab.
inline constexpr const char* kFlagGemsFlag = "--flaggems";

// The --flaggems value among run flags (`--flaggems=ROOT` or `--flaggems ROOT`); empty when none.
[[nodiscard]] std::string flaggems_root_of(const std::vector<std::string>& run_args);

// Throws std::invalid_argument naming `knob` and the value unless `root` holds benchmark/
// (conftest.py, base.py and at least one test_*.py); whether flag_gems imports is the run's to
// say (python/caliber), which names the missing module.
void check_flaggems_root(const std::string& knob, const std::filesystem::path& root);

// The benchmark files of a checkout by op, relative to benchmark/: test_<op>.py at its top level,
// then in its folders (benchmark/<dir>/test_<op>.py, the folders in name order; pytest collects
// them too), a name the top level or an earlier folder has staying theirs. python/caliber/
// flaggems.py resolves an op to its file by the same rule.
[[nodiscard]] std::map<std::string, std::filesystem::path> flaggems_files(
    const std::filesystem::path& root);

// The ops of a checkout: one op per benchmark file (flaggems_files), sorted by name.
[[nodiscard]] std::vector<std::string> flaggems_ops(const std::filesystem::path& root);

// An op name given for a FlagGems batch: `add`, or its file (`test_add.py`, a path to it) as
// OP_FILE names one; returns the op. Throws std::invalid_argument naming `knob` when the tree has
// no such benchmark file.
[[nodiscard]] std::string flaggems_op_of(const std::string& knob, const std::filesystem::path& root,
                                         const std::string& name);

}  // namespace caliber::run
