#include "batch/batch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/registry.hpp"
#include "batch/flaggems_tree.hpp"
#include "batch/lease.hpp"
#include "batch/scheduler.hpp"
#include "core/terminal.hpp"
#include "records/identity.hpp"
#include "records/rundir.hpp"
#include "records/runlog.hpp"
#include "run/cases.hpp"
#include "run/py_ops.hpp"
#include "settings/knobs.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

using Clock = std::chrono::steady_clock;

fs::path self_executable(const BatchOptions& opt) {
  if (!opt.self_exe.empty()) return opt.self_exe;
  return caliber_executable();
}

}  // namespace

std::string format_duration(double s) {
  const long t = std::lround(std::max(0.0, s));
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

std::string last_log_line(const fs::path& log) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<long long>(in.tellg());
  const long long from = std::max(0LL, size - 4096);
  in.seekg(from);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream lines(tail);
  std::string line, last;
  while (std::getline(lines, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b != std::string::npos) last = line.substr(b);
  }
  return one_line(last, 200);
}

namespace {
// The last rewrite of ops_status.csv that failed (a full disk), or "": a batch goes on and writes
// it again after the next op, and summarize() tries once more at the end.
std::string& status_write_error() {
  static std::string error;
  return error;
}
}  // namespace

void write_ops_status(const fs::path& batch_dir, const std::vector<OpStatusRow>& rows) {
  try {
    core::write_file_atomic(batch_dir / kOpsStatusFile, ops_status_csv(rows));
    status_write_error().clear();
  } catch (const std::runtime_error& e) {
    if (status_write_error().empty())
      std::cerr << "caliber batch: " << e.what()
                << "; the batch goes on and writes it again after the next op\n";
    status_write_error() = e.what();
  }
}

std::optional<double> parse_timeout_seconds(const std::string& text) {
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(d) || d < 0 || d > 1e7)
    return std::nullopt;
  return d;
}

Classified classify_exit(const ExitStatus& st, double timeout_s) {
  switch (st.kind) {
    case ExitKind::timeout: {
      std::ostringstream o;
      o << "no exit within the " << timeout_s << " s timeout; ended by " << signal_name(st.signal);
      return {core::OpStatus::timeout, o.str()};
    }
    case ExitKind::stopped:
      return {core::OpStatus::interrupted, "stopped by caliber (" + signal_name(st.signal) + ")"};
    case ExitKind::signaled:
      return {core::OpStatus::crashed, "crashed: " + st.describe()};
    case ExitKind::exited:
      break;
  }
  if (st.code == 0) return {core::OpStatus::ok, ""};
  if (st.crashed()) return {core::OpStatus::crashed, "crashed: " + st.describe()};
  if (st.code == 1) return {core::OpStatus::failed, "a case failed (exit 1)"};
  if (st.code == 2) return {core::OpStatus::failed, "bad usage or input (exit 2)"};
  return {core::OpStatus::failed, "exit " + std::to_string(st.code)};
}

std::set<fs::path> run_dirs_of(const fs::path& batch_dir, const std::string& op) {
  std::set<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(batch_dir, ec)) return out;
  const std::regex tail(R"(^-\d{8}-\d{6}(-\d+)?$)");
  for (const auto& e : fs::directory_iterator(batch_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.size() <= op.size() || name.compare(0, op.size(), op) != 0)
      continue;
    if (std::regex_match(name.substr(op.size()), tail)) out.insert(e.path());
  }
  return out;
}

std::optional<fs::path> find_child_run_dir(const fs::path& batch_dir, const std::string& op,
                                           const std::set<fs::path>& before) {
  std::optional<fs::path> best;
  std::pair<std::string, int> best_order;
  const std::regex tail(R"(^-(\d{8}-\d{6})(?:-(\d+))?$)");
  for (const auto& d : run_dirs_of(batch_dir, op)) {
    if (before.count(d)) continue;
    std::smatch m;
    const std::string rest = d.filename().string().substr(op.size());
    if (!std::regex_match(rest, m, tail)) continue;
    const auto order = std::make_pair(m[1].str(), m[2].matched ? std::stoi(m[2].str()) : 1);
    if (!best || best_order < order) {
      best = d;
      best_order = order;
    }
  }
  return best;
}

namespace {

// The knob a run flag sets (`--devices` also as `--gpus`); nullptr for a flag caliber run does not
// take as a knob. The positional ops are no flag.
const core::KnobSpec* knob_of_flag(const std::string& flag) {
  for (const auto& spec : core::knob_table())
    if (!spec.flag.empty() && spec.name != "ops" &&
        (spec.flag == flag || (spec.name == "devices" && flag == "--gpus")))
      return &spec;
  return nullptr;
}

}  // namespace

