#include "run/py_ops.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <ostream>
#include <thread>

#include "core/format.hpp"
#include "proc/process.hpp"
#include "run/driver.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

constexpr const char* kHandoffGuard = "CALIBER_PY_HANDOFF";
constexpr const char* kHandoffStatus = "CALIBER_PY_HANDOFF_STATUS";

std::string how_it_ended(int st) {
  if (WIFSIGNALED(st)) return std::string("was killed by ") + ::strsignal(WTERMSIG(st));
  return "exited " + std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

fs::path this_executable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

// The --py-ops values among the arguments (--py-ops X and --py-ops=X, each occurrence).
std::optional<std::string> py_ops_argument(int argc, char** argv) {
  std::optional<std::string> joined;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    std::optional<std::string> v;
    if (a == "--py-ops" && i + 1 < argc)
      v = argv[++i];
    else if (a.rfind("--py-ops=", 0) == 0)
      v = a.substr(9);
    else if (a == "--py-ops")
      v = "";
    if (v) joined = joined ? *joined + "," + *v : *v;
  }
  return joined;
}

// The --flaggems value among the arguments (the last occurrence), nullopt when absent.
std::optional<std::string> flaggems_argument(int argc, char** argv) {
  std::optional<std::string> root;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a == "--flaggems")
      root = i + 1 < argc ? std::string(argv[++i]) : std::string();
    else if (a.rfind("--flaggems=", 0) == 0)
      root = a.substr(11);
  }
  return root;
}

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::optional<fs::path> on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (const auto& dir : core::split_fields(path, ':')) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (executable_file(p)) return p;
  }
  return std::nullopt;
}

// caliber's Python package beside the executable: installed (<prefix>/bin/caliber and
// <prefix>/lib/caliber/python/caliber) or a build tree (<build>/caliber and
// <build>/python/caliber).
std::optional<fs::path> package_root(const fs::path& exe) {
  const fs::path dir = exe.parent_path();
  for (const fs::path& root :
       {dir / "../lib/caliber/python", dir / "../lib64/caliber/python", dir / "python"}) {
    std::error_code ec;
    if (fs::is_regular_file(root / "caliber" / "__init__.py", ec))
      return fs::weakly_canonical(root, ec);
  }
  return std::nullopt;
}

// The refusal a caliber child printed: its last line of text but the usage hint ("Run with
// --help"; warnings may come before it), without the "caliber: " prefix.
std::string child_refusal(const std::string& out) {
  std::string last;
  for (const auto& line : core::split_fields(out, '\n')) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line.rfind("Run with --help", b) == b) continue;
    last = line.substr(b);
  }
  const std::string prefix = "caliber: ";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  while (!last.empty() && (last.back() == '\r' || last.back() == ' ')) last.pop_back();
  return last;
}

// The hand-off's record of how far the CLI got in the Python process: caliber_cli_main writes
// "started" when it begins and "done N" at its exit point (note_handoff_*), so an interpreter
// that exits on its own (sys.exit at a suite's import, os._exit mid-run, CALIBER_PYTHON=/bin/true)
// is never passed off as caliber's verdict.
struct Progress {
  bool started = false;
  std::optional<int> done;
};

Progress read_progress(const std::string& file) {
  Progress p;
  std::ifstream in(file);
  std::string word;
  while (in >> word) {
    if (word == "started") p.started = true;
    int code = 0;
    if (word == "done" && in >> code) p.done = code;
  }
  return p;
}

// The seconds a suite may take to import before its interpreter is stopped (a suite that sleeps
// or blocks at import): CALIBER_PY_IMPORT_TIMEOUT, default 300.
double import_timeout_s() {
  const char* v = std::getenv("CALIBER_PY_IMPORT_TIMEOUT");
  char* end = nullptr;
  const double t = v != nullptr ? std::strtod(v, &end) : 0;
  return v != nullptr && end != v && *end == '\0' && t > 0 && t < 1e6 ? t : 300.0;
}

// caliber's exit code for the interpreter's wait status `st` and how far the CLI got in it.
int handed_off_exit(int st, const Progress& p, bool timed_out, const std::string& python,
                    const std::function<void(const std::string&)>& refuse) {
  if (timed_out) {
    refuse("did not import within " + core::general(import_timeout_s(), 6) +
           " s (CALIBER_PY_IMPORT_TIMEOUT); the interpreter was stopped");
    return 2;
  }
  if (!p.started) {
    // Exit 2 from caliber's package before the CLI: it refused the suite and said why.
    if (WIFEXITED(st) && WEXITSTATUS(st) == 2) return 2;
    // Whose fault: an interpreter that cannot import caliber's package alone is CALIBER_PYTHON's,
    // not the suite's (or the FlagGems tree's) that it was handed.
    // (It must say so: /bin/true exits 0 to anything.)
    const std::string says = "caliber-imports";
    const auto probe = run_capture(
        {python, "-c", "import caliber, sys; sys.stdout.write('" + says + "')"}, 60.0, true);
    if (!probe.status.ok() || probe.out.find(says) == std::string::npos) {
      std::cerr << "caliber: "
                << core::knob_message(*core::find_knob("python"), python,
                                      how_it_ended(st) +
                                          " before caliber ran, and cannot import "
                                          "caliber's package on its own (" +
                                          probe.status.describe() + ")")
                << "\n";
      return 2;
    }
    refuse("does not import: " + python + " " + how_it_ended(st) +
           " before caliber ran (a suite that exits at import?)");
    return 2;
  }
  if (!p.done) {
    std::cerr << "caliber: the Python process " << how_it_ended(st)
              << " before the run finished (os._exit or a crash in a suite?): its output is "
                 "incomplete\n";
    // Killed by a signal: 128+N, as a shell reports it, so a batch still says `crashed`.
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  }
  return *p.done;
}

