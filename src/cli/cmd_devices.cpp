// caliber devices: every backend, its devices and capabilities, and why a backend has none.
#include <iostream>

#include "backends/describe.hpp"
#include "backends/registry.hpp"
#include "cli/commands.hpp"
#include "records/output_path.hpp"

namespace caliber::cli {
namespace {

void add_devices(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "devices", "List every backend, its devices (as you see them) and capabilities.");
  auto backend = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto* backend_opt = sub->add_option("--backend", *backend, "Only this backend (a name or alias)");
  sub->add_flag("--json", *as_json, "JSON output");
  sub->callback([=, &exit_code] {
    nlohmann::json described;
    if (backend_opt->count() == 0) {
      described = backends::describe_backends();
    } else {
      const backends::Backend* b = backends::find_backend(*backend);
      if (b == nullptr) {
        exit_code = usage_error("--backend: unknown backend '" + core::shown_path(*backend) +
                                "'; valid: " + backends::valid_backend_names());
        return;
      }
      described["backends"] = nlohmann::json::array({backends::describe_backend(*b)});
    }
    if (*as_json) {
      std::cout << described.dump(2) << "\n";
    } else {
      std::cout << backends::format_backends(described);
    }
    exit_code = kExitOk;
  });
}

CALIBER_COMMAND(60, add_devices);

}  // namespace
}  // namespace caliber::cli