core::Knobs resolve_run_args(const std::vector<std::string>& run_args, const EnvLookup& env,
                             const std::string& who) {
  std::map<std::string, std::string> given;
  std::map<std::string, std::string> set_by;  // knob name -> the argument that set it
  for (const auto& a : run_args) {
    if (a == "--quiet") continue;  // a flag of the command line, no knob
    const auto eq = a.find('=');
    const std::string flag = a.substr(0, eq);
    const std::string shown = "'" + one_line(a, 200) + "'";
    const core::KnobSpec* spec = knob_of_flag(flag);
    if (spec == nullptr)
      throw BatchUsageError(who + ": " + shown +
                            " is not a flag of caliber run; allowed: --FLAG=VALUE of a run knob "
                            "(caliber run --help), --profile, --quiet");
    // --profile alone is 3 launches, as caliber run's own flag has it.
    if (eq == std::string::npos && spec->name != "profile")
      throw BatchUsageError(who + ": " + shown + " gives " + flag + " no value; allowed: " + flag +
                            "=VALUE");
    const std::string value = eq == std::string::npos ? "3" : a.substr(eq + 1);
    // A repeatable knob (and --shape) joins its values, as caliber run does; any other flag given
    // twice is refused by caliber run, so here.
    const auto [it, first] = set_by.emplace(spec->name, a);
    if (!first && !spec->repeatable && spec->name != "shape")
      throw BatchUsageError(who + ": " + shown + " sets " + spec->flag + " again (" +
                            one_line(it->second, 200) + " set it); allowed: each flag once");
    given[spec->name] = first ? value : given[spec->name] + "," + value;
  }
  return core::resolve_knobs(given, env);
}

std::vector<std::string> read_op_file(const fs::path& file) {
  // One op-file syntax for run and batch (run/cases.cpp); only the error type differs.
  try {
    return read_op_file(file.string());
  } catch (const SelectionError& e) {
    throw BatchUsageError(e.what());
  }
}

std::string group_run_name(const std::vector<std::string>& ops) {
  return "group-" + (ops.empty() ? std::string("none") : ops.front()) + "-" +
         std::to_string(ops.size());
}

ChildRun read_child_run(const fs::path& run_dir) {
  ChildRun r;
  r.dir = run_dir;
  try {
    r.log = core::read_run_log(run_dir / core::run_log_file);
  } catch (const std::exception&) {
    // No readable run.log: the child died before writing one.
  }
  try {
    const auto id = core::read_identity(run_dir);
    const auto t = id.find("timer");
    if (t != id.end() && t->is_string()) r.timer = t->get<std::string>();
  } catch (const std::exception&) {
  }
  return r;
}

double apply_child_run(OpStatusRow& row, const ChildRun& run, bool own_rows_only) {
  row.run = run.dir.filename().string();
  if (!run.timer.empty()) row.timer = run.timer;
  if (!run.log) return 0;  // rows stay 0
  row.rows = 0;
  int skipped = 0;
  double wall_s = 0;
  std::string first_error, first_skip;
  for (const auto& c : run.log->cases) {
    if (own_rows_only && batch_op_of(c) != row.op) continue;
    ++row.rows;
    wall_s += c.phases.wall_s.value_or(0);
    const std::string st = core::status_of(c);
    if (st == core::status::skipped) {
      ++skipped;
      if (first_skip.empty()) first_skip = c.reason.value_or("");
    }
    if (st == core::status::failed && first_error.empty())
      first_error = c.node.value_or("") + ": " + c.error.value_or("failed");
    // A row whose check failed fails its op, as it fails a run (exit 1).
    if (st != core::status::failed && c.accuracy && *c.accuracy && !**c.accuracy &&
        first_error.empty())
      first_error = c.node.value_or(c.op) + ": the accuracy check failed";
  }
  if (own_rows_only && row.status == core::OpStatus::ok && !first_error.empty())
    row.status = core::OpStatus::failed;  // the group's exit says nothing of one op
  if (row.status == core::OpStatus::ok && (row.rows == 0 || skipped == row.rows)) {
    row.status = core::OpStatus::skipped;
    row.reason = row.rows == 0 ? "no cases ran" : "every case skipped: " + first_skip;
  }
  if (row.status == core::OpStatus::failed && !first_error.empty()) row.reason = first_error;
  return wall_s;
}

bool read_child_results(OpStatusRow& row, const std::optional<fs::path>& run_dir) {
  if (!run_dir) return false;
  const ChildRun run = read_child_run(*run_dir);
  (void)apply_child_run(row, run, false);
  return run.finished();
}

void add_log_tail(OpStatusRow& row, bool run_finished, const fs::path& log) {
  if (row.status != core::OpStatus::crashed && row.status != core::OpStatus::failed &&
      row.status != core::OpStatus::timeout)
    return;
  if (run_finished) return;
  const std::string tail = last_log_line(log);
  if (!tail.empty() && row.reason.find(tail) == std::string::npos) row.reason += "; log: " + tail;
}

namespace {

std::vector<std::string> default_ops(const fs::path& self, const std::string& backend) {
  const auto r = run_capture({self.string(), "list", "--names", "--backend", backend}, 120);
  if (!r.status.ok())
    throw BatchUsageError("cannot list the ops (`caliber list --names --backend " + backend +
                          "`: " + r.status.describe() + "); name the ops to run");
  return core::split_list(r.out);
}

}  // namespace

