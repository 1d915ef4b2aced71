// The stage plan of a run: derived from the backend's capabilities and the run's knobs, never from
// a per-vendor list (the old runner hard-coded its plugin list; docs/architecture.md).
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "settings/settings.hpp"

namespace caliber::plan {

struct PlanInputs {
  core::TimerKind timer = core::TimerKind::automatic;
  core::TuneMode tune = core::TuneMode::live;
  int parallel_warmup = 0;       // devices to shard the sweep over; 0: unset (no stage)
  std::vector<std::string> ops;  // empty: all ops
};

struct Stage {
  std::string name;  // compat, device_setup, parallel_warmup, cluster_fix, tune, graph_capture,
                     // direct_timer, timing, summary
  std::string why;
};

struct Plan {
  std::string backend;
  core::TimerKind timer = core::TimerKind::direct;  // resolved: graph or direct
  std::vector<Stage> stages;
  [[nodiscard]] bool has(const std::string& stage_name) const;
  // Position of the first stage with this name, or -1.
  [[nodiscard]] int position(const std::string& stage_name) const;
};

// The timer a run uses ("graph" or "direct"), by the one rule timing::choose_timer applies to the
// backend's capabilities; "auto" follows capabilities().graph_timer_default. Throws
// std::invalid_argument for "graph" on a backend that cannot capture: asked for explicitly, that
// is bad usage, not a silent fallback.
[[nodiscard]] core::TimerKind resolve_timer(const backends::Backend& backend,
                                            core::TimerKind request);

// Throws std::invalid_argument on a bad timer or parallel_warmup value.
[[nodiscard]] Plan make_plan(const backends::Backend& backend, const PlanInputs& in);

// The plan as text: one numbered line per stage, the resolved timer first.
[[nodiscard]] std::string format_plan(const Plan& plan);

}  // namespace caliber::plan
