// The batch driver: many ops, one `caliber run OP` per op, on this host's devices (one child
// process per op, one op per device at a time) or as one Slurm job array (batch/scheduler.hpp). A
// child that crashes, hangs past its timeout or fails leaves the rest running; ops_status.csv is
// rewritten atomically after every op; SIGINT/SIGTERM terminates and reaps every child, marks the
// unfinished ops interrupted and keeps every finished row.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batch/slurm_job.hpp"
#include "proc/process.hpp"
#include "settings/knobs.hpp"

namespace caliber::run {

// One line of ops_status.csv. status: ok, failed, crashed, timeout, skipped, interrupted; while
// the batch runs also pending and running (so a batch killed outright still leaves a readable
// file).
struct OpStatusRow {
  std::string op;
  core::OpStatus status = core::OpStatus::pending;
  std::string backend;
  std::string device;
  std::string timer;
  int rows = 0;
  double duration_s = 0;
  std::string reason;
};

inline constexpr const char* kOpsStatusFile = "ops_status.csv";
inline constexpr const char* kBatchConfigFile = "batch.json";

[[nodiscard]] std::string ops_status_csv(const std::vector<OpStatusRow>& rows);
// Throws std::runtime_error on a file without the required columns.
[[nodiscard]] std::vector<OpStatusRow> parse_ops_status_csv(const std::string& text);
[[nodiscard]] std::vector<OpStatusRow> read_ops_status(const std::filesystem::path& batch_dir);
void write_ops_status(const std::filesystem::path& batch_dir, const std::vector<OpStatusRow>& rows);

// What a child's end means for its op: status and reason (run.log facts filled in by the caller).
struct Classified {
  core::OpStatus status = core::OpStatus::failed;
  std::string reason;
};
[[nodiscard]] Classified classify_exit(const ExitStatus& st, double timeout_s);

// The run directory a child made: among `<batch_dir>/<op>-YYYYmmdd-HHMMSS[-N]` not in `before`,
// the newest; nullopt when the child claimed none.
[[nodiscard]] std::optional<std::filesystem::path> find_child_run_dir(
    const std::filesystem::path& batch_dir, const std::string& op,
    const std::set<std::filesystem::path>& before);
[[nodiscard]] std::set<std::filesystem::path> run_dirs_of(const std::filesystem::path& batch_dir,
                                                          const std::string& op);

// The run knobs a batch's children get: its run flags (--flag=value, as batch.json keeps them)
// over the environment they inherit. Throws core::KnobError on a bad value.
[[nodiscard]] core::Knobs run_knobs_of(const std::vector<std::string>& run_args);

// Ops from a file: one per line (or comma separated), '#' starts a comment.
[[nodiscard]] std::vector<std::string> read_op_file(const std::filesystem::path& file);

// A resumed batch's run flags: the stored ones, each replaced by the same flag given again now,
// and new flags appended; a given flag that changes the caliber (--level, --timer, --tune, ...)
// and differs from the stored one throws BatchUsageError, so every op runs under one caliber.
[[nodiscard]] std::vector<std::string> merge_resumed_args(const std::vector<std::string>& stored,
                                                          const std::vector<std::string>& given);

struct BatchOptions {
  std::vector<std::string> ops;  // empty: --op-file, else OP / OP_FILE, else `<self> list --names`
  std::string op_file;
  std::vector<int> devices;     // as the caller sees them; empty: {0}
  std::string backend;          // empty or "auto": resolved here once, passed to every child
  double timeout_per_op_s = 0;  // <= 0: none
  double grace_s = 5;
  std::filesystem::path out = "runs";
  std::string name = "batch";         // the batch directory: <out>/<name>-<timestamp>
  std::filesystem::path resume_dir;   // rerun the ops of this batch that are not ok
  std::vector<std::string> run_args;  // passed to every `caliber run` unchanged
  std::filesystem::path self_exe;     // empty: /proc/self/exe
  std::optional<bool> progress;       // the live progress line; nullopt: when stderr is a terminal
  // "local" (this host's devices) or "slurm" (a job array, docs/cluster.md); empty:
  // CALIBER_SCHEDULER, else the resumed batch's, else local.
  std::string scheduler;
  std::string scheduler_env;    // CALIBER_SCHEDULER (core::Knobs::scheduler), below --scheduler
  slurm::SlurmOptions slurm;    // only with scheduler slurm
  double slurm_poll_max_s = 5;  // the longest wait between two looks at the array's state
  // Checks the final op list (and the run flags) before anything is written; throws for bad
  // input (run::check_batch_ops). Empty: no check.
  std::function<void(const std::vector<std::string>& ops)> check_ops;
};

// In a `caliber run` started by a batch that has died (killed outright): mark this child's row of
// ops_status.csv interrupted, since no parent is left to do it. A no-op anywhere else.
void note_orphaned_batch_child(int exit_code);
// In a `caliber run` started by a batch: a watcher that, once the batch has died or SIGTERM came,
// records the end (note_orphaned_batch_child, orphans only) and ends the run. A no-op elsewhere.
void watch_batch_parent();

// Thrown for bad usage before any child starts (exit code 2): the one usage error.
using BatchUsageError = core::UsageError;

struct BatchOutcome {
  int exit_code = 0;  // 0 every op ok or skipped; 1 some op not ok; 128+N interrupted by signal N
  std::filesystem::path batch_dir;
  std::vector<OpStatusRow> statuses;
};

[[nodiscard]] BatchOutcome run_batch(const BatchOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace caliber::run