namespace {
volatile sig_atomic_t g_term_received = 0;
void on_term(int) {
  g_term_received = 1;
}

// A child the batch started (SIGTERM held across exec: blocked and ignored; the kernel asked to
// send SIGTERM when its parent dies) still reading its variables: true even when the batch died
// before this process started, when its parent is no longer the batch. Read before
// watch_batch_parent installs its handler (main's first step calls batch_child_env). Blocked or
// ignored: a library may have unblocked it while the program loaded. A shell's leftover
// variables come with neither.
bool started_by_a_batch() {
  sigset_t now;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
  struct sigaction current {};
  ::sigaction(SIGTERM, nullptr, &current);
  int death_signal = 0;
  ::prctl(PR_GET_PDEATHSIG, &death_signal);
  return (::sigismember(&now, SIGTERM) == 1 || current.sa_handler == SIG_IGN) &&
         death_signal == SIGTERM;
}
}  // namespace

std::optional<BatchChildEnv> batch_child_env(std::string* warning) {
  static std::string why;
  static bool told = false;
  static const std::optional<BatchChildEnv> env = []() -> std::optional<BatchChildEnv> {
    const auto dir = core::process_env("CALIBER_BATCH_DIR");
    const auto parent = core::process_env("CALIBER_BATCH_PARENT");
    const auto op = core::process_env("CALIBER_BATCH_OP");
    if (!dir && !parent && !op) return std::nullopt;
    const auto shown = [](const std::string& v) { return "'" + one_line(v, 120) + "'"; };
    struct stat st {};
    const std::string ppid = std::to_string(::getppid());
    if (!dir || !parent || !op) {
      why = "not all three are set";
    } else if (*parent != ppid && !started_by_a_batch()) {
      why =
          "CALIBER_BATCH_PARENT=" + shown(*parent) + " is not this process's parent (" + ppid + ")";
    } else if (::lstat((fs::path(*dir) / kBatchConfigFile).c_str(), &st) != 0 ||
               !S_ISREG(st.st_mode)) {
      why = "CALIBER_BATCH_DIR=" + shown(*dir) + " holds no " + kBatchConfigFile;
    } else {
      return BatchChildEnv{*dir, *parent, *op};
    }
    why = core::terminal_safe(
        "CALIBER_BATCH_DIR, CALIBER_BATCH_PARENT and CALIBER_BATCH_OP were "
        "ignored (" +
        why + "); this is a plain run, not a batch's child");
    return std::nullopt;
  }();
  if (warning && !why.empty() && !told) {
    *warning = why;
    told = true;
  }
  return env;
}

void drop_untrusted_batch_env(std::ostream& err) {
  std::string warning;
  if (batch_child_env(&warning)) return;
  if (!warning.empty()) err << "caliber: " << warning << "\n";
  for (const char* v : {"CALIBER_BATCH_DIR", "CALIBER_BATCH_PARENT", "CALIBER_BATCH_OP"})
    ::unsetenv(v);
}

namespace {
// The batch starts its children with SIGTERM blocked and ignored (SpawnSpec::hold_sigterm); a
// pending one is delivered here, to the handler installed before.
void release_sigterm() {
  sigset_t term;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
}
}  // namespace

