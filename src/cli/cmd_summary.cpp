// caliber summary DIR... (a run or a batch): geometric-mean speedups per op and dtype.
// `caliber summary --ab A B` is `caliber compare A B`.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "report/command.hpp"
#include "report/summary.hpp"

namespace caliber::cli {
namespace {

void add_summary(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand("summary",
                                  "Per op and dtype: rows, geometric-mean speedup (baseline / "
                                  "candidate) with a bootstrap 95% CI,\n"
                                  "min and max, fallback (BENCHMARK_DIRECT_NO_CUDAGRAPH) and "
                                  "poisoned (BENCHMARK_CAPTURE_POISONED)\n"
                                  "rows, failed and skipped; an overall line per directory. Rows "
                                  "without a speedup are counted\n"
                                  "but excluded from the geomean. DIR is a run directory or a "
                                  "batch directory. With --ab A B it\n"
                                  "is `caliber compare A B`.");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto ab = std::make_shared<std::vector<std::string>>();
  auto cmp = std::make_shared<report::CompareCommand>();
  sub->add_option("DIR", *dirs, "Run or batch directories");
  sub->add_option("--ab", *ab, "Compare two runs or batches (A B), as `caliber compare`")
      ->expected(2);
  add_compare_options(*sub, *cmp);
  sub->callback([sub, dirs, ab, cmp, &exit_code] {
    // The comparison's flags mean nothing to a summary: a gate given without --ab would pass
    // every time, unnoticed.
    for (const CLI::Option* o : sub->get_options())
      if (ab->empty() && o->get_group() == "Compare" && o->count() > 0) {
        exit_code = usage_error("summary: " + o->get_name() +
                                " is a flag of the comparison; allowed only with --ab A B");
        return;
      }
    if (!ab->empty()) {
      if (!dirs->empty()) {
        exit_code = usage_error("summary --ab A B takes no other directories");
        return;
      }
      exit_code = cmp->run({(*ab)[0]}, {(*ab)[1]}, std::cout, std::cerr);
      return;
    }
    if (dirs->empty()) {
      exit_code = usage_error("summary: name at least one run or batch directory");
      return;
    }
    const auto format = report::parse_format(cmp->format);
    if (!format) {
      exit_code = usage_error("--format: '" + cmp->format + "' is not allowed (" +
                              report::format_names() + ")");
      return;
    }
    try {
      std::vector<std::filesystem::path> paths(dirs->begin(), dirs->end());
      const auto r =
          report::render_streams(report::summary_report(report::summarize(paths)), *format);
      std::cout << r.out << std::flush;
      std::cerr << r.err;
      exit_code = kExitOk;
    } catch (const std::exception& e) {
      exit_code = usage_error(e.what());
    }
  });
}

CALIBER_COMMAND(50, add_summary);

}  // namespace
}  // namespace caliber::cli
