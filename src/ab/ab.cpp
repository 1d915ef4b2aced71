#include "ab/ab.hpp"

#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "batch/batch.hpp"
#include "batch/flaggems_tree.hpp"
#include "proc/process.hpp"
#include "records/rundir.hpp"
#include "run/py_ops.hpp"
#include "settings/library_file.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

std::string AbSide::describe() const {
  std::string s;
  for (const auto& [k, v] : env) s += (s.empty() ? "" : " ") + k + (v ? "=" + *v : " unset");
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s.empty() ? "(nothing)" : s;
}

void add_flaggems_sides(AbSide& a, AbSide& b, const std::string& root_a, const std::string& root_b,
                        const std::vector<std::string>& run_args, bool ops_libs) {
  if (root_a.empty() && root_b.empty()) return;
  if (root_a.empty() != root_b.empty())
    throw AbUsageError(std::string(root_a.empty() ? "--flaggems-b" : "--flaggems-a") + ": '" +
                       (root_a.empty() ? root_b : root_a) + "' is given without " +
                       (root_a.empty() ? "--flaggems-a" : "--flaggems-b") +
                       "; allowed: both (A's FlagGems tree and B's) or neither");
  if (ops_libs)
    throw AbUsageError(
        "--flaggems-a/--flaggems-b: not with --ops-lib-a/--ops-lib-b; allowed: "
        "one pair of sides");
  if (!flaggems_root_of(run_args).empty())
    throw AbUsageError("--flaggems: '" + flaggems_root_of(run_args) +
                       "' is given with --flaggems-a/--flaggems-b; allowed: one tree for both "
                       "sides (--flaggems) or one a side");
  for (const auto& [flag, root] :
       {std::pair{"--flaggems-a", root_a}, std::pair{"--flaggems-b", root_b}}) {
    try {
      check_flaggems_root(flag, root);
    } catch (const std::invalid_argument& e) {
      throw AbUsageError(e.what());
    }
  }
  // Canonical, so that two spellings of one tree read as identical sides below.
  a.args.push_back(std::string(kFlagGemsFlag) + "=" + fs::canonical(root_a).string());
  b.args.push_back(std::string(kFlagGemsFlag) + "=" + fs::canonical(root_b).string());
}

void parse_ab_switch(const std::vector<std::string>& envs, const std::vector<std::string>& args,
                     AbSide& a, AbSide& b, const std::string& lib_a, const std::string& lib_b) {
  if (lib_a.empty() != lib_b.empty())
    throw AbUsageError(std::string(lib_a.empty() ? "--ops-lib-b" : "--ops-lib-a") + ": '" +
                       (lib_a.empty() ? lib_b : lib_a) + "' is given without " +
                       (lib_a.empty() ? "--ops-lib-a" : "--ops-lib-b") +
                       "; allowed: both (A's library and B's) or neither");
  for (const auto& [flag, lib] : {std::pair{"--ops-lib-a", lib_a}, std::pair{"--ops-lib-b", lib_b}})
    if (!lib.empty())
      if (const auto why = core::shared_library_problem(lib))
        throw AbUsageError(std::string(flag) + ": '" + lib + "' " + *why +
                           "; allowed: a shared library of ops");
  if (!lib_a.empty()) {
    // Absolute, so that each side's runs load exactly the file named here.
    a.args.push_back("--ops-lib=" + fs::absolute(lib_a).lexically_normal().string());
    b.args.push_back("--ops-lib=" + fs::absolute(lib_b).lexically_normal().string());
  }
  std::map<std::string, int> seen;
  std::vector<std::string> order;
  for (const auto& e : envs) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0)
      throw AbUsageError("--env: '" + e + "' is not NAME=VALUE");
    const std::string name = e.substr(0, eq), value = e.substr(eq + 1);
    const int n = ++seen[name];
    if (n == 1) {
      a.env[name] = value;
      b.env[name] = std::nullopt;  // until a second value names B's
    } else if (n == 2) {
      b.env[name] = value;
    } else {
      throw AbUsageError("--env: " + name + " given " + std::to_string(n) +
                         " times; give it twice (A's value, then B's) or once (A only)");
    }
  }
  if (args.size() > 2)
    throw AbUsageError("--arg: given " + std::to_string(args.size()) +
                       " times; give it twice (A's flag, then B's) or once (A only)");
  if (!args.empty()) a.args.push_back(args[0]);
  if (args.size() == 2) b.args.push_back(args[1]);
  if (!lib_a.empty() && fs::equivalent(lib_a, lib_b) && a.env == b.env &&
      std::vector<std::string>(a.args.begin() + 1, a.args.end()) ==
          std::vector<std::string>(b.args.begin() + 1, b.args.end()))
    throw AbUsageError("--ops-lib-a and --ops-lib-b name the same file ('" + lib_a +
                       "'): nothing would be compared");
  if (envs.empty() && args.empty() && lib_a.empty() && a.args.empty() && b.args.empty())
    throw AbUsageError(
        "nothing to switch: give --env NAME=A --env NAME=B, --arg X --arg Y and/or "
        "--ops-lib-a LIB --ops-lib-b LIB (or --flaggems-a ROOT --flaggems-b ROOT)");
  if (a.env == b.env && a.args == b.args)
    throw AbUsageError("A and B are identical (" + a.describe() + "): nothing would be compared");
}

