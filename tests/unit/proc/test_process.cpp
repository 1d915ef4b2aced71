// Process control with /bin/sh children: exit codes, crashes, timeouts, group termination, reaping.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "eventually.hpp"
#include "proc/process.hpp"

namespace fs = std::filesystem;
using caliber::run::Child;
using caliber::run::ExitKind;
using caliber::run::SpawnSpec;
using caliber::testing::eventually;

namespace {

SpawnSpec sh(const std::string& script) {
  SpawnSpec s;
  s.argv = {"/bin/sh", "-c", script};
  return s;
}

// The state letter of /proc/<pid>/stat, or 0 when the process no longer exists.
char proc_state(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return 0;
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return 0;
  return line[close + 2];
}

// Processes of process group `pg` that are still alive (not zombies).
int live_in_group(pid_t pg) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    long ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pg && state != 'Z' && state != 'X') ++n;
  }
  return n;
}

// The signal mask of a /proc/<pid>/status line such as "SigIgn:\t0000000000004000".
unsigned long long mask_of(const std::string& line) {
  return std::stoull(line.substr(line.find(':') + 1), nullptr, 16);
}

// Whether process `pid` ignores signal `sig` (its SigIgn mask in /proc/<pid>/status).
bool ignores(pid_t pid, int sig) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("SigIgn:", 0) == 0) return ((mask_of(line) >> (sig - 1)) & 1U) != 0;
  return false;
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() /
               ("caliber-process-" + std::to_string(::getpid()) + "-" +
                std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(Process, ExitCodesAreReported) {
  for (int code : {0, 1, 2, 42}) {
    auto c = Child::spawn(sh("exit " + std::to_string(code)));
    auto st = c.wait(10);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->kind, ExitKind::exited);
    EXPECT_EQ(st->code, code);
    EXPECT_EQ(st->ok(), code == 0);
    EXPECT_FALSE(st->crashed());
  }
}

TEST(Process, SegfaultIsACrash) {
  auto c = Child::spawn(sh("kill -SEGV $$"));
  auto st = c.wait(10);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->kind, ExitKind::signaled);
  EXPECT_EQ(st->signal, SIGSEGV);
  EXPECT_TRUE(st->crashed());
  EXPECT_NE(st->describe().find("SIGSEGV"), std::string::npos) << st->describe();
}

TEST(Process, AbortIsACrash) {
  auto c = Child::spawn(sh("kill -ABRT $$"));
  auto st = c.wait(10);
  ASSERT_TRUE(st);
  EXPECT_TRUE(st->crashed());
  EXPECT_EQ(st->signal, SIGABRT);
}

TEST(Process, ShellReportedSignalDeathIsACrash) {
  caliber::run::ExitStatus st;
  st.kind = ExitKind::exited;
  st.code = 128 + SIGSEGV;
  EXPECT_TRUE(st.crashed());
  st.code = 128 + 50;  // not a crash signal
  EXPECT_FALSE(st.crashed());
}

TEST(Process, HangIsTerminatedAtItsTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  // The sleep is far longer than any bound below: ended by its 0.3 s timeout, not by its own end,
  // with room for a loaded host's slow spawn and reaping.
  auto c = Child::spawn(sh("sleep 300"));
  const pid_t pid = c.pid();
  auto st = c.wait(0.3, 2.0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->kind, ExitKind::timeout);
  EXPECT_FALSE(st->ok());
  EXPECT_LT(took, 60.0);
  EXPECT_GE(st->duration_s, 0.3);
  EXPECT_EQ(proc_state(pid), 0) << "the child must be reaped, not left a zombie";
}

TEST(Process, ChildIgnoringSigtermGetsSigkillAfterGrace) {
  auto c = Child::spawn(sh("trap '' TERM; while :; do sleep 0.05; done"));
  // The trap is installed once the shell ignores SIGTERM (a fixed 100 ms nap lost that race on
  // a loaded host: SIGTERM came first and ended the shell).
  ASSERT_TRUE(eventually([&] { return ignores(c.pid(), SIGTERM); })) << "the trap never took";
  const auto st = c.terminate(0.3, ExitKind::stopped);
  EXPECT_EQ(st.kind, ExitKind::stopped);
  EXPECT_EQ(st.signal, SIGKILL);
  EXPECT_EQ(proc_state(c.pid()), 0);
}

TEST(Process, TerminateReapsTheWholeGroup) {
  auto c = Child::spawn(sh("sleep 30 & sleep 30 & wait"));
  const pid_t pg = c.pid();
  // Wait until both grandchildren exist.
  (void)eventually([&] { return live_in_group(pg) >= 3; });
  ASSERT_EQ(live_in_group(pg), 3);
  const auto st = c.terminate(2.0);
  EXPECT_EQ(st.kind, ExitKind::stopped);
  EXPECT_EQ(proc_state(pg), 0) << "the direct child must be reaped";
  (void)eventually([&] { return live_in_group(pg) == 0; });
  EXPECT_EQ(live_in_group(pg), 0) << "no process of the group may survive";
}

