// The batch driver against a stand-in for `caliber run` (a shell script written by the test), so
// scheduling, crash isolation, timeouts, interrupts and resume are tested without the run driver.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "batch/batch.hpp"
#include "batch/lease.hpp"
#include "eventually.hpp"
#include "records/runlog.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace caliber::run;
using caliber::testing::eventually;
using caliber::testing::TempDir;

namespace {

// Stands in for `caliber run OP --out DIR --name OP ...`: claims DIR/OP-<stamp>[-N], writes an
// identity and two case rows, then behaves as the op's name says. A file "<DIR>/<op>.fixed" makes
// the next attempt succeed (resume tests). `jam` waits for the batch's own "running" rewrite of
// ops_status.csv before it plants a directory there (else that rewrite could land after the
// plant's rm and before its mkdir, and the plant fail).
const char* kFakeCaliber = R"SH(#!/bin/sh
[ "$1" = run ] || exit 2
op=$2; shift 2
out=""; while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift;; esac; shift; done
base="$out/$op-$(date +%Y%m%d-%H%M%S)"; dir=$base; n=2
while ! mkdir "$dir" 2>/dev/null; do dir="$base-$n"; n=$((n+1)); done
echo '{"backend":"cpu","timer":"direct","level":"core"}' > "$dir/run_identity.json"
echo '{"type":"header"}' > "$dir/run.log"
echo "{\"type\":\"case\",\"op\":\"$op\",\"dtype\":\"f32\",\"shape\":\"1\",\"status\":\"ok\"}" >> "$dir/run.log"
echo "{\"type\":\"case\",\"op\":\"$op\",\"dtype\":\"f32\",\"shape\":\"2\",\"status\":\"ok\"}" >> "$dir/run.log"
echo "env pin: ${CALIBER_FAKE_SEEN:-none}"
if [ -e "$out/$op.fixed" ]; then op=good; fi
case "$op" in
  crash*) echo "about to crash"; kill -SEGV $$ ;;
  hang*) sleep 60 & wait ;;
  fail*) echo "{\"type\":\"case\",\"op\":\"$op\",\"dtype\":\"f32\",\"shape\":\"3\",\"status\":\"failed\",\"node\":\"$op[f32-3]\",\"error\":\"made to fail\"}" >> "$dir/run.log"; exit 1 ;;
  slow*) sleep 1 ;;
  jam*) i=0; until grep -q running "$out/ops_status.csv" 2>/dev/null || [ $i -ge 400 ]; do
          sleep 0.05; i=$((i+1)); done
        rm -f "$out/ops_status.csv"; mkdir "$out/ops_status.csv" ;;
  unjam*) rmdir "$out/ops_status.csv" ;;
esac
echo '{"type":"footer"}' >> "$dir/run.log"
exit 0
)SH";

fs::path write_fake(const fs::path& dir) {
  const fs::path p = dir / "fake-caliber.sh";
  std::ofstream(p) << kFakeCaliber;
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

std::map<std::string, OpStatusRow> by_op(const std::vector<OpStatusRow>& rows) {
  std::map<std::string, OpStatusRow> m;
  for (const auto& r : rows) m[r.op] = r;
  return m;
}

// The batch directory claimed under `out`, or "" while there is none yet.
fs::path batch_dir_under(const fs::path& out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out, ec))
    if (e.path().filename().string().rfind("batch-", 0) == 0) return e.path();
  return {};
}

// The case rows in the run.log of `op`'s run directory in `batch` (0 while it has none).
int case_rows(const fs::path& batch, const std::string& op) {
  int n = 0;
  for (const auto& d : run_dirs_of(batch, op)) {
    std::ifstream log(d / "run.log");
    for (std::string line; std::getline(log, line);)
      n += line.find("\"type\":\"case\"") != std::string::npos;
  }
  return n;
}

// run_batch(o) while `beside` (a thread that ends the batch) runs: joined however run_batch ends.
BatchOutcome run_batch_joining(const BatchOptions& o, std::thread& beside, std::ostream& out) {
  std::ostringstream err;
  BatchOutcome res;
  try {
    res = run_batch(o, out, err);
  } catch (...) {
    beside.join();
    throw;
  }
  beside.join();
  return res;
}

