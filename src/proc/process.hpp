// Process control for child processes: spawn in its own process group, wait with a timeout,
// terminate the whole group (SIGTERM, grace period, SIGKILL) and reap, classify how it ended.
// A SignalGuard turns SIGINT/SIGTERM in the parent into a flag so that the parent can terminate
// and reap every live child before it exits: no child is left holding a device.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace caliber::run {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH
  // Set in the child on top of the parent's environment; a nullopt value unsets the variable.
  std::map<std::string, std::optional<std::string>> env;
  std::filesystem::path log_file;  // stdout and stderr (appended); empty: inherit the parent's
  std::filesystem::path cwd;       // empty: the parent's
  // SIGTERM stays blocked and ignored across exec: a SIGTERM that comes before the child has
  // installed its handler waits for it instead of killing it unrecorded (a batch's `caliber run`
  // child, which installs its handler and unblocks it in batch::watch_batch_parent), and one that
  // something unblocks before then is discarded, not fatal. Any other child starts with no signal
  // blocked and default dispositions.
  bool hold_sigterm = false;
};

enum class ExitKind {
  exited,    // returned an exit code
  signaled,  // killed by a signal nobody here sent (a crash, or an outside kill)
  timeout,   // still running at its deadline: terminated by us
  stopped,   // terminated by us for another reason (the parent was interrupted)
};

struct ExitStatus {
  ExitKind kind = ExitKind::exited;
  int code = 0;  // exit code (kind exited)
  int signal =
      0;  // the signal that ended it (signaled), or the last one we sent (timeout, stopped)
  double duration_s = 0;

  [[nodiscard]] bool ok() const noexcept { return kind == ExitKind::exited && code == 0; }
  // Ended by a signal that means the program broke (SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE, ...),
  // or by any signal we did not send; also a shell's 128+N exit code for such a signal.
  [[nodiscard]] bool crashed() const noexcept;
  // "exit 0", "exit 3", "SIGSEGV (signal 11)", "timeout after 5 s (SIGKILL)", ...
  [[nodiscard]] std::string describe() const;
};

// "SIGSEGV" for 11, "signal 77" for an unknown number.
[[nodiscard]] std::string signal_name(int sig);

struct Captured;

// One child process in its own process group. Move-only; the destructor terminates and reaps a
// child still running, so an exception cannot leave one behind.
class Child {
 public:
  // Forks and execs; throws std::system_error when the program cannot be started (the exec
  // failure is reported back through a close-on-exec pipe, so a missing binary is an error here,
  // not a mysterious exit code 127 later).
  [[nodiscard]] static Child spawn(const SpawnSpec& spec);

  Child() = default;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0 && !status_; }
  [[nodiscard]] double elapsed_s() const;

  // Non-blocking: the exit status once the child has ended (and has been reaped), else nullopt.
  std::optional<ExitStatus> poll();
  // Waits up to `seconds` (negative: forever); nullopt when still running.
  std::optional<ExitStatus> wait_for(double seconds);
  // Waits until the child ends or `timeout_s` passes (<= 0: no timeout); a child still running
  // then is terminated (kind timeout). Returns early with nullopt when `interrupted` is set.
  std::optional<ExitStatus> wait(double timeout_s, double grace_s = 5.0,
                                 const volatile bool* interrupted = nullptr);
  // SIGTERM to the whole group, up to `grace_s` for it to end, then SIGKILL to the group; reaps.
  // kind is `as` (timeout or stopped) unless the child had already ended on its own.
  ExitStatus terminate(double grace_s = 5.0, ExitKind as = ExitKind::stopped);

 private:
  friend Captured run_capture(const SpawnSpec& spec, double timeout_s, bool merge_stderr);
  void release() noexcept;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point start_{};
  std::optional<ExitStatus> status_;
};

