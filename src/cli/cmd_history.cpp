// caliber history DIR...: runs of one caliber over time, per row the series, its steps and its
// change-point (docs/report.md, "History").
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "records/output_path.hpp"
#include "records/rundir.hpp"
#include "report/command.hpp"
#include "report/history.hpp"

namespace caliber::cli {
namespace {

struct HistoryArgs {
  std::vector<std::string> dirs;
  std::string order = "time";
  double min_step_pct = 3.0;
  std::string html;
  report::CompareCommand cmp;
};

int run_history(const HistoryArgs& a) {
  report::HistoryOptions opt;
  report::Format fmt{};
  std::vector<std::filesystem::path> paths(a.dirs.begin(), a.dirs.end());
  report::HistoryResult h;
  try {
    opt.compare = a.cmp.options();
    fmt = a.cmp.output_format();
    const auto order = report::parse_history_order(a.order);
    if (!order) return usage_error("--order: '" + a.order + "' is not allowed (time, commit)");
    opt.order = *order;
    if (!(a.min_step_pct >= 0 && a.min_step_pct < 100))
      return usage_error("--min-step: '" + std::to_string(a.min_step_pct) +
                         "' is not allowed (a percentage from 0 to below 100)");
    opt.min_step = a.min_step_pct / 100.0;
    h = report::history_of(report::history_points(paths, opt.order), opt);
    // The page follows the one output policy: never over an input, a link or a read-only file.
    if (!a.html.empty()) core::check_output_file(a.html, "--html", core::inputs_of(paths));
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  const auto r =
      report::render_streams(report::history_report(h, opt, fmt == report::Format::csv), fmt);
  std::cout << r.out << std::flush;
  std::cerr << r.err;
  if (!a.html.empty()) {
    core::write_file_atomic(a.html, report::history_html(h, opt));
    std::cerr << "history: " << a.html << "\n";
  }
  return report::history_exit_code(h, opt);
}

void add_history(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "history",
      "Results over time: runs of one caliber, oldest first (by start time, or grouped by the\n"
      "commit they were built from), and per op, dtype, shape and provider the series of medians,\n"
      "compare's verdict between consecutive points and the change-point of the series\n"
      "(docs/report.md#history). DIR is a run, a batch, or a directory of runs and batches.\n"
      "Exit 0, 1 with --fail-on-regression and a regression of the newest point (a step SLOWER\n"
      "by more than PCT, a case that fails there, or nothing comparable), 2 bad input.");
  auto a = std::make_shared<HistoryArgs>();
  sub->add_option("DIR", a->dirs, "Run or batch directories, or directories holding them")
      ->required();
  sub->add_option("--order", a->order,
                  "time: each run or batch is a point, by start time (default); commit: the runs "
                  "of one\ngit_commit pooled into one point, commits in the order they first ran")
      ->group("History");
  sub->add_option("--min-step", a->min_step_pct,
                  "The smallest change-point reported, percent (default 3)")
      ->group("History");
  sub->add_option("--html", a->html, "Also write the page, one small chart per row that moved")
      ->check(refuse_empty)
      ->group("History");
  add_compare_options(*sub, a->cmp);
  sub->callback([a, &exit_code] { exit_code = run_history(*a); });
}

CALIBER_COMMAND(65, add_history);

}  // namespace
}  // namespace caliber::cli