TEST(Process, ChildHasItsOwnProcessGroup) {
  auto c = Child::spawn(sh("sleep 30"));
  EXPECT_EQ(::getpgid(c.pid()), c.pid());
  EXPECT_NE(::getpgid(c.pid()), ::getpgrp());
  c.terminate(1.0);
}

TEST(Process, DestructorLeavesNoChild) {
  pid_t pid = 0;
  {
    auto c = Child::spawn(sh("sleep 30"));
    pid = c.pid();
    EXPECT_NE(proc_state(pid), 0);
  }
  EXPECT_EQ(proc_state(pid), 0);
}

TEST(Process, EnvironmentAndLogFile) {
  const fs::path dir = temp_dir();
  SpawnSpec s = sh("echo \"v=$CALIBER_PROCESS_TEST\"; echo err >&2; echo \"h=${HOME:-unset}\"");
  s.env["CALIBER_PROCESS_TEST"] = "hello";
  s.env["HOME"] = std::nullopt;
  s.log_file = dir / "child.log";
  auto c = Child::spawn(s);
  auto st = c.wait(10);
  ASSERT_TRUE(st && st->ok());
  std::ifstream f(s.log_file);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("v=hello"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("err"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("h=unset"), std::string::npos) << text.str();
  fs::remove_all(dir);
}

// A batch's `caliber run` child starts with SIGTERM blocked (hold_sigterm), so that one sent
// before its handler is in waits for it; any other child starts with nothing blocked, whatever
// the parent's mask.
TEST(Process, HeldSigtermIsBlockedAcrossExecAndOnlyThen) {
  sigset_t term, before;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &before);  // the parent's own mask must not leak
  auto blocked = [](bool hold) {
    SpawnSpec s;  // not through sh: dash clears its mask when it starts
    s.argv = {"grep", "^SigBlk:", "/proc/self/status"};
    s.hold_sigterm = hold;
    return caliber::run::run_capture(s, 30.0, false).out;
  };
  const std::string held = blocked(true), plain = blocked(false);
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ASSERT_FALSE(held.empty());
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(mask_of(held), 1ull << (SIGTERM - 1)) << held;
  EXPECT_EQ(mask_of(plain), 0ull) << plain;
}

TEST(Process, MissingProgramThrowsAtSpawn) {
  SpawnSpec s;
  s.argv = {"/nonexistent/caliber-no-such-binary"};
  EXPECT_THROW((void)Child::spawn(s), std::system_error);
}

TEST(Process, CaptureReadsStdout) {
  auto r = caliber::run::run_capture({"/bin/sh", "-c", "printf 'a\\nb\\n'; exit 3"});
  EXPECT_EQ(r.out, "a\nb\n");
  EXPECT_EQ(r.status.kind, ExitKind::exited);
  EXPECT_EQ(r.status.code, 3);
}

TEST(Process, SignalGuardTurnsSigintIntoAFlagAndChildrenAreReaped) {
  caliber::run::SignalGuard guard;
  auto a = Child::spawn(sh("sleep 30"));
  auto b = Child::spawn(sh("sleep 30"));
  EXPECT_EQ(caliber::run::live_children().size(), 2u);
  ::kill(::getpid(), SIGINT);
  // The parent is still alive and the wait returns early because of the flag.
  auto st = a.wait(30, 1.0, caliber::run::interrupt_flag());
  EXPECT_FALSE(st);
  EXPECT_EQ(caliber::run::SignalGuard::received(), SIGINT);
  a.terminate(1.0);
  b.terminate(1.0);
  EXPECT_EQ(proc_state(a.pid()), 0);
  EXPECT_EQ(proc_state(b.pid()), 0);
  EXPECT_TRUE(caliber::run::live_children().empty());
  caliber::run::SignalGuard::reset();
}

// The pool batch and parallel warmup share: never more children than slots, every job run once,
// an ended child's slot refilled.
TEST(ChildPool, RunsEveryJobOnceAndNoMoreAtATimeThanSlots) {
  caliber::run::ChildPool pool(2);
  std::size_t next = 0, max_running = 0;
  std::vector<int> ended(5, 0);
  const int sig = pool.run({[&](std::size_t slot) {
                              if (next == ended.size()) return false;
                              pool.start(slot, next++, sh("sleep 0.2"));
                              max_running = std::max(max_running, pool.running());
                              return true;
                            },
                            [&](const caliber::run::ChildPool::Ended& e) {
                              EXPECT_TRUE(e.status.ok()) << e.status.describe();
                              ++ended.at(e.tag);
                            },
                            {}});
  EXPECT_EQ(sig, 0);
  EXPECT_EQ(max_running, 2u);
  EXPECT_EQ(pool.running(), 0u);
  for (int n : ended) EXPECT_EQ(n, 1);
}

