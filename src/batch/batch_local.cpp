// The local scheduler: one `caliber run OP` child per op over this host's devices, one op per
// device at a time, each child pinned to its physical device (batch/batch.hpp says what the batch
// guarantees).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <map>
#include <ostream>
#include <set>
#include <thread>

#include "batch/scheduler.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

using Clock = std::chrono::steady_clock;

// What the scheduler keeps of an op's child while it runs (the pool keeps the child itself).
struct Job {
  int device = 0;
  std::set<fs::path> before;  // the op's run directories before the child started
  fs::path log;
};

class LocalScheduler final : public BatchScheduler {
 public:
  [[nodiscard]] std::string name() const override { return "local"; }

  void check(const BatchOptions& opt, const backends::Backend& backend) override {
    devices_ = opt.devices.empty() ? std::vector<int>{0} : opt.devices;
    // Each op's child runs on one device: a sweep sharded over several has nowhere to go.
    if (const int n = run_knobs_of(opt.run_args).parallel_warmup; n > 1)
      throw BatchUsageError("--parallel-warmup (PARALLEL_WARMUP_GPUS): '" + std::to_string(n) +
                            "' with --scheduler local: each op runs on one device; shard one "
                            "run's sweep with `caliber run --parallel-warmup`, or a batch's "
                            "across nodes with --scheduler slurm (docs/cluster.md)");
    // Every device is checked before anything is claimed: a bad index is bad usage, not N failed
    // ops.
    for (int d : devices_) {
      try {
        pins_[d] = backend.child_env(d);
      } catch (const std::exception& e) {
        throw BatchUsageError(std::string("--devices: ") + e.what());
      }
    }
  }

  [[nodiscard]] nlohmann::json settings(const BatchOptions&) const override {
    return {{"devices", devices_}};
  }

  [[nodiscard]] std::string describe(const BatchOptions&) const override {
    std::string s = "devices";
    for (int d : devices_) {
      s += ' ';
      s += std::to_string(d);
    }
    return s;
  }

  int execute(BatchContext& ctx, std::ostream& out, std::ostream& err) override;

 private:
  std::vector<int> devices_;
  std::map<int, std::map<std::string, std::string>> pins_;
};

// One op's child, as the batch runs it: `caliber run OP` pinned to its device, writing into the
// batch directory, its output in logs/OP.log.
SpawnSpec op_spec(const BatchContext& ctx, const OpStatusRow& row, int device,
                  const std::map<std::string, std::string>& pin, const fs::path& log) {
  SpawnSpec spec;
  // Pinned to the one device, the child sees it as its device 0; unpinned it uses the index.
  spec.argv = {ctx.self.string(),
               "run",
               row.op,
               "--out",
               ctx.batch_dir.string(),
               "--name",
               row.op,
               "--backend",
               ctx.backend->name(),
               "--devices",
               std::to_string(pin.empty() ? device : 0)};
  spec.argv.insert(spec.argv.end(), ctx.opt.run_args.begin(), ctx.opt.run_args.end());
  for (const auto& [k, v] : pin) spec.env[k] = v;
  // The batch chose this child's op: the caller's OP / OP_FILE must not add others.
  spec.env["OP"] = std::nullopt;
  spec.env["OP_FILE"] = std::nullopt;
  // Should the batch die (SIGKILL), the child dies with it and records that in ops_status.csv
  // itself (note_orphaned_batch_child): no row is left at running.
  spec.env["CALIBER_BATCH_DIR"] = ctx.batch_dir.string();
  spec.env["CALIBER_BATCH_PARENT"] = std::to_string(::getpid());
  spec.env["CALIBER_BATCH_OP"] = row.op;
  spec.log_file = log;
  return spec;
}

// The run of one batch on this host: the pending ops through a pool of one slot per device.
class LocalRun {
 public:
  LocalRun(BatchContext& ctx, const std::vector<int>& devices,
           const std::map<int, std::map<std::string, std::string>>& pins, std::ostream& out,
           std::ostream& err)
      : ctx_(ctx),
        devices_(devices),
        pins_(pins),
        out_(out),
        err_(err),
        pending_(ctx.pending.begin(), ctx.pending.end()),
        total_(ctx.pending.size()),
        pool_(devices.size()) {}

  int execute() {
    const int sig =
        pool_.run({[this](std::size_t slot) { return start(slot); },
                   [this](const ChildPool::Ended& e) { finish(e); }, [this] { show_progress(); }},
                  ctx_.opt.timeout_per_op_s, ctx_.opt.grace_s);
    if (ctx_.progress) err_ << "\r\033[K";
    if (sig != 0) interrupt(sig);
    return sig;
  }

