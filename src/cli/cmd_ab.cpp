// caliber ab --env NAME=A --env NAME=B [--arg X --arg Y] [--ops-lib-a LIB --ops-lib-b LIB]
//            [--rounds R] [run flags] [OP...]
#include <iostream>

#include "ab/ab.hpp"
#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "cli/knob_options.hpp"
#include "report/command.hpp"

namespace caliber::cli {
namespace {

// Stays long: the subcommand's help text and option list (data), then a callback of ten steps.
void add_ab(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "ab",
      "A/B of a switch or of two builds: R rounds into <ab dir>/A-<round>-* and B-<round>-*,\n"
      "compare of all A rounds against all B rounds. The switch: --env NAME=A --env NAME=B, a run\n"
      "flag (--arg=--flag=x --arg=--flag=y) or two builds (--ops-lib-a before.so --ops-lib-b\n"
      "after.so: PAIRED, both in one process a round; --isolate: a process per side). How, and\n"
      "what the interval holds: docs/ab.md. Exit codes as compare; 128+N interrupted.");
  auto knobs = std::make_shared<KnobOptions>();
  knobs->add_to(*sub, {}, true, /*listed=*/false);  // named in the footer: ab's own flags first
  sub->footer(run_knobs_footer());
  auto envs = std::make_shared<std::vector<std::string>>();
  auto args = std::make_shared<std::vector<std::string>>();
  auto lib_a = std::make_shared<std::string>();
  auto lib_b = std::make_shared<std::string>();
  auto rounds = std::make_shared<int>(3);
  auto timeout = std::make_shared<double>(0);
  auto isolate = std::make_shared<bool>(false);
  auto blocks = std::make_shared<int>(8);
  auto crossover = std::make_shared<std::string>("on");
  auto cmp = std::make_shared<report::CompareCommand>();
  // One value a flag, as --arg: `--env X=1 --env X=2 softmax` leaves softmax an op.
  sub->add_option("--env", *envs, "NAME=VALUE: first A's, then B's")
      ->group("A/B")
      ->allow_extra_args(false);
  sub->add_option("--arg", *args, "A run flag: first A's, then B's (write --arg=--flag=x)")
      ->group("A/B")
      ->allow_extra_args(false);
  sub->add_option("--ops-lib-a", *lib_a, "Side A's op library (a build of the ops under test)")
      ->group("A/B");
  sub->add_option("--ops-lib-b", *lib_b, "Side B's op library: the same op names, another build")
      ->group("A/B");
  auto fg_a = std::make_shared<std::string>();
  auto fg_b = std::make_shared<std::string>();
  sub->add_option("--flaggems-a", *fg_a,
                  "Side A's FlagGems checkout (docs/flaggems.md); a process per side and round")
      ->group("A/B");
  sub->add_option("--flaggems-b", *fg_b, "Side B's FlagGems checkout: the same benchmarks")
      ->group("A/B");
  sub->add_option("--rounds", *rounds, "Interleaved rounds per side (default 3; 1 to 1000)")
      ->group("A/B")
      ->check(CLI::Range(1, 1000).description(""));  // the help says 1 to 1000 once
  sub->add_flag("--isolate", *isolate,
                "Two libraries: a process per side and round instead of the paired A/B in one "
                "process")
      ->group("A/B");
  sub->add_option(
         "--blocks", *blocks,
         "Paired A/B: timed blocks per side and case, A and B alternately (default 8; 2 to 1000)")
      ->group("A/B")
      ->check(CLI::Range(2, 1000).description(""));
  sub->add_option("--crossover", *crossover,
                  "Paired A/B: on (default): time each case in two placement phases, the second "
                  "with each side in the other side's memory, so that where the buffers landed "
                  "cancels (needs an even --blocks >= 4); off: one phase")
      ->group("A/B")
      ->check(CLI::IsMember({"on", "off"}));
  sub->add_option("--timeout-per-run", *timeout, "Seconds a round's run may take; 0: none")
      ->group("A/B")
      ->check(timeout_seconds);
  add_compare_options(*sub, *cmp, /*ab=*/true);
  sub->callback([knobs, envs, args, lib_a, lib_b, fg_a, fg_b, rounds, timeout, isolate, blocks,
                 crossover, cmp, &exit_code] {
    exit_code = run_command(
        [&] {
          const core::Knobs k = knobs->resolve();
          (void)cmp->options();  // refuse a bad --noise-band before any round runs
          (void)cmp->output_format();
          run::AbRequest req;
          req.envs = *envs;
          req.args = *args;
          req.lib_a = *lib_a;
          req.lib_b = *lib_b;
          req.flaggems_a = *fg_a;
          req.flaggems_b = *fg_b;
          req.isolate = *isolate;
          req.blocks = *blocks;
          req.crossover = core::parse_switch("--crossover", *crossover) == core::Switch::on;
          req.rounds = *rounds;
          req.out = k.out;
          if (!k.name.empty()) req.name = k.name;
          req.ops = knobs->positional_ops;
          req.run_args = knobs->as_args({"out", "name", "ops"});
          req.timeout_per_run_s = *timeout;
          const run::AbSettings opt = run::resolve_ab(req);  // every refusal is here
          const auto rounds_out = run::run_ab_rounds(opt, std::cout, std::cerr);
          if (rounds_out.exit_code != 0) return rounds_out.exit_code;
          const auto a_dirs = rounds_out.run_dirs('A');
          const auto b_dirs = rounds_out.run_dirs('B');
          if (a_dirs.empty() || b_dirs.empty()) {
            std::cerr << "caliber ab: a side produced no run directory; see "
                      << (rounds_out.ab_dir / "logs").string() << "\n";
            return kExitFailed;
          }
          std::cout << "\n";
          return cmp->run_ab(a_dirs, b_dirs, opt.a.describe(), opt.b.describe(), opt.rounds,
                             std::cout, std::cerr);
        },
        /*invalid_argument_is_usage=*/true);
  });
}

CALIBER_COMMAND(70, add_ab);

}  // namespace
}  // namespace caliber::cli
