#include "plan/plan.hpp"

#include <algorithm>
#include <stdexcept>

#include "timing/timer.hpp"

namespace caliber::plan {

bool Plan::has(const std::string& stage_name) const {
  return position(stage_name) >= 0;
}

int Plan::position(const std::string& stage_name) const {
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].name == stage_name) return static_cast<int>(i);
  }
  return -1;
}

core::TimerKind resolve_timer(const backends::Backend& backend, core::TimerKind request) {
  const backends::Capabilities caps = backend.capabilities();
  if (request == core::TimerKind::graph && !caps.graph_capture) {
    throw std::invalid_argument("--timer graph: backend '" + backend.name() +
                                "' cannot capture graphs (use auto or direct)");
  }
  return timing::choose_timer(caps, request).kind;
}

Plan make_plan(const backends::Backend& backend, const PlanInputs& in) {
  if (in.parallel_warmup < 0) {
    throw std::invalid_argument("--parallel-warmup: " + std::to_string(in.parallel_warmup) +
                                " is not allowed (a device count, 0 for unset)");
  }
  const backends::Capabilities caps = backend.capabilities();
  Plan p;
  p.backend = backend.name();
  p.timer = resolve_timer(backend, in.timer);
  const bool tuning = in.tune != core::TuneMode::off;

  // Compat rules rewrite which cases exist, so nothing that reads the case list may run before
  // them (docs/architecture.md).
  for (const backends::CompatRule& rule : backend.compat_rules()) {
    if (rule.op.rfind("flaggems:", 0) == 0) continue;  // a FlagGems file's: its plugin's (Python)
    const bool selected =
        in.ops.empty() || std::find(in.ops.begin(), in.ops.end(), rule.op) != in.ops.end();
    if (!selected) continue;
    p.stages.push_back({"compat", rule.op + ": lift the skip \"" + rule.reason + "\" on " +
                                      backend.name() + " (" + rule.why + ")"});
  }
  p.stages.push_back({"device_setup", "setup guard: fail fast unless " + backend.name() +
                                          "'s runtime and a device are present"});
  if (in.parallel_warmup > 0) {
    p.stages.push_back({"parallel_warmup", "shard the autotune sweep over " +
                                               std::to_string(in.parallel_warmup) +
                                               " devices, merge the winners, then measure on one"});
  }
  if (caps.clusters && tuning) {
    p.stages.push_back({"cluster_fix",
                        "drop cluster configs the device cannot launch before the "
                        "sweep (the backend has thread-block clusters)"});
  }
  if (tuning) {
    const std::string what =
        in.tune == core::TuneMode::live     ? "use the config cache, tune missing keys"
        : in.tune == core::TuneMode::record ? "tune into this run's own tune.db"
                                            : "use only the configs recorded by --replay-from";
    p.stages.push_back({"tune", "autotune " + std::string(core::to_string(in.tune)) + ": " + what});
  }
  if (p.timer == core::TimerKind::graph) {
    p.stages.push_back({"graph_capture",
                        "capture K launches per case and replay them; a case that "
                        "refuses capture falls back to the direct timer"});
  } else {
    p.stages.push_back(
        {"direct_timer",
         in.timer == core::TimerKind::direct
             ? "--timer direct: each launch timed on its own; rows record timer=direct"
             : backend.name() + " does not default to graph timing: each launch timed on its own; "
                                "rows record timer=direct"});
  }
  p.stages.push_back({"timing",
                      "check each candidate against the reference, then time every "
                      "provider; one run.log row per case, flushed"});
  p.stages.push_back({"summary", "the summary table and the run.log footer"});
  return p;
}

std::string format_plan(const Plan& plan) {
  std::string out =
      "backend: " + plan.backend + "\ntimer: " + core::to_string(plan.timer) + "\nstages:\n";
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    out += "  " + std::to_string(i + 1) + ". " + plan.stages[i].name + ": " + plan.stages[i].why +
           "\n";
  }
  return out;
}

}  // namespace caliber::plan
