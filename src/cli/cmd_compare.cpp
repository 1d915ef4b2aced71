// caliber compare A B: an honest A/B of two runs or batches.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "report/command.hpp"

namespace caliber::cli {
namespace {

void add_compare(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "compare",
      "Compare two runs or batches (also `caliber summary --ab A B`). Their run_identity.json are\n"
      "compared first: a caliber difference (level, timer, backend, device model, tune, repeat, "
      "l2, clock)\n"
      "is printed as CALIBER MISMATCH and exits 2 unless --allow-mismatch. Rows are paired by op,\n"
      "dtype and shape; only rows ok on both sides with a positive latency count, and the "
      "unpaired\n"
      "and excluded counts are printed. Per pair and provider: ratio = B's latency / A's "
      "(ratio_of:\n"
      "the sides' figures, the median of their runs' latency_ms, or a paired A/B's blocks), its "
      "95% CI and a verdict (FASTER, "
      "SLOWER,\n"
      "SAME, UNSURE); per op the range of ratios. Columns and notes: docs/ab.md. Exit 0, 1 with\n"
      "--fail-on-regression and a regression (a pair SLOWER by more than PCT, a case ok in A and\n"
      "failed in B, or no case paired at all), 2 mismatch or bad input.");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  auto cmp = std::make_shared<report::CompareCommand>();
  sub->add_option("A", *a,
                  "Run or batch directory (the reference); several, comma-separated, for repeated\n"
                  "runs of the same code: their spread then enters the interval")
      ->required();
  sub->add_option("B", *b,
                  "Run or batch directory (the change); several, comma-separated. Without B, A is "
                  "a directory\ncaliber ab wrote: its A rounds against its B rounds again");
  add_compare_options(*sub, *cmp);
  sub->callback([a, b, cmp, &exit_code] {
    exit_code = b->empty() ? cmp->run_ab_dir(*a, std::cout, std::cerr)
                           : cmp->run(report::CompareCommand::side_paths(*a),
                                      report::CompareCommand::side_paths(*b), std::cout, std::cerr);
  });
}

CALIBER_COMMAND(60, add_compare);

}  // namespace
}  // namespace caliber::cli
