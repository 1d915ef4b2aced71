// Python op suites (--py-ops, docs/python.md "Python op suites into run directories"): the suite's ops live in a
// Python process (python/caliber registers them through the C ABI), so the caliber executable
// hands every command that selects cases to Python, and batch and ab check a suite through such
// a child before anything is written.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/cases.hpp"
#include "settings/knobs.hpp"

namespace caliber::run {

// The commands that select cases in their own process (run, list): with --py-ops they run in
// Python.
[[nodiscard]] bool selects_cases_in_process(const std::string& command);

// In the caliber executable, before the command line is parsed: argv[1] one of those commands and
// --py-ops among the arguments -> exec `<python> -m caliber <argv[1:]>` with caliber's package
// on PYTHONPATH (lib/caliber/python beside the executable, or <build>/python) and CALIBER_EXE set
// to this executable. The interpreter: CALIBER_PYTHON, else python3 on PATH. Returns nullopt
// when there is nothing to hand off; otherwise does not return, or returns 2 after a message on
// `err` naming the knob and the value (a suite that does not exist, no interpreter, no package).
[[nodiscard]] std::optional<int> hand_off_to_python(int argc, char** argv, std::ostream& err);

// The source string a suite's ops carry in the corpus ("python:<absolute path>"), as
// python/caliber/suite.py credits them.
[[nodiscard]] std::string py_suite_source(const std::string& path);

// The suites of `list` (the --py-ops value) that no op of this process was credited to: empty in
// a Python process that registered them, every suite in the executable.
[[nodiscard]] std::vector<std::string> py_suites_missing(const std::string& list);

// select_cases' rule: every suite loaded in this process, else SelectionError naming the knob.
// Returns the names of the suites' ops for `backend`, in corpus order (the default op list).
[[nodiscard]] std::vector<std::string> py_suite_ops(const std::string& list,
                                                    const std::vector<OpEntry>& corpus);

// The executable's check of Python suites for batch and ab, before anything is written: a child
// `<self> list --names <selection flags> [OP...]` runs in Python; exit 2 there throws UsageError
// with its message. Returns the op names it listed (the default op list when `ops` is empty).
[[nodiscard]] std::vector<std::string> check_py_suites(const std::filesystem::path& self,
                                                       const core::Knobs& k,
                                                       const std::vector<std::string>& ops);

// The check batch and ab make of a run before anything is written, where a child must make it
// (a FlagGems selection is collected by FlagGems' pytest, in Python): `<self> run OPS --dry-run
// ARGS` with `env` set over this process's environment; its refusal (exit 2) throws UsageError
// with the child's message. Any other failure is left to the runs, which report it.
void check_dry_run(const std::filesystem::path& self, const std::vector<std::string>& ops,
                   const std::vector<std::string>& args,
                   const std::map<std::string, std::optional<std::string>>& env = {});

}  // namespace caliber::run
