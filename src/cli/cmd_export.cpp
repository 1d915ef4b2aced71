// caliber export DIR... --format csv|json|gbench|flaggems-log [--out FILE]: one row per case and
// provider, for other tools (docs/run-log.md, "Exports"). Notes go to stderr, never into the file.
#include <iostream>

#include "cli/commands.hpp"
#include "records/output_path.hpp"
#include "records/rundir.hpp"
#include "report/export.hpp"

namespace caliber::cli {
namespace {

void add_export(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "export",
      "Write one row per case and provider of runs or batches (latency, quantiles, samples, "
      "noise, GB/s, TFLOP/s, % of peak, timer, markers, stop reason, status) as csv, json (an "
      "array of row objects), gbench (Google Benchmark's JSON, which its compare.py reads) or "
      "flaggems-log (FlagGems' `--record log` lines, one per op and dtype, which its "
      "benchmark/summary_for_plot.py reads). Columns: docs/run-log.md.");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("csv");
  auto out = std::make_shared<std::string>();
  sub->add_option("DIR", *dirs, "Run or batch directories")->required();
  sub->add_option("--format", *format, "csv, json, gbench or flaggems-log (default csv)");
  auto* out_opt = sub->add_option(
      "--out", *out,
      "Output file (default: standard output); never an input, a link, a read-only file or "
      "anything but a regular file");
  sub->callback([dirs, format, out, out_opt, &exit_code] {
    const auto f = report::parse_export_format(*format);
    if (!f) {
      exit_code = usage_error("--format: '" + *format + "' is not allowed (" +
                              report::export_format_names() + ")");
      return;
    }
    report::ExportResult r;
    try {
      std::vector<std::filesystem::path> paths(dirs->begin(), dirs->end());
      if (out_opt->count() > 0) core::check_output_file(*out, "--out", core::inputs_of(paths));
      r = report::export_dirs(paths, *f);
    } catch (const std::exception& e) {
      exit_code = usage_error(std::string("export: ") + e.what());
      return;
    }
    try {
      if (out_opt->count() == 0)
        r.write(std::cout);
      else
        core::write_file_atomic(*out, [&r](std::ostream& o) { r.write(o); });
    } catch (const std::exception& e) {
      std::cerr << "caliber: export: " << e.what() << "\n";
      exit_code = kExitFailed;
      return;
    }
    for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
    exit_code = kExitOk;
  });
}

CALIBER_COMMAND(55, add_export);

}  // namespace
}  // namespace caliber::cli
