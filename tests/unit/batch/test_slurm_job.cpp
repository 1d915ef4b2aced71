// The pure half of the Slurm scheduler: option checks, the array script, the sbatch command line,
// parsing sbatch / scontrol / sacct output and the state mapping (docs/cluster.md's table). The
// scontrol and sacct lines are what Slurm 22.05 printed on the CI cluster (tests/slurm/cluster).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "batch/slurm_job.hpp"

namespace fs = std::filesystem;
using namespace caliber::run::slurm;

namespace {

ArraySpec spec() {
  ArraySpec s;
  s.caliber = "/opt/caliber/bin/caliber";
  s.batch_dir = "/shared/runs/batch-20261130-120000";
  s.job_name = "caliber-batch-20261130-120000";
  s.backend = "cuda";
  s.ops = {"add", "it's"};
  s.run_args = {"--level", "comprehensive", "--min-time", "0.5"};
  s.slurm.partition = "gpu";
  s.slurm.account = "perf";
  s.slurm.gpus_per_task = 1;
  s.slurm.time_limit = "30";
  s.slurm.sbatch_args = {"--qos=high"};
  return s;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A scontrol -o line with the fields we read, and the noise around them.
std::string scontrol_line(const std::string& job, const std::string& task, const std::string& state,
                          const std::string& exit, const std::string& node,
                          const std::string& reason = "None", const std::string& run = "00:00:02") {
  return "JobId=" + job + " ArrayJobId=7 ArrayTaskId=" + task +
         " JobName=caliber-batch UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 "
         "JobState=" +
         state + " Reason=" + reason + " Dependency=(null) ExitCode=" + exit + " RunTime=" + run +
         " TimeLimit=00:01:00 AllocNode:Sid=localhost:3333 NodeList=" + node +
         " BatchHost=" + (node == "(null)" ? std::string("(null)") : node) +
         " TRES=cpu=1,node=1,billing=1 CPUs/Task=1 Command=/shared/x.sbatch "
         "StdOut=/shared/logs/slurm-%A_%a.out Power=\n";
}

}  // namespace

TEST(SlurmJob, TimeLimitFormats) {
  for (const char* ok :
       {"30", "0:30", "1:00:00", "2-0", "2-12:30", "2-12:30:00", "UNLIMITED", "infinite"})
    EXPECT_TRUE(valid_time_limit(ok)) << ok;
  for (const char* bad : {"", "30m", "1h", "-5", "1:2:3:4", "1-", "a:b", "1.5"})
    EXPECT_FALSE(valid_time_limit(bad)) << bad;
  EXPECT_EQ(time_limit_seconds("30"), 1800);
  EXPECT_EQ(time_limit_seconds("0:30"), 30);
  EXPECT_EQ(time_limit_seconds("1:02:03"), 3723);
  EXPECT_EQ(time_limit_seconds("1-2"), 86400 + 7200);
  EXPECT_EQ(time_limit_seconds("1-2:03:04"), 86400 + 7200 + 184);
  EXPECT_FALSE(time_limit_seconds("UNLIMITED").has_value());
  EXPECT_FALSE(time_limit_seconds("").has_value());
}

TEST(SlurmJob, OptionChecksNameTheFlagAndWhatIsAllowed) {
  EXPECT_NO_THROW(check_options(spec().slurm));
  auto message = [](SlurmOptions o) {
    try {
      check_options(o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  SlurmOptions o;
  o.time_limit = "1h";
  EXPECT_TRUE(has(message(o), "--time-limit: '1h'")) << message(o);
  EXPECT_TRUE(has(message(o), "HH:MM:SS")) << message(o);
  o = {};
  o.partition = "gpu\n#SBATCH --x";
  EXPECT_TRUE(has(message(o), "--partition")) << message(o);
  o = {};
  o.account = "a b";
  EXPECT_TRUE(has(message(o), "--account: 'a b'")) << message(o);
  o = {};
  o.gpus_per_task = -1;
  EXPECT_TRUE(has(message(o), "--gpus-per-task")) << message(o);
  for (const char* ours : {"--array=0-3", "--output=x", "-J", "--parsable"}) {
    o = {};
    o.sbatch_args = {ours};
    EXPECT_TRUE(has(message(o), "--sbatch-arg: '" + std::string(ours) + "'")) << message(o);
  }
  o = {};
  o.sbatch_args = {"--qos=high", "--constraint=h200", "--exclusive"};
  EXPECT_EQ(message(o), "accepted");
}

TEST(SlurmJob, ShellQuote) {
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(SlurmJob, ScriptHoldsTheRequestAndTheTaskBody) {
  const std::string s = sbatch_script(spec());
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* line :
       {"#SBATCH --job-name=caliber-batch-20261130-120000\n", "#SBATCH --array=0-1\n",
        "#SBATCH --output=/shared/runs/batch-20261130-120000/logs/slurm-%A_%a.out\n",
        "#SBATCH --partition=gpu\n", "#SBATCH --account=perf\n", "#SBATCH --gpus-per-task=1\n",
        "#SBATCH --time=30\n", "#SBATCH --no-requeue\n", "ops=('add' 'it'\\''s')\n",
        "op=${ops[$SLURM_ARRAY_TASK_ID]}\n", "unset OP OP_FILE PARALLEL_WARMUP_GPUS\n"})
    EXPECT_TRUE(has(s, line)) << line << " not in:\n" << s;
  EXPECT_TRUE(has(s,
                  "'/opt/caliber/bin/caliber' run \"$op\" --out \"$batch\" --name \"$op\" "
                  "--backend 'cuda' --devices 0 '--level' 'comprehensive' '--min-time' '0.5' "
                  ">> \"$batch/logs/$op.log\" 2>&1\n"))
      << s;
  EXPECT_TRUE(has(s, "rc=$?\n"));
  EXPECT_TRUE(has(s, "exit $rc\n"));
  // The extra sbatch args go on the command line, not into the script.
  EXPECT_FALSE(has(s, "qos"));
  // Without the optional settings, no #SBATCH line for them.
  ArraySpec bare = spec();
  bare.slurm = {};
  const std::string b = sbatch_script(bare);
  for (const char* absent : {"--partition", "--account", "--gpus-per-task", "--time="})
    EXPECT_FALSE(has(b, absent)) << absent;
}

// The script really runs: a task of it, with a stand-in caliber, records its exit code, node and
// job id, appends the op's output to its log, and exits with caliber's code.
TEST(SlurmJob, ScriptTaskRecordsTheExitOfItsOp) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("caliber-slurm-script-" + std::to_string(::getpid()) + "-" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir / "logs");
  fs::create_directories(dir / kSlurmDir);
  const fs::path fake = dir / "fake-caliber";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho \"args: $*\"\necho \"OP=${OP:-unset}\"\n"
         "[ \"$2\" = bad ] && exit 3\nexit 0\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  ArraySpec s = spec();
  s.caliber = fake;
  s.batch_dir = dir;
  s.ops = {"good", "bad"};
  s.run_args = {"--level", "core"};
  const fs::path script = dir / "array.sbatch";
  {
    std::ofstream f(script);
    f << sbatch_script(s);
  }
  auto run_task = [&](int task) {
    const std::string cmd = "cd " + shell_quote(dir.string()) +
                            " && SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " SLURM_JOB_ID=10" +
                            std::to_string(task) + " SLURMD_NODENAME=node7 OP=leak bash " +
                            shell_quote(script.string());
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  EXPECT_EQ(run_task(0), 0);
  EXPECT_EQ(run_task(1), 3);
  auto read = [](const fs::path& f) {
    std::ifstream in(f);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const auto good = parse_exit_record(read(dir / kSlurmDir / "good.exit"));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->rc, 0);
  EXPECT_EQ(good->node, "node7");
  EXPECT_EQ(good->job_id, "100");
  EXPECT_GE(good->duration_s, 0);
  const auto bad = parse_exit_record(read(dir / kSlurmDir / "bad.exit"));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->rc, 3);
  EXPECT_EQ(bad->job_id, "101");
  const std::string log = read(dir / "logs" / "good.log");
  EXPECT_TRUE(has(log, "args: run good --out " + dir.string() +
                           " --name good --backend cuda --devices 0 --level core"))
      << log;
  EXPECT_TRUE(has(log, "OP=unset")) << log;
  fs::remove_all(dir);
}

TEST(SlurmJob, SbatchCommandLines) {
  const auto argv = sbatch_argv(spec(), "/shared/x.sbatch");
  EXPECT_EQ(argv,
            (std::vector<std::string>{"sbatch", "--parsable", "--qos=high", "/shared/x.sbatch"}));
  const auto test = sbatch_test_argv(spec().slurm);
  EXPECT_EQ(test.front(), "sbatch");
  for (const char* a : {"--test-only", "--partition=gpu", "--account=perf", "--gpus-per-task=1",
                        "--time=30", "--qos=high", "--wrap=true"})
    EXPECT_NE(std::find(test.begin(), test.end(), a), test.end()) << a;
}

TEST(SlurmJob, ParseSbatchJobId) {
  EXPECT_EQ(parse_sbatch_job_id("123\n"), "123");
  EXPECT_EQ(parse_sbatch_job_id("4567;cluster2\n"), "4567");
  EXPECT_EQ(parse_sbatch_job_id("sbatch: warning: something\n89\n"), "89");
  EXPECT_FALSE(parse_sbatch_job_id("sbatch: error: invalid partition specified: x\n"));
  EXPECT_FALSE(parse_sbatch_job_id(""));
}

TEST(SlurmJob, ExpandTaskIds) {
  EXPECT_EQ(expand_task_ids("3"), std::vector<int>({3}));
  EXPECT_EQ(expand_task_ids("2-5"), std::vector<int>({2, 3, 4, 5}));
  EXPECT_EQ(expand_task_ids("1,4,7-8%2"), std::vector<int>({1, 4, 7, 8}));
  EXPECT_EQ(expand_task_ids("0-6:3"), std::vector<int>({0, 3, 6}));
  EXPECT_TRUE(expand_task_ids("x").empty());
  EXPECT_TRUE(expand_task_ids("5-2").empty());
}

TEST(SlurmJob, ParseScontrol) {
  const std::string text =
      scontrol_line("8", "0", "COMPLETED", "0:0", "vm") +
      scontrol_line("9", "1", "FAILED", "134:0", "vm", "NonZeroExitCode", "00:01:05") +
      scontrol_line("10", "2", "FAILED", "0:6", "vm", "JobLaunchFailure") +
      scontrol_line("7", "3-5%2", "PENDING", "0:0", "(null)", "JobArrayTaskLimit", "00:00:00") +
      "slurm_load_jobs error: Invalid job id specified\n";
  const auto t = parse_scontrol(text);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].task, 0);
  EXPECT_EQ(t[0].job_id, "8");
  EXPECT_EQ(t[0].state, "COMPLETED");
  EXPECT_EQ(t[0].node, "vm");
  EXPECT_EQ(t[0].reason, "");
  EXPECT_DOUBLE_EQ(t[0].run_s, 2);
  EXPECT_EQ(t[0].time_limit, "00:01:00");
  EXPECT_EQ(t[1].exit_code, 134);
  EXPECT_EQ(t[1].exit_signal, 0);
  EXPECT_EQ(t[1].reason, "NonZeroExitCode");
  EXPECT_DOUBLE_EQ(t[1].run_s, 65);
  EXPECT_EQ(t[2].exit_code, 0);
  EXPECT_EQ(t[2].exit_signal, 6);
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(t[static_cast<std::size_t>(i)].task, i);
    EXPECT_EQ(t[static_cast<std::size_t>(i)].state, "PENDING");
    EXPECT_EQ(t[static_cast<std::size_t>(i)].node, "");
    EXPECT_EQ(t[static_cast<std::size_t>(i)].job_id, "");  // a range has no task job id yet
  }
  // A job that is not an array task, and garbage, give nothing.
  EXPECT_TRUE(parse_scontrol("JobId=5 JobName=x JobState=RUNNING\nnonsense\n").empty());
}