// Waits for the interpreter, stopping it when the CLI has not started within the import
// timeout. Returns its wait status; `timed_out` says it was stopped.
int wait_python(pid_t pid, const std::string& status_file, bool& timed_out) {
  const auto t0 = std::chrono::steady_clock::now();
  const double limit = import_timeout_s();
  int st = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return st;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!timed_out && waited > limit && !read_progress(status_file).started) {
      timed_out = true;
      ::kill(pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Runs the interpreter (argv) as a child, SIGINT and SIGQUIT left to it as a shell would, and
// turns what it did into caliber's exit code.
int run_handed_off(const std::vector<std::string>& args,
                   const std::function<void(const std::string&)>& refuse) {
  std::string status_file = (fs::temp_directory_path() / "caliber-handoff-XXXXXX").string();
  const int fd = ::mkstemp(status_file.data());
  if (fd < 0)
    return refuse("cannot create a temporary file (" + std::string(std::strerror(errno)) + ")"), 2;
  ::close(fd);
  ::setenv(kHandoffStatus, status_file.c_str(), 1);
  // The interpreter's parent is this process now, not the batch that started it: a batch child's
  // watch for its dead batch (CALIBER_BATCH_PARENT) must look at this process, which itself dies
  // with the batch (and takes the interpreter with it: PR_SET_PDEATHSIG below).
  if (std::getenv("CALIBER_BATCH_PARENT") != nullptr)
    ::setenv("CALIBER_BATCH_PARENT", std::to_string(::getpid()).c_str(), 1);
  std::vector<std::string> copy = args;
  std::vector<char*> cargs;
  for (auto& a : copy) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  struct sigaction ign {
  }, old_int{}, old_quit{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ign, &old_int);
  ::sigaction(SIGQUIT, &ign, &old_quit);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::execv(cargs[0], cargs.data());
    ::_exit(127);
  }
  bool timed_out = false;
  const int st = pid > 0 ? wait_python(pid, status_file, timed_out) : 0;
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  const Progress p = read_progress(status_file);
  ::unlink(status_file.c_str());
  if (pid < 0) return refuse("could not start " + args[0]), 2;
  return handed_off_exit(st, p, timed_out, args[0], refuse);
}

}  // namespace

bool selects_cases_in_process(const std::string& command) {
  return command == "run" || command == "list";
}

