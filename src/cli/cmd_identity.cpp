// caliber identity RUN [--diff OTHER]: a run's caliber, and the differences between two runs.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "records/identity.hpp"
#include "report/identity_view.hpp"

namespace caliber::cli {
namespace {

void add_identity(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "identity",
      "Print a run's caliber (level, timer, backend, device model, tune, repeat, l2, clock), its "
      "device "
      "and\n"
      "the rest of run_identity.json. With --diff OTHER print the caliber differences instead\n"
      "(CALIBER MISMATCH lines). Exit 0 whether or not they differ (it reports; `caliber compare`\n"
      "is the gate that refuses), 2 when a run_identity.json cannot be read.");
  auto run = std::make_shared<std::string>();
  auto other = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  sub->add_option("RUN", *run, "A run directory")->required();
  sub->add_option("--diff", *other, "Another run directory to compare calibers with")
      ->check(refuse_empty);
  sub->add_option("--format", *format, "Output: table, md, csv, json")->group("Output");
  sub->callback([run, other, format, &exit_code] {
    const auto fmt = report::parse_format(*format);
    if (!fmt) {
      exit_code = usage_error("--format: '" + *format + "' is not allowed (" +
                              report::format_names() + ")");
      return;
    }
    try {
      const auto a = core::read_identity(*run);
      if (other->empty()) {
        const auto r = report::render_streams(report::identity_report(a, *run), *fmt);
        std::cout << r.out << std::flush;
        std::cerr << r.err;
      } else {
        const auto b = core::read_identity(*other);
        const auto r =
            report::render_streams(report::identity_diff_report(a, *run, b, *other), *fmt);
        std::cout << r.out << std::flush;
        std::cerr << r.err;
      }
      exit_code = kExitOk;
    } catch (const std::exception& e) {
      exit_code = usage_error(e.what());
    }
  });
}

CALIBER_COMMAND(80, add_identity);

}  // namespace
}  // namespace caliber::cli
