// The local scheduler: one `caliber run OP` child per op over this host's devices, one op per
// device at a time, each child pinned to its physical device (run/batch.hpp says what the batch
// guarantees).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <map>
#include <ostream>
#include <set>
#include <thread>

#include "run/scheduler.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  std::size_t index = 0;  // into the status rows
  int device = 0;
  Child child;
  std::set<fs::path> before;
  fs::path log;
};

class LocalScheduler final : public BatchScheduler {
 public:
  [[nodiscard]] std::string name() const override { return "local"; }

  void check(const BatchOptions& opt, const backends::Backend& backend) override {
    devices_ = opt.devices.empty() ? std::vector<int>{0} : opt.devices;
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

int LocalScheduler::execute(BatchContext& ctx, std::ostream& out, std::ostream& err) {
  const BatchOptions& opt = ctx.opt;
  const fs::path& batch_dir = ctx.batch_dir;
  auto& rows = ctx.rows;
  const std::string backend = ctx.backend->name();
  std::deque<std::size_t> pending(ctx.pending.begin(), ctx.pending.end());
  const bool progress = ctx.progress;
  const auto t0 = Clock::now();
  const std::size_t total = pending.size();
  std::size_t done = 0, not_ok = 0;
  double done_seconds = 0;
  std::vector<std::optional<Job>> slots(devices_.size());

  auto show_progress = [&] {
    if (!progress) return;
    std::size_t running = 0;
    for (const auto& s : slots) running += s.has_value();
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string eta = "?";
    if (done > 0) {
      const double per_op = done_seconds / static_cast<double>(done);
      const double left = per_op * static_cast<double>(total - done) /
                          static_cast<double>(std::max<std::size_t>(1, slots.size()));
      eta = "~";
      eta += format_duration(left);
    }
    err << "\r\033[K[batch] " << done << "/" << total << " done, " << running << " running, "
        << not_ok << " not ok, elapsed " << format_duration(elapsed) << ", left " << eta
        << std::flush;
  };

  auto finish = [&](Job& job, const ExitStatus& st) {
    OpStatusRow& row = rows[job.index];
    const auto c = classify_exit(st, opt.timeout_per_op_s);
    row.status = c.status;
    row.reason = c.reason;
    row.duration_s = st.duration_s;
    read_child_results(row, find_child_run_dir(batch_dir, row.op, job.before));
    if (row.status == "crashed" || row.status == "failed") {
      const std::string last = last_log_line(job.log);
      if (!last.empty() && row.reason.find(last) == std::string::npos)
        row.reason += "; log: " + last;
    }
    ++done;
    done_seconds += st.duration_s;
    if (row.status != "ok" && row.status != "skipped") ++not_ok;
    if (progress) err << "\r\033[K";
    print_finished(out, row, "device " + std::to_string(job.device));
    write_ops_status(batch_dir, rows);
  };

  auto start = [&](std::size_t slot_index) {
    const std::size_t i = pending.front();
    pending.pop_front();
    const int device = devices_[slot_index];
    OpStatusRow& row = rows[i];
    Job job;
    job.index = i;
    job.device = device;
    job.before = run_dirs_of(batch_dir, row.op);
    job.log = batch_dir / "logs" / (row.op + ".log");
    SpawnSpec spec;
    const auto& pin = pins_.at(device);
    // Pinned to the one device, the child sees it as its device 0; unpinned it uses the index.
    spec.argv = {ctx.self.string(),
                 "run",
                 row.op,
                 "--out",
                 batch_dir.string(),
                 "--name",
                 row.op,
                 "--backend",
                 backend,
                 "--devices",
                 std::to_string(pin.empty() ? device : 0)};
    spec.argv.insert(spec.argv.end(), opt.run_args.begin(), opt.run_args.end());
    for (const auto& [k, v] : pin) spec.env[k] = v;
    // The batch chose this child's op: the caller's OP / OP_FILE must not add others.
    spec.env["OP"] = std::nullopt;
    spec.env["OP_FILE"] = std::nullopt;
    // Should the batch die (SIGKILL), the child dies with it and records that in ops_status.csv
    // itself (note_orphaned_batch_child): no row is left at running.
    spec.env["CALIBER_BATCH_DIR"] = batch_dir.string();
    spec.env["CALIBER_BATCH_PARENT"] = std::to_string(::getpid());
    spec.env["CALIBER_BATCH_OP"] = row.op;
    spec.log_file = job.log;
    row.device = std::to_string(device);
    try {
      job.child = Child::spawn(spec);
    } catch (const std::exception& e) {
      row.status = "failed";
      row.reason = one_line(e.what());
      ++done;
      ++not_ok;
      write_ops_status(batch_dir, rows);
      return;
    }
    row.status = "running";
    write_ops_status(batch_dir, rows);
    slots[slot_index] = std::move(job);
  };

  for (;;) {
    if (SignalGuard::interrupted()) break;
    for (std::size_t s = 0; s < slots.size(); ++s)
      if (!slots[s] && !pending.empty() && !SignalGuard::interrupted()) start(s);
    bool any_running = false;
    for (auto& slot : slots) {
      if (!slot) continue;
      auto st = slot->child.poll();
      if (!st && opt.timeout_per_op_s > 0 && slot->child.elapsed_s() >= opt.timeout_per_op_s)
        st = slot->child.terminate(opt.grace_s, ExitKind::timeout);
      if (st) {
        finish(*slot, *st);
        slot.reset();
      } else {
        any_running = true;
      }
    }
    if (!any_running && pending.empty()) break;
    show_progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  const int sig = SignalGuard::received();
  if (progress) err << "\r\033[K";
  if (sig != 0) {
    err << "caliber batch: " << signal_name(sig) << " received: terminating and reaping every child"
        << std::endl;
    // Ask every group at once, then collect: a slow child does not delay the others' SIGTERM.
    for (auto& slot : slots)
      if (slot && slot->child.running()) ::kill(-slot->child.pid(), SIGTERM);
    for (auto& slot : slots) {
      if (!slot) continue;
      const auto st = slot->child.terminate(opt.grace_s, ExitKind::stopped);
      OpStatusRow& row = rows[slot->index];
      row.duration_s = st.duration_s;
      read_child_results(row, find_child_run_dir(batch_dir, row.op, slot->before));
      row.status = "interrupted";
      row.reason = "batch interrupted by " + signal_name(sig) + " while it ran (" +
                   std::to_string(row.rows) + " rows kept)";
      slot.reset();
    }
    for (std::size_t i : pending) {
      rows[i].status = "interrupted";
      rows[i].reason = "batch interrupted by " + signal_name(sig) + " before it started";
    }
    write_ops_status(batch_dir, rows);
  }
  return sig;
}

}  // namespace

std::unique_ptr<BatchScheduler> make_local_scheduler() {
  return std::make_unique<LocalScheduler>();
}

}  // namespace caliber::run