std::vector<fs::path> AbOutcome::run_dirs(char side) const {
  std::vector<fs::path> out;
  for (const auto& r : rounds)
    if (r.side == side && r.run_dir) out.push_back(*r.run_dir);
  return out;
}

namespace {

// The environment a side's runs see: its --env over this process's (nullopt: unset there).
EnvLookup side_env(const AbSide& side) {
  return [&side](const std::string& name) -> std::optional<std::string> {
    const auto it = side.env.find(name);
    if (it != side.env.end()) return it->second;
    return core::process_env(name);
  };
}

// ab gives every round its own --out and --name (and a paired round its --paired-*): a switch
// that sets them would make each round's run refuse its flags after the A/B directory exists.
void check_round_flags(const AbSide& side) {
  for (const auto& a : side.args) {
    const std::string flag = a.substr(0, a.find('='));
    if (flag == "--out" || flag == "--name" || flag.rfind("--paired-", 0) == 0)
      throw AbUsageError("--arg: '" + a.substr(0, 200) +
                         "' sets a flag ab gives each round itself; allowed: a run flag "
                         "other than --out, --name and --paired-*");
  }
}

// One side's run as its rounds run it: the run flags and the side's own, over the side's
// environment, then `caliber run --dry-run` of it (the ops, the libraries, the suites, the
// devices, the timer, the replay source; a FlagGems side's tree, selection and import, in
// Python), whose refusal is the side's.
void check_side(const AbSettings& s, char name, const AbSide& side) {
  const std::string label = std::string("side ") + name + ": ";
  std::vector<std::string> args = s.run_args;
  args.insert(args.end(), side.args.begin(), side.args.end());
  core::Knobs k;
  try {
    k = resolve_run_args(args, side_env(side), "--arg");
  } catch (const core::UsageError& e) {
    throw AbUsageError(label + e.what());
  }
  if (!s.paired_lib_b.empty() && (k.profile > 0 || k.parallel_warmup > 0))
    throw AbUsageError(
        "--ops-lib-a/--ops-lib-b (paired A/B): not with --profile or --parallel-warmup; "
        "allowed: --isolate (a process per side and round)");
  try {
    run::check_dry_run(s.self, s.ops, args, side.env);
  } catch (const core::UsageError& e) {
    throw AbUsageError(label + e.what());
  }
}

// The A/B directory with its logs/ and ab.json (the rounds, the switch, the run flags).
fs::path claim_ab_dir(const AbSettings& opt, std::ostream& out) {
  const bool paired = !opt.paired_lib_b.empty();
  const fs::path dir = core::claim_run_dir(opt.out, opt.name);
  fs::create_directories(dir / "logs");
  nlohmann::json cfg = {{"rounds", opt.rounds},
                        {"paired", paired},
                        {"blocks", paired ? opt.blocks : 0},
                        {"crossover", paired && opt.crossover},
                        {"ops", opt.ops},
                        {"run_args", opt.run_args},
                        {"a", {{"switch", opt.a.describe()}, {"args", opt.a.args}}},
                        {"b", {{"switch", opt.b.describe()}, {"args", opt.b.args}}}};
  core::write_file_atomic(dir / "ab.json", cfg.dump(2) + "\n");
  out << "ab: " << dir.string() << ": " << opt.rounds << " round(s) of A (" << opt.a.describe()
      << ") and B (" << opt.b.describe() << "), "
      << (paired ? "paired in one process per round, " + std::to_string(opt.blocks) +
                       " blocks a side" +
                       (opt.crossover ? ", two placement phases (crossover)" : std::string())
                 : std::string("interleaved, a process per side"))
      << std::endl;
  return dir;
}

// One round's child: `caliber run` of one side (paired: of both) into the A/B directory.
SpawnSpec round_spec(const AbSettings& opt, const fs::path& self, const fs::path& ab_dir, int round,
                     const std::string& name, const std::vector<std::string>& extra,
                     const std::map<std::string, std::optional<std::string>>& env) {
  const bool paired = !opt.paired_lib_b.empty();
  SpawnSpec spec;
  spec.argv = {self.string(), "run"};
  spec.argv.insert(spec.argv.end(), opt.ops.begin(), opt.ops.end());
  for (const std::string& a : std::vector<std::string>{"--out", ab_dir.string(), "--name", name})
    spec.argv.push_back(a);
  spec.argv.insert(spec.argv.end(), opt.run_args.begin(), opt.run_args.end());
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  if (paired)
    for (const std::string& a : std::vector<std::string>{
             "--paired-lib", opt.paired_lib_b, "--paired-name", "B-" + std::to_string(round),
             "--paired-blocks", std::to_string(opt.blocks), "--paired-crossover",
             opt.crossover ? "on" : "off"})
      spec.argv.push_back(a);
  spec.env = env;
  spec.log_file = ab_dir / "logs" / ((paired ? "AB-" + std::to_string(round) : name) + ".log");
  return spec;
}

// Runs one round of one side (paired: both), records its run directories into `outcome` and
// prints them; false when the first run refused its flags (exit 2), which ends the A/B.
bool run_round(const AbSettings& opt, const fs::path& self, int round, char side,
               const std::vector<std::string>& extra,
               const std::map<std::string, std::optional<std::string>>& env, AbOutcome& outcome,
               std::ostream& out, std::ostream& err) {
  const bool paired = !opt.paired_lib_b.empty();
  const std::string name = std::string(1, side) + "-" + std::to_string(round);
  const std::string name_b = "B-" + std::to_string(round);
  const SpawnSpec spec = round_spec(opt, self, outcome.ab_dir, round, name, extra, env);
  const auto before = run_dirs_of(outcome.ab_dir, name);
  const auto before_b = run_dirs_of(outcome.ab_dir, name_b);
  Child child = Child::spawn(spec);
  auto st = child.wait(opt.timeout_per_run_s, 5.0, interrupt_flag());
  if (!st) st = child.terminate(5.0, ExitKind::stopped);
  AbRound r;
  r.side = side;
  r.round = round;
  r.status = classify_exit(*st, opt.timeout_per_run_s).status;
  r.exit_code = st->kind == ExitKind::exited ? st->code : -1;
  r.duration_s = st->duration_s;
  r.run_dir = find_child_run_dir(outcome.ab_dir, name, before);
  std::vector<AbRound> made{r};
  if (paired) {
    r.side = 'B';
    r.run_dir = find_child_run_dir(outcome.ab_dir, name_b, before_b);
    made.push_back(r);
  }
  char dur[32];
  std::snprintf(dur, sizeof dur, "%.1f", r.duration_s);
  out << "ab: round " << round << "/" << opt.rounds << " "
      << (paired ? "A+B paired" : std::string(1, side)) << ": " << core::to_string(r.status) << " ("
      << dur << " s)";
  for (const auto& m : made)
    out << " " << (m.run_dir ? m.run_dir->filename().string() : "no run directory");
  out << std::endl;
  const bool first = outcome.rounds.empty();
  outcome.rounds.insert(outcome.rounds.end(), made.begin(), made.end());
  if (r.exit_code == 2 && first) {
    err << "caliber ab: the first run refused its flags (exit 2); see " << spec.log_file.string()
        << std::endl;
    outcome.exit_code = 2;
    return false;
  }
  return true;
}

// Whether an A/B is paired in one process: two libraries, no environment or flag switch (those
// cannot differ inside one process), and not --isolate. Sets the settings' paired_lib_a/b when it
// is (empty otherwise: a process per side and round).
void choose_paired(AbSettings& s, const AbRequest& req) {
  if (req.isolate || req.lib_a.empty() || req.lib_b.empty() || !req.envs.empty() ||
      !req.args.empty())
    return;
  s.paired_lib_a = fs::absolute(req.lib_a).lexically_normal().string();
  s.paired_lib_b = fs::absolute(req.lib_b).lexically_normal().string();
}

}  // namespace

