// caliber report DIR... [--html FILE] | --ab A B: one self-contained HTML page of runs, batches or
// an A/B, with its charts drawn as inline SVG (docs/report.md).
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "records/output_path.hpp"
#include "records/rundir.hpp"
#include "report/command.hpp"
#include "report/html.hpp"

namespace caliber::cli {
namespace {

void add_report(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "report",
      "Write one self-contained HTML page (no scripts, works offline) of runs or batches: each "
      "run's caliber, the geometric-mean speedups with their bootstrap 95% intervals, charts "
      "(speedup per shape with its interval, latency distributions of the stored samples, % of "
      "peak) and every case row. With --ab A B, or a directory written by `caliber ab`: the A/B "
      "comparison with the ratio of every pair and its interval, coloured by verdict. Exit 2 on "
      "bad input.");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto ab = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  sub->add_option("DIR", *dirs, "Run, batch or ab directories");
  sub->add_option("--ab", *ab,
                  "An A/B page of two sides (A B); a side may be several runs, comma-separated")
      ->expected(2);
  auto* out_opt = sub->add_option(
      "--html", *out,
      "Output file (default: report.html in the first directory, or in A); never an input, a "
      "link, a read-only file or anything but a regular file");
  sub->callback([dirs, ab, out, out_opt, &exit_code] {
    if (ab->empty() == dirs->empty()) {
      exit_code = usage_error(ab->empty() ? "report: name at least one run, batch or ab directory"
                                          : "report --ab A B takes no other directories");
      return;
    }
    std::vector<std::filesystem::path> a, b, inputs;
    if (!ab->empty()) {
      a = report::CompareCommand::side_paths((*ab)[0]);
      b = report::CompareCommand::side_paths((*ab)[1]);
      if (a.empty() || b.empty()) {
        exit_code = usage_error("report --ab: each side needs a directory");
        return;
      }
      inputs = a;
      inputs.insert(inputs.end(), b.begin(), b.end());
    } else {
      inputs.assign(dirs->begin(), dirs->end());
    }
    const std::filesystem::path file =
        out_opt->count() == 0 ? inputs.front() / "report.html" : std::filesystem::path(*out);
    std::string page;
    try {
      page = ab->empty() ? report::html_report(inputs) : report::html_ab_report(a, b);
      // After the inputs were read (their errors come first), before anything is written.
      core::check_output_file(file, "--html", core::inputs_of(inputs));
    } catch (const std::exception& e) {
      exit_code = usage_error(std::string("report: ") + e.what());
      return;
    }
    try {
      core::write_file_atomic(file, page);
    } catch (const std::exception& e) {
      std::cerr << "caliber: report: " << e.what() << "\n";
      exit_code = kExitFailed;  // the input was good; the page could not be written
      return;
    }
    std::cout << "report: " << file.string() << "\n";
    exit_code = kExitOk;
  });
}

CALIBER_COMMAND(90, add_report);

}  // namespace
}  // namespace caliber::cli