// A fixed number of slots (one per device, or one per shard), each running at most one child at
// a time: the spawn/poll/timeout/interrupt loop that `caliber batch` (run/batch_local.cpp) and
// parallel warmup (run/warmup_runner.cpp) share. The caller says what to start in a free slot and
// what an ended child means; the pool does the rest.
class ChildPool {
 public:
  struct Ended {
    std::size_t slot = 0;
    std::size_t tag = 0;  // the caller's name for the work the child did (an op's row, a shard)
    ExitStatus status;
  };
  struct Hooks {
    // Called for each free slot on every look while no signal has come: start a child there
    // (start()), or do without one, and return true; false when nothing is left for this slot.
    std::function<bool(std::size_t slot)> fill;
    // A child ended on its own, or past the timeout (kind timeout).
    std::function<void(const Ended&)> ended;
    // Once per look, after the polls (a progress line); may be empty.
    std::function<void()> tick;
  };

  explicit ChildPool(std::size_t slots) : slots_(slots) {}
  [[nodiscard]] std::size_t slots() const noexcept { return slots_.size(); }
  [[nodiscard]] bool busy(std::size_t slot) const { return slots_.at(slot).has_value(); }
  [[nodiscard]] std::size_t running() const noexcept;
  // Spawns into a free slot; Child::spawn's error propagates and the slot stays free. `timeout_s`:
  // this child's own limit (<= 0: none) instead of run()'s.
  void start(std::size_t slot, std::size_t tag, const SpawnSpec& spec,
             std::optional<double> timeout_s = std::nullopt);
  // Looks every 50 ms until no child runs and fill has nothing more, or until SignalGuard
  // reports a signal; a child running past `timeout_s` (<= 0: none) is terminated (SIGTERM,
  // `grace_s`, SIGKILL). Returns the signal (0: none); children still running then are
  // stop_all's.
  int run(const Hooks& hooks, double timeout_s = 0, double grace_s = 5);
  // SIGTERM to every running group at once (a slow child delays no other's), then each reaped
  // (`grace_s`, SIGKILL): their ends, kind stopped, in slot order.
  std::vector<Ended> stop_all(double grace_s);

 private:
  struct Running {
    std::size_t tag = 0;
    Child child;
    std::optional<double> timeout_s;  // start()'s, over run()'s
  };
  std::vector<std::optional<Running>> slots_;
};

// Runs a command to its end and returns its exit status and stdout (stderr goes to the parent's).
struct Captured {
  ExitStatus status;
  std::string out;
};
// The caliber executable that child runs (batch ops, A/B rounds, warmup shards) start: this
// process's own executable, unless set. The Python package's process (python3 -m caliber, whose
// own executable is python) sets it to the caliber executable it found (docs/python.md).
[[nodiscard]] std::filesystem::path caliber_executable();
void set_caliber_executable(const std::filesystem::path& exe);

// merge_stderr: the child's stderr goes into `out` too (its refusal message, for the caller).
[[nodiscard]] Captured run_capture(const std::vector<std::string>& argv, double timeout_s = 60.0,
                                   bool merge_stderr = false);
// The same for a child with an environment of its own (spec.env; spec.log_file is not used).
[[nodiscard]] Captured run_capture(const SpawnSpec& spec, double timeout_s, bool merge_stderr);

// While one exists, SIGINT and SIGTERM set a flag instead of killing the parent; every Child is
// registered, and a second signal kills the registered groups at once and exits (the user asked
// twice). Restores the previous handlers when destroyed.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  // The signal received (0 when none).
  [[nodiscard]] static int received() noexcept;
  [[nodiscard]] static bool interrupted() noexcept { return received() != 0; }
  // For tests: forget a received signal.
  static void reset() noexcept;
};

// The flag SignalGuard sets, for Child::wait's `interrupted` argument.
[[nodiscard]] const volatile bool* interrupt_flag() noexcept;

// Process groups of live children (maintained by Child; used by the second-signal path).
[[nodiscard]] std::vector<pid_t> live_children();

// This process's parent, its parent's parent, ... up to init (Linux /proc; empty where unreadable).
[[nodiscard]] std::vector<pid_t> ancestors();

// How many of the processes a driver lists with work on a device are others: not `self`, nor one
// of its `ancestors` (a caliber parent, a batch). -1 when the list cannot say, because `self`,
// which has work on the device while it times, is not on it: the driver gives another PID
// namespace's ids (a container's) or hides them (docs/timing.md, "Another process on the device").
[[nodiscard]] int other_processes(const std::vector<unsigned>& on_device, pid_t self,
                                  const std::vector<pid_t>& ancestors);

}  // namespace caliber::run
