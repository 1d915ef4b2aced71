#include "proc/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "records/output_path.hpp"

extern char** environ;

namespace caliber::run {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Live process groups, lock-free so the signal handler may read them.
constexpr std::size_t kMaxChildren = 1024;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

void register_child(pid_t pg) noexcept {
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pg)) return;
  }
}

void unregister_child(pid_t pg) noexcept {
  for (auto& slot : g_children) {
    pid_t expected = pg;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

volatile sig_atomic_t g_signal = 0;
volatile bool g_interrupted = false;
constexpr std::array<int, 3> kGuarded = {SIGINT, SIGTERM, SIGHUP};
std::array<struct sigaction, 3> g_previous{};

void on_signal(int sig) {
  if (g_signal != 0) {
    // Asked twice: no more patience. Kill every registered group and leave.
    for (auto& slot : g_children) {
      const pid_t pg = slot.load();
      if (pg > 0) ::kill(-pg, SIGKILL);
    }
    ::_exit(128 + sig);
  }
  g_signal = sig;
  g_interrupted = true;
}

bool is_crash_signal(int sig) {
  switch (sig) {
    case SIGSEGV:
    case SIGABRT:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGTRAP:
    case SIGSYS:
    case SIGKILL:  // most often the OOM killer
      return true;
    default:
      return false;
  }
}

std::string format_seconds(double s) {
  std::ostringstream o;
  o.precision(s < 10 ? 2 : 4);
  o << s;
  return o.str();
}

// Builds the child's environment in the parent: after fork only async-signal-safe calls are
// allowed.
std::vector<std::string> child_environment(
    const std::map<std::string, std::optional<std::string>>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    const auto eq = kv.find('=');
    const std::string name = kv.substr(0, eq);
    if (overrides.count(name) == 0) out.push_back(std::move(kv));
  }
  for (const auto& [name, value] : overrides)
    if (value) out.push_back(name + "=" + *value);
  return out;
}

std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

ExitStatus decode(int wstatus, double duration) {
  ExitStatus st;
  st.duration_s = duration;
  if (WIFEXITED(wstatus)) {
    st.kind = ExitKind::exited;
    st.code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    st.kind = ExitKind::signaled;
    st.signal = WTERMSIG(wstatus);
  }
  return st;
}

// The log file's descriptor (appended to), or -1 when the spec has none.
int open_log(const SpawnSpec& spec) {
  if (spec.log_file.empty()) return -1;
  // Never through a symbolic link (a planted logs/OP.log -> ~/.bashrc) nor into a fifo.
  return core::open_append_regular(spec.log_file);
}

// What the child needs between fork and exec, prepared before the fork (no allocation after it).
struct ChildSetup {
  pid_t parent;
  int log_fd;
  int stdout_fd;
  bool merge_stderr;  // stderr into stdout_fd as well
  int err_fd;         // the write end of the pipe that carries exec's errno back
  const char* cwd;
  bool search_path;
  bool hold_sigterm;
  char** argv;
  char** envp;
};

// The child, from fork to exec: only async-signal-safe calls. Its own process group, death with
// its parent, default signal handling, the log, then exec; on failure errno goes up the pipe.
[[noreturn]] void exec_child(const ChildSetup& c) {
  ::setpgid(0, 0);
  // A child dies with its parent (a batch killed with SIGKILL must not leave its ops running):
  // SIGTERM lets a `caliber run` child end its run log. The parent may have died between fork
  // and prctl, when no signal would come: then the child's parent is no longer `parent`.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != c.parent) ::_exit(128 + SIGTERM);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
  sigset_t mask;
  ::sigemptyset(&mask);
  if (c.hold_sigterm) {
    // Held: blocked, so that one sent before the child's handler is in stays pending for it; and
    // ignored, so that a library that unblocks signals while the program loads (before main;
    // seen on a GPU host, 2026-12-05) discards it instead of dying of it. The child's watch for
    // its dead parent does not need the signal (it polls its parent; docs/limits.md, Processes).
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigemptyset(&ign.sa_mask);
    ::sigaction(SIGTERM, &ign, nullptr);
    ::sigaddset(&mask, SIGTERM);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  if (c.log_fd >= 0) {
    ::dup2(c.log_fd, STDOUT_FILENO);
    ::dup2(c.log_fd, STDERR_FILENO);
  }
  if (c.stdout_fd >= 0) ::dup2(c.stdout_fd, STDOUT_FILENO);
  if (c.stdout_fd >= 0 && c.merge_stderr) ::dup2(c.stdout_fd, STDERR_FILENO);
  if (c.cwd[0] != '\0' && ::chdir(c.cwd) != 0) {
    const int e = errno;
    [[maybe_unused]] auto n = ::write(c.err_fd, &e, sizeof e);
    ::_exit(127);
  }
  if (c.search_path)
    ::execvpe(c.argv[0], c.argv, c.envp);
  else
    ::execve(c.argv[0], c.argv, c.envp);
  const int e = errno;
  [[maybe_unused]] auto n = ::write(c.err_fd, &e, sizeof e);
  ::_exit(127);
}

// The parent's side of the exec pipe: it closes unread when exec succeeds; an errno on it means
// the child could not start (it is reaped, and the error thrown).
void expect_exec(pid_t pid, int read_fd, const std::string& program) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(read_fd, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(read_fd);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    throw std::system_error(child_errno, std::generic_category(), "cannot start '" + program + "'");
  }
}

// Forks and execs `spec`; stdout goes to `stdout_fd` when >= 0 (overrides log_file for stdout).
pid_t spawn_impl(const SpawnSpec& spec, int stdout_fd, bool merge_stderr = false) {
  if (spec.argv.empty()) throw std::invalid_argument("spawn: empty argv");
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> envs = child_environment(spec.env);
  std::vector<char*> argv = c_array(args);
  std::vector<char*> envp = c_array(envs);
  const std::string cwd = spec.cwd.string();
  const int log_fd = open_log(spec);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    if (log_fd >= 0) ::close(log_fd);
    throw std::system_error(e, std::generic_category(), "pipe");
  }
  const ChildSetup child{::getpid(),
                         log_fd,
                         stdout_fd,
                         merge_stderr,
                         err_pipe[1],
                         cwd.c_str(),
                         spec.argv[0].find('/') == std::string::npos,
                         spec.hold_sigterm,
                         argv.data(),
                         envp.data()};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    if (log_fd >= 0) ::close(log_fd);
    throw std::system_error(e, std::generic_category(), "fork");
  }
  if (pid == 0) exec_child(child);
  // Parent: also set the group here, so that a signal sent right after spawn reaches the group.
  ::setpgid(pid, pid);
  ::close(err_pipe[1]);
  if (log_fd >= 0) ::close(log_fd);
  expect_exec(pid, err_pipe[0], spec.argv[0]);
  return pid;
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGSYS:
      return "SIGSYS";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGALRM:
      return "SIGALRM";
    default:
      return "signal " + std::to_string(sig);
  }
}