 private:
  // The next pending op into a free slot's device; false when none is left.
  bool start(std::size_t slot) {
    if (pending_.empty()) return false;
    const std::size_t i = pending_.front();
    pending_.pop_front();
    const int device = devices_[slot];
    OpStatusRow& row = ctx_.rows[i];
    Job job;
    job.device = device;
    job.before = run_dirs_of(ctx_.batch_dir, row.op);
    job.log = ctx_.batch_dir / "logs" / (row.op + ".log");
    row.device = std::to_string(device);
    try {
      pool_.start(slot, i, op_spec(ctx_, row, device, pins_.at(device), job.log));
    } catch (const std::exception& e) {
      row.status = core::OpStatus::failed;
      row.reason = one_line(e.what());
      ++done_;
      ++not_ok_;
      write_ops_status(ctx_.batch_dir, ctx_.rows);
      return true;
    }
    jobs_[i] = std::move(job);
    row.status = core::OpStatus::running;
    write_ops_status(ctx_.batch_dir, ctx_.rows);
    return true;
  }

  void finish(const ChildPool::Ended& e) {
    const Job job = jobs_.at(e.tag);
    jobs_.erase(e.tag);
    OpStatusRow& row = ctx_.rows[e.tag];
    const auto c = classify_exit(e.status, ctx_.opt.timeout_per_op_s);
    row.status = c.status;
    row.reason = c.reason;
    row.duration_s = e.status.duration_s;
    read_child_results(row, find_child_run_dir(ctx_.batch_dir, row.op, job.before));
    if (row.status == core::OpStatus::crashed || row.status == core::OpStatus::failed) {
      const std::string last = last_log_line(job.log);
      if (!last.empty() && row.reason.find(last) == std::string::npos)
        row.reason += "; log: " + last;
    }
    ++done_;
    done_seconds_ += e.status.duration_s;
    if (row.status != core::OpStatus::ok && row.status != core::OpStatus::skipped) ++not_ok_;
    if (ctx_.progress) err_ << "\r\033[K";
    print_finished(out_, row, "device " + std::to_string(job.device));
    write_ops_status(ctx_.batch_dir, ctx_.rows);
  }

  void show_progress() {
    if (!ctx_.progress) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::string eta = "?";
    if (done_ > 0) {
      const double per_op = done_seconds_ / static_cast<double>(done_);
      const double left = per_op * static_cast<double>(total_ - done_) /
                          static_cast<double>(std::max<std::size_t>(1, pool_.slots()));
      eta = "~";
      eta += format_duration(left);
    }
    err_ << "\r\033[K[batch] " << done_ << "/" << total_ << " done, " << pool_.running()
         << " running, " << not_ok_ << " not ok, elapsed " << format_duration(elapsed) << ", left "
         << eta << std::flush;
  }

  // Every child terminated and reaped; what ran keeps its rows, everything else is interrupted.
  void interrupt(int sig) {
    err_ << "caliber batch: " << signal_name(sig)
         << " received: terminating and reaping every child" << std::endl;
    for (const auto& e : pool_.stop_all(ctx_.opt.grace_s)) {
      OpStatusRow& row = ctx_.rows[e.tag];
      row.duration_s = e.status.duration_s;
      read_child_results(row, find_child_run_dir(ctx_.batch_dir, row.op, jobs_.at(e.tag).before));
      row.status = core::OpStatus::interrupted;
      row.reason = "batch interrupted by " + signal_name(sig) + " while it ran (" +
                   std::to_string(row.rows) + " rows kept)";
    }
    for (std::size_t i : pending_) {
      ctx_.rows[i].status = core::OpStatus::interrupted;
      ctx_.rows[i].reason = "batch interrupted by " + signal_name(sig) + " before it started";
    }
    write_ops_status(ctx_.batch_dir, ctx_.rows);
  }

  BatchContext& ctx_;
  const std::vector<int>& devices_;
  const std::map<int, std::map<std::string, std::string>>& pins_;
  std::ostream& out_;
  std::ostream& err_;
  std::deque<std::size_t> pending_;
  const std::size_t total_;
  ChildPool pool_;
  std::map<std::size_t, Job> jobs_;  // by row index, while running
  std::size_t done_ = 0, not_ok_ = 0;
  double done_seconds_ = 0;
  const Clock::time_point t0_ = Clock::now();
};

int LocalScheduler::execute(BatchContext& ctx, std::ostream& out, std::ostream& err) {
  return LocalRun(ctx, devices_, pins_, out, err).execute();
}

}  // namespace

std::unique_ptr<BatchScheduler> make_local_scheduler() {
  return std::make_unique<LocalScheduler>();
}

}  // namespace caliber::run