void watch_batch_parent() {
  // Once a process: main calls it for every command (a command handed to Python included), and
  // `run` again for the CLI run in-process (caliber_cli_main from the Python package).
  static bool watching = false;
  if (watching) return;
  watching = true;
  std::string warning;
  const auto env = batch_child_env(&warning);
  if (!warning.empty()) std::cerr << "caliber: " << warning << "\n";
  if (!env) {
    // Not a batch's child after all (its variables untrusted): SIGTERM as any process has it.
    if (started_by_a_batch()) ::signal(SIGTERM, SIG_DFL);
    release_sigterm();
    return;
  }
  const std::optional<std::string> parent = env->parent;
  // SIGTERM (the batch's own interrupt, or the kernel's PR_SET_PDEATHSIG when the batch died) is
  // caught here so that an orphan can first record its end; with a live parent it ends the run
  // at once, as before.
  struct sigaction sa {};
  sa.sa_handler = on_term;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  // The watcher thread starts with SIGTERM unblocked (a thread takes its creator's mask).
  release_sigterm();
  std::thread([p = *parent] {
    for (;;) {
      const bool orphan = std::to_string(::getppid()) != p;
      if (g_term_received || orphan) {
        if (orphan) note_orphaned_batch_child(128 + SIGTERM);
        ::signal(SIGTERM, SIG_DFL);
        ::raise(SIGTERM);
        ::_exit(128 + SIGTERM);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }).detach();
}

void note_orphaned_batch_child(int exit_code) {
  const auto env = batch_child_env();
  if (!env) return;
  if (std::to_string(::getppid()) == env->parent) return;  // the batch lives and records it
  const fs::path batch_dir = env->dir;
  const std::optional<std::string> op = env->op;
  // Children of one dead batch may end together: one read-modify-write at a time.
  const int fd =
      ::open((batch_dir / ".ops_status.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ::flock(fd, LOCK_EX);
  try {
    auto rows = read_ops_status(batch_dir);
    bool changed = false;
    const auto mine = core::split_list(*op);  // a group's ops, comma separated
    for (auto& r : rows) {
      if (std::find(mine.begin(), mine.end(), r.op) == mine.end() ||
          r.status != core::OpStatus::running)
        continue;
      r.status = exit_code == 0 ? core::OpStatus::ok : core::OpStatus::interrupted;
      r.reason =
          "the batch process ended while this op ran (killed?); the op ended with it "
          "(exit " +
          std::to_string(exit_code) + ")";
      changed = true;
    }
    if (changed) write_ops_status(batch_dir, rows);
  } catch (const std::exception&) {
    // Nothing better to do for a batch directory that is gone or damaged.
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
}

void print_finished(std::ostream& out, const OpStatusRow& row, const std::string& where) {
  char dur[32];
  std::snprintf(dur, sizeof dur, "%.1f", row.duration_s);
  out << "[batch] " << row.op << ": " << core::to_string(row.status) << " (" << row.rows
      << " rows, " << dur << " s, " << where << ")" << (row.reason.empty() ? "" : ": " + row.reason)
      << std::endl;
}

namespace {

bool slurm_flags_given(const slurm::SlurmOptions& s) {
  return !s.partition.empty() || !s.account.empty() || s.gpus_per_task != 0 ||
         !s.time_limit.empty() || !s.sbatch_args.empty();
}

void apply_stored_settings(const nlohmann::json& cfg, BatchOptions& opt);

// --resume: the batch's rows, and its settings unless given again now.
void load_resumed_batch(BatchSettings& s) {
  BatchOptions& opt = s.opt;
  const fs::path& dir = opt.resume_dir;
  const fs::path status_file = dir / kOpsStatusFile;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(status_file, ec)))
    throw BatchUsageError("--resume: '" + dir.string() + "' holds no " + kOpsStatusFile);
  // A link, a fifo or an oversized file is refused here, before any op runs (the rewrite after
  // the first op would refuse the link only then).
  try {
    s.rows = read_ops_status(dir);
  } catch (const std::exception& e) {
    throw BatchUsageError("--resume: '" + dir.string() + "': " + e.what());
  }
  if (s.rows.empty()) throw BatchUsageError("--resume: '" + status_file.string() + "' lists no op");
  std::set<std::string> listed;
  for (const auto& r : s.rows)
    if (!listed.insert(r.op).second)
      throw BatchUsageError("--resume: '" + status_file.string() + "' lists op '" +
                            one_line(r.op, 80) + "' twice");
  // The batch's settings (its run flags, devices, limits): without them the ops left would run
  // under another caliber than the ones done, so a batch.json that is missing or unreadable is
  // refused, never taken for empty.
  nlohmann::json cfg;
  std::string what = "not a JSON object";
  try {
    cfg = nlohmann::json::parse(core::read_data_file(dir / kBatchConfigFile, kMaxBatchConfigBytes),
                                nullptr, false);
  } catch (const core::DataFileError& e) {
    what = e.why() == "it does not exist" ? "missing" : "unreadable: " + e.why();
  }
  if (!cfg.is_object())
    throw BatchUsageError("--resume: '" + (dir / kBatchConfigFile).string() + "' is " + what +
                          "; it holds the batch's run flags, devices and limits, without which "
                          "the ops left would run under another caliber than those done");
  try {
    apply_stored_settings(cfg, opt);
  } catch (const nlohmann::json::exception&) {
    throw BatchUsageError("--resume: '" + (dir / kBatchConfigFile).string() +
                          "' holds a field of the wrong type (devices: a list of numbers, "
                          "run_args: a list of strings, timeout_per_op_s: a number, timeout_for: "
                          "an object of numbers, ops_per_child: a number, slurm: an object); it "
                          "was not written by caliber "
                          "batch");
  }
  if (!opt.ops.empty() || !opt.op_file.empty())
    throw BatchUsageError("--resume: the ops are those of the batch; do not name ops as well");
}

// The flags that make two runs comparable or not (what `compare` checks, and what it selects):
// a resumed batch keeps its own, so its ops all ran under one caliber.
bool changes_caliber(const std::string& flag) {
  static const std::set<std::string> flags = {
      "--level",  "--timer",       "--repeat", "--l2",          "--clock",
      "--tune",   "--replay-from", "--shapes", "--shape-mode",  "--shape",
      "--dtypes", "--ops-lib",     "--py-ops", "--return-mode", "--capture-deny"};
  return flags.count(flag) > 0;
}

std::string flag_of(const std::string& arg) {
  return arg.substr(0, arg.find('='));
}

}  // namespace

std::vector<std::string> merge_resumed_args(const std::vector<std::string>& stored,
                                            const std::vector<std::string>& given) {
  std::vector<std::string> out = stored;
  for (const auto& g : given) {
    const std::string flag = flag_of(g);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const std::string& s) { return flag_of(s) == flag; });
    if (it == out.end()) {
      if (changes_caliber(flag))
        throw BatchUsageError("--resume: '" + g +
                              "' changes the caliber of the batch (its first ops ran without "
                              "it); resume with the batch's own flags, or start a new batch");
      out.push_back(g);
      continue;
    }
    if (*it == g) continue;
    if (changes_caliber(flag))
      throw BatchUsageError("--resume: '" + g +
                            "' changes the caliber of the batch (its ops ran "
                            "with '" +
                            *it +
                            "'); resume with the batch's own flags, or start a "
                            "new batch");
    *it = g;  // a flag that does not change the caliber (--min-time, --timeout) is replaced
  }
  return out;
}

namespace {

// batch.json's settings into `opt` where they were not given again now; a field of the wrong
// type throws nlohmann::json::exception.
void apply_stored_settings(const nlohmann::json& cfg, BatchOptions& opt) {
  if (opt.backend.empty() || opt.backend == core::kAutoBackend)
    opt.backend = cfg.value("backend", opt.backend);
  if (opt.devices.empty() && cfg.contains("devices"))
    opt.devices = cfg["devices"].get<std::vector<int>>();
  if (cfg.contains("run_args"))
    opt.run_args =
        merge_resumed_args(cfg["run_args"].get<std::vector<std::string>>(), opt.run_args);
  if (opt.timeout_per_op_s <= 0) opt.timeout_per_op_s = cfg.value("timeout_per_op_s", 0.0);
  if (const auto t = cfg.find("timeout_for");
      opt.timeout_for.empty() && t != cfg.end() && t->is_object())
    for (const auto& [op, seconds] : t->items())
      opt.timeout_for.push_back(op + "=" + nlohmann::json(seconds.get<double>()).dump());
  if (opt.scheduler.empty()) opt.scheduler = cfg.value("scheduler", std::string());
  if (const auto n = cfg.find("ops_per_child"); !opt.ops_per_child && n != cfg.end())
    // A whole number as written, which resolve_ops_per_child checks (get<int> wrapped 2^40 to
    // 0); another type throws the type error the catch below names.
    opt.ops_per_child = n->is_number_integer() ? n->dump() : std::to_string(n->get<int>());
  if (const auto s = cfg.find("slurm"); s != cfg.end() && s->is_object()) {
    auto& so = opt.slurm;
    if (so.partition.empty()) so.partition = s->value("partition", std::string());
    if (so.account.empty()) so.account = s->value("account", std::string());
    if (so.gpus_per_task == 0) so.gpus_per_task = s->value("gpus_per_task", 0);
    if (so.time_limit.empty()) so.time_limit = s->value("time_limit", std::string());
    if (so.sbatch_args.empty() && s->contains("sbatch_args"))
      so.sbatch_args = (*s)["sbatch_args"].get<std::vector<std::string>>();
  }
}

// --scheduler, else CALIBER_SCHEDULER, else the resumed batch's, else local.
core::SchedulerKind choose_scheduler(BatchOptions& opt, bool slurm_given) {
  if (opt.scheduler.empty()) opt.scheduler = opt.scheduler_env;
  if (opt.scheduler.empty()) opt.scheduler = core::word_of(core::SchedulerKind::local);
  const auto kind = core::parse_word<core::SchedulerKind>(opt.scheduler);
  if (slurm_given && kind != core::SchedulerKind::slurm)
    throw BatchUsageError(
        "--partition, --account, --gpus-per-task, --time-limit, --sbatch-arg: only with "
        "--scheduler slurm, not '" +
        opt.scheduler + "'");
  if (!kind)
    throw BatchUsageError(
        "--scheduler (CALIBER_SCHEDULER): '" + opt.scheduler +
        "' is not a scheduler; allowed: " + core::allowed_words<core::SchedulerKind>());
  return *kind;
}

const backends::Backend* resolve_batch_backend(const BatchOptions& opt) {
  try {
    return &backends::resolve_backend(opt.backend.empty() ? "auto" : opt.backend);
  } catch (const std::invalid_argument& e) {
    throw BatchUsageError(std::string("--backend: ") + e.what());
  }
}

// A FlagGems batch (--flaggems ROOT among the run flags): one op per benchmark file of the tree.
// Named ops (arguments or OP, --op-file or OP_FILE: a list, or one .py test file of the tree) must
// be files of it; none named: every file. The knob table resolved OP and OP_FILE into opt.ops and
// opt.op_file. The root and every name are checked here, before anything is written.
std::vector<std::string> flaggems_batch_ops(const BatchOptions& opt, const core::Knobs& run_knobs,
                                            const std::string& root) {
  const std::string knob = kFlagGemsFlag;
  // A FlagGems run shards its sweep itself (python/caliber/flaggems_warmup.py), on one host: the
  // Slurm merge job merges caliber's tune caches, not LibTuner's databases.
  if (const int n = run_knobs.parallel_warmup; n > 1)
    throw BatchUsageError("--parallel-warmup (PARALLEL_WARMUP_GPUS): '" + std::to_string(n) +
                          "' with batch --flaggems: each op's run tunes on its one device; "
                          "shard one FlagGems run's sweep with `caliber run --flaggems ROOT "
                          "--parallel-warmup N` instead");
  try {
    check_flaggems_root(knob, root);
    std::vector<std::string> names = opt.ops;
    const std::string& file = opt.op_file;
    if (file.size() > 3 && file.compare(file.size() - 3, 3, ".py") == 0) {
      names.push_back(file);  // the old runner's OP_FILE: one FlagGems test file
    } else if (!file.empty()) {
      const auto more = read_op_file(file);
      names.insert(names.end(), more.begin(), more.end());
    }
    if (names.empty()) return flaggems_ops(root);
    std::vector<std::string> ops;
    for (const auto& n : names) ops.push_back(flaggems_op_of("op", root, n));
    return ops;
  } catch (const BatchUsageError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw BatchUsageError(e.what());
  }
}

// The ops of a new batch: named (or OP), and --op-file (or OP_FILE), else every op listed. The
// knob table resolved OP and OP_FILE into opt.ops and opt.op_file.
std::vector<std::string> batch_ops(const BatchSettings& s) {
  const BatchOptions& opt = s.opt;
  // A node selects cases across ops, and a run takes a node or ops, not both: each op's child
  // would refuse it (every op failed, a batch directory written).
  const std::string root = flaggems_root_of(opt.run_args);
  if (!s.run_knobs.node.empty())
    throw BatchUsageError(
        "--node (TEST_NODE): '" + s.run_knobs.node +
        "' selects cases across ops, and a batch runs one op a child; name the ops (OP) and " +
        // --shape is refused with --flaggems (FlagGems' shapes come from its tree)
        (root.empty() ? "narrow them with --dtypes or --shape" : "narrow them with --dtypes") +
        ", or run the node with `caliber run --node`");
  if (!root.empty()) return flaggems_batch_ops(opt, s.run_knobs, root);
  std::vector<std::string> ops = opt.ops;
  if (!opt.op_file.empty()) {
    const auto more = read_op_file(opt.op_file);
    ops.insert(ops.end(), more.begin(), more.end());
  }
  if (ops.empty()) {
    if (!s.run_knobs.py_ops.empty()) {  // the suites' ops, listed by a child in Python
      core::Knobs k = s.run_knobs;
      k.backend = s.backend->name();
      ops = check_py_suites(s.self, k, {});
    } else {
      ops = default_ops(s.self, s.backend->name());
    }
  }
  if (ops.empty()) throw BatchUsageError("no ops to run");
  return ops;
}

// The ops and their checks: a new batch's (named, listed, or a FlagGems tree's) into one pending
// row each; a resumed batch's rows against the run flags it resumes with (a FlagGems tree may have
// changed since: its files again).
void resolve_ops(BatchSettings& s) {
  core::Knobs k = s.run_knobs;  // the children's knobs, on the batch's backend
  k.backend = s.backend->name();
  const std::string root = flaggems_root_of(s.opt.run_args);
  if (s.resumed()) {
    std::vector<std::string> ops;
    for (const auto& r : s.rows) ops.push_back(r.op);
    if (!root.empty()) {
      BatchOptions named = s.opt;
      named.ops = ops;
      named.op_file.clear();
      (void)flaggems_batch_ops(named, s.run_knobs, root);
    } else if (s.opt.check_ops) {
      s.opt.check_ops(k, ops);
    }
    return;
  }
  s.ops = batch_ops(s);
  std::set<std::string> seen;
  for (const auto& op : s.ops) {
    if (!seen.insert(op).second) continue;  // an op twice would race for its own directory
    OpStatusRow r;
    r.op = op;
    r.backend = s.backend->name();
    s.rows.push_back(std::move(r));
  }
  // Every op must be one of the corpus, and the run flags valid, before the batch directory
  // exists: a name such as --help would otherwise reach a child as a flag. A FlagGems batch's
  // ops were checked against its tree (flaggems_batch_ops); the corpus does not have them.
  if (s.opt.check_ops && root.empty()) s.opt.check_ops(k, s.ops);
  // A FlagGems batch's selection in one child, as its runs will see it: the tree imports (a
  // missing module named), FlagGems' pytest collects every file, the run flags are Python's too.
  if (!root.empty()) {
    try {
      run::check_dry_run(s.self, s.ops, s.opt.run_args);
    } catch (const core::UsageError& e) {
      throw BatchUsageError(e.what());
    }
  }
  try {
    core::check_out_dir(s.opt.out);
  } catch (const std::invalid_argument& e) {
    throw BatchUsageError(std::string("--out: ") + e.what());
  }
}

// --timeout-for OP=SECONDS: each op one of the batch's, once, its seconds a timeout's.
void resolve_op_timeouts(BatchSettings& s) {
  for (const auto& given : s.opt.timeout_for) {
    const auto eq = given.find('=');
    const std::string op = given.substr(0, eq);
    const auto seconds =
        eq == std::string::npos ? std::nullopt : parse_timeout_seconds(given.substr(eq + 1));
    if (op.empty() || !seconds)
      throw BatchUsageError("--timeout-for: '" + one_line(given, 200) +
                            "' is not allowed; allowed: OP=SECONDS, seconds from 0 to 1e7 (0: "
                            "none), e.g. --timeout-for mm=600");
    if (std::none_of(s.rows.begin(), s.rows.end(), [&](const auto& r) { return r.op == op; }))
      throw BatchUsageError("--timeout-for: '" + one_line(given, 200) + "': '" + one_line(op, 80) +
                            "' is not an op of this batch");
    if (!s.op_timeouts.emplace(op, *seconds).second)
      throw BatchUsageError("--timeout-for: '" + one_line(op, 80) + "' is given twice");
  }
}

// --ops-per-child N: a whole number from 1 to kMaxOpsPerChild; more than 1 only where this host
// starts the children (a Slurm task runs one op).
void resolve_ops_per_child(BatchSettings& s) {
  if (!s.opt.ops_per_child) return;
  const std::string& given = *s.opt.ops_per_child;
  const bool digits = !given.empty() && given.size() <= 4 &&
                      given.find_first_not_of("0123456789") == std::string::npos;
  const int n = digits ? std::stoi(given) : 0;
  if (n < 1 || n > kMaxOpsPerChild)
    throw BatchUsageError("--ops-per-child: '" + one_line(given, 80) +
                          "' is not allowed; allowed: a whole number from 1 to " +
                          std::to_string(kMaxOpsPerChild) + " (1: a child per op)");
  if (n > 1 && s.scheduler == core::SchedulerKind::slurm)
    throw BatchUsageError("--ops-per-child: '" + given +
                          "' with --scheduler slurm: each array task runs one op; group ops "
                          "with --scheduler local");
  s.ops_per_child = n;
}

// A new batch: the batch directory and batch.json.
void claim_new_batch(BatchContext& ctx, const BatchScheduler& scheduler) {
  const BatchSettings& s = ctx.settings;
  ctx.batch_dir = core::claim_run_dir(s.opt.out, s.opt.name);
  nlohmann::json cfg = {{"backend", s.backend->name()},
                        {"run_args", s.opt.run_args},
                        {"timeout_per_op_s", s.opt.timeout_per_op_s},
                        {"ops", s.ops}};
  if (!s.op_timeouts.empty()) cfg["timeout_for"] = s.op_timeouts;
  if (s.ops_per_child > 1) cfg["ops_per_child"] = s.ops_per_child;
  if (s.scheduler != core::SchedulerKind::local) cfg["scheduler"] = s.opt.scheduler;
  const nlohmann::json stored = scheduler.stored(s);  // items() does not keep it alive
  for (const auto& [k, v] : stored.items()) cfg[k] = v;
  core::write_file_atomic(ctx.batch_dir / kBatchConfigFile, cfg.dump(2) + "\n");
}

// The refusal of a directory whose lease a live batch holds.
BatchUsageError directory_in_use(const fs::path& dir, const std::string& holder) {
  return BatchUsageError("--resume: '" + dir.string() + "' is in use by a batch that still runs (" +
                         holder + "); let it end, or stop it, first");
}

// The lease of the batch's directory for this process. A --resume of the same directory that
// slipped in after resolve_batch's check is refused here, before anything is written; a link in
// the lease file's place too.
BatchLease take_batch_lease(const fs::path& dir, std::ostream& err) {
  std::string holder, warning;
  std::optional<BatchLease> lease = [&] {
    try {
      return BatchLease::take(dir, &holder, &warning);
    } catch (const std::runtime_error& e) {
      throw BatchUsageError("'" + (dir / kBatchLeaseFile).string() + "': " + e.what() +
                            "; the batch holds it while it runs");
    }
  }();
  if (!lease) throw directory_in_use(dir, holder);
  if (!warning.empty()) err << "caliber batch: " << warning << std::endl;
  return std::move(*lease);
}

// Every op not ok is pending again; the line that says what the batch will do.
void queue_pending(BatchContext& ctx, const BatchScheduler& scheduler, std::ostream& out) {
  // A resumed directory's rows at `running`: nobody holds its lease (resolve_batch checked), so
  // the batch that wrote them ended without recording their end.
  std::string stale;
  for (const auto& r : ctx.rows)
    if (r.status == core::OpStatus::running) stale += (stale.empty() ? "" : ", ") + r.op;
  if (!stale.empty())
    out << "batch: " << one_line(stale, 200)
        << ": left at running by a batch that ended without recording their end (killed?); "
           "they run again"
        << std::endl;
  for (std::size_t i = 0; i < ctx.rows.size(); ++i)
    if (ctx.rows[i].status != core::OpStatus::ok) {
      ctx.rows[i].status = core::OpStatus::pending;
      ctx.rows[i].reason.clear();
      ctx.rows[i].backend = ctx.backend->name();
      ctx.pending.push_back(i);
    }
  out << "batch: " << ctx.batch_dir.string() << " (" << ctx.pending.size() << " op(s) to run"
      << (ctx.opt.resume_dir.empty() ? "" : ", resumed") << ", backend " << ctx.backend->name()
      << ", " << scheduler.describe(ctx.settings) << ")" << std::endl;
  write_ops_status(ctx.batch_dir, ctx.rows);
}

// The counts per status, the exit code, and how to resume.
BatchOutcome summarize(const BatchContext& ctx, int sig, std::ostream& out) {
  BatchOutcome outcome;
  outcome.batch_dir = ctx.batch_dir;
  // The final statuses once more: a rewrite that failed on a full disk must not leave an op at
  // `running`. If even this fails, the statuses go to stderr and the batch is not ok.
  write_ops_status(ctx.batch_dir, ctx.rows);
  const bool unwritten = !status_write_error().empty();
  if (unwritten)
    std::cerr << "caliber batch: " << kOpsStatusFile << " could not be written ("
              << status_write_error() << "); the final statuses are:\n"
              << ops_status_csv(ctx.rows);
  std::size_t not_ok = 0;
  std::map<std::string, int> counts;
  for (const auto& r : ctx.rows) {
    not_ok += r.status != core::OpStatus::ok && r.status != core::OpStatus::skipped;
    ++counts[core::to_string(r.status)];
  }
  outcome.exit_code = sig != 0 ? 128 + sig : not_ok > 0 || unwritten ? 1 : 0;
  const std::string dir = ctx.batch_dir.string();
  out << "batch: " << dir << ":";
  for (const auto& [status, n] : counts) out << " " << status << " " << n;
  out << " (" << kOpsStatusFile << ")" << std::endl;
  if (outcome.exit_code != 0 && outcome.exit_code != 1)
    out << "batch: resume with: caliber batch --resume " << dir << std::endl;
  else if (not_ok > 0)
    out << "batch: rerun what is not ok with: caliber batch --resume " << dir << std::endl;
  outcome.statuses = ctx.rows;
  return outcome;
}

}  // namespace

std::unique_ptr<BatchScheduler> make_scheduler(core::SchedulerKind kind) {
  return kind == core::SchedulerKind::slurm ? make_slurm_scheduler() : make_local_scheduler();
}

BatchSettings resolve_batch(const BatchOptions& opt) {
  BatchSettings s;
  s.opt = opt;
  s.self = self_executable(opt);
  if (opt.resume_given && opt.resume_dir.string().find_first_not_of(" \t") == std::string::npos)
    throw BatchUsageError("--resume: '" + opt.resume_dir.string() +
                          "' is empty; allowed: a batch directory");
  if (s.resumed()) {
    load_resumed_batch(s);
    if (const auto holder = batch_lease_holder(s.opt.resume_dir))
      throw directory_in_use(s.opt.resume_dir, *holder);
  }
  s.scheduler = choose_scheduler(s.opt, slurm_flags_given(opt.slurm));
  s.backend = resolve_batch_backend(s.opt);
  // The children's run flags as each child will read them; a resumed batch's come from its
  // batch.json.
  s.run_knobs = resolve_run_args(
      s.opt.run_args, core::process_env,
      s.resumed() ? "--resume: '" + (s.opt.resume_dir / kBatchConfigFile).string() + "' run_args"
                  : std::string("run flags"));
  resolve_ops_per_child(s);
  // Everything the scheduler needs is checked before anything is claimed.
  make_scheduler(s.scheduler)->resolve(s);
  resolve_ops(s);
  resolve_op_timeouts(s);
  return s;
}

BatchOutcome run_batch(const BatchSettings& s, std::ostream& out, std::ostream& err) {
  const auto scheduler = make_scheduler(s.scheduler);
  BatchContext ctx(s);
  ctx.rows = s.rows;
  if (s.resumed())
    ctx.batch_dir = s.opt.resume_dir;
  else
    claim_new_batch(ctx, *scheduler);
  // Held until this process ends, however it ends (lease.hpp).
  const BatchLease lease = take_batch_lease(ctx.batch_dir, err);
  fs::create_directories(ctx.batch_dir / "logs");
  queue_pending(ctx, *scheduler, out);

  SignalGuard guard;
  ctx.progress = s.opt.progress.value_or(::isatty(STDERR_FILENO) == 1);
  const int sig = scheduler->execute(ctx, out, err);
  std::error_code ignored;  // nothing to lose: every child has ended
  fs::remove_all(ctx.batch_dir / kBatchStagingDir, ignored);
  return summarize(ctx, sig, out);
}

BatchOutcome run_batch(const BatchOptions& opt, std::ostream& out, std::ostream& err) {
  return run_batch(resolve_batch(opt), out, err);
}

}  // namespace caliber::run
