// caliber batch [OP...]: one `caliber run` child per op over the selected devices (ops_status.csv).
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "batch/batch.hpp"
#include "cli/commands.hpp"
#include "cli/knob_options.hpp"
#include "run/driver.hpp"
#include "settings/shapes.hpp"

namespace caliber::cli {
std::string timeout_seconds(const std::string& v) {
  if (run::parse_timeout_seconds(v)) return "";
  return "'" + v.substr(0, 200) + "' is not allowed; allowed: seconds from 0 to 1e7 (0: none)";
}

namespace {

void add_batch(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "batch",
      "Run many ops across devices, one child process (`caliber run OP`) per op and one op per "
      "device\n"
      "at a time, each child pinned to its physical device. A child that crashes, hangs past\n"
      "--timeout-per-op or fails leaves the rest running. Writes a batch directory holding one "
      "run\n"
      "directory per op (per group with --ops-per-child) and ops_status.csv "
      "(op,status,backend,device,timer,rows,duration_s,reason,run;\n"
      "status ok, failed, crashed, timeout, skipped, interrupted), rewritten after every op. Run "
      "flags\n"
      "are passed to every child. Default ops: `caliber list --names`. SIGINT/SIGTERM terminates "
      "and\n"
      "reaps every child and marks the rest interrupted. Exit 0 all ok (or skipped), 1 an op not "
      "ok, 2 bad "
      "usage,\n"
      "128+N interrupted by signal N. --scheduler slurm submits one Slurm job array instead "
      "(docs/cluster.md).");
  auto knobs = std::make_shared<KnobOptions>();
  sub->footer(env_knobs_footer());
  knobs->add_to(*sub);  // --name names the batch directory; each child is named after its op
  auto timeout = std::make_shared<double>(0);
  auto timeout_for = std::make_shared<std::vector<std::string>>();
  sub->add_option("--timeout-for", *timeout_for,
                  "OP=SECONDS: that op's own limit instead of --timeout-per-op (0: none), "
                  "repeatable;\ne.g. a FlagGems GEMM file's minutes beside pointwise files' "
                  "seconds")
      ->group("Batch")
      ->allow_extra_args(false);
  auto per_child = std::make_shared<std::string>();
  sub->add_option("--ops-per-child", *per_child,
                  "N: up to N ops share one child (`caliber run OP1 .. OPN`, one run directory\n"
                  "group-FIRST-N), its start-up paid once: a FlagGems file's import of torch, "
                  "Triton and\nflag_gems. An op a group cannot vouch for (a failed case, a "
                  "crash, a timeout)\nruns again alone. Default 1; local scheduler only")
      ->group("Batch");
  auto resume = std::make_shared<std::string>();
  sub->add_option("--timeout-per-op", *timeout,
                  "Seconds an op's child may run before it is terminated (status timeout); 0: none")
      ->group("Batch")
      ->check(timeout_seconds);
  auto* resume_opt =
      sub->add_option("--resume", *resume,
                      "Rerun only the ops of this batch directory whose status is not ok, in place")
          ->group("Batch");
  auto scheduler = std::make_shared<std::string>();
  auto slurm = std::make_shared<run::slurm::SlurmOptions>();
  sub->add_option("--scheduler", *scheduler,
                  "Where the op runs happen: local (this host's devices) or slurm (one job array "
                  "over a\ncluster; docs/cluster.md); env CALIBER_SCHEDULER; default local")
      ->group("Scheduler");
  sub->add_option("--partition", slurm->partition, "Slurm partition of the array (slurm)")
      ->group("Scheduler");
  sub->add_option("--account", slurm->account, "Slurm account charged (slurm)")->group("Scheduler");
  sub->add_option("--gpus-per-task", slurm->gpus_per_task,
                  "GPUs Slurm gives each task through gres (slurm); 0: none")
      ->group("Scheduler");
  sub->add_option("--time-limit", slurm->time_limit,
                  "Slurm time limit per task, sbatch --time format (slurm); a task past it is "
                  "timeout")
      ->group("Scheduler");
  sub->add_option("--sbatch-arg", slurm->sbatch_args,
                  "One more argument for sbatch, repeatable (slurm), e.g. --sbatch-arg=--qos=high")
      ->group("Scheduler")
      ->allow_extra_args(false);
  sub->callback([sub, knobs, timeout, timeout_for, per_child, resume, resume_opt, scheduler, slurm,
                 &exit_code] {
    exit_code = run_command([&] {
      const core::Knobs k = knobs->resolve();
      run::BatchOptions opt;
      opt.ops = k.ops;
      opt.op_file = k.op_file;
      opt.devices = k.devices;
      opt.backend = k.backend;
      opt.out = k.out;
      if (!k.name.empty()) opt.name = k.name;
      opt.timeout_per_op_s = *timeout;
      opt.timeout_for = *timeout_for;
      if (sub->count("--ops-per-child") > 0) opt.ops_per_child = *per_child;
      opt.resume_dir = *resume;
      opt.scheduler = *scheduler;
      opt.scheduler_env = k.scheduler;
      opt.slurm = *slurm;
      opt.run_args = knobs->as_args({"backend", "devices", "op_file", "out", "name", "ops"});
      opt.resume_given = resume_opt->count() > 0;
      opt.check_ops = run::check_batch_ops;
      const run::BatchSettings settings = run::resolve_batch(opt);  // every refusal is here
      return run::run_batch(settings, std::cout, std::cerr).exit_code;
    });
  });
}

CALIBER_COMMAND(40, add_batch);

}  // namespace
}  // namespace caliber::cli
