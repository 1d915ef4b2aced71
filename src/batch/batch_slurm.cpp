// The slurm scheduler: the batch's pending ops as one job array (sbatch --array), task i running
// `caliber run` of op i on whatever node Slurm gives it, into the batch directory on shared
// storage. The parent polls the array's state (scontrol, else sacct; with a bounded interval),
// fills ops_status.csv as tasks end, and on SIGINT/SIGTERM cancels the array (scancel). The
// script, the parsing and the state mapping are pure functions in batch/slurm_job.cpp;
// docs/cluster.md says how a team uses this.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "batch/scheduler.hpp"
#include "records/identity.hpp"
#include "records/rundir.hpp"
#include "run/warmup_runner.hpp"

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
  void resolve(BatchSettings& settings) const override;
  [[nodiscard]] nlohmann::json stored(const BatchSettings& settings) const override {
    const auto& s = settings.opt.slurm;
    return {{"slurm",
             {{"partition", s.partition},
              {"account", s.account},
              {"gpus_per_task", s.gpus_per_task},
              {"time_limit", s.time_limit},
              {"sbatch_args", s.sbatch_args}}}};
  }
  [[nodiscard]] std::string describe(const BatchSettings& settings) const override {
    const auto& s = settings.opt.slurm;
    std::string d = "Slurm job array";
    if (!s.partition.empty()) d += ", partition " + s.partition;
    if (!s.account.empty()) d += ", account " + s.account;
    if (s.gpus_per_task > 0) d += ", " + std::to_string(s.gpus_per_task) + " GPU(s) per task";
    if (!s.time_limit.empty()) d += ", time limit " + s.time_limit;
    if (settings.warmup_shards > 0)
      d += ", parallel warmup over " + std::to_string(settings.warmup_shards) +
           " array task(s) first";
    return d;
  }
  int execute(BatchContext& ctx, std::ostream& out, std::ostream& err) const override;
};