AbSettings resolve_ab(const AbRequest& req) {
  if (req.rounds < 1 || req.rounds > 1000)
    throw AbUsageError("--rounds: '" + std::to_string(req.rounds) +
                       "' is not allowed; allowed: 1 to 1000");
  if (req.blocks < 2 || req.blocks > 1000)
    throw AbUsageError("--blocks: '" + std::to_string(req.blocks) +
                       "' is not allowed; allowed: 2 to 1000");
  AbSettings s;
  add_flaggems_sides(s.a, s.b, req.flaggems_a, req.flaggems_b, req.run_args,
                     !req.lib_a.empty() || !req.lib_b.empty());
  parse_ab_switch(req.envs, req.args, s.a, s.b, req.lib_a, req.lib_b);
  choose_paired(s, req);
  s.blocks = req.blocks;
  s.crossover = req.crossover;
  s.rounds = req.rounds;
  s.out = req.out;
  s.name = req.name;
  s.ops = req.ops;
  s.run_args = req.run_args;
  s.timeout_per_run_s = req.timeout_per_run_s;
  s.self = req.self_exe.empty() ? caliber_executable() : req.self_exe;
  check_round_flags(s.a);
  check_round_flags(s.b);
  try {
    core::check_out_dir(s.out);
  } catch (const std::invalid_argument& e) {
    throw AbUsageError(std::string("--out: ") + e.what());
  }
  check_side(s, 'A', s.a);
  check_side(s, 'B', s.b);
  return s;
}

AbOutcome run_ab_rounds(const AbSettings& opt, std::ostream& out, std::ostream& err) {
  const fs::path& self = opt.self;
  AbOutcome outcome;
  outcome.ab_dir = claim_ab_dir(opt, out);
  SignalGuard guard;
  for (int round = 1; round <= opt.rounds && !SignalGuard::interrupted(); ++round) {
    if (!opt.paired_lib_b.empty()) {
      if (!run_round(opt, self, round, 'A', {"--ops-lib=" + opt.paired_lib_a}, {}, outcome, out,
                     err))
        return outcome;
      continue;
    }
    for (char side : {'A', 'B'}) {
      if (SignalGuard::interrupted()) break;
      const AbSide& sw = side == 'A' ? opt.a : opt.b;
      if (!run_round(opt, self, round, side, sw.args, sw.env, outcome, out, err)) return outcome;
    }
  }
  if (const int sig = SignalGuard::received(); sig != 0) {
    err << "caliber ab: " << signal_name(sig) << " received: stopped after "
        << outcome.rounds.size() << " run(s), every child reaped" << std::endl;
    outcome.exit_code = 128 + sig;
  }
  return outcome;
}

}  // namespace caliber::run
