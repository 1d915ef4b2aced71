#include "tune/sweep_options.hpp"

#include <algorithm>
#include <utility>

namespace caliber::tune {

timing::TimingOptions sweep_options(timing::TimingOptions o) {
  // The sweep uses the measurement's timer with a shorter budget (issue 6): enough to rank
  // configs.
  o.repeat = 1;
  o.quantiles.clear();
  o.return_mode = core::ReturnMode::median;
  o.stop.min_samples = std::min(o.stop.min_samples, 5);
  o.stop.min_time_s = std::min(o.stop.min_time_s, 0.002);
  o.stop.max_noise = std::max(o.stop.max_noise, 0.02);
  o.stop.timeout_s = std::min(o.stop.timeout_s, 0.25);
  o.stop.warmup_s = std::min(o.stop.warmup_s, 0.005);
  // Settle windows of 20 ms: a sweep's configs follow each other, so after the first the regime
  // is carried in one or two windows (docs/timing.md), and 50 ms windows made the settle most of
  // a config's cost.
  o.regime.settle_window_s = std::min(o.regime.settle_window_s, 0.02);
  // A config under the power limit does not wait the 1.5 s the board's power control needs to
  // hold the clock: a sweep ranks configs timed one after the other in the same state, and that
  // wait was most of a GEMM sweep (bmm on the H200: 0.5 s a config, 56 s for 15 cases,
  // 2026-12-01). The winner's own measurement settles by the full rule.
  o.regime.settle_min_capped_s = std::min(o.regime.settle_min_capped_s, 0.1);
  o.regime.settle_timeout_s = std::min(o.regime.settle_timeout_s, 0.5);
  // Configs follow each other within milliseconds: the carried state is checked in one 5 ms
  // window, and a replay of 0.25 ms of launches (fewer graph nodes to capture and instantiate)
  // ranks them as well as 1 ms. On the H200 a config cost 56 ms (the elementwise ops' 26 configs
  // a case were 110 s of the main job's first 330 s, 2026-12-01).
  o.regime.carry_window_s = std::min(o.regime.carry_window_s, 0.005);
  o.graph_replay_ms = std::min(o.graph_replay_ms, 0.25);
  return o;
}

timing::TimingOptions screen_options(timing::TimingOptions full) {
  timing::TimingOptions o = sweep_options(std::move(full));
  // Three samples of a quiet record tell a config 5% off the best from one within noise; the
  // second pass ranks the survivors at the sweep's own budget. The fixed costs (warmup, the
  // carried regime's window) were most of a config's cost, so they shrink too.
  o.stop.min_samples = std::min(o.stop.min_samples, 3);
  o.stop.min_time_s = std::min(o.stop.min_time_s, 0.0005);
  o.stop.max_noise = std::max(o.stop.max_noise, 1.0);
  o.stop.timeout_s = std::min(o.stop.timeout_s, 0.05);
  o.stop.warmup_s = std::min(o.stop.warmup_s, 0.001);
  o.regime.carried_warmup_s = std::min(o.regime.carried_warmup_s, 0.001);
  o.regime.carry_window_s = std::min(o.regime.carry_window_s, 0.002);
  return o;
}

}  // namespace caliber::tune
