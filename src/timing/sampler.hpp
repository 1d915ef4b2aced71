// Internal to src/timing/: warmup, the sampling loop shared by both timers, the RNG capture guard.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "timing/timer.hpp"

namespace caliber::timing::detail {

using Clock = std::function<double()>;  // seconds

[[nodiscard]] Clock clock_of(const TimingOptions& opt);

struct WarmupResult {
  double estimate_ms = 0;  // per launch, from the last warmup batch
  // The median host time of a launch enqueued back to back with others (the batches after the
  // first): the host cost of one call while the device keeps up (once the device's queue is full,
  // the device's time).
  double host_ms = 0;
  int launches = 0;
};

// Launches in batches of growing size, each batch between two events, until the device has been
// busy for rule.warmup_s (clocks ramp: Triton issue #2306) or twice that wall time has passed.
// At least two batches run, so that the estimate never includes a first launch's lazy loading.
[[nodiscard]] WarmupResult warmup(backends::Device& dev, const std::function<void()>& launch,
                                  const StopRule& rule, const Clock& now);

// The stop rule the warmup of a measurement starting at t0 runs under: opt.stop, its warmup
// shortened to regime.carried_warmup_s where the previous measurement's state may be carried.
[[nodiscard]] StopRule warmup_rule(const TimingOptions& opt, double t0);

struct SampleRun {
  std::vector<double> per_launch_ms;  // kept samples, divided by launches_per_sample
  double noise = 0;
  bool converged = false;
  std::string stop_reason;
  int discarded = 0;
  int power_capped = 0;      // kept samples taken at a clock lowered only by the power cap
  int regime_discarded = 0;  // burst: samples the power limit slowed, dropped and re-taken
  ClockSummary clock;        // over the readings around the kept samples
  double settle_s = 0;       // sustained: settling; burst: resting after a slowed window
  bool settled = true;
  std::string settle;  // settled | carried | "" (no clocks)
};

// The host's sleep, or the options' scripted one.
[[nodiscard]] std::function<void(double)> sleeper_of(const TimingOptions& opt);

// burst: waits (sleeping, at most rule.rest_timeout_s) until the device reads rested: board power
// at most rest_power_fraction of its limit and no power-cap reason. Returns the seconds waited
// (0 at once where the backend cannot read clocks or power, or in the sustained regime).
// `how`, where given, says "carried" when the first reading was rested already, else "settled".
double rest_for_burst(backends::Device& dev, const TimingOptions& opt, const Clock& now,
                      std::string* how = nullptr);

// What the stop rule's min_time_s counts: the kept samples' own summed time (event intervals:
// the device time each sample covered), or the wall time of sampling, where the samples are
// kernel-trace spans: those leave out the flushes, the launches' start and the host's reading of
// the records, so that summing them asked thousands of samples of a short kernel for what its
// events covered in a few hundred (docs/timing.md).
enum class SampleTime { summed, wall };

// Takes samples until the stop rule says so; its timeout counts from the first sample (warmup
// and, in the sustained regime, settling come before it and have bounds of their own).
// `one_interval_ms` times one sample (its events, and the L2 flush before them, are its business)
// and returns the interval in ms; a sample covers `launches_per_sample` launches. Clocks are read
// every few samples (about every 10 ms of device time, so that the device seldom idles while the
// host reads them): the
// samples of a window whose start or end reading shows the SM clock below throttle_fraction of its
// maximum are discarded.
// `on_window`, when given, hears after each window of samples whether it was kept (and once,
// false, when settling is over): a caller that records more per sample than the interval (the
// interleaved pair's two sides) keeps or drops its records with it.
[[nodiscard]] SampleRun sample_until_stop(backends::Device& dev,
                                          const std::function<double()>& one_interval_ms,
                                          int launches_per_sample, double interval_estimate_ms,
                                          const TimingOptions& opt, const Clock& now,
                                          const std::function<void(bool kept)>& on_window = {},
                                          SampleTime time_by = SampleTime::summed);

// Saves the default generator before a capture and restores it when destroyed, so that capturing
// an RNG op does not advance the state callers see. Does nothing when the op draws no random
// numbers or the device has no default generator.
class RngCaptureGuard {
 public:
  RngCaptureGuard(backends::Device& dev, bool rng_op) noexcept
      : gen_(rng_op ? dev.default_generator() : nullptr) {
    if (gen_ != nullptr) saved_ = *gen_;
  }
  ~RngCaptureGuard() {
    if (gen_ != nullptr) *gen_ = saved_;
  }
  RngCaptureGuard(const RngCaptureGuard&) = delete;
  RngCaptureGuard& operator=(const RngCaptureGuard&) = delete;
  [[nodiscard]] bool active() const noexcept { return gen_ != nullptr; }

 private:
  GeneratorState* gen_;
  GeneratorState saved_{};
};

}  // namespace caliber::timing::detail