TEST(ChildPool, AChildPastTheTimeoutEndsAsTimeout) {
  caliber::run::ChildPool pool(1);
  bool started = false;
  std::optional<caliber::run::ExitStatus> end;
  (void)pool.run({[&](std::size_t slot) {
                    if (started) return false;
                    started = true;
                    pool.start(slot, 7, sh("sleep 300"));  // far past any bound below
                    return true;
                  },
                  [&](const caliber::run::ChildPool::Ended& e) { end = e.status; },
                  {}},
                 0.3, 0.5);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->kind, ExitKind::timeout);
  EXPECT_LT(end->duration_s, 60.0);
}

TEST(ChildPool, ASignalStopsTheLoopAndStopAllReapsEveryChild) {
  caliber::run::SignalGuard guard;
  caliber::run::ChildPool pool(3);
  std::vector<bool> started(3, false);
  int ticks = 0;
  const int sig = pool.run({[&](std::size_t slot) {
                              if (started[slot]) return false;
                              started[slot] = true;
                              pool.start(slot, slot, sh("sleep 30"));
                              return true;
                            },
                            [&](const caliber::run::ChildPool::Ended&) {
                              ADD_FAILURE() << "no child should end on its own";
                            },
                            [&] {
                              if (++ticks == 2) ::raise(SIGINT);
                            }});
  EXPECT_EQ(sig, SIGINT);
  EXPECT_EQ(pool.running(), 3u);
  const auto stopped = pool.stop_all(1.0);
  ASSERT_EQ(stopped.size(), 3u);
  for (std::size_t i = 0; i < stopped.size(); ++i) {
    EXPECT_EQ(stopped[i].slot, i);
    EXPECT_EQ(stopped[i].status.kind, ExitKind::stopped);
  }
  EXPECT_EQ(pool.running(), 0u);
  EXPECT_TRUE(caliber::run::live_children().empty());
  caliber::run::SignalGuard::reset();
}

// The executable child runs start: this process's own, unless the Python package's process
// (whose own executable is python) named the caliber executable (docs/python.md).
TEST(Process, CaliberExecutableIsOwnUnlessSet) {
  EXPECT_EQ(caliber::run::caliber_executable(), fs::read_symlink("/proc/self/exe"));
  caliber::run::set_caliber_executable("/opt/caliber/bin/caliber");
  EXPECT_EQ(caliber::run::caliber_executable(), fs::path("/opt/caliber/bin/caliber"));
  caliber::run::set_caliber_executable({});
  EXPECT_EQ(caliber::run::caliber_executable(), fs::read_symlink("/proc/self/exe"));
}

// A refusal on stderr comes back with merge_stderr (batch and ab read a Python suite's message
// this way), and stays out of `out` without it.
TEST(Process, RunCaptureMergesStderrWhenAsked) {
  const std::vector<std::string> argv = {"/bin/sh", "-c", "echo names; echo refused >&2; exit 2"};
  const auto merged = caliber::run::run_capture(argv, 10, true);
  EXPECT_EQ(merged.status.code, 2);
  EXPECT_NE(merged.out.find("refused"), std::string::npos);
  const auto plain = caliber::run::run_capture(argv, 10);
  EXPECT_EQ(plain.out, "names\n");
}

// The processes a driver lists on a device: this one and its ancestors are not others; a list
// without this process (another PID namespace's ids) cannot say (docs/timing.md, "Another
// process on the device").
TEST(Process, OtherProcessesOnADeviceLeaveOutThisOneAndItsAncestors) {
  using caliber::run::other_processes;
  EXPECT_EQ(other_processes({100}, 100, {50, 1}), 0);
  EXPECT_EQ(other_processes({100, 50}, 100, {50, 7}), 0);  // a caliber parent's own context
  EXPECT_EQ(other_processes({100, 321}, 100, {50}), 1);
  EXPECT_EQ(other_processes({321, 100, 321, 400}, 100, {50}), 2);  // listed twice: one process
  EXPECT_EQ(other_processes({321, 400}, 100, {50}), -1);           // this process missing: unknown
  EXPECT_EQ(other_processes({}, 100, {50}), -1);
}

TEST(Process, AncestorsClimbFromTheParent) {
  const auto mine = caliber::run::ancestors();
  ASSERT_FALSE(mine.empty());
  EXPECT_EQ(mine.front(), ::getppid());
  for (const pid_t p : mine) EXPECT_GT(p, 1);
  // A child's are this process, then this process's own.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto up = caliber::run::ancestors();
    const bool same = up.size() == mine.size() + 1 && up.front() == ::getppid() &&
                      std::equal(mine.begin(), mine.end(), up.begin() + 1);
    const char c = same ? 'y' : 'n';
    (void)!::write(fds[1], &c, 1);
    ::_exit(0);
  }
  char c = 0;
  EXPECT_EQ(::read(fds[0], &c, 1), 1);
  ::waitpid(child, nullptr, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(c, 'y');
}
