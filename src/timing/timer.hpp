// Timers built on the backend's device interface. Nothing here names a vendor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/stats.hpp"

namespace caliber::timing {

enum class TimerKind { automatic, graph, direct };
enum class L2Policy { cold, warm };

struct StopRule {
  int min_samples = 10;
  double min_time_s = 0.01;     // summed sample time
  double max_noise = 0.005;     // relative noise target (stdev / mean of the kept samples)
  double timeout_s = 1.0;       // wall time for the measurement of one provider
  double warmup_s = 0.02;       // long enough for clocks to ramp
};

struct TimingOptions {
  TimerKind timer = TimerKind::automatic;
  int repeat = 1;                        // median of N direct-timer call medians
  core::ReturnMode return_mode = core::ReturnMode::median;
  std::vector<double> quantiles;         // non-empty: report these, skip repetition
  L2Policy l2 = L2Policy::cold;
  StopRule stop;
  double throttle_fraction = 0.75;       // samples below this fraction of max SM clock are discarded
  bool capture_denied = false;           // op is on the capture deny list
  bool rng = false;                      // op draws from a generator: guard around capture
};

struct Measurement {
  bool ok = false;
  std::string timer;                     // "graph" or "direct": what really produced the number
  double latency_ms = 0;                 // per the return mode
  std::vector<double> quantile_ms;       // when quantiles were asked
  std::vector<double> samples_ms;        // per-launch samples kept (for A/B statistics)
  std::vector<std::string> markers;      // BENCHMARK_DIRECT_NO_CUDAGRAPH, timer=direct, repeat=N, ...
  int repeat = 1;                        // calls actually made
  bool repeat_skipped = false;           // asked for but skipped (quantiles / return mode all)
  double noise = 0;                      // relative noise reached
  std::string stop_reason;               // "converged", or "timeout: noise 1.2% > 0.5%"
  int throttled_discarded = 0;
  int launches_per_sample = 1;           // K of the graph timer
  std::string l2_method;                 // "flush" or "warm"
  backends::Failure failure = backends::Failure::ok;
  std::string error;                     // when !ok
  double wall_s = 0;                     // cost of this measurement, warmup and capture included
};

// Time `launch` (which only enqueues on the device's stream) on `dev`.
[[nodiscard]] Measurement measure(backends::Device& dev, const backends::Backend& backend,
                                  const std::function<void()>& launch, const TimingOptions& opt);

}  // namespace caliber::timing