bool ExitStatus::crashed() const noexcept {
  if (kind == ExitKind::signaled) return true;
  // A shell between us and the program reports the program's death as 128+N.
  if (kind == ExitKind::exited && code > 128 && code < 160) return is_crash_signal(code - 128);
  return false;
}

std::string ExitStatus::describe() const {
  switch (kind) {
    case ExitKind::exited:
      if (crashed())
        return "exit " + std::to_string(code) + " (" + signal_name(code - 128) + " below it)";
      return "exit " + std::to_string(code);
    case ExitKind::signaled:
      return signal_name(signal) + " (signal " + std::to_string(signal) + ")";
    case ExitKind::timeout:
      return "timeout after " + format_seconds(duration_s) + " s (ended by " + signal_name(signal) +
             ")";
    case ExitKind::stopped:
      return "stopped by caliber after " + format_seconds(duration_s) + " s (" +
             signal_name(signal) + ")";
  }
  return "unknown";
}

Child Child::spawn(const SpawnSpec& spec) {
  Child c;
  c.start_ = Clock::now();
  c.pid_ = spawn_impl(spec, -1);
  register_child(c.pid_);
  return c;
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_), start_(other.start_), status_(std::move(other.status_)) {
  other.pid_ = -1;
  other.status_.reset();
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = other.pid_;
    start_ = other.start_;
    status_ = std::move(other.status_);
    other.pid_ = -1;
    other.status_.reset();
  }
  return *this;
}

