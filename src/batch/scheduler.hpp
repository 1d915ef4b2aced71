// Where a batch's op runs happen: `local` (child processes over this host's devices,
// batch/batch.cpp) or `slurm` (one job array over a cluster, batch/batch_slurm.cpp,
// docs/cluster.md). run_batch does what both share (the ops, the batch directory, batch.json,
// --resume, the closing summary) and hands the pending ops to the scheduler.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "batch/batch.hpp"
#include "records/runlog.hpp"

namespace caliber::run {

// The batch as run_batch runs it: its settings (resolved before anything was written) and what
// changes as it runs.
struct BatchContext {
  explicit BatchContext(const BatchSettings& s)
      : settings(s), opt(s.opt), self(s.self), backend(s.backend) {}
  const BatchSettings& settings;
  const BatchOptions& opt;            // settings.opt
  const std::filesystem::path& self;  // the caliber binary the children run (absolute)
  const backends::Backend* backend;
  std::filesystem::path batch_dir;
  std::vector<OpStatusRow> rows;
  std::vector<std::size_t> pending;  // indices into rows, in order
  bool progress = false;             // the live progress line on err
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  // Part of resolve_batch: checks what the scheduler needs and fills its settings (the local
  // devices and their pins, the Slurm warmup); throws BatchUsageError. Writes nothing.
  virtual void resolve(BatchSettings& s) const = 0;
  // What batch.json keeps of this scheduler's settings, for --resume.
  [[nodiscard]] virtual nlohmann::json stored(const BatchSettings& s) const = 0;
  // The line "batch: DIR (N op(s) to run, ...)" ends with this.
  [[nodiscard]] virtual std::string describe(const BatchSettings& s) const = 0;
  // Runs ctx.pending; every row it touches ends ok, failed, crashed, timeout, skipped or
  // interrupted, with ops_status.csv rewritten as they change. Returns the signal that
  // interrupted it (0: none).
  virtual int execute(BatchContext& ctx, std::ostream& out, std::ostream& err) const = 0;
};

[[nodiscard]] std::unique_ptr<BatchScheduler> make_scheduler(core::SchedulerKind kind);
[[nodiscard]] std::unique_ptr<BatchScheduler> make_local_scheduler();
[[nodiscard]] std::unique_ptr<BatchScheduler> make_slurm_scheduler();

// Shared by the schedulers: how a finished op's row is completed from what its run left.
// What a child's run directory holds, read once: its run.log (none when unreadable: the child died
// before writing one) and the timer of its identity.
struct ChildRun {
  std::filesystem::path dir;
  std::optional<core::RunLog> log;
  std::string timer;
  [[nodiscard]] bool finished() const { return log && log->footer; }  // the footer written
};
[[nodiscard]] ChildRun read_child_run(const std::filesystem::path& run_dir);
// Fills rows, timer, run and the reason details of `row` from its child's run; returns the wall
// time of the rows it counted. own_rows_only: the run is a group's (--ops-per-child), holding
// other ops' rows too; only the rows batch_op_of gives to row.op count, and they alone decide
// between ok, failed (a failed case or check) and skipped.
double apply_child_run(OpStatusRow& row, const ChildRun& run, bool own_rows_only);
// The same for an op's own run directory, read here (nothing when there is none); whether that
// run finished (its footer written).
bool read_child_results(OpStatusRow& row, const std::optional<std::filesystem::path>& run_dir);
// Ends a failed, crashed or timed-out row's reason with the last line of its child's log (the
// error it died with), unless its run finished: a finished run's rows named the failure, and its
// log ends in the closing table and time split, which say nothing of why.
void add_log_tail(OpStatusRow& row, bool run_finished, const std::filesystem::path& log);
// The last non-empty line of a log (usually the error an op died with), on one line.
[[nodiscard]] std::string last_log_line(const std::filesystem::path& log);
[[nodiscard]] std::string format_duration(double s);
using core::one_line;
// "[batch] OP: STATUS (N rows, S s, WHERE): REASON"
void print_finished(std::ostream& out, const OpStatusRow& row, const std::string& where);

}  // namespace caliber::run
