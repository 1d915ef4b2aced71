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

namespace caliber::run {

// The batch as prepared by run_batch, shared with the scheduler that runs it.
struct BatchContext {
  BatchOptions opt;
  std::filesystem::path self;  // the caliber binary the children run (absolute)
  const backends::Backend* backend = nullptr;
  std::filesystem::path batch_dir;
  std::vector<OpStatusRow> rows;
  std::vector<std::size_t> pending;  // indices into rows, in order
  bool progress = false;             // the live progress line on err
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  // Checks what the scheduler needs before anything is written; throws BatchUsageError.
  virtual void check(const BatchOptions& opt, const backends::Backend& backend) = 0;
  // What batch.json keeps of this scheduler's settings, for --resume.
  [[nodiscard]] virtual nlohmann::json settings(const BatchOptions& opt) const = 0;
  // The line "batch: DIR (N op(s) to run, ...)" ends with this.
  [[nodiscard]] virtual std::string describe(const BatchOptions& opt) const = 0;
  // Runs ctx.pending; every row it touches ends ok, failed, crashed, timeout, skipped or
  // interrupted, with ops_status.csv rewritten as they change. Returns the signal that
  // interrupted it (0: none).
  virtual int execute(BatchContext& ctx, std::ostream& out, std::ostream& err) = 0;
};

[[nodiscard]] std::unique_ptr<BatchScheduler> make_local_scheduler();
[[nodiscard]] std::unique_ptr<BatchScheduler> make_slurm_scheduler();

// Shared by the schedulers: how a finished op's row is completed from what its run left.
// Fills rows, timer and the reason details from the op's run directory (run.log, identity).
void read_child_results(OpStatusRow& row, const std::optional<std::filesystem::path>& run_dir);
// The last non-empty line of a log (usually the error an op died with), on one line.
[[nodiscard]] std::string last_log_line(const std::filesystem::path& log);
[[nodiscard]] std::string format_duration(double s);
[[nodiscard]] std::string one_line(std::string s, std::size_t max = 300);
// "[batch] OP: STATUS (N rows, S s, WHERE): REASON"
void print_finished(std::ostream& out, const OpStatusRow& row, const std::string& where);

}  // namespace caliber::run