Child::~Child() {
  release();
}

void Child::release() noexcept {
  if (running()) {
    try {
      terminate(1.0);
    } catch (...) {
    }
  }
  pid_ = -1;
}

double Child::elapsed_s() const {
  if (status_) return status_->duration_s;
  return seconds_since(start_);
}

std::optional<ExitStatus> Child::poll() {
  if (status_ || pid_ <= 0) return status_;
  int ws = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &ws, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) {
    // Reaped elsewhere (or never ours): report it as gone rather than wait forever.
    ExitStatus st;
    st.kind = ExitKind::signaled;
    st.signal = 0;
    st.duration_s = seconds_since(start_);
    status_ = st;
  } else {
    status_ = decode(ws, seconds_since(start_));
  }
  // Grandchildren the program left behind in its group must not outlive it (they may hold a
  // device).
  ::kill(-pid_, SIGKILL);
  unregister_child(pid_);
  return status_;
}

std::optional<ExitStatus> Child::wait_for(double seconds) {
  const auto t0 = Clock::now();
  auto nap = std::chrono::microseconds(500);
  for (;;) {
    if (auto st = poll()) return st;
    if (seconds >= 0 && seconds_since(t0) >= seconds) return std::nullopt;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(20000));
  }
}

std::optional<ExitStatus> Child::wait(double timeout_s, double grace_s,
                                      const volatile bool* interrupted) {
  auto nap = std::chrono::microseconds(500);
  for (;;) {
    if (auto st = poll()) return st;
    if (interrupted != nullptr && *interrupted) return std::nullopt;
    if (timeout_s > 0 && seconds_since(start_) >= timeout_s)
      return terminate(grace_s, ExitKind::timeout);
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(20000));
  }
}

ExitStatus Child::terminate(double grace_s, ExitKind as) {
  if (status_) return *status_;
  if (pid_ <= 0) return ExitStatus{};
  const double at = seconds_since(start_);
  int sent = SIGTERM;
  ::kill(-pid_, SIGTERM);
  auto st = wait_for(grace_s);
  if (!st) {
    sent = SIGKILL;
    ::kill(-pid_, SIGKILL);
    st = wait_for(-1);
  }
  // It ended because of what we sent, unless it had ended on its own before we sent anything.
  const bool ours =
      st->kind == ExitKind::signaled && (st->signal == SIGTERM || st->signal == SIGKILL);
  if (ours || (st->kind == ExitKind::exited && st->duration_s >= at)) {
    st->kind = as;
    st->signal = sent;
  }
  status_ = st;
  return *st;
}

namespace {
std::filesystem::path& executable_override() {
  static std::filesystem::path exe;
  return exe;
}
}  // namespace

std::filesystem::path caliber_executable() {
  if (!executable_override().empty()) return executable_override();
  return std::filesystem::read_symlink("/proc/self/exe");
}

void set_caliber_executable(const std::filesystem::path& exe) {
  executable_override() = exe;
}

Captured run_capture(const std::vector<std::string>& argv, double timeout_s, bool merge_stderr) {
  SpawnSpec spec;
  spec.argv = argv;
  return run_capture(spec, timeout_s, merge_stderr);
}

Captured run_capture(const SpawnSpec& in, double timeout_s, bool merge_stderr) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  Child c;
  try {
    SpawnSpec spec = in;
    spec.log_file.clear();  // the output comes back through the pipe
    c.start_ = Clock::now();
    c.pid_ = spawn_impl(spec, fds[1], merge_stderr);
    register_child(c.pid_);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  Captured out;
  char buf[4096];
  auto nap = std::chrono::microseconds(500);
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) break;  // every writer closed
    if (errno != EAGAIN && errno != EINTR) break;
    if (timeout_s > 0 && c.elapsed_s() >= timeout_s) break;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(20000));
  }
  ::close(fds[0]);
  auto st = c.wait(timeout_s, 2.0);
  out.status = st ? *st : c.terminate(2.0);
  return out;
}