BatchOptions options(const TempDir& t) {
  BatchOptions o;
  o.self_exe = write_fake(t.path());
  o.out = t.path() / "runs";
  o.backend = "cpu";
  o.progress = false;
  o.grace_s = 1;
  return o;
}

}  // namespace

TEST(Batch, ClassifyExit) {
  ExitStatus st;
  st.kind = ExitKind::exited;
  st.code = 0;
  EXPECT_EQ(classify_exit(st, 0).status, caliber::core::OpStatus::ok);
  st.code = 1;
  EXPECT_EQ(classify_exit(st, 0).status, caliber::core::OpStatus::failed);
  st.code = 2;
  EXPECT_EQ(classify_exit(st, 0).status, caliber::core::OpStatus::failed);
  EXPECT_NE(classify_exit(st, 0).reason.find("usage"), std::string::npos);
  st.kind = ExitKind::signaled;
  st.signal = SIGABRT;
  EXPECT_EQ(classify_exit(st, 0).status, caliber::core::OpStatus::crashed);
  EXPECT_NE(classify_exit(st, 0).reason.find("SIGABRT"), std::string::npos);
  st.kind = ExitKind::timeout;
  st.signal = SIGTERM;
  EXPECT_EQ(classify_exit(st, 5).status, caliber::core::OpStatus::timeout);
  st.kind = ExitKind::stopped;
  EXPECT_EQ(classify_exit(st, 5).status, caliber::core::OpStatus::interrupted);
}

TEST(Batch, ChildRunDirIsTheNewestNewOneOfThatOp) {
  TempDir t;
  for (const char* d : {"add-20261129-100000", "add-20261129-100500", "add-20261129-100500-2",
                        "add_rms-20261129-110000", "addx", "add-notastamp"})
    fs::create_directories(t.path() / d);
  auto found = find_child_run_dir(t.path(), "add", {});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->filename(), "add-20261129-100500-2");
  const auto before = run_dirs_of(t.path(), "add");
  EXPECT_EQ(before.size(), 3u);
  EXPECT_FALSE(find_child_run_dir(t.path(), "add", before));
}

TEST(Batch, UnknownDeviceIsBadUsageBeforeAnythingIsWritten) {
  TempDir t;
  auto o = options(t);
  o.ops = {"good"};
  o.devices = {4000};
  std::ostringstream out, err;
  EXPECT_THROW((void)run_batch(o, out, err), BatchUsageError);
  EXPECT_FALSE(fs::exists(o.out));
}

TEST(Batch, OpFileWithComments) {
  TempDir t;
  std::ofstream(t.path() / "ops.txt") << "# the set\nadd\nsum, mm  # trailing\n\n  softmax\n";
  EXPECT_EQ(read_op_file(t.path() / "ops.txt"),
            (std::vector<std::string>{"add", "sum", "mm", "softmax"}));
  EXPECT_THROW((void)read_op_file(t.path() / "missing.txt"), BatchUsageError);
}

