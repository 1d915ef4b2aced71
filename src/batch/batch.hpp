// The batch driver: many ops, one `caliber run OP` per op, on this host's devices (one child
// process per op, one op per device at a time) or as one Slurm job array (batch/scheduler.hpp). A
// child that crashes, hangs past its timeout or fails leaves the rest running; ops_status.csv is
// rewritten atomically after every op; SIGINT/SIGTERM terminates and reaps every child, marks the
// unfinished ops interrupted and keeps every finished row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batch/slurm_job.hpp"
#include "proc/process.hpp"
#include "records/ops_status.hpp"
#include "settings/knobs.hpp"

namespace caliber::backends {
class Backend;
}  // namespace caliber::backends

namespace caliber::run {

// ops_status.csv's rows, reader and writer live with the other records (records/ops_status.hpp).
using core::batch_op_of;
using core::kOpsStatusFile;
using core::ops_status_csv;
using core::OpStatusRow;
using core::parse_ops_status_csv;
using core::read_ops_status;
inline constexpr const char* kBatchConfigFile = "batch.json";
// The largest batch.json read by --resume (docs/limits.md): its ops list is at most 10000 names.
inline constexpr std::uintmax_t kMaxBatchConfigBytes = 16u << 20;
// Where a local batch's children keep their private temporary folders (CALIBER_BATCH_DIR/staging:
// python/caliber/_staging.py); the batch removes it when it ends, since a child killed by a signal
// cannot remove its own (docs/cluster.md, "Temporary files").
inline constexpr const char* kBatchStagingDir = "staging";

// Rewrites ops_status.csv atomically; a failed write (a full disk) is reported once and retried
// after the next op.
void write_ops_status(const std::filesystem::path& batch_dir, const std::vector<OpStatusRow>& rows);

// What a child's end means for its op: status and reason (run.log facts filled in by the caller).
struct Classified {
  core::OpStatus status = core::OpStatus::failed;
  std::string reason;
};
[[nodiscard]] Classified classify_exit(const ExitStatus& st, double timeout_s);

// The name of a group child's run directory: "group-<first op>-<ops in the group>".
[[nodiscard]] std::string group_run_name(const std::vector<std::string>& ops);

// The run directory a child made: among `<batch_dir>/<op>-YYYYmmdd-HHMMSS[-N]` not in `before`,
// the newest; nullopt when the child claimed none.
[[nodiscard]] std::optional<std::filesystem::path> find_child_run_dir(
    const std::filesystem::path& batch_dir, const std::string& op,
    const std::set<std::filesystem::path>& before);
[[nodiscard]] std::set<std::filesystem::path> run_dirs_of(const std::filesystem::path& batch_dir,
                                                          const std::string& op);

// The run knobs the children of a batch (or of one side of an A/B) get: their run flags as batch
// and ab pass them (`--FLAG=VALUE` of a knob of the table, a repeatable knob's values joined;
// `--profile` alone; `--quiet`) over the environment `env` they see. Anything else `caliber run`
// would refuse, before the first child does: a flag it does not take, a flag without its value,
// one given twice (UsageError naming `who` and the argument); a bad value (core::KnobError).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
[[nodiscard]] core::Knobs resolve_run_args(const std::vector<std::string>& run_args,
                                           const EnvLookup& env, const std::string& who);

// Ops from a file: one per line (or comma separated), '#' starts a comment.
[[nodiscard]] std::vector<std::string> read_op_file(const std::filesystem::path& file);

// A resumed batch's run flags: the stored ones, each replaced by the same flag given again now,
// and new flags appended; a given flag that changes the caliber (--level, --timer, --tune, ...)
// and differs from the stored one throws BatchUsageError, so every op runs under one caliber.
[[nodiscard]] std::vector<std::string> merge_resumed_args(const std::vector<std::string>& stored,
                                                          const std::vector<std::string>& given);

// A timeout's seconds as --timeout-per-op and --timeout-for take them: a number from 0 to 1e7
// (0: none); nullopt for anything else (NaN and inf among them).
[[nodiscard]] std::optional<double> parse_timeout_seconds(const std::string& text);

inline constexpr int kMaxOpsPerChild = 1000;

struct BatchOptions {
  std::vector<std::string> ops;  // empty: --op-file, else OP / OP_FILE, else `<self> list --names`
  std::string op_file;
  std::vector<int> devices;     // as the caller sees them; empty: {0}
  std::string backend;          // empty or "auto": resolved here once, passed to every child
  double timeout_per_op_s = 0;  // <= 0: none
  // --timeout-for OP=SECONDS, repeatable: an op's own limit over timeout_per_op_s (0: none), e.g.
  // a GEMM file's minutes beside pointwise files' seconds in one FlagGems batch.
  std::vector<std::string> timeout_for;
  double grace_s = 5;
  // --ops-per-child N: up to N ops share one child (`caliber run OP1 .. OPN`), so a process's
  // start-up (a FlagGems child's import of torch, Triton and flag_gems) is paid once per group.
  // As given (resolve_batch checks it); nullopt: not given (a resumed batch's stored value, else
  // 1).
  std::optional<std::string> ops_per_child;
  std::filesystem::path out = "runs";
  std::string name = "batch";         // the batch directory: <out>/<name>-<timestamp>
  std::filesystem::path resume_dir;   // rerun the ops of this batch that are not ok
  bool resume_given = false;          // --resume was given (a blank resume_dir is refused)
  std::vector<std::string> run_args;  // passed to every `caliber run` unchanged
  std::filesystem::path self_exe;     // empty: /proc/self/exe
  std::optional<bool> progress;       // the live progress line; nullopt: when stderr is a terminal
  // "local" (this host's devices) or "slurm" (a job array, docs/cluster.md); empty:
  // CALIBER_SCHEDULER, else the resumed batch's, else local.
  std::string scheduler;
  std::string scheduler_env;    // CALIBER_SCHEDULER (core::Knobs::scheduler), below --scheduler
  slurm::SlurmOptions slurm;    // only with scheduler slurm
  double slurm_poll_max_s = 5;  // the longest wait between two looks at the array's state
  // Checks the final op list under the children's run knobs (the backend resolved) before
  // anything is written; throws for bad input (run::check_batch_ops). Empty: no check.
  std::function<void(const core::Knobs& run_knobs, const std::vector<std::string>& ops)> check_ops;
};

// A batch as resolve_batch leaves it: every setting typed and checked, nothing written yet. The
// rooms below (run_batch, the schedulers) read it and refuse nothing (docs/architecture.md,
// "What is resolved where").
struct BatchSettings {
  BatchOptions opt;  // the request, with a resumed batch's stored settings where not given again
  core::SchedulerKind scheduler = core::SchedulerKind::local;
  const backends::Backend* backend = nullptr;
  std::filesystem::path self;     // the caliber binary the children run
  core::Knobs run_knobs;          // opt.run_args resolved, as every child will resolve them
  std::vector<std::string> ops;   // a new batch's ops as named (batch.json "ops")
  std::vector<OpStatusRow> rows;  // one per op: a new batch's, or a resumed batch's as read
  std::vector<int> devices;       // local: the devices, each one checked
  std::map<int, std::map<std::string, std::string>> pins;  // local: each device's pin variables
  int warmup_shards = 0;  // slurm: a parallel warmup over this many array tasks first (0: none)
  std::map<std::string, double> op_timeouts;  // opt.timeout_for, each op one of the batch's
  int ops_per_child = 1;  // opt.ops_per_child resolved: 1 to kMaxOpsPerChild (local only)
  [[nodiscard]] bool resumed() const { return !opt.resume_dir.empty(); }
  // The seconds an op's child may run (its --timeout-for, else --timeout-per-op; <= 0: none).
  [[nodiscard]] double timeout_of(const std::string& op) const {
    const auto it = op_timeouts.find(op);
    return it != op_timeouts.end() ? it->second : opt.timeout_per_op_s;
  }
  // A group child's limit: the sum of its ops' own (none when one of them has none).
  [[nodiscard]] double timeout_of(const std::vector<std::string>& ops) const {
    double sum = 0;
    for (const auto& op : ops) {
      const double t = timeout_of(op);
      if (t <= 0) return 0;
      sum += t;
    }
    return sum;
  }
};

// Resolves and checks the whole request (the scheduler, the backend, the run flags, the ops and
// the per-op checks, the devices, --out; for --resume the batch's files); throws BatchUsageError
// (core::UsageError) for bad input. Writes nothing; a child may be started to list the ops.
[[nodiscard]] BatchSettings resolve_batch(const BatchOptions& opt);

// In a `caliber run` started by a batch that has died (killed outright): mark this child's row of
// ops_status.csv interrupted, since no parent is left to do it. A no-op anywhere else.
void note_orphaned_batch_child(int exit_code);
// In a `caliber run` started by a batch: a watcher that, once the batch has died or SIGTERM came,
// records the end (note_orphaned_batch_child, orphans only) and ends the run. Everywhere it
// unblocks SIGTERM, which the batch holds blocked across exec until the handler is in
// (proc::SpawnSpec::hold_sigterm): a batch killed while its child starts still gets recorded.
// main calls it first, before a command is handed to Python (whose interpreter must not inherit
// a blocked SIGTERM); a second call in one process does nothing.
void watch_batch_parent();
// The batch variables of a child (CALIBER_BATCH_DIR, _PARENT, _OP), trusted only when they are
// consistent: all three set, _PARENT this process's parent and _DIR a batch directory (its
// batch.json a regular file). Leftover ones in a shell would otherwise end a plain run at once and
// rewrite another batch's ops_status.csv: they are ignored, and `warning` (set once, for the
// first caller) says why in one line. nullopt where they are not set or not trusted.
struct BatchChildEnv {
  std::string dir, parent, op;
};
[[nodiscard]] std::optional<BatchChildEnv> batch_child_env(std::string* warning = nullptr);
// At the start of every command: batch variables that are not trusted (batch_child_env) are
// said once and removed from the environment, so that no process this one starts (a Python
// run's interpreter, whose temporary folders would go to CALIBER_BATCH_DIR) takes them up.
void drop_untrusted_batch_env(std::ostream& err);

// Thrown for bad usage before any child starts (exit code 2): the one usage error.
using BatchUsageError = core::UsageError;

struct BatchOutcome {
  int exit_code = 0;  // 0 every op ok or skipped; 1 some op not ok; 128+N interrupted by signal N
  std::filesystem::path batch_dir;
  std::vector<OpStatusRow> statuses;
};

// Runs a resolved batch: claims its directory (a new batch), then the pending ops.
[[nodiscard]] BatchOutcome run_batch(const BatchSettings& s, std::ostream& out, std::ostream& err);
// resolve_batch, then run_batch.
[[nodiscard]] BatchOutcome run_batch(const BatchOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace caliber::run
