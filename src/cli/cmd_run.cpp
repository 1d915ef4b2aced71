// caliber run [OP...]: the built-in corpus (or the named ops) on one device, one run directory.
#include <iostream>

#include "ab/paired_run.hpp"
#include "batch/batch.hpp"
#include "cli/commands.hpp"
#include "cli/knob_options.hpp"
#include "proc/process.hpp"
#include "run/driver.hpp"
#include "run/warmup_runner.hpp"
#include "settings/shapes.hpp"

namespace caliber::cli {
namespace {

void add_run(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "run",
      "Run ops (default: the whole corpus) at a shape level on one device: check every candidate "
      "against a\n"
      "reference, time baseline and candidate, write one run directory (run.log, "
      "run_identity.json,\n"
      "shapes.yaml) and print the table. Exit 0 all ok, 1 a case failed, 2 bad usage or input.");
  auto knobs = std::make_shared<KnobOptions>();
  knobs->add_to(*sub);
  sub->footer(env_knobs_footer());
  auto shard = std::make_shared<std::string>();
  auto shard_cache = std::make_shared<std::string>();
  sub->add_option("--tune-shard", *shard, "internal: parallel-warmup child i/N")->group("");
  sub->add_option("--shard-cache", *shard_cache, "internal: parallel-warmup child cache")
      ->group("");
  // A parallel warmup across Slurm nodes: the dependent job that merges the shards' caches.
  auto merge_dir = std::make_shared<std::string>();
  auto merge_shards = std::make_shared<int>(0);
  sub->add_option("--merge-warmup", *merge_dir, "internal: Slurm warmup merge job directory")
      ->group("");
  sub->add_option("--merge-shards", *merge_shards, "internal: Slurm warmup shard count")->group("");
  // A paired A/B round (caliber ab --ops-lib-a A --ops-lib-b B): side B's library and run name.
  auto paired_lib = std::make_shared<std::string>();
  auto paired_name = std::make_shared<std::string>();
  auto paired_blocks = std::make_shared<int>(8);
  sub->add_option("--paired-lib", *paired_lib, "internal: paired A/B side B's op library")
      ->group("");
  sub->add_option("--paired-name", *paired_name, "internal: paired A/B side B's run name")
      ->group("");
  sub->add_option("--paired-blocks", *paired_blocks, "internal: paired A/B blocks a side")
      ->group("");
  auto dry_run = std::make_shared<bool>(false);
  sub->add_flag("--dry-run", *dry_run,
                "Print what the run would cost (cases, GB and estimated seconds per op, from the "
                "shapes and a per-backend cost model) and exit 0; nothing is run or written");
  auto paired_crossover = std::make_shared<std::string>("on");
  sub->add_option("--paired-crossover", *paired_crossover, "internal: paired A/B crossover on|off")
      ->group("");
  sub->callback([knobs, shard, shard_cache, merge_dir, merge_shards, paired_lib, paired_name,
                 paired_blocks, paired_crossover, dry_run, &exit_code] {
    run::watch_batch_parent();
    exit_code = run_command([&] {
      try {
        run::RunRequest req;
        req.knobs = knobs->resolve();
        req.knobs.quiet = knobs->quiet;
        req.tune_shard = *shard;
        req.shard_cache = *shard_cache;
        req.paired_lib = *paired_lib;
        req.paired_name = *paired_name;
        req.paired_blocks = *paired_blocks;
        req.paired_crossover =
            core::parse_switch("--paired-crossover", *paired_crossover) == core::Switch::on;
        req.dry_run = *dry_run;
        if (!merge_dir->empty())
          return run::run_warmup_merge(req.knobs, *merge_dir, *merge_shards, std::cout, std::cerr);
        return run::run_requested(req, std::cout, std::cerr).exit_code;
      } catch (const core::UsageError&) {
        throw;  // run_command's: exit 2
      } catch (const std::exception& e) {
        // An interrupted parallel warmup has reaped its children already; exit as a signal would.
        if (!run::SignalGuard::interrupted()) throw;
        std::cerr << "caliber: " << e.what() << "\n";
        return 128 + run::SignalGuard::received();
      }
    });
    run::note_orphaned_batch_child(exit_code);
  });
}

CALIBER_COMMAND(10, add_run);

}  // namespace
}  // namespace caliber::cli