TEST(Batch, CrashAndHangDoNotStopTheOthers) {
  TempDir t;
  auto o = options(t);
  o.ops = {"good", "crash", "hang", "fail", "good2"};
  ::setenv("CALIBER_CPU_DEVICES", "2", 1);  // two host devices, so two children run at once
  o.devices = {0, 1};
  // Only the hang meets a short limit: a batch-wide 2 s also timed out `good` on a loaded host
  // (a shell's start and a few forks past 2 s). The others have the batch's generous one.
  o.timeout_per_op_s = 120;
  o.timeout_for = {"hang=2"};
  std::ostringstream out, err;
  const auto res = run_batch(o, out, err);
  EXPECT_EQ(res.exit_code, 1) << out.str() << err.str();
  const auto s = by_op(read_ops_status(res.batch_dir));
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s.at("good").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(s.at("good").rows, 2);
  EXPECT_EQ(s.at("good").timer, "direct");
  EXPECT_EQ(s.at("good").backend, "cpu");
  EXPECT_EQ(s.at("good2").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(s.at("crash").status, caliber::core::OpStatus::crashed);
  EXPECT_NE(s.at("crash").reason.find("SIGSEGV"), std::string::npos) << s.at("crash").reason;
  EXPECT_EQ(s.at("crash").rows, 2);  // the rows written before the crash are not lost
  EXPECT_EQ(s.at("hang").status, caliber::core::OpStatus::timeout);
  EXPECT_EQ(s.at("fail").status, caliber::core::OpStatus::failed);
  EXPECT_EQ(s.at("fail").rows, 3);
  EXPECT_NE(s.at("fail").reason.find("made to fail"), std::string::npos) << s.at("fail").reason;
  for (const auto& [op, row] : s) EXPECT_TRUE(row.device == "0" || row.device == "1") << op;
  EXPECT_TRUE(fs::exists(res.batch_dir / "logs" / "crash.log"));
  EXPECT_EQ(res.batch_dir.parent_path(), o.out);
  EXPECT_EQ(res.batch_dir.filename().string().rfind("batch-", 0), 0u);
}

TEST(Batch, ResumeRerunsOnlyWhatIsNotOk) {
  TempDir t;
  auto o = options(t);
  o.ops = {"good", "fail", "crash"};
  std::ostringstream out, err;
  const auto first = run_batch(o, out, err);
  ASSERT_EQ(first.exit_code, 1);
  const auto good_dirs = run_dirs_of(first.batch_dir, "good");
  ASSERT_EQ(good_dirs.size(), 1u);
  std::ofstream(first.batch_dir / "fail.fixed") << "";
  std::ofstream(first.batch_dir / "crash.fixed") << "";
  BatchOptions r;
  r.self_exe = o.self_exe;
  r.resume_dir = first.batch_dir;
  r.progress = false;
  const auto second = run_batch(r, out, err);
  EXPECT_EQ(second.exit_code, 0) << out.str();
  EXPECT_EQ(second.batch_dir, first.batch_dir);
  const auto s = by_op(read_ops_status(first.batch_dir));
  EXPECT_EQ(s.at("good").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(s.at("fail").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(s.at("crash").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(run_dirs_of(first.batch_dir, "good"), good_dirs) << "an ok op must not rerun";
  EXPECT_EQ(run_dirs_of(first.batch_dir, "fail").size(), 2u);
}

TEST(Batch, InterruptTerminatesChildrenAndMarksTheRest) {
  TempDir t;
  auto o = options(t);
  o.ops = {"good", "hang1", "hang2", "later1", "later2"};
  ::setenv("CALIBER_CPU_DEVICES", "2", 1);
  o.devices = {0, 1};
  // SIGINT once `good` has finished and both hangs run with their rows written (a fixed 1.5 s
  // lost that race on a loaded host: `good` was still running, hang1 had no rows yet).
  bool ready = false;
  std::thread killer([&] {
    ready = eventually([&] {
      const fs::path b = batch_dir_under(o.out);
      if (b.empty() || case_rows(b, "hang1") < 2 || case_rows(b, "hang2") < 2) return false;
      try {
        const auto s = by_op(read_ops_status(b));
        return s.count("good") > 0 && s.at("good").status == caliber::core::OpStatus::ok;
      } catch (const std::exception&) {
        return false;  // not written yet
      }
    });
    ::kill(::getpid(), SIGINT);
  });
  std::ostringstream out;
  const BatchOutcome res = run_batch_joining(o, killer, out);
  EXPECT_TRUE(ready) << "good never finished, or a hang never wrote its rows: " << out.str();
  EXPECT_EQ(res.exit_code, 128 + SIGINT);
  const auto s = by_op(read_ops_status(res.batch_dir));
  EXPECT_EQ(s.at("good").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(s.at("hang1").status, caliber::core::OpStatus::interrupted);
  EXPECT_EQ(s.at("hang2").status, caliber::core::OpStatus::interrupted);
  EXPECT_EQ(s.at("hang1").rows, 2);  // the rows it wrote are kept
  EXPECT_EQ(s.at("later1").status, caliber::core::OpStatus::interrupted);
  EXPECT_EQ(s.at("later2").status, caliber::core::OpStatus::interrupted);
  EXPECT_TRUE(live_children().empty());
  // No process of the fake is left (its sleep would hold a device in real life).
  int left = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream cmd(e.path() / "cmdline");
    std::string c((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (c.find(o.self_exe.string()) != std::string::npos) ++left;
  }
  EXPECT_EQ(left, 0);
  SignalGuard::reset();
}

// --resume DIR --min-time 0 keeps every stored run flag (it used to drop --peaks=off and
// --warmup=0) and refuses a flag that changes the caliber of the batch.
TEST(BatchResume, StoredRunFlagsAreMergedAndTheCaliberKept) {
  const std::vector<std::string> stored = {"--peaks=off", "--warmup=0", "--level=core",
                                           "--min-time=0.5"};
  const auto merged = merge_resumed_args(stored, {"--min-time=0"});
  EXPECT_EQ(merged, (std::vector<std::string>{"--peaks=off", "--warmup=0", "--level=core",
                                              "--min-time=0"}));
  EXPECT_EQ(merge_resumed_args(stored, {"--level=core"}), stored);  // the same value: fine
  EXPECT_EQ(merge_resumed_args(stored, {"--seed=3"}).back(), "--seed=3");
  EXPECT_THROW((void)merge_resumed_args(stored, {"--level=comprehensive"}), BatchUsageError);
  EXPECT_THROW((void)merge_resumed_args(stored, {"--timer=direct"}), BatchUsageError);
}

// The batch holds its children's SIGTERM blocked across exec (SpawnSpec::hold_sigterm);
// watch_batch_parent, a run's first step, lets it through again, batch child or not.
TEST(Batch, WatchBatchParentReleasesAHeldSigterm) {
  for (const char* v : {"CALIBER_BATCH_DIR", "CALIBER_BATCH_PARENT", "CALIBER_BATCH_OP"})
    ::unsetenv(v);
  sigset_t term, before, after;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &before);
  caliber::run::watch_batch_parent();
  ::pthread_sigmask(SIG_SETMASK, nullptr, &after);
  const bool still_blocked = ::sigismember(&after, SIGTERM) == 1;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  EXPECT_FALSE(still_blocked);
}

// A rewrite of ops_status.csv that fails (a full disk; here a directory planted at its name) does
// not end the batch with an op left at `running`: the batch goes on, and the next write that
// succeeds records every op's final status. One that never succeeds is exit 1 with the statuses on
// stderr.
TEST(Batch, AFailedStatusRewriteLeavesNoOpRunning) {
  TempDir t;
  auto o = options(t);
  o.ops = {"jam", "unjam"};
  ::setenv("CALIBER_CPU_DEVICES", "1", 1);
  o.devices = {0};
  std::ostringstream out, err;
  BatchOutcome res;
  ASSERT_NO_THROW(res = run_batch(o, out, err)) << out.str();
  EXPECT_EQ(res.exit_code, 0) << out.str() << err.str();
  const auto s = by_op(read_ops_status(res.batch_dir));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.at("jam").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(s.at("unjam").status, caliber::core::OpStatus::ok);

  TempDir t2;
  auto o2 = options(t2);
  o2.ops = {"jam"};
  o2.devices = {0};
  ASSERT_NO_THROW(res = run_batch(o2, out, err));
  EXPECT_EQ(res.exit_code, 1);  // the op ran, but its status could not be recorded
  EXPECT_TRUE(fs::is_directory(res.batch_dir / "ops_status.csv"));
}

// The lease (batch/lease.hpp): held by run_batch for its whole run, so a --resume of the same
// directory is refused (exit 2: a UsageError) while it runs and accepted once it ended.
TEST(BatchLease, HeldWhileTheBatchRunsSoASecondResumeIsRefused) {
  TempDir t;
  auto o = options(t);
  o.ops = {"hang"};
  bool held = false;
  std::string refusal;
  fs::path dir;
  std::thread probe([&] {
    // Once the hang's child runs (its rows are written): its ops_status.csv is there to resume,
    // and the batch's signal guard is in (the lease is taken before both).
    (void)eventually([&] {
      dir = batch_dir_under(o.out);
      return !dir.empty() && case_rows(dir, "hang") >= 2;
    });
    const auto h = dir.empty() ? std::nullopt : batch_lease_holder(dir);
    held = h && h->rfind("pid " + std::to_string(::getpid()) + " on ", 0) == 0;
    if (held) {
      BatchOptions r;
      r.self_exe = o.self_exe;
      r.resume_dir = dir;
      r.progress = false;
      try {
        (void)resolve_batch(r);
      } catch (const caliber::core::UsageError& e) {
        refusal = e.what();
      }
    }
    ::kill(::getpid(), SIGINT);  // ends the hang
  });
  std::ostringstream out;
  const BatchOutcome res = run_batch_joining(o, probe, out);
  SignalGuard::reset();
  EXPECT_TRUE(held) << "the running batch held no lease: " << out.str();
  EXPECT_NE(refusal.find("is in use by a batch that still runs (pid " + std::to_string(::getpid()) +
                         " on "),
            std::string::npos)
      << refusal;
  EXPECT_EQ(res.exit_code, 128 + SIGINT);
  EXPECT_FALSE(batch_lease_holder(res.batch_dir)) << "the lease outlived its batch";
}

// A holder killed with SIGKILL lets go of the lease at once: nothing of it has to run.
TEST(BatchLease, AKilledHolderLetsGo) {
  TempDir t;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string holder;
    const auto lease = BatchLease::take(t.path(), &holder, nullptr);
    const char c = lease ? 'y' : 'n';
    [[maybe_unused]] auto n = ::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(c, 'y');
  const auto h = batch_lease_holder(t.path());
  ASSERT_TRUE(h);
  EXPECT_EQ(h->rfind("pid " + std::to_string(child) + " on ", 0), 0u) << *h;
  std::string holder;
  EXPECT_FALSE(BatchLease::take(t.path(), &holder, nullptr)) << "two holders at once";
  EXPECT_EQ(holder, *h);
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_FALSE(batch_lease_holder(t.path()));
  EXPECT_TRUE(BatchLease::take(t.path(), &holder, nullptr));
}

// Hostile lease files: a link is refused by name, a fifo neither hangs the check nor the taking,
// one that cannot be opened leaves the batch unguarded with a warning.
TEST(BatchLease, ALinkIsRefusedAFifoDoesNotHang) {
  TempDir t;
  fs::create_directories(t.path() / "a");
  fs::create_symlink(t.path() / "elsewhere", t.path() / "a" / kBatchLeaseFile);
  std::string holder;
  try {
    (void)BatchLease::take(t.path() / "a", &holder, nullptr);
    ADD_FAILURE() << "a link was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "it is a symbolic link");
  }
  EXPECT_FALSE(fs::exists(t.path() / "elsewhere"));
  EXPECT_FALSE(batch_lease_holder(t.path() / "a"));
  fs::create_directories(t.path() / "b");
  ASSERT_EQ(::mkfifo((t.path() / "b" / kBatchLeaseFile).c_str(), 0644), 0);
  EXPECT_FALSE(batch_lease_holder(t.path() / "b"));
  EXPECT_TRUE(BatchLease::take(t.path() / "b", &holder, nullptr));
  // A lease file that cannot be opened (here a directory; a file system without locks alike):
  // the batch runs unguarded, as before leases, and says so.
  fs::create_directories(t.path() / "c" / kBatchLeaseFile);
  std::string warning;
  EXPECT_TRUE(BatchLease::take(t.path() / "c", &holder, &warning));
  EXPECT_NE(warning.find(".batch.lease': cannot be opened: Is a directory; the batch runs "
                         "without its lease"),
            std::string::npos)
      << warning;
}
