// The local scheduler: one `caliber run OP` child per op over this host's devices, one op per
// device at a time, each child pinned to its physical device (batch/batch.hpp says what the batch
// guarantees).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <ostream>
#include <set>
#include <thread>

#include "batch/flaggems_tree.hpp"
#include "batch/scheduler.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

using Clock = std::chrono::steady_clock;

// What the scheduler keeps of a child while it runs (the pool keeps the child itself): one op's,
// or a group's (--ops-per-child), whose ops share one run directory.
struct Job {
  int device = 0;
  std::vector<std::size_t> members;  // rows of the ops it runs, in order (one: a child per op)
  std::vector<std::string> ops;      // their ops
  std::string name;                  // its run directory's name: the op's, or the group's
  std::set<fs::path> before;         // run directories of that name before the child started
  fs::path log;
  [[nodiscard]] bool group() const { return members.size() > 1; }
};

class LocalScheduler final : public BatchScheduler {
 public:
  [[nodiscard]] std::string name() const override { return "local"; }

  void resolve(BatchSettings& s) const override {
    s.devices = s.opt.devices.empty() ? std::vector<int>{0} : s.opt.devices;
    // Each op's child runs on one device: a sweep sharded over several has nowhere to go.
    // (A FlagGems batch shards nowhere, Slurm included: its own refusal, in batch_ops, says so.)
    if (const int n = s.run_knobs.parallel_warmup;
        n > 1 && flaggems_root_of(s.opt.run_args).empty())
      throw BatchUsageError("--parallel-warmup (PARALLEL_WARMUP_GPUS): '" + std::to_string(n) +
                            "' with --scheduler local: each op runs on one device; shard one "
                            "run's sweep with `caliber run --parallel-warmup`, or a batch's "
                            "across nodes with --scheduler slurm (docs/cluster.md)");
    // Every device is checked before anything is claimed: a bad index is bad usage, not N failed
    // ops.
    for (int d : s.devices) {
      try {
        s.pins[d] = s.backend->child_env(d);
      } catch (const std::exception& e) {
        throw BatchUsageError(std::string("--devices: ") + e.what());
      }
    }
  }

  [[nodiscard]] nlohmann::json stored(const BatchSettings& s) const override {
    return {{"devices", s.devices}};
  }

  [[nodiscard]] std::string describe(const BatchSettings& s) const override {
    std::string d = "devices";
    for (int dev : s.devices) {
      d += ' ';
      d += std::to_string(dev);
    }
    return d;
  }

  int execute(BatchContext& ctx, std::ostream& out, std::ostream& err) const override;
};

