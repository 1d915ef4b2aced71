// The slurm scheduler: the batch's pending ops as one job array (sbatch --array), task i running
// `caliber run` of op i on whatever node Slurm gives it, into the batch directory on shared
// storage. The parent polls the array's state (scontrol, else sacct; with a bounded interval),
// fills ops_status.csv as tasks end, and on SIGINT/SIGTERM cancels the array (scancel). The
// script, the parsing and the state mapping are pure functions in run/slurm_job.cpp;
// docs/cluster.md says how a team uses this.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "core/identity.hpp"
#include "core/rundir.hpp"
#include "run/scheduler.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

using Clock = std::chrono::steady_clock;
namespace sl = slurm;

// Runs a Slurm command with its stderr merged into the captured text (its errors are the
// message we want to show, and must not scroll past the user's terminal).
Captured slurm_command(const std::vector<std::string>& argv, double timeout_s = 60) {
  std::string cmd = "exec";
  for (const auto& a : argv) {
    cmd += ' ';
    cmd += sl::shell_quote(a);
  }
  cmd += " 2>&1";
  return run_capture({"/bin/sh", "-c", cmd}, timeout_s);
}

std::string last_nonempty_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return one_line(last, 200);
}

std::string read_text(const fs::path& f) {
  std::ifstream in(f);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Array job ids this batch submitted (batch.json "slurm_jobs").
std::vector<std::string> recorded_jobs(const fs::path& batch_dir) {
  std::ifstream in(batch_dir / kBatchConfigFile);
  if (!in) return {};
  const auto cfg = nlohmann::json::parse(in, nullptr, false);
  if (!cfg.is_object() || !cfg.contains("slurm_jobs") || !cfg["slurm_jobs"].is_array()) return {};
  std::vector<std::string> out;
  for (const auto& j : cfg["slurm_jobs"])
    if (j.is_string()) out.push_back(j.get<std::string>());
  return out;
}

void record_job(const fs::path& batch_dir, const std::string& job_id) {
  nlohmann::json cfg = nlohmann::json::object();
  {
    std::ifstream in(batch_dir / kBatchConfigFile);
    if (in) cfg = nlohmann::json::parse(in, nullptr, false);
  }
  if (!cfg.is_object()) cfg = nlohmann::json::object();
  cfg["slurm_jobs"].push_back(job_id);
  core::write_file_atomic(batch_dir / kBatchConfigFile, cfg.dump(2) + "\n");
}

// The array's tasks as Slurm sees them now: scontrol while slurmctld still holds the job, else
// the accounting record (sacct) where accounting runs; empty when neither knows it; nullopt when
// Slurm did not answer (the controller busy or unreachable: ask again later, conclude nothing).
std::optional<std::map<int, sl::TaskState>> query_tasks(const std::string& array_id) {
  std::map<int, sl::TaskState> out;
  const auto sc = slurm_command({"scontrol", "show", "job", "-o", array_id}, 30);
  for (auto& t : sl::parse_scontrol(sc.out)) out[t.task] = std::move(t);
  if (!out.empty()) return out;
  const bool unknown_job = sc.out.find("Invalid job id") != std::string::npos;
  const auto sa = slurm_command({"sacct", "-n", "-P", "-X", "-j", array_id, "-o",
                                 "JobIDRaw,JobID,State,ExitCode,NodeList,ElapsedRaw"},
                                30);
  if (sa.status.ok()) {
    for (auto& t : sl::parse_sacct(sa.out)) out[t.task] = std::move(t);
    return out;
  }
  if (unknown_job) return out;
  return std::nullopt;
}

class SlurmScheduler final : public BatchScheduler {
 public:
  [[nodiscard]] std::string name() const override { return "slurm"; }
  void check(const BatchOptions& opt, const backends::Backend& backend) override;
  [[nodiscard]] nlohmann::json settings(const BatchOptions& opt) const override {
    const auto& s = opt.slurm;
    return {{"slurm",
             {{"partition", s.partition},
              {"account", s.account},
              {"gpus_per_task", s.gpus_per_task},
              {"time_limit", s.time_limit},
              {"sbatch_args", s.sbatch_args}}}};
  }
  [[nodiscard]] std::string describe(const BatchOptions& opt) const override {
    const auto& s = opt.slurm;
    std::string d = "Slurm job array";
    if (!s.partition.empty()) d += ", partition " + s.partition;
    if (!s.account.empty()) d += ", account " + s.account;
    if (s.gpus_per_task > 0) d += ", " + std::to_string(s.gpus_per_task) + " GPU(s) per task";
    if (!s.time_limit.empty()) d += ", time limit " + s.time_limit;
    return d;
  }
  int execute(BatchContext& ctx, std::ostream& out, std::ostream& err) override;
};

void SlurmScheduler::check(const BatchOptions& opt, const backends::Backend&) {
  if (opt.backend.empty() || opt.backend == "auto")
    throw BatchUsageError(
        "--backend: '" + (opt.backend.empty() ? std::string("auto") : opt.backend) +
        "' with --scheduler slurm: name the backend of the compute nodes (e.g. --backend cuda); "
        "the node that submits may not see their devices");
  if (!opt.devices.empty())
    throw BatchUsageError(
        "--devices: not with --scheduler slurm: Slurm gives each task its devices "
        "(--gpus-per-task)");
  if (opt.timeout_per_op_s > 0)
    throw BatchUsageError(
        "--timeout-per-op: not with --scheduler slurm: give Slurm's time limit per task "
        "(--time-limit)");
  try {
    sl::check_options(opt.slurm);
  } catch (const std::invalid_argument& e) {
    throw BatchUsageError(e.what());
  }
  if (!opt.resume_dir.empty()) {
    // The same ops must not run twice at once: an array of this batch still queued or running
    // (its parent killed outright) goes first.
    for (const auto& id : recorded_jobs(opt.resume_dir)) {
      const auto q = slurm_command({"squeue", "-h", "-j", id, "-o", "%i"}, 30);
      if (q.status.ok() && !last_nonempty_line(q.out).empty())
        throw BatchUsageError(
            "--resume: Slurm job array " + id + " of '" + opt.resume_dir.string() +
            "' is still queued or running; wait for it or `scancel " + id + "` first");
    }
  }
  // The same request, dry (sbatch --test-only): a bad partition, account, GPU count or sbatch
  // argument, or no controller, is refused here, before anything is written.
  Captured t;
  try {
    t = slurm_command(sl::sbatch_test_argv(opt.slurm), 60);
  } catch (const std::exception& e) {
    throw BatchUsageError(std::string("--scheduler slurm: cannot run sbatch: ") + e.what());
  }
  if (t.status.kind == ExitKind::exited && t.status.code == 127)
    throw BatchUsageError(
        "--scheduler slurm: sbatch is not in PATH; run on a node of the cluster with Slurm's "
        "client commands");
  if (!t.status.ok())
    throw BatchUsageError("--scheduler slurm: Slurm refused the request (sbatch --test-only, " +
                          t.status.describe() + "): " + last_nonempty_line(t.out));
}

int SlurmScheduler::execute(BatchContext& ctx, std::ostream& out, std::ostream& err) {
  const BatchOptions& opt = ctx.opt;
  const fs::path batch_dir = fs::absolute(ctx.batch_dir);
  auto& rows = ctx.rows;
  if (ctx.pending.empty()) return 0;
  const fs::path sdir = batch_dir / sl::kSlurmDir;
  fs::create_directories(sdir);

  // Task i of this submission runs ctx.pending[i].
  sl::ArraySpec spec;
  spec.caliber = fs::absolute(ctx.self);
  spec.batch_dir = batch_dir;
  spec.job_name = "caliber-" + batch_dir.filename().string();
  spec.backend = ctx.backend->name();
  spec.run_args = opt.run_args;
  spec.slurm = opt.slurm;
  std::map<std::size_t, std::set<fs::path>> before;
  for (std::size_t i : ctx.pending) {
    spec.ops.push_back(rows[i].op);
    before[i] = run_dirs_of(batch_dir, rows[i].op);
    std::error_code ec;
    fs::remove(sdir / (rows[i].op + ".exit"), ec);  // a record of an earlier attempt
  }
  int n = 1;
  while (fs::exists(sdir / ("array-" + std::to_string(n) + ".sbatch"))) ++n;
  const fs::path script = sdir / ("array-" + std::to_string(n) + ".sbatch");
  core::write_file_atomic(script, sl::sbatch_script(spec));
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);

  const auto sub = slurm_command(sl::sbatch_argv(spec, script), 120);
  const auto job = sub.status.ok() ? sl::parse_sbatch_job_id(sub.out) : std::nullopt;
  if (!job) {
    const std::string why = "sbatch did not submit the array (" + sub.status.describe() +
                            "): " + last_nonempty_line(sub.out);
    err << "caliber batch: " << why << std::endl;
    for (std::size_t i : ctx.pending) {
      rows[i].status = "failed";
      rows[i].reason = why;
    }
    write_ops_status(batch_dir, rows);
    return 0;
  }
  const std::string array_id = *job;
  record_job(batch_dir, array_id);
  out << "batch: Slurm job array " << array_id << " (" << spec.ops.size() << " task(s), job name "
      << spec.job_name << ", script " << script.string() << ")" << std::endl;

  const std::size_t total = ctx.pending.size();
  std::vector<bool> done(total, false);
  std::vector<int> unseen(total, 0);  // polls in a row without any record of the task
  int silent_polls = 0;               // polls in a row that Slurm did not answer
  std::map<int, sl::TaskState> last;
  std::size_t n_done = 0, not_ok = 0;
  const auto t0 = Clock::now();
  std::string last_progress;

  auto record_of = [&](std::size_t task) -> std::optional<sl::ExitRecord> {
    return sl::parse_exit_record(read_text(sdir / (rows[ctx.pending[task]].op + ".exit")));
  };

  auto finish = [&](std::size_t task, const sl::TaskState& st) {
    const std::size_t i = ctx.pending[task];
    OpStatusRow& row = rows[i];
    auto rec = record_of(task);
    if (rec && !st.job_id.empty() && !rec->job_id.empty() && rec->job_id != st.job_id)
      rec.reset();  // written by another job
    const auto m = sl::map_state(st, rec, opt.slurm.time_limit);
    row.status = m.status;
    row.reason = m.reason;
    row.duration_s = rec && rec->duration_s >= 0 ? rec->duration_s : std::max(0.0, st.run_s);
    const auto run_dir = find_child_run_dir(batch_dir, row.op, before[i]);
    read_child_results(row, run_dir);
    std::string node = !st.node.empty() ? st.node : rec ? rec->node : "";
    row.device = node;
    if (run_dir) {
      try {
        const auto id = core::read_identity(*run_dir);
        const auto d = id.find("device");
        if (d != id.end() && d->is_object() && d->contains("physical_id")) {
          const auto& p = (*d)["physical_id"];
          row.device = node + ":" + (p.is_string() ? p.get<std::string>() : p.dump());
        }
      } catch (const std::exception&) {
      }
    }
    if (row.status == "crashed" || row.status == "failed" || row.status == "timeout") {
      const std::string tail = last_log_line(batch_dir / "logs" / (row.op + ".log"));
      if (!tail.empty() && row.reason.find(tail) == std::string::npos)
        row.reason += "; log: " + tail;
    }
    done[task] = true;
    ++n_done;
    if (row.status != "ok" && row.status != "skipped") ++not_ok;
    if (ctx.progress) err << "\r\033[K";
    print_finished(out, row, "task " + std::to_string(task) + (node.empty() ? "" : " on " + node));
    write_ops_status(batch_dir, rows);
  };

  auto show_progress = [&] {
    std::size_t pending = 0, running = 0;
    for (std::size_t t = 0; t < total; ++t) {
      if (done[t]) continue;
      const auto it = last.find(static_cast<int>(t));
      if (it != last.end() && it->second.state == "RUNNING")
        ++running;
      else
        ++pending;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    std::ostringstream line;
    line << "[batch] Slurm job " << array_id << ": " << n_done << "/" << total << " done, "
         << running << " running, " << pending << " pending, " << not_ok << " not ok";
    if (ctx.progress) {
      err << "\r\033[K" << line.str() << ", elapsed " << format_duration(elapsed) << std::flush;
    } else if (line.str() != last_progress) {
      err << line.str() << std::endl;
    }
    last_progress = line.str();
  };

  // One look at the array: running tasks marked, ended ones finished.
  auto poll = [&]() -> bool {
    bool changed = false;
    const auto answer = query_tasks(array_id);
    if (!answer) {
      if (++silent_polls == 1 || silent_polls % 20 == 0)
        err << "caliber batch: Slurm did not answer about job " << array_id
            << " (scontrol show job); asking again" << std::endl;
      return false;
    }
    silent_polls = 0;
    const auto& states = *answer;
    for (std::size_t t = 0; t < total; ++t) {
      if (done[t]) continue;
      const auto it = states.find(static_cast<int>(t));
      if (it == states.end()) {
        // Slurm no longer knows the task (purged, or a cluster without accounting): its exit
        // record, or after a few looks, a crash nobody saw.
        if (++unseen[t] < 3) continue;
        sl::TaskState gone;
        gone.task = static_cast<int>(t);
        if (const auto rec = record_of(t)) {
          gone.state = rec->rc == 0 ? "COMPLETED" : "FAILED";
          gone.node = rec->node;
        } else {
          gone.state = "VANISHED";
          gone.reason = "Slurm has no record of array task " + array_id + "_" + std::to_string(t) +
                        " and it wrote no exit record";
        }
        finish(t, gone);
        changed = true;
        continue;
      }
      unseen[t] = 0;
      const auto& st = it->second;
      const auto prev = last.find(static_cast<int>(t));
      if (prev == last.end() || prev->second.state != st.state) changed = true;
      last[static_cast<int>(t)] = st;
      if (sl::is_terminal(st.state)) {
        finish(t, st);
      } else if (st.state == "RUNNING" && rows[ctx.pending[t]].status != "running") {
        rows[ctx.pending[t]].status = "running";
        rows[ctx.pending[t]].device = st.node;
        write_ops_status(batch_dir, rows);
      }
    }
    return changed;
  };

  // Waits `seconds`, or less when a signal arrives.
  auto nap = [](double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until && !SignalGuard::interrupted())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };

  const double max_interval = std::max(0.2, opt.slurm_poll_max_s);
  double interval = 0.5;
  while (n_done < total && !SignalGuard::interrupted()) {
    nap(std::min(interval, max_interval));
    if (SignalGuard::interrupted()) break;
    const bool changed = poll();
    show_progress();
    interval = changed ? 0.5 : std::min(interval * 1.5, max_interval);
  }

  const int sig = SignalGuard::received();
  if (ctx.progress) err << "\r\033[K";
  if (sig == 0) return 0;

  err << "caliber batch: " << signal_name(sig) << " received: cancelling Slurm job array "
      << array_id << " (scancel)" << std::endl;
  const auto c = slurm_command({"scancel", array_id}, 60);
  if (!c.status.ok())
    err << "caliber batch: scancel " << array_id << ": " << c.status.describe() << ": "
        << last_nonempty_line(c.out) << std::endl;
  // Slurm ends the tasks (SIGTERM, then SIGKILL after its KillWait): wait until it says every
  // task has ended, so that nothing of the batch is left running when we return.
  const auto deadline = Clock::now() + std::chrono::seconds(180);
  std::map<int, sl::TaskState> final_states;
  for (;;) {
    const auto answer = query_tasks(array_id);
    if (answer) final_states = *answer;
    bool all_ended = answer.has_value();
    for (std::size_t t = 0; t < total; ++t) {
      if (done[t]) continue;
      const auto it = final_states.find(static_cast<int>(t));
      if (it != final_states.end() && !sl::is_terminal(it->second.state)) all_ended = false;
    }
    if (all_ended || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (std::size_t t = 0; t < total; ++t) {
    if (done[t]) continue;
    const auto it = final_states.find(static_cast<int>(t));
    // A task that ended on its own before the cancel reached it keeps its own status.
    if (it != final_states.end() && sl::is_terminal(it->second.state) &&
        it->second.state != "CANCELLED") {
      finish(t, it->second);
      continue;
    }
    const std::size_t i = ctx.pending[t];
    OpStatusRow& row = rows[i];
    const bool ran = it != final_states.end() && it->second.run_s > 0;
    read_child_results(row, find_child_run_dir(batch_dir, row.op, before[i]));
    row.status = "interrupted";
    row.reason = "batch interrupted by " + signal_name(sig) + ": Slurm job array " + array_id +
                 " cancelled (scancel) " +
                 (ran ? "while the task ran (" + std::to_string(row.rows) + " rows kept)"
                      : "before the task started");
    if (it != final_states.end() && !sl::is_terminal(it->second.state))
      row.reason += "; Slurm still reported it " + it->second.state;
  }
  write_ops_status(batch_dir, rows);
  return sig;
}

}  // namespace

std::unique_ptr<BatchScheduler> make_slurm_scheduler() {
  return std::make_unique<SlurmScheduler>();
}

}  // namespace caliber::run
