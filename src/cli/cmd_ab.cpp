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
      "A/B of a switch or of two builds: R interleaved rounds (A B A B ...), each a full `caliber "
      "run` into\n"
      "<ab dir>/A-<round> or B-<round>, on the same device with everything else equal; then the\n"
      "compare of all A rounds against all B rounds (rounds resampled, then samples: the spread\n"
      "between rounds is in the interval; with fewer than 3 rounds --run-noise stands in for it).\n"
      "The switch is an environment variable (--env NAME=A --env NAME=B; once: set on A, unset\n"
      "on B), a run flag (--arg=--flag=x --arg=--flag=y; once: A only) and/or two builds of the\n"
      "same ops (--ops-lib-a before.so --ops-lib-b after.so: the same op names, each side loads\n"
      "its own library). Two libraries and no other switch: PAIRED in one process per round, each\n"
      "case timed with both sides interleaved in one captured graph (else in short blocks, A B B\n"
      "A ...), so both sides see the same clock and power state, and in two placement phases, the\n"
      "second with each side set up in the other side's memory (--crossover); the interval comes\n"
      "from the blocks' ratios (docs/ab.md); --isolate\n"
      "runs a process per side instead. Every run flag is taken; --name names the A/B directory. "
      "When no row\n"
      "differs beyond noise it warns that the switch may not be live. Exit codes as compare;\n"
      "128+N interrupted.");
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
  sub->add_option("--env", *envs, "NAME=VALUE: first A's, then B's")->group("A/B");
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
      ->check(CLI::NonNegativeNumber);
  add_compare_options(*sub, *cmp, /*ab=*/true);
  sub->callback([knobs, envs, args, lib_a, lib_b, fg_a, fg_b, rounds, timeout, isolate, blocks,
                 crossover, cmp, &exit_code] {
    try {
      const core::Knobs k = knobs->resolve();
      (void)cmp->options();  // refuse a bad --noise-band before any round runs
      (void)cmp->output_format();
      run::AbOptions opt;
      std::vector<std::string> arg_values;
      for (const auto& a : *args) arg_values.push_back(a);
      opt.run_args = knobs->as_args({"out", "name", "ops"});
      run::add_flaggems_sides(opt.a, opt.b, *fg_a, *fg_b, opt.run_args,
                              !lib_a->empty() || !lib_b->empty());
      run::parse_ab_switch(*envs, arg_values, opt.a, opt.b, *lib_a, *lib_b);
      (void)run::choose_paired(opt, *envs, arg_values, *lib_a, *lib_b, *isolate);
      opt.blocks = *blocks;
      opt.crossover = *crossover == "on";
      opt.rounds = *rounds;
      opt.out = k.out;
      if (!k.name.empty()) opt.name = k.name;
      opt.ops = knobs->positional_ops;
      opt.timeout_per_run_s = *timeout;
      const auto rounds_out = run::run_ab_rounds(opt, std::cout, std::cerr);
      if (rounds_out.exit_code != 0) {
        exit_code = rounds_out.exit_code;
        return;
      }
      const auto a_dirs = rounds_out.run_dirs('A');
      const auto b_dirs = rounds_out.run_dirs('B');
      if (a_dirs.empty() || b_dirs.empty()) {
        std::cerr << "caliber ab: a side produced no run directory; see "
                  << (rounds_out.ab_dir / "logs").string() << "\n";
        exit_code = kExitFailed;
        return;
      }
      std::cout << "\n";
      exit_code = cmp->run_ab(a_dirs, b_dirs, opt.a.describe(), opt.b.describe(), opt.rounds,
                              std::cout, std::cerr);
    } catch (const core::KnobError& e) {
      exit_code = usage_error(e.what());
    } catch (const run::AbUsageError& e) {
      exit_code = usage_error(e.what());
    } catch (const std::invalid_argument& e) {
      exit_code = usage_error(e.what());
    }
  });
}

CALIBER_COMMAND(70, add_ab);

}  // namespace
}  // namespace caliber::cli