// A child as the batch runs it: `caliber run OP...` (one op, or a group's) pinned to its device,
// writing into the batch directory under the job's name, its output in logs/NAME.log.
SpawnSpec op_spec(const BatchContext& ctx, const Job& job,
                  const std::map<std::string, std::string>& pin) {
  SpawnSpec spec;
  std::string ops;
  spec.argv = {ctx.self.string(), "run"};
  spec.hold_sigterm = true;  // until the child's handler is in (watch_batch_parent)
  for (const auto& op : job.ops) {
    spec.argv.push_back(op);
    ops += (ops.empty() ? "" : ",") + op;
  }
  // Pinned to the one device, the child sees it as its device 0; unpinned it uses the index.
  for (const std::string& a :
       {std::string("--out"), ctx.batch_dir.string(), std::string("--name"), job.name,
        std::string("--backend"), ctx.backend->name(), std::string("--devices"),
        std::to_string(pin.empty() ? job.device : 0)})
    spec.argv.push_back(a);
  spec.argv.insert(spec.argv.end(), ctx.opt.run_args.begin(), ctx.opt.run_args.end());
  for (const auto& [k, v] : pin) spec.env[k] = v;
  // The batch chose this child's op: the caller's OP / OP_FILE must not add others.
  spec.env["OP"] = std::nullopt;
  spec.env["OP_FILE"] = std::nullopt;
  // Should the batch die (SIGKILL), the child dies with it and records that in ops_status.csv
  // itself (note_orphaned_batch_child): no row is left at running.
  // Absolute: a child (or the interpreter a --flaggems child hands off to) that changes its
  // working directory still finds the batch's files.
  spec.env["CALIBER_BATCH_DIR"] = fs::absolute(ctx.batch_dir).string();
  spec.env["CALIBER_BATCH_PARENT"] = std::to_string(::getpid());
  spec.env["CALIBER_BATCH_OP"] = ops;  // a group's ops, comma separated
  spec.log_file = job.log;
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
  // The next pending op, or group of ops, into a free slot's device; false when none is left.
  bool start(std::size_t slot) {
    if (pending_.empty()) return false;
    Job job;
    job.device = devices_[slot];
    job.members = next_members();
    for (std::size_t i : job.members) job.ops.push_back(ctx_.rows[i].op);
    job.name = job.group() ? group_run_name(job.ops) : job.ops.front();
    job.before = run_dirs_of(ctx_.batch_dir, job.name);
    job.log = ctx_.batch_dir / "logs" / (job.name + ".log");
    for (std::size_t i : job.members) ctx_.rows[i].device = std::to_string(job.device);
    const std::size_t tag = job.members.front();
    try {
      pool_.start(slot, tag, op_spec(ctx_, job, pins_.at(job.device)),
                  ctx_.settings.timeout_of(job.ops));
    } catch (const std::exception& e) {
      for (std::size_t i : job.members) {
        OpStatusRow& row = ctx_.rows[i];
        row.status = core::OpStatus::failed;
        row.reason = one_line(e.what());
        ++done_;
        ++not_ok_;
      }
      write_ops_status(ctx_.batch_dir, ctx_.rows);
      return true;
    }
    for (std::size_t i : job.members) ctx_.rows[i].status = core::OpStatus::running;
    jobs_[tag] = std::move(job);
    write_ops_status(ctx_.batch_dir, ctx_.rows);
    return true;
  }

  // The ops of the next child: the first pending op, and with --ops-per-child N the pending ops
  // after it, up to N, that have not yet run in a group that failed them (those run alone).
  std::vector<std::size_t> next_members() {
    std::vector<std::size_t> m{pending_.front()};
    pending_.pop_front();
    if (alone_.count(m.front()) > 0) return m;
    const auto n = static_cast<std::size_t>(std::max(1, ctx_.settings.ops_per_child));
    for (auto it = pending_.begin(); it != pending_.end() && m.size() < n;) {
      if (alone_.count(*it) > 0) {
        ++it;
        continue;
      }
      m.push_back(*it);
      it = pending_.erase(it);
    }
    return m;
  }

  void finish(const ChildPool::Ended& e) {
    const Job job = jobs_.at(e.tag);
    jobs_.erase(e.tag);
    if (job.group()) {
      finish_group(job, e.status);
      return;
    }
    OpStatusRow& row = ctx_.rows[e.tag];
    const auto c = classify_exit(e.status, ctx_.settings.timeout_of(row.op));
    row.status = c.status;
    row.reason = c.reason;
    row.duration_s = e.status.duration_s;
    const auto run_dir = find_child_run_dir(ctx_.batch_dir, job.name, job.before);
    add_log_tail(row, read_child_results(row, run_dir), job.log);
    done_seconds_ += e.status.duration_s;
    finished(row, "device " + std::to_string(job.device));
  }

  // A group's child ended. Only a run that finished (its footer written) can vouch for its ops:
  // each op ok or skipped by its own rows is done, with its rows in the group's run directory.
  // Every other op of the group (a failed case, no rows, or all of them after a crash, a timeout
  // or a refusal) runs again in a child of its own, so that every failed, crashed or timed-out
  // status comes from the op's own child, never from a neighbour's.
  void finish_group(const Job& job, const ExitStatus& st) {
    const auto dir = find_child_run_dir(ctx_.batch_dir, job.name, job.before);
    const ChildRun run = dir ? read_child_run(*dir) : ChildRun{};
    const bool vouches =
        st.kind == ExitKind::exited && (st.code == 0 || st.code == 1) && run.finished();
    std::vector<std::size_t> again;
    double rows_s = 0;
    std::vector<std::size_t> kept;
    for (std::size_t i : job.members) {
      OpStatusRow& row = ctx_.rows[i];
      if (vouches) {
        OpStatusRow judged = row;
        judged.status = core::OpStatus::ok;
        judged.reason.clear();
        judged.duration_s = apply_child_run(judged, run, true);
        if (judged.rows > 0 &&
            (judged.status == core::OpStatus::ok || judged.status == core::OpStatus::skipped)) {
          rows_s += judged.duration_s;
          row = judged;
          kept.push_back(i);
          continue;
        }
      }
      again.push_back(i);
    }
    // The child's start-up and what no row holds, shared by the ops it vouched for.
    const double rest = std::max(0.0, st.duration_s - rows_s);
    for (std::size_t i : kept) {
      ctx_.rows[i].duration_s += rest / static_cast<double>(kept.size());
      done_seconds_ += ctx_.rows[i].duration_s;
      finished(ctx_.rows[i], "device " + std::to_string(job.device) + ", " + job.name);
    }
    if (!again.empty()) {
      const auto c = classify_exit(st, ctx_.settings.timeout_of(job.ops));
      std::string ops;
      for (std::size_t i : again) ops += (ops.empty() ? "" : ", ") + ctx_.rows[i].op;
      if (ctx_.progress) err_ << "\r\033[K";
      char wall[32];  // as print_finished writes it; the stream's own format is left alone
      std::snprintf(wall, sizeof wall, "%.1f", st.duration_s);
      out_ << "[batch] " << job.name << ": " << core::to_string(c.status)
           << (vouches ? " for some of its ops" : "") << " (" << wall << " s, device " << job.device
           << "); " << again.size() << " op(s) run again in a child each: " << one_line(ops, 200)
           << std::endl;
      // Back to the front of the queue, in their order, each alone.
      for (auto it = again.rbegin(); it != again.rend(); ++it) {
        ctx_.rows[*it].status = core::OpStatus::pending;
        alone_.insert(*it);
        pending_.push_front(*it);
      }
    }
    write_ops_status(ctx_.batch_dir, ctx_.rows);
  }

  // An op's end: counted, printed and written.
  void finished(const OpStatusRow& row, const std::string& where) {
    ++done_;
    if (row.status != core::OpStatus::ok && row.status != core::OpStatus::skipped) ++not_ok_;
    if (ctx_.progress) err_ << "\r\033[K";
    print_finished(out_, row, where);
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
      const Job& job = jobs_.at(e.tag);
      const auto dir = find_child_run_dir(ctx_.batch_dir, job.name, job.before);
      const ChildRun run = dir ? read_child_run(*dir) : ChildRun{};
      for (std::size_t i : job.members) {
        OpStatusRow& row = ctx_.rows[i];
        row.duration_s = e.status.duration_s;
        if (dir) (void)apply_child_run(row, run, job.group());
        row.status = core::OpStatus::interrupted;
        row.reason = "batch interrupted by " + signal_name(sig) + " while it ran (" +
                     std::to_string(row.rows) + " rows kept)";
      }
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
  std::map<std::size_t, Job> jobs_;  // by its first row's index, while running
  std::set<std::size_t> alone_;      // rows a group could not vouch for: each runs alone now
  std::size_t done_ = 0, not_ok_ = 0;
  double done_seconds_ = 0;
  const Clock::time_point t0_ = Clock::now();
};

int LocalScheduler::execute(BatchContext& ctx, std::ostream& out, std::ostream& err) const {
  return LocalRun(ctx, ctx.settings.devices, ctx.settings.pins, out, err).execute();
}

}  // namespace

std::unique_ptr<BatchScheduler> make_local_scheduler() {
  return std::make_unique<LocalScheduler>();
}

}  // namespace caliber::run