std::optional<int> hand_off_to_python(int argc, char** argv, std::ostream& err) {
  if (argc < 3 || !selects_cases_in_process(argv[1])) return std::nullopt;
  // A Python suite, or FlagGems' benchmark suite (run only: its cases come from pytest).
  std::optional<std::string> suites = py_ops_argument(argc, argv);
  const char* knob = "py_ops";
  if (!suites && std::string(argv[1]) == "run") {
    suites = flaggems_argument(argc, argv);
    knob = "flaggems";
  }
  if (!suites) return std::nullopt;
  const core::KnobSpec& spec = *core::find_knob(knob);
  try {
    // The knob's own checks (each suite exists, is a .py file; a FlagGems checkout) before any
    // interpreter starts.
    (void)core::resolve_knobs({{knob, *suites}},
                              [](const std::string&) { return std::optional<std::string>(); });
  } catch (const core::KnobError& e) {
    err << "caliber: " << e.what() << "\n";
    return 2;
  }
  if (std::getenv(kHandoffGuard) != nullptr) {
    err << "caliber: "
        << core::knob_message(spec, *suites,
                              "reached the caliber executable again from Python "
                              "(CALIBER_PYTHON names caliber itself?)")
        << "\n";
    return 2;
  }
  // The interpreter: CALIBER_PYTHON (a path, or a name on PATH), else python3.
  const std::optional<std::string> chosen = core::knob_env("python");
  const std::string want = chosen ? *chosen : "python3";
  std::optional<fs::path> python;
  if (want.find('/') != std::string::npos)
    python = executable_file(want) ? std::optional<fs::path>(want) : std::nullopt;
  else
    python = on_path(want);
  if (!python) {
    err << "caliber: "
        << core::knob_message(spec, *suites,
                              "needs a Python interpreter, and " +
                                  (chosen ? "CALIBER_PYTHON='" + want + "' is not an executable"
                                          : std::string("no python3 is on PATH")) +
                                  "; set CALIBER_PYTHON to a python3 with numpy/torch as the "
                                  "suite needs")
        << "\n";
    return 2;
  }
  const fs::path exe = this_executable();
  const auto root = package_root(exe);
  std::string pythonpath = root ? root->string() : "";
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0')
    pythonpath += (pythonpath.empty() ? "" : ":") + std::string(old);
  if (pythonpath.empty()) {
    err << "caliber: "
        << core::knob_message(
               spec, *suites,
               "needs caliber's Python package, which is not beside " + exe.string() +
                   " (lib/caliber/python); build with -DCALIBER_BUILD_PYTHON=ON or set "
                   "PYTHONPATH")
        << "\n";
    return 2;
  }
  ::setenv("PYTHONPATH", pythonpath.c_str(), 1);
  ::setenv("CALIBER_EXE", exe.c_str(), 1);
  ::setenv(kHandoffGuard, "1", 1);
  std::vector<std::string> args = {python->string(), "-m", "caliber"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::cout.flush();
  return run_handed_off(args, [&](const std::string& why) {
    err << "caliber: " << core::knob_message(spec, *suites, why) << "\n";
  });
}

std::string py_suite_source(const std::string& path) {
  return "python:" + fs::absolute(path).lexically_normal().string();
}

std::vector<std::string> py_suites_missing(const std::string& list) {
  std::vector<std::string> missing;
  for (const auto& field : core::split_fields(list, ',')) {
    if (field.empty()) continue;
    const std::string source = py_suite_source(field);
    bool loaded = false;
    for (std::size_t i = 0; i < registered_ops().size() && !loaded; ++i)
      loaded = op_source(i) == source;
    if (!loaded) missing.push_back(field);
  }
  return missing;
}

std::vector<std::string> py_suite_ops(const std::string& list, const std::vector<OpEntry>& corpus) {
  const auto missing = py_suites_missing(list);
  if (!missing.empty())
    throw SelectionError("--py-ops: '" + missing.front() +
                         "' is not loaded in this process; allowed: a suite run through "
                         "`caliber run --py-ops` or `python3 -m caliber run --py-ops` "
                         "(docs/python.md)");
  std::vector<std::string> sources;
  for (const auto& field : core::split_fields(list, ','))
    if (!field.empty()) sources.push_back(py_suite_source(field));
  std::vector<std::string> names;
  for (const auto& e : corpus)
    if (std::find(sources.begin(), sources.end(), e.source) != sources.end())
      names.push_back(e.info.name);
  return names;
}

void check_dry_run(const fs::path& self, const std::vector<std::string>& ops,
                   const std::vector<std::string>& args,
                   const std::map<std::string, std::optional<std::string>>& env) {
  SpawnSpec dry;
  dry.argv = {self.string(), "run"};
  dry.argv.insert(dry.argv.end(), ops.begin(), ops.end());
  dry.argv.emplace_back("--dry-run");
  dry.argv.insert(dry.argv.end(), args.begin(), args.end());
  dry.env = env;
  const Captured r = run_capture(dry, 600, /*merge_stderr=*/true);
  if (r.status.kind != ExitKind::exited || r.status.code != 2) return;
  const std::string last = child_refusal(r.out);
  throw UsageError(last.empty() ? "`caliber run --dry-run` of the selection refused it"
                                : last.substr(0, 600));
}

std::vector<std::string> check_py_suites(const fs::path& self, const core::Knobs& k,
                                         const std::vector<std::string>& ops) {
  std::vector<std::string> argv = {self.string(),
                                   "list",
                                   "--names",
                                   "--py-ops=" + k.py_ops,
                                   "--backend=" + k.backend,
                                   "--level=" + std::string(core::to_string(k.level)),
                                   "--shape-mode=" + std::string(core::to_string(k.shape_mode))};
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  for (const auto& lib : k.ops_lib) argv.push_back("--ops-lib=" + lib.string());
  if (!k.shapes_file.empty()) argv.push_back("--shapes=" + k.shapes_file);
  if (!k.dtypes.empty()) argv.push_back("--dtypes=" + join(k.dtypes));
  argv.insert(argv.end(), ops.begin(), ops.end());
  const auto r = run_capture(argv, 600, /*merge_stderr=*/true);
  if (!r.status.ok()) {
    const std::string why = child_refusal(r.out);
    throw UsageError(why.empty() ? "--py-ops: '" + k.py_ops + "': `caliber list` of the suite " +
                                       r.status.describe()
                                 : why);
  }
  // Names only: a line with a space is a warning the interpreter printed, not an op.
  std::vector<std::string> names;
  for (const auto& line : core::split_fields(r.out, '\n'))
    if (!line.empty() && line.find_first_of(" \t:") == std::string::npos) names.push_back(line);
  return names;
}

}  // namespace caliber::run
