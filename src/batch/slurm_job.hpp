// The pure half of `caliber batch --scheduler slurm` (docs/cluster.md): the options and their
// checks, the job-array script, the sbatch command line, parsing what sbatch, scontrol and sacct
// print, and the mapping of a Slurm job state onto an op's status. Nothing here runs a process;
// run/batch_slurm.cpp does, with these.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "proc/exit_record.hpp"
#include "settings/settings.hpp"

namespace caliber::run::slurm {

struct SlurmOptions {
  std::string partition;                 // --partition; empty: the cluster's default
  std::string account;                   // --account; empty: the user's default
  int gpus_per_task = 0;                 // --gpus-per-task; 0: none requested
  std::string time_limit;                // --time-limit, in sbatch's --time format; empty: default
  std::vector<std::string> sbatch_args;  // --sbatch-arg, passed to sbatch as they are
};

// Each throws std::invalid_argument naming the flag, the value and what is allowed.
void check_options(const SlurmOptions& o);
// sbatch's --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or UNLIMITED / INFINITE.
[[nodiscard]] bool valid_time_limit(const std::string& s);
// The time limit in seconds (for messages); nullopt for none, UNLIMITED or a malformed value.
[[nodiscard]] std::optional<long> time_limit_seconds(const std::string& s);

// One job array: task i runs `caliber run ops[i]` into batch_dir.
struct ArraySpec {
  std::filesystem::path caliber;    // absolute: the same installed path on every node
  std::filesystem::path batch_dir;  // absolute, on storage every node shares
  std::string job_name;
  std::string backend;
  std::vector<std::string> ops;
  std::vector<std::string> run_args;  // passed to every `caliber run`
  SlurmOptions slurm;
  std::string after;  // a job id the array waits for (afterany); empty: none
};

// A parallel warmup across nodes (docs/cluster.md): `shards` array tasks, task i tuning shard i
// of the sweep over every op into <dir>/shard-i.db, then one dependent merge job.
struct WarmupSpec {
  std::filesystem::path caliber;
  std::filesystem::path
      dir;  // absolute, on shared storage: shard caches, logs, exit records, result.json
  std::string job_name;
  std::string backend;
  std::vector<std::string> ops;
  std::vector<std::string> run_args;  // without --parallel-warmup
  int shards = 0;
  SlurmOptions slurm;
};

// The directory under the batch directory for scripts and per-task exit records.
inline constexpr const char* kSlurmDir = "slurm";

// POSIX shell quoting: 'abc' with every ' written as '\''.
[[nodiscard]] std::string shell_quote(const std::string& s);
// The batch script (#SBATCH lines, then the task body). Each task runs its op with stdout and
// stderr appended to logs/<op>.log and writes slurm/<op>.exit ("rc=N node=X job=J start_ns=S
// end_ns=E") when caliber returns, so the exact exit code survives whatever Slurm records.
[[nodiscard]] std::string sbatch_script(const ArraySpec& spec);
// The warmup's shard array: task i runs `caliber run OPS ... --tune-shard i/N --shard-cache
// <dir>/shard-i.db`, output to <dir>/shard-i.log, exit record <dir>/shard-i.exit.
[[nodiscard]] std::string warmup_script(const WarmupSpec& spec);
// The merge job (an array of one task, so that it is watched like the others), after every shard
// ended whatever its state (afterany: a failed shard's keys are tuned live later):
// `caliber run ... --merge-warmup <dir> --merge-shards N`, writing <dir>/result.json.
[[nodiscard]] std::string merge_script(const WarmupSpec& spec, const std::string& shards_job);
// Drops --parallel-warmup from run flags: under Slurm the warmup is the batch's, not each task's.
[[nodiscard]] std::vector<std::string> without_parallel_warmup(std::vector<std::string> args);

// argv for the submission: sbatch --parsable <extra sbatch args> <script>.
[[nodiscard]] std::vector<std::string> sbatch_argv(const ArraySpec& spec,
                                                   const std::filesystem::path& script);
// argv for a dry check of the same request before anything is written (sbatch --test-only).
[[nodiscard]] std::vector<std::string> sbatch_test_argv(const SlurmOptions& o);
// The job id from `sbatch --parsable` output ("123" or "123;cluster", possibly after warnings).
[[nodiscard]] std::optional<std::string> parse_sbatch_job_id(const std::string& out);

// One array task as Slurm reports it.
struct TaskState {
  int task = -1;       // SLURM_ARRAY_TASK_ID
  std::string job_id;  // the task's own job id (SLURM_JOB_ID), empty while pending as a range
  std::string state;   // COMPLETED, FAILED, TIMEOUT, RUNNING, PENDING, ... (the first word)
  int exit_code = 0;   // from ExitCode=code:signal
  int exit_signal = 0;
  std::string node;        // NodeList (BatchHost where it differs), empty while pending
  std::string reason;      // Slurm's Reason, "None" dropped
  double run_s = -1;       // RunTime, -1 when not given
  std::string time_limit;  // the limit Slurm applied (TimeLimit; it rounds up to whole minutes)
};

// Array task ids "3", "2-5", "1,4,7-9%2" (the %N limit dropped); empty on anything else.
[[nodiscard]] std::vector<int> expand_task_ids(const std::string& s);
// `scontrol show job -o <array id>`: one line per record; a pending range expands to its tasks.
// Lines that are not job records (errors) are ignored.
[[nodiscard]] std::vector<TaskState> parse_scontrol(const std::string& text);
// `sacct -n -P -X -j <array id> -o JobIDRaw,JobID,State,ExitCode,NodeList,ElapsedRaw`.
[[nodiscard]] std::vector<TaskState> parse_sacct(const std::string& text);
// "01:02:03", "2-01:02:03", "05:07" -> seconds; -1 when malformed.
[[nodiscard]] double parse_duration(const std::string& s);

// Slurm states after which the task will not run again (unless requeued by Slurm).
[[nodiscard]] bool is_terminal(const std::string& state);

// What a finished task means for its op. `record` is the task's exit record when it wrote one for
// this job. status: ok, failed, crashed, timeout, interrupted (ok may still become failed or
// skipped from the run's rows, as in a local batch).
struct Mapped {
  core::OpStatus status = core::OpStatus::crashed;
  std::string reason;
};
[[nodiscard]] Mapped map_state(const TaskState& s, const std::optional<ExitRecord>& record,
                               const std::string& time_limit);

}  // namespace caliber::run::slurm