TEST(SlurmJob, ParseSacct) {
  const std::string text =
      "21|20_0|COMPLETED|0:0|gpu01|12\n"
      "22|20_1|CANCELLED by 0|0:15|gpu02|3\n"
      "20|20_[2-3]|PENDING|0:0|None assigned|0\n"
      "23|20_4|OUT_OF_MEMORY|0:125|gpu03|40\n";
  const auto t = parse_sacct(text);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].job_id, "21");
  EXPECT_EQ(t[0].node, "gpu01");
  EXPECT_DOUBLE_EQ(t[0].run_s, 12);
  EXPECT_EQ(t[1].state, "CANCELLED");
  EXPECT_EQ(t[1].exit_signal, 15);
  EXPECT_EQ(t[2].task, 2);
  EXPECT_EQ(t[3].task, 3);
  EXPECT_EQ(t[3].job_id, "");
  EXPECT_EQ(t[3].node, "");
  EXPECT_EQ(t[4].state, "OUT_OF_MEMORY");
}

TEST(SlurmJob, ParseDuration) {
  EXPECT_DOUBLE_EQ(parse_duration("00:00:02"), 2);
  EXPECT_DOUBLE_EQ(parse_duration("01:02:03"), 3723);
  EXPECT_DOUBLE_EQ(parse_duration("2-00:00:01"), 172801);
  EXPECT_DOUBLE_EQ(parse_duration("05:07"), 307);
  EXPECT_DOUBLE_EQ(parse_duration("x"), -1);
}