void SlurmScheduler::resolve(BatchSettings& settings) const {
  const BatchOptions& opt = settings.opt;
  if (opt.backend.empty() || opt.backend == core::kAutoBackend)
    throw BatchUsageError(
        "--backend: '" + (opt.backend.empty() ? std::string("auto") : opt.backend) +
        "' with --scheduler slurm: name the backend of the compute nodes (e.g. --backend cuda); "
        "the node that submits may not see their devices");
  if (!opt.devices.empty())
    throw BatchUsageError(
        "--devices: not with --scheduler slurm: Slurm gives each task its devices "
        "(--gpus-per-task)");
  if (opt.timeout_per_op_s > 0 || !opt.timeout_for.empty())
    throw BatchUsageError(
        std::string(opt.timeout_per_op_s > 0 ? "--timeout-per-op" : "--timeout-for") +
        ": not with --scheduler slurm: give Slurm's time limit per task "
        "(--time-limit)");
  // --parallel-warmup N: the sweep over the batch's ops as N array tasks, merged into the shared
  // cache by a dependent job, before the op array (docs/cluster.md).
  const core::Knobs& k = settings.run_knobs;
  settings.warmup_shards = k.tune == core::TuneMode::live ? k.parallel_warmup : 0;
  if (k.parallel_warmup > 0 && k.tune == core::TuneMode::record)
    throw BatchUsageError(
        "--parallel-warmup (PARALLEL_WARMUP_GPUS): '" + std::to_string(k.parallel_warmup) +
        "' with --tune record and --scheduler slurm: a warmup across nodes merges into the "
        "shared tune cache; allowed: --tune live, or a record run per op without the warmup");
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

// Waits `seconds`, or less when a signal arrives.
void nap(double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until && !SignalGuard::interrupted())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// The submission number: slurm/array-N.sbatch is the N-th array of this batch.
int next_submission(const fs::path& sdir) {
  int n = 1;
  while (fs::exists(sdir / ("array-" + std::to_string(n) + ".sbatch"))) ++n;
  return n;
}

// Writes a script and submits it; the job id, or nullopt with `why` filled.
std::optional<std::string> submit(const fs::path& script, const std::string& text,
                                  const std::vector<std::string>& sbatch_args, std::string& why) {
  core::write_file_atomic(script, text);
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
  argv.push_back(script.string());
  const auto sub = slurm_command(argv, 120);
  const auto job = sub.status.ok() ? sl::parse_sbatch_job_id(sub.out) : std::nullopt;
  if (!job)
    why = "sbatch did not submit " + script.filename().string() + " (" + sub.status.describe() +
          "): " + last_nonempty_line(sub.out);
  return job;
}

// A parallel warmup across nodes: the shard array, the dependent merge job, and what the parent
// reports of them (the shards as they end, then the merge's summary and WARNING, as a local
// warmup prints them).
class SlurmWarmup {
 public:
  SlurmWarmup(const BatchContext& ctx, int shards, int submission, const fs::path& batch_dir,
              std::ostream& out, std::ostream& err)
      : out_(out), err_(err) {
    spec_.caliber = fs::absolute(ctx.self);
    spec_.dir = batch_dir / ("warmup-" + std::to_string(submission));
    spec_.job_name = "caliber-" + batch_dir.filename().string() + "-warmup";
    spec_.backend = ctx.backend->name();
    for (std::size_t i : ctx.pending) spec_.ops.push_back(ctx.rows[i].op);
    spec_.run_args = sl::without_parallel_warmup(ctx.opt.run_args);
    spec_.shards = shards;
    spec_.slurm = ctx.opt.slurm;
    scripts_ = batch_dir / sl::kSlurmDir;
    submission_ = submission;
  }

  // Submits the shards, then the merge after them; the merge job's id (the ops wait for it).
  std::optional<std::string> submit_jobs(std::string& why) {
    fs::create_directories(spec_.dir);
    const std::string n = std::to_string(submission_);
    t0_ = Clock::now();
    shards_job_ = submit(scripts_ / ("warmup-" + n + ".sbatch"), sl::warmup_script(spec_),
                         spec_.slurm.sbatch_args, why);
    if (!shards_job_) return std::nullopt;
    merge_job_ = submit(scripts_ / ("merge-" + n + ".sbatch"),
                        sl::merge_script(spec_, *shards_job_), spec_.slurm.sbatch_args, why);
    if (!merge_job_) return std::nullopt;
    out_ << "parallel warmup: " << spec_.shards << " shard(s) as Slurm job array " << *shards_job_
         << ", merge job " << *merge_job_ << " after them; logs in " << spec_.dir.string()
         << std::endl;
    return merge_job_;
  }

  [[nodiscard]] std::vector<std::string> jobs() const {
    std::vector<std::string> j;
    if (shards_job_) j.push_back(*shards_job_);
    if (merge_job_) j.push_back(*merge_job_);
    return j;
  }
  [[nodiscard]] bool done() const { return reported_ || !merge_job_; }

  // One look: shards that ended are reported; once the merge has ended, its result.
  bool poll() {
    if (done()) return false;
    bool changed = false;
    if (const auto shards = query_tasks(*shards_job_)) {
      for (const auto& [task, st] : *shards) {
        if (!sl::is_terminal(st.state) || !shard_seen_.insert(task).second) continue;
        const auto rec = sl::parse_exit_record(
            read_text(spec_.dir / ("shard-" + std::to_string(task) + ".exit")));
        const bool ok = st.state == "COMPLETED" && (!rec || rec->rc == 0);
        out_ << "parallel warmup: shard " << task << "/" << spec_.shards << " (array task " << task
             << (st.node.empty() ? "" : " on " + st.node) << ") "
             << (ok ? "done" : "FAILED: Slurm " + st.state) << std::endl;
        changed = true;
      }
    }
    const auto merge = query_tasks(*merge_job_);
    if (!merge) return changed;
    const auto it = merge->find(0);
    if (it != merge->end() && sl::is_terminal(it->second.state))
      report(it->second.state);
    else if (it == merge->end() && ++merge_unseen_ >= 3)
      report("VANISHED");
    return changed || reported_;
  }

  // The merge's result, as the batch keeps it in batch.json.
  [[nodiscard]] const nlohmann::json& result() const { return result_; }

 private:
  void report(const std::string& state) {
    reported_ = true;
    const double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
    const auto j = nlohmann::json::parse(read_text(spec_.dir / kWarmupResultFile), nullptr, false);
    if (!j.is_object()) {
      out_ << "parallel warmup: note: the merge job " << *merge_job_ << " ended " << state
           << " without a result (" << (spec_.dir / "merge.log").string()
           << "): the ops tune live what the shards did not leave in the cache" << std::endl;
      result_ = {{"shards", spec_.shards}, {"merge_state", state}, {"wall_s", wall}};
      return;
    }
    WarmupOutcome w = warmup_from_json(j);
    w.wall_s = wall;
    print_warmup_summary(w, j.value("merged_into", std::string()), out_);
    if (!w.warning.empty()) err_ << w.warning << std::endl;
    result_ = warmup_json(w);
    result_["merged_into"] = j.value("merged_into", std::string());
    result_["merge_state"] = state;
  }

  sl::WarmupSpec spec_;
  fs::path scripts_;
  int submission_ = 1;
  std::ostream& out_;
  std::ostream& err_;
  Clock::time_point t0_ = Clock::now();
  std::optional<std::string> shards_job_, merge_job_;
  std::set<int> shard_seen_;
  int merge_unseen_ = 0;
  bool reported_ = false;
  nlohmann::json result_;
};

void record_warmup(const fs::path& batch_dir, const nlohmann::json& result) {
  nlohmann::json cfg =
      nlohmann::json::parse(read_text(batch_dir / kBatchConfigFile), nullptr, false);
  if (!cfg.is_object()) cfg = nlohmann::json::object();
  cfg["parallel_warmup"].push_back(result);
  core::write_file_atomic(batch_dir / kBatchConfigFile, cfg.dump(2) + "\n");
}

// One submission of a batch's pending ops: optionally the warmup before them, then the op array,
// watched until every task has ended, or cancelled on a signal.
class SlurmRun {
 public:
  SlurmRun(BatchContext& ctx, int warmup_shards, std::ostream& out, std::ostream& err)
      : ctx_(ctx),
        batch_dir_(fs::absolute(ctx.batch_dir)),
        sdir_(batch_dir_ / sl::kSlurmDir),
        total_(ctx.pending.size()),
        done_(total_, false),
        unseen_(total_, 0),
        out_(out),
        err_(err) {
    fs::create_directories(sdir_);
    submission_ = next_submission(sdir_);
    if (warmup_shards > 0) warmup_.emplace(ctx, warmup_shards, submission_, batch_dir_, out, err);
  }

  int execute() {
    if (!submit_all()) return 0;
    watch();
    if (warmup_ && warmup_->done() && !warmup_->result().is_null())
      record_warmup(batch_dir_, warmup_->result());
    const int sig = SignalGuard::received();
    if (ctx_.progress) err_ << "\r\033[K";
    if (sig != 0) cancel(sig);
    return sig;
  }

 private:
  // 1. The warmup (if any), then the op array after it; false when sbatch refused.
  bool submit_all() {
    std::string why;
    std::optional<std::string> after;
    if (warmup_) {
      after = warmup_->submit_jobs(why);
      for (const auto& j : warmup_->jobs()) record_job(batch_dir_, j);
    }
    sl::ArraySpec spec;
    spec.caliber = fs::absolute(ctx_.self);
    spec.batch_dir = batch_dir_;
    spec.job_name = "caliber-" + batch_dir_.filename().string();
    spec.backend = ctx_.backend->name();
    spec.run_args = sl::without_parallel_warmup(ctx_.opt.run_args);
    spec.slurm = ctx_.opt.slurm;
    spec.after = after.value_or("");
    for (std::size_t i : ctx_.pending) {
      spec.ops.push_back(ctx_.rows[i].op);
      before_[i] = run_dirs_of(batch_dir_, ctx_.rows[i].op);
      std::error_code ec;
      fs::remove(sdir_ / (ctx_.rows[i].op + ".exit"), ec);  // a record of an earlier attempt
    }
    const fs::path script = sdir_ / ("array-" + std::to_string(submission_) + ".sbatch");
    if (!warmup_ || after) {
      if (const auto job = submit(script, sl::sbatch_script(spec), spec.slurm.sbatch_args, why))
        array_id_ = *job;
    }
    if (array_id_.empty()) {
      err_ << "caliber batch: " << why << std::endl;
      if (warmup_ && !warmup_->jobs().empty()) (void)slurm_command(scancel_argv(), 60);
      for (std::size_t i : ctx_.pending) {
        ctx_.rows[i].status = core::OpStatus::failed;
        ctx_.rows[i].reason = why;
      }
      write_ops_status(batch_dir_, ctx_.rows);
      return false;
    }
    record_job(batch_dir_, array_id_);
    out_ << "batch: Slurm job array " << array_id_ << " (" << spec.ops.size()
         << " task(s), job name " << spec.job_name << ", script " << script.string()
         << (after ? ", after job " + *after : "") << ")" << std::endl;
    return true;
  }

  // 2. Looks at the jobs with a bounded, backing-off interval until every op task has ended.
  void watch() {
    const double max_interval = std::max(0.2, ctx_.opt.slurm_poll_max_s);
    double interval = 0.5;
    while (n_done_ < total_ && !SignalGuard::interrupted()) {
      nap(std::min(interval, max_interval));
      if (SignalGuard::interrupted()) break;
      bool changed = warmup_ && warmup_->poll();
      changed = poll() || changed;
      show_progress();
      interval = changed ? 0.5 : std::min(interval * 1.5, max_interval);
    }
    // The ops may end without the merge seen ending (an array cancelled from outside).
    for (int i = 0; warmup_ && !warmup_->done() && i < 3 && !SignalGuard::interrupted(); ++i) {
      if (!warmup_->poll()) nap(0.5);
    }
  }

  std::optional<sl::ExitRecord> record_of(std::size_t task) const {
    return sl::parse_exit_record(read_text(sdir_ / (ctx_.rows[ctx_.pending[task]].op + ".exit")));
  }

  void finish(std::size_t task, const sl::TaskState& st) {
    const std::size_t i = ctx_.pending[task];
    OpStatusRow& row = ctx_.rows[i];
    auto rec = record_of(task);
    if (rec && !st.job_id.empty() && !rec->job_id.empty() && rec->job_id != st.job_id)
      rec.reset();  // written by another job
    const auto m = sl::map_state(st, rec, ctx_.opt.slurm.time_limit);
    row.status = m.status;
    row.reason = m.reason;
    row.duration_s = rec && rec->duration_s >= 0 ? rec->duration_s : std::max(0.0, st.run_s);
    const auto run_dir = find_child_run_dir(batch_dir_, row.op, before_[i]);
    const bool finished = read_child_results(row, run_dir);
    const std::string node = !st.node.empty() ? st.node : rec ? rec->node : "";
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
    add_log_tail(row, finished, batch_dir_ / "logs" / (row.op + ".log"));
    done_[task] = true;
    ++n_done_;
    if (row.status != core::OpStatus::ok && row.status != core::OpStatus::skipped) ++not_ok_;
    if (ctx_.progress) err_ << "\r\033[K";
    print_finished(out_, row, "task " + std::to_string(task) + (node.empty() ? "" : " on " + node));
    write_ops_status(batch_dir_, ctx_.rows);
  }

  // One look at the op array: running tasks marked, ended ones finished.
  bool poll() {
    bool changed = false;
    const auto answer = query_tasks(array_id_);
    if (!answer) {
      if (++silent_polls_ == 1 || silent_polls_ % 20 == 0)
        err_ << "caliber batch: Slurm did not answer about job " << array_id_
             << " (scontrol show job); asking again" << std::endl;
      return false;
    }
    silent_polls_ = 0;
    for (std::size_t t = 0; t < total_; ++t) {
      if (done_[t]) continue;
      const auto it = answer->find(static_cast<int>(t));
      if (it == answer->end()) {
        // Slurm no longer knows the task (purged, or a cluster without accounting): its exit
        // record, or after a few looks, a crash nobody saw.
        if (++unseen_[t] < 3) continue;
        sl::TaskState gone;
        gone.task = static_cast<int>(t);
        if (const auto rec = record_of(t)) {
          gone.state = rec->rc == 0 ? "COMPLETED" : "FAILED";
          gone.node = rec->node;
        } else {
          gone.state = "VANISHED";
          gone.reason = "Slurm has no record of array task " + array_id_ + "_" + std::to_string(t) +
                        " and it wrote no exit record";
        }
        finish(t, gone);
        changed = true;
        continue;
      }
      unseen_[t] = 0;
      const auto& st = it->second;
      const auto prev = last_.find(static_cast<int>(t));
      if (prev == last_.end() || prev->second.state != st.state) changed = true;
      last_[static_cast<int>(t)] = st;
      OpStatusRow& row = ctx_.rows[ctx_.pending[t]];
      if (sl::is_terminal(st.state)) {
        finish(t, st);
      } else if (st.state == "RUNNING" && row.status != core::OpStatus::running) {
        row.status = core::OpStatus::running;
        row.device = st.node;
        write_ops_status(batch_dir_, ctx_.rows);
      }
    }
    return changed;
  }

  void show_progress() {
    std::size_t pending = 0, running = 0;
    for (std::size_t t = 0; t < total_; ++t) {
      if (done_[t]) continue;
      const auto it = last_.find(static_cast<int>(t));
      if (it != last_.end() && it->second.state == "RUNNING")
        ++running;
      else
        ++pending;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::ostringstream line;
    line << "[batch] Slurm job " << array_id_ << ": " << n_done_ << "/" << total_ << " done, "
         << running << " running, " << pending << " pending, " << not_ok_ << " not ok";
    if (ctx_.progress) {
      err_ << "\r\033[K" << line.str() << ", elapsed " << format_duration(elapsed) << std::flush;
    } else if (line.str() != last_progress_) {
      err_ << line.str() << std::endl;
    }
    last_progress_ = line.str();
  }

  std::vector<std::string> scancel_argv() const {
    std::vector<std::string> argv = {"scancel"};
    if (warmup_)
      for (const auto& j : warmup_->jobs()) argv.push_back(j);
    if (!array_id_.empty()) argv.push_back(array_id_);
    return argv;
  }

  // 3. On a signal: every job of this submission cancelled, and waited for until Slurm says each
  // task has ended, so that nothing of the batch is left running when we return.
  void cancel(int sig) {
    const auto argv = scancel_argv();
    std::string ids;
    for (std::size_t i = 1; i < argv.size(); ++i) ids += (i > 1 ? " " : "") + argv[i];
    err_ << "caliber batch: " << signal_name(sig) << " received: cancelling Slurm job array " << ids
         << " (scancel)" << std::endl;
    const auto c = slurm_command(argv, 60);
    if (!c.status.ok())
      err_ << "caliber batch: scancel " << ids << ": " << c.status.describe() << ": "
           << last_nonempty_line(c.out) << std::endl;
    const auto final_states = wait_until_ended(argv);
    for (std::size_t t = 0; t < total_; ++t) {
      if (done_[t]) continue;
      const auto it = final_states.find(static_cast<int>(t));
      // A task that ended on its own before the cancel reached it keeps its own status.
      if (it != final_states.end() && sl::is_terminal(it->second.state) &&
          it->second.state != "CANCELLED") {
        finish(t, it->second);
        continue;
      }
      const std::size_t i = ctx_.pending[t];
      OpStatusRow& row = ctx_.rows[i];
      const bool ran = it != final_states.end() && it->second.run_s > 0;
      read_child_results(row, find_child_run_dir(batch_dir_, row.op, before_[i]));
      row.status = core::OpStatus::interrupted;
      row.reason = "batch interrupted by " + signal_name(sig) + ": Slurm job array " + array_id_ +
                   " cancelled (scancel) " +
                   (ran ? "while the task ran (" + std::to_string(row.rows) + " rows kept)"
                        : "before the task started");
      if (it != final_states.end() && !sl::is_terminal(it->second.state))
        row.reason += "; Slurm still reported it " + it->second.state;
    }
    write_ops_status(batch_dir_, ctx_.rows);
  }

  // The op array's last states once every cancelled job's tasks have ended (or 180 s passed).
  std::map<int, sl::TaskState> wait_until_ended(const std::vector<std::string>& scancel) {
    const auto deadline = Clock::now() + std::chrono::seconds(180);
    std::map<int, sl::TaskState> ops;
    for (;;) {
      bool all_ended = true;
      for (std::size_t j = 1; j < scancel.size(); ++j) {
        const auto answer = query_tasks(scancel[j]);
        if (!answer) {
          all_ended = false;
          continue;
        }
        if (scancel[j] == array_id_) ops = *answer;
        for (const auto& [task, st] : *answer) {
          const bool ours_done =
              scancel[j] == array_id_ && static_cast<std::size_t>(task) < total_ && done_[task];
          if (!ours_done && !sl::is_terminal(st.state)) all_ended = false;
        }
      }
      if (all_ended || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return ops;
  }

  BatchContext& ctx_;
  const fs::path batch_dir_;
  const fs::path sdir_;
  int submission_ = 1;
  std::optional<SlurmWarmup> warmup_;
  std::string array_id_;
  std::map<std::size_t, std::set<fs::path>> before_;  // by row index
  const std::size_t total_;
  std::vector<bool> done_;
  std::vector<int> unseen_;  // looks in a row without any record of the task
  int silent_polls_ = 0;     // looks in a row that Slurm did not answer
  std::map<int, sl::TaskState> last_;
  std::size_t n_done_ = 0, not_ok_ = 0;
  const Clock::time_point t0_ = Clock::now();
  std::string last_progress_;
  std::ostream& out_;
  std::ostream& err_;
};

int SlurmScheduler::execute(BatchContext& ctx, std::ostream& out, std::ostream& err) const {
  if (ctx.pending.empty()) return 0;
  return SlurmRun(ctx, ctx.settings.warmup_shards, out, err).execute();
}

}  // namespace

std::unique_ptr<BatchScheduler> make_slurm_scheduler() {
  return std::make_unique<SlurmScheduler>();
}

}  // namespace caliber::run
