// caliber report DIR... [--html FILE]: one self-contained HTML page of runs or batches.
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "core/rundir.hpp"
#include "report/html.hpp"

namespace caliber::cli {
namespace {

void add_report(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "report",
      "Write one self-contained HTML page of runs or batches: each run's caliber, the "
      "geometric-mean\n"
      "speedups with their bootstrap 95% intervals, and every case row. Exit 2 on bad input.");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  sub->add_option("dirs", *dirs, "Run or batch directories")->required();
  sub->add_option("--html", *out, "Output file (default: report.html in the first directory)");
  sub->callback([dirs, out, &exit_code] {
    try {
      std::vector<std::filesystem::path> paths(dirs->begin(), dirs->end());
      const std::string page = report::html_report(paths);
      const std::filesystem::path file =
          out->empty() ? paths.front() / "report.html" : std::filesystem::path(*out);
      core::write_file_atomic(file, page);
      std::cout << "report: " << file.string() << "\n";
      exit_code = kExitOk;
    } catch (const std::exception& e) {
      exit_code = usage_error(std::string("report: ") + e.what());
    }
  });
}

CALIBER_COMMAND(90, add_report);

}  // namespace
}  // namespace caliber::cli