TEST(SlurmJob, TerminalStates) {
  for (const char* s : {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "CANCELLED",
                        "PREEMPTED", "BOOT_FAIL", "DEADLINE"})
    EXPECT_TRUE(is_terminal(s)) << s;
  for (const char* s :
       {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUED", ""})
    EXPECT_FALSE(is_terminal(s)) << s;
}

TEST(SlurmJob, ParseExitRecord) {
  const auto r =
      parse_exit_record("rc=134 node=gpu7 job=55 start_ns=1000000000 end_ns=3500000000\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rc, 134);
  EXPECT_EQ(r->node, "gpu7");
  EXPECT_EQ(r->job_id, "55");
  EXPECT_DOUBLE_EQ(r->duration_s, 2.5);
  EXPECT_FALSE(parse_exit_record("").has_value());
  EXPECT_FALSE(parse_exit_record("node=x").has_value());
  EXPECT_DOUBLE_EQ(parse_exit_record("rc=0")->duration_s, -1);
}

// docs/cluster.md's table, row by row.
TEST(SlurmJob, StateMapping) {
  auto st = [](const std::string& state, int code = 0, int sig = 0) {
    TaskState t;
    t.task = 0;
    t.job_id = "8";
    t.state = state;
    t.exit_code = code;
    t.exit_signal = sig;
    t.node = "gpu07";
    return t;
  };
  auto rec = [](int rc) {
    ExitRecord r;
    r.rc = rc;
    r.job_id = "8";
    return std::optional<ExitRecord>(r);
  };
  const std::optional<ExitRecord> none;

  EXPECT_EQ(map_state(st("COMPLETED"), rec(0), "").status, caliber::core::OpStatus::ok);
  EXPECT_EQ(map_state(st("COMPLETED"), none, "").status, caliber::core::OpStatus::ok);
  auto m = map_state(st("FAILED", 1), rec(1), "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::failed);
  EXPECT_TRUE(has(m.reason, "exit 1")) << m.reason;
  m = map_state(st("FAILED", 134), rec(134), "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::crashed);
  EXPECT_TRUE(has(m.reason, "SIGABRT")) << m.reason;
  EXPECT_TRUE(has(m.reason, "gpu07")) << m.reason;
  m = map_state(st("FAILED", 0, 9), none, "");  // the task script itself killed
  EXPECT_EQ(m.status, caliber::core::OpStatus::crashed);
  EXPECT_TRUE(has(m.reason, "SIGKILL")) << m.reason;
  m = map_state(st("FAILED", 2), none, "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::failed);
  EXPECT_TRUE(has(m.reason, "no exit record")) << m.reason;

  m = map_state(st("TIMEOUT", 0, 15), none, "0:30");
  EXPECT_EQ(m.status, caliber::core::OpStatus::timeout);
  EXPECT_TRUE(has(m.reason, "time limit (0:30)")) << m.reason;
  TaskState applied = st("TIMEOUT", 0, 15);
  applied.time_limit = "00:01:00";
  m = map_state(applied, none, "0:30");
  EXPECT_TRUE(has(m.reason, "(00:01:00 as Slurm applied --time-limit 0:30)")) << m.reason;
  m = map_state(st("NODE_FAIL"), none, "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::crashed);
  EXPECT_TRUE(has(m.reason, "node failure on node gpu07")) << m.reason;
  m = map_state(st("OUT_OF_MEMORY", 0, 125), none, "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::crashed);
  EXPECT_TRUE(has(m.reason, "OOM")) << m.reason;
  m = map_state(st("CANCELLED", 0, 15), none, "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::interrupted);
  EXPECT_TRUE(has(m.reason, "scancel")) << m.reason;
  EXPECT_EQ(map_state(st("PREEMPTED"), none, "").status, caliber::core::OpStatus::interrupted);
  EXPECT_EQ(map_state(st("DEADLINE"), none, "").status, caliber::core::OpStatus::timeout);
  EXPECT_EQ(map_state(st("BOOT_FAIL"), none, "").status, caliber::core::OpStatus::crashed);
  m = map_state(st("VANISHED"), none, "");
  EXPECT_EQ(m.status, caliber::core::OpStatus::crashed);
  EXPECT_TRUE(has(m.reason, "VANISHED")) << m.reason;
}

// A parallel warmup across nodes: the shard array, the merge after it, the ops after the merge.
TEST(SlurmWarmup, ShardArrayTunesShardIOfNAndMeasuresNothing) {
  WarmupSpec w;
  w.caliber = "/opt/caliber/bin/caliber";
  w.dir = "/shared/runs/b/warmup-1";
  w.job_name = "caliber-b-warmup";
  w.backend = "cuda";
  w.ops = {"mm", "add"};
  w.run_args = {"--level=comprehensive"};
  w.shards = 3;
  w.slurm.gpus_per_task = 1;
  w.slurm.partition = "gpu";
  const std::string s = warmup_script(w);
  EXPECT_NE(s.find("#SBATCH --array=0-2\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --gpus-per-task=1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --partition=gpu\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("--dependency"), std::string::npos) << s;
  EXPECT_NE(s.find("'/opt/caliber/bin/caliber' run 'mm' 'add' --backend 'cuda' "
                   "'--level=comprehensive' --devices 0 --tune-shard \"$i/3\" --shard-cache "
                   "\"$dir/shard-$i.db\" --quiet"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("unset OP OP_FILE TEST_NODE REPLAY_FROM PARALLEL_WARMUP_GPUS"),
            std::string::npos);
  EXPECT_NE(s.find("record=\"$dir/shard-$i.exit\""), std::string::npos) << s;

  const std::string m = merge_script(w, "4242");
  EXPECT_NE(m.find("#SBATCH --dependency=afterany:4242\n"), std::string::npos) << m;
  EXPECT_NE(m.find("#SBATCH --array=0-0\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("--gpus-per-task"), std::string::npos) << "the merge needs no GPU: " << m;
  EXPECT_NE(m.find("--merge-warmup \"$dir\" --merge-shards 3"), std::string::npos) << m;
}

TEST(SlurmWarmup, OpArrayWaitsForTheMergeAndStartsNoWarmupOfItsOwn) {
  ArraySpec a = spec();
  a.after = "77";
  const std::string s = sbatch_script(a);
  EXPECT_NE(s.find("#SBATCH --dependency=afterany:77\n"), std::string::npos) << s;
  EXPECT_NE(s.find("unset OP OP_FILE PARALLEL_WARMUP_GPUS"), std::string::npos) << s;
  EXPECT_EQ(sbatch_script(spec()).find("--dependency"), std::string::npos);
  EXPECT_EQ(without_parallel_warmup(
                {"--level=core", "--parallel-warmup=2", "--parallel-warmup", "3", "--seed=1"}),
            (std::vector<std::string>{"--level=core", "--seed=1"}));
}
