// Warmup and the sampling loop shared by the direct and graph timers.
#include "timing/sampler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace caliber::timing::detail {

Clock clock_of(const TimingOptions& opt) {
  if (opt.now) return opt.now;
  return [] {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  };
}

WarmupResult warmup(backends::Device& dev, const std::function<void()>& launch,
                    const StopRule& rule, const Clock& now) {
  auto start = dev.create_event();
  auto end = dev.create_event();
  const double t0 = now();
  const double target_ms = rule.warmup_s * 1e3;
  double busy_ms = 0;
  int batch = 1;
  WarmupResult w;
  for (int round = 1;; ++round) {
    dev.record(*start);
    for (int i = 0; i < batch; ++i) launch();
    dev.record(*end);
    const double ms = dev.elapsed_ms(*start, *end);
    busy_ms += ms;
    w.launches += batch;
    w.estimate_ms = ms / batch;
    const double wall = now() - t0;
    if (round >= 2 && (busy_ms >= target_ms || wall >= 2 * rule.warmup_s)) break;
    if (round >= 2 && wall >= rule.timeout_s) break;
    // Grow geometrically, but no further than what the remaining warmup needs.
    const double remaining_ms = std::max(0.0, target_ms - busy_ms);
    const double need = w.estimate_ms > 0 ? std::ceil(remaining_ms / w.estimate_ms) : 2.0 * batch;
    batch = static_cast<int>(std::clamp(need, 1.0, 2.0 * batch));
  }
  return w;
}

namespace {

// What a clock reading says of the samples around it, in increasing order of doubt.
enum class Reading {
  fine,          // at speed, or nothing to compare with
  power_capped,  // low, but only the power limit holds it there: the work's own sustained speed
  throttled,     // low for another reason (idle, heat, a hardware slowdown): discard
};

Reading classify(const std::optional<backends::ClockSample>& c, double fraction) {
  if (!c || c->sm_max_mhz <= 0 || c->sm_mhz <= 0) return Reading::fine;
  if (c->sm_mhz >= fraction * c->sm_max_mhz) return Reading::fine;
  return c->power_cap_only ? Reading::power_capped : Reading::throttled;
}

}  // namespace

SampleRun sample_until_stop(backends::Device& dev, const std::function<double()>& one_interval_ms,
                            int launches_per_sample, double interval_estimate_ms,
                            const TimingOptions& opt, const Clock& now, double start_s) {
  const StopRule& rule = opt.stop;
  const int k = std::max(1, launches_per_sample);
  // About 0.2 ms of device time between clock readings keeps their cost small next to the samples.
  const int window =
      interval_estimate_ms > 0
          ? static_cast<int>(std::clamp(std::ceil(0.2 / interval_estimate_ms), 1.0, 16.0))
          : 1;
  SampleRun run;
  std::vector<double> pending;
  pending.reserve(static_cast<std::size_t>(window));
  double sum_s = 0;
  int last_eval_n = 0;
  std::optional<backends::ClockSample> before = dev.clocks();
  for (;;) {
    pending.clear();
    for (int i = 0; i < window; ++i) pending.push_back(one_interval_ms());
    const std::optional<backends::ClockSample> after = dev.clocks();
    // The window counts as its worse reading. A clock held down by the power limit alone is the
    // work's own sustained speed (the largest GEMMs run there all the time): kept, counted and
    // marked. Discarding it would leave such a case no samples, or only the brief high-clock
    // ones: a speed it cannot sustain.
    const Reading window_reading =
        std::max(classify(before, opt.throttle_fraction), classify(after, opt.throttle_fraction));
    if (window_reading == Reading::throttled) {
      run.discarded += static_cast<int>(pending.size());
    } else {
      if (window_reading == Reading::power_capped)
        run.power_capped += static_cast<int>(pending.size());
      for (double interval : pending) {
        run.per_launch_ms.push_back(interval / k);
        sum_s += interval * 1e-3;
      }
    }
    before = after;
    const int n = static_cast<int>(run.per_launch_ms.size());
    const double elapsed = now() - start_s;
    const bool may_converge = n >= rule.min_samples && sum_s >= rule.min_time_s;
    const bool must_stop = elapsed >= rule.timeout_s || n >= rule.max_samples;
    // The noise costs a sort: evaluate it when 10% more samples arrived, or when stopping anyway.
    if ((may_converge && n - last_eval_n >= std::max(1, last_eval_n / 10)) || must_stop) {
      last_eval_n = n;
      run.noise = median_rel_std_error(run.per_launch_ms);
      const StopState st = evaluate_stop(rule, n, sum_s, run.noise, elapsed, run.discarded);
      if (st.stop) {
        run.converged = st.converged;
        run.stop_reason = st.reason;
        break;
      }
    }
  }
  return run;
}

}  // namespace caliber::timing::detail