std::size_t ChildPool::running() const noexcept {
  std::size_t n = 0;
  for (const auto& s : slots_) n += s.has_value();
  return n;
}

void ChildPool::start(std::size_t slot, std::size_t tag, const SpawnSpec& spec,
                      std::optional<double> timeout_s) {
  if (slots_.at(slot)) throw std::logic_error("ChildPool::start: slot is busy");
  Running r;
  r.tag = tag;
  r.timeout_s = timeout_s;
  r.child = Child::spawn(spec);
  slots_[slot] = std::move(r);
}

int ChildPool::run(const Hooks& hooks, double timeout_s, double grace_s) {
  for (;;) {
    if (SignalGuard::interrupted()) break;
    bool more = false;
    for (std::size_t s = 0; s < slots_.size(); ++s)
      if (!slots_[s] && !SignalGuard::interrupted()) more = hooks.fill(s) || more;
    if (running() == 0 && !more) break;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      auto& slot = slots_[s];
      if (!slot) continue;
      auto st = slot->child.poll();
      const double limit = slot->timeout_s.value_or(timeout_s);
      if (!st && limit > 0 && slot->child.elapsed_s() >= limit)
        st = slot->child.terminate(grace_s, ExitKind::timeout);
      if (!st) continue;
      const Ended e{s, slot->tag, *st};
      slot.reset();
      hooks.ended(e);
    }
    if (hooks.tick) hooks.tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return SignalGuard::received();
}

std::vector<ChildPool::Ended> ChildPool::stop_all(double grace_s) {
  for (auto& slot : slots_)
    if (slot && slot->child.running()) ::kill(-slot->child.pid(), SIGTERM);
  std::vector<Ended> out;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    auto& slot = slots_[s];
    if (!slot) continue;
    out.push_back({s, slot->tag, slot->child.terminate(grace_s, ExitKind::stopped)});
    slot.reset();
  }
  return out;
}

SignalGuard::SignalGuard() {
  g_signal = 0;
  g_interrupted = false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a sleeping parent wakes up and looks at the flag
  for (std::size_t i = 0; i < kGuarded.size(); ++i) ::sigaction(kGuarded[i], &sa, &g_previous[i]);
}

SignalGuard::~SignalGuard() {
  for (std::size_t i = 0; i < kGuarded.size(); ++i)
    ::sigaction(kGuarded[i], &g_previous[i], nullptr);
}

int SignalGuard::received() noexcept {
  return g_signal;
}

void SignalGuard::reset() noexcept {
  g_signal = 0;
  g_interrupted = false;
}

const volatile bool* interrupt_flag() noexcept {
  return &g_interrupted;
}

std::vector<pid_t> live_children() {
  std::vector<pid_t> out;
  for (auto& slot : g_children) {
    const pid_t pg = slot.load();
    if (pg > 0) out.push_back(pg);
  }
  return out;
}

std::vector<pid_t> ancestors() {
  std::vector<pid_t> out;
  pid_t pid = ::getppid();
  while (pid > 1 && out.size() < 64) {
    out.push_back(pid);
    // /proc/PID/stat: "PID (comm) STATE PPID ..."; comm may hold spaces and parentheses, so the
    // fields are read after its last ')'.
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) break;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    pid_t parent = 0;
    if (!(rest >> state >> parent)) break;
    pid = parent;
  }
  return out;
}

int other_processes(const std::vector<unsigned>& on_device, pid_t self,
                    const std::vector<pid_t>& ancestors) {
  const auto pid_of = [](unsigned x) { return static_cast<pid_t>(x); };
  if (std::none_of(on_device.begin(), on_device.end(),
                   [&](unsigned x) { return pid_of(x) == self; }))
    return -1;
  std::vector<pid_t> others;  // once each: a driver may list a process once per context
  for (const unsigned x : on_device) {
    const pid_t pid = pid_of(x);
    if (pid == self || std::find(ancestors.begin(), ancestors.end(), pid) != ancestors.end() ||
        std::find(others.begin(), others.end(), pid) != others.end())
      continue;
    others.push_back(pid);
  }
  return static_cast<int>(others.size());
}

}  // namespace caliber::run
