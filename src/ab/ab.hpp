// caliber ab: the A/B caliber scripts as one command. R interleaved rounds (A B A B ...) of a full
// `caliber run` each, on the same device with everything else equal; side A and side B differ only
// by the switch (environment variables and/or extra run flags). The comparison itself belongs to
// src/report (the CLI pools the A rounds against the B rounds there).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "settings/settings.hpp"
#include "settings/usage_error.hpp"

namespace caliber::run {

struct AbSide {
  std::map<std::string, std::optional<std::string>> env;  // nullopt: unset in this side's runs
  std::vector<std::string> args;                          // extra `caliber run` arguments
  [[nodiscard]] std::string describe() const;             // "X=1 --timer=direct"
};

// Bad flags of an A/B, before any round runs (exit code 2): the one usage error.
using AbUsageError = core::UsageError;

// --env NAME=A --env NAME=B: the first value of each name is side A's, the second side B's; a name
// given once is set on A and unset on B. --arg X --arg Y: A gets X, B gets Y (once: A only).
// --ops-lib-a LIB --ops-lib-b LIB: two builds of the same ops, each side's runs load its own
// library (--ops-lib; both or neither). Throws AbUsageError (no switch at all, a malformed
// NAME=VALUE, a name given three times, one library without the other, a missing file).
void parse_ab_switch(const std::vector<std::string>& envs, const std::vector<std::string>& args,
                     AbSide& a, AbSide& b, const std::string& lib_a = {},
                     const std::string& lib_b = {});

// --flaggems-a ROOT --flaggems-b ROOT: two FlagGems trees (docs/flaggems.md), each side's runs
// `--flaggems=<its tree>`. Always a process per side and round: both trees are the package
// flag_gems, and one Python process imports one of them. Called before parse_ab_switch; throws
// AbUsageError (one tree without the other, with --ops-lib-a/b or a --flaggems run flag, a
// directory that is not a FlagGems checkout).
void add_flaggems_sides(AbSide& a, AbSide& b, const std::string& root_a, const std::string& root_b,
                        const std::vector<std::string>& run_args, bool ops_libs);

// What the command line asks of an A/B, before anything is resolved.
struct AbRequest {
  std::vector<std::string> envs;       // --env NAME=VALUE, A's then B's
  std::vector<std::string> args;       // --arg, A's then B's
  std::string lib_a, lib_b;            // --ops-lib-a, --ops-lib-b
  std::string flaggems_a, flaggems_b;  // --flaggems-a, --flaggems-b
  bool isolate = false;
  int blocks = 8;
  bool crossover = true;
  int rounds = 3;
  std::filesystem::path out = "runs";
  std::string name = "ab";
  std::vector<std::string> ops;
  std::vector<std::string> run_args;  // the same for both sides
  std::filesystem::path self_exe;     // empty: /proc/self/exe
  double timeout_per_run_s = 0;
};

// An A/B as resolve_ab leaves it: both sides typed and checked, nothing written yet; the rounds
// read it and refuse nothing (docs/architecture.md, "What is resolved where").
struct AbSettings {
  AbSide a, b;
  // Paired A/B (docs/ab.md): both libraries in one process per round, each case timed block by
  // block, A and B alternately (`blocks` a side). Only for two libraries and no other switch:
  // paired_lib_a / paired_lib_b are their absolute paths; empty: a process per side and round.
  std::string paired_lib_a, paired_lib_b;
  int blocks = 8;
  bool crossover = true;  // paired: two placement phases per case (docs/ab.md)
  int rounds = 3;
  std::filesystem::path out = "runs";
  std::string name = "ab";  // the A/B directory: <out>/<name>-<timestamp>
  std::vector<std::string> ops;
  std::vector<std::string> run_args;  // the same for both sides
  std::filesystem::path self;         // the caliber binary the rounds run
  double timeout_per_run_s = 0;       // <= 0: none
};

// The switch, the op libraries, the FlagGems trees, the rounds' flags and names, --out; then
// each side's run as its rounds will run it (its flags and environment resolved, and a `caliber
// run --dry-run` of it, which refuses what a round would). Throws AbUsageError (core::KnobError
// for a bad knob value). Writes nothing.
[[nodiscard]] AbSettings resolve_ab(const AbRequest& req);

struct AbRound {
  char side = 'A';
  int round = 1;
  std::optional<std::filesystem::path> run_dir;  // nullopt: the run claimed no directory
  int exit_code = 0;                             // the child's, or -1 when it did not exit normally
  core::OpStatus status = core::OpStatus::failed;  // ok, failed, crashed, timeout, interrupted
  double duration_s = 0;
};

struct AbOutcome {
  // 0 rounds ran; 2 the first run refused its flags (what changed since resolve_ab); 128+N signal
  int exit_code = 0;
  std::filesystem::path ab_dir;
  std::vector<AbRound> rounds;
  [[nodiscard]] std::vector<std::filesystem::path> run_dirs(char side) const;
};

[[nodiscard]] AbOutcome run_ab_rounds(const AbSettings& s, std::ostream& out, std::ostream& err);

}  // namespace caliber::run
