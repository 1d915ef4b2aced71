// caliber plan: the stages a run would go through on a backend, and the timer it would use.
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "backends/registry.hpp"
#include "cli/commands.hpp"
#include "cli/knob_options.hpp"
#include "plan/plan.hpp"
#include "run/cases.hpp"
#include "run/driver.hpp"
#include "tune/warmup.hpp"

namespace caliber::cli {
namespace {

void add_plan(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "plan", "Print the stage plan of a run (derived from the backend's capabilities).");
  // Only the knobs that shape the plan.
  const std::set<std::string> keep = {"backend",         "timer", "tune",
                                      "parallel_warmup", "ops",   "devices"};
  std::set<std::string> skip;
  for (const core::KnobSpec& spec : core::knob_table()) {
    if (keep.count(spec.name) == 0) skip.insert(spec.name);
  }
  skip.insert("quiet");  // nothing to be quiet about: plan prints the plan only
  auto knobs = std::make_shared<KnobOptions>();
  knobs->add_to(*sub, skip, /*with_ops=*/true);
  auto as_json = std::make_shared<bool>(false);
  sub->add_flag("--json", *as_json, "JSON output");
  sub->callback([=, &exit_code] {
    exit_code = run_command(
        [&] {
          const core::Knobs k = knobs->resolve();
          const backends::Backend& backend = run::resolve_backend_knob(k);
          // What a run of these knobs would refuse, plan refuses: an op the backend's corpus
          // lacks (where this build has ops for it: a plan needs no device, nor a vendor's ops),
          // a warmup over more devices than are selected, a device the backend does not have
          // (where it has any: a plan of a machine without one is still a plan).
          if (!k.ops.empty() && !run::corpus(backend.name()).empty())
            (void)run::select_cases(k, backend.name(), backend.capabilities().host);
          if (!k.devices.empty()) (void)run::check_devices(backend, k, /*only_if_any=*/true);
          if (k.parallel_warmup > 0)
            tune::validate_parallel_warmup(
                k.parallel_warmup, k.devices.empty() ? 1 : static_cast<int>(k.devices.size()));
          plan::PlanInputs in;
          in.timer = k.timer;
          in.tune = k.tune;
          in.parallel_warmup = k.parallel_warmup;
          in.ops = k.ops;
          const plan::Plan p = plan::make_plan(backend, in);
          if (*as_json) {
            nlohmann::json j = {{"backend", p.backend}, {"timer", core::to_string(p.timer)}};
            j["stages"] = nlohmann::json::array();
            for (const auto& s : p.stages)
              j["stages"].push_back({{"name", s.name}, {"why", s.why}});
            std::cout << j.dump(2) << "\n";
          } else {
            std::cout << plan::format_plan(p);
          }
          return kExitOk;
        },
        /*invalid_argument_is_usage=*/true);
  });
}

CALIBER_COMMAND(61, add_plan);

}  // namespace
}  // namespace caliber::cli
