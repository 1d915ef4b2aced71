// Warmup and the sampling loop shared by the direct and graph timers.
#include "timing/sampler.hpp"

#include "core/stats.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>
#include <vector>

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
  // The host's time of each launch after the first batch (whose first launch loads lazily): their
  // median is the host cost of one call, so that a pause of the host's own (a garbage collection,
  // a cache lookup) in one call does not stand for every call, as a batch's mean would let it.
  std::vector<double> host_s;
  for (int round = 1;; ++round) {
    dev.record(*start);
    double t = now();
    for (int i = 0; i < batch; ++i) {
      launch();
      if (round < 2) continue;
      const double after = now();
      host_s.push_back(after - t);
      t = after;
    }
    dev.record(*end);
    const double ms = dev.elapsed_ms(*start, *end);
    busy_ms += ms;
    w.launches += batch;
    w.estimate_ms = ms / batch;
    const double wall = now() - t0;
    // The warmup has bounds of its own (docs/timing.md): the timeout counts from the first
    // sample, so `--warmup 5 --timeout 0.5` warms for 5 s, never for the timeout's 0.5 s.
    if (round >= 2 && (busy_ms >= target_ms || wall >= 2 * rule.warmup_s)) break;
    // Grow geometrically, but no further than what the remaining warmup needs.
    const double remaining_ms = std::max(0.0, target_ms - busy_ms);
    const double need = w.estimate_ms > 0 ? std::ceil(remaining_ms / w.estimate_ms) : 2.0 * batch;
    batch = static_cast<int>(std::clamp(need, 1.0, 2.0 * batch));
  }
  w.host_ms = core::median(host_s) * 1e3;
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

bool has_reason(const backends::ClockSample& c, const char* name) {
  return std::find(c.reasons.begin(), c.reasons.end(), name) != c.reasons.end();
}

// In the burst regime a window is past the burst when the power limit holds the clock (at any
// clock: the board is then already past its burst), or when the clock is below the burst fraction
// of its maximum for a reason other than idling (the samples run, so an idle reading is the
// clock catching up).
bool past_burst(const std::optional<backends::ClockSample>& c, const RegimeRule& rule) {
  if (!c) return false;
  if (has_reason(*c, "power_cap")) return true;
  if (c->sm_max_mhz <= 0 || c->sm_mhz <= 0) return false;
  return c->sm_mhz < rule.burst_clock_fraction * c->sm_max_mhz && !has_reason(*c, "idle");
}

class ClockAccumulator {
 public:
  void add(const std::optional<backends::ClockSample>& c) {
    if (c) s_.other_processes = std::max(s_.other_processes, c->other_processes);
    if (!c || c->sm_mhz <= 0) return;
    s_.known = true;
    ++s_.readings;
    sm_sum_ += c->sm_mhz;
    s_.sm_min_mhz = s_.readings == 1 ? c->sm_mhz : std::min(s_.sm_min_mhz, c->sm_mhz);
    s_.sm_max_mhz = std::max(s_.sm_max_mhz, c->sm_max_mhz);
    if (c->power_w > 0) {
      power_sum_ += c->power_w;
      ++power_n_;
    }
    if (c->power_limit_w > 0) s_.power_limit_w = c->power_limit_w;
    for (const auto& r : c->reasons)
      if (std::find(s_.reasons.begin(), s_.reasons.end(), r) == s_.reasons.end())
        s_.reasons.push_back(r);
  }
  [[nodiscard]] ClockSummary summary() const {
    ClockSummary out = s_;
    if (out.readings > 0) out.sm_mean_mhz = sm_sum_ / out.readings;
    if (power_n_ > 0) out.power_mean_w = power_sum_ / power_n_;
    return out;
  }

 private:
  ClockSummary s_;
  double sm_sum_ = 0;
  double power_sum_ = 0;
  int power_n_ = 0;
};

struct SettleWindow {
  double median_ms = 0;
  std::optional<backends::ClockSample> clock;
};

bool cool(const std::optional<backends::ClockSample>& c, const RegimeRule& rule) {
  if (!c || has_reason(*c, "power_cap")) return false;
  if (c->power_limit_w > 0 && c->power_w > rule.cool_power_fraction * c->power_limit_w)
    return false;
  return c->sm_max_mhz <= 0 || c->sm_mhz >= (1 - rule.settle_clock_tol) * c->sm_max_mhz;
}

// The last four windows agree: median latencies within settle_latency_tol of each other, clock
// readings within settle_clock_tol of the maximum.
bool steady(const std::vector<SettleWindow>& w, const RegimeRule& rule) {
  if (w.size() < 4) return false;
  const auto last = w.end() - 4;
  double lo = last->median_ms, hi = lo;
  int clo = 0, chi = 0, cmax = 0;
  bool first = true;
  for (auto it = last; it != w.end(); ++it) {
    lo = std::min(lo, it->median_ms);
    hi = std::max(hi, it->median_ms);
    if (!it->clock) continue;
    clo = first ? it->clock->sm_mhz : std::min(clo, it->clock->sm_mhz);
    chi = first ? it->clock->sm_mhz : std::max(chi, it->clock->sm_mhz);
    cmax = std::max(cmax, it->clock->sm_max_mhz > 0 ? it->clock->sm_max_mhz : chi);
    first = false;
  }
  if (lo <= 0 || (hi - lo) > rule.settle_latency_tol * lo) return false;
  return first || (chi - clo) <= rule.settle_clock_tol * cmax;
}

PowerClass power_class(const std::optional<backends::ClockSample>& c, const RegimeRule& rule) {
  if (c && has_reason(*c, "power_cap")) return PowerClass::capped;
  return cool(c, rule) ? PowerClass::cool : PowerClass::warm;
}

// The state the previous measurement left, when it may be carried into this one: recent enough
// (carry_gap_s of idle at most, cool_carry_gap_s for a cool state) and valid.
const RegimeCarry* carry_of(const TimingOptions& opt, double t0) {
  const RegimeCarry* c = opt.carry;
  if (c == nullptr || !c->valid) return nullptr;
  const double gap =
      c->power == PowerClass::cool ? opt.regime.cool_carry_gap_s : opt.regime.carry_gap_s;
  if (t0 - c->ended_s > gap || t0 < c->ended_s) return nullptr;
  return c;
}

}  // namespace

StopRule warmup_rule(const TimingOptions& opt, double t0) {
  StopRule r = opt.stop;
  if (carry_of(opt, t0) != nullptr) r.warmup_s = std::min(r.warmup_s, opt.regime.carried_warmup_s);
  return r;
}

namespace {

// The carried state holds: the windows so far (one for cool work, two otherwise) show the
// carried power class, the first at a clock within settle_clock_tol of where the carried state
// ended, and two windows agree as steady() asks of four.
bool carry_holds(const RegimeCarry& carry, const std::vector<SettleWindow>& w,
                 const RegimeRule& rule) {
  const std::size_t need = carry.power == PowerClass::cool ? 1 : 2;
  if (w.size() != need) return false;
  for (const auto& win : w)
    if (!win.clock || power_class(win.clock, rule) != carry.power) return false;
  const auto& first = *w.front().clock;
  const int cmax = first.sm_max_mhz > 0 ? first.sm_max_mhz : std::max(first.sm_mhz, carry.sm_mhz);
  if (std::abs(first.sm_mhz - carry.sm_mhz) > rule.settle_clock_tol * cmax) return false;
  if (need == 1) return true;
  const double lo = std::min(w[0].median_ms, w[1].median_ms);
  const double hi = std::max(w[0].median_ms, w[1].median_ms);
  const int chi = std::max(w[0].clock->sm_mhz, w[1].clock->sm_mhz);
  const int clo = std::min(w[0].clock->sm_mhz, w[1].clock->sm_mhz);
  return lo > 0 && (hi - lo) <= rule.settle_latency_tol * lo &&
         (chi - clo) <= rule.settle_clock_tol * cmax;
}

// One settle window: the work run for settle_window_s of its own time or of wall time, whichever
// ends first (a 3 us kernel behind a 40 us L2 flush keeps the device busy the whole wall time,
// and counting its own time alone stretched a window to ~0.7 s, docs/timing.md), then a reading.
SettleWindow settle_window(backends::Device& dev, const std::function<double()>& one_interval_ms,
                           const RegimeRule& rule, const Clock& now, double t0,
                           std::vector<double>& xs) {
  xs.clear();
  double busy_ms = 0;
  const double window_t0 = now();
  while (busy_ms < rule.settle_window_s * 1e3 && now() - window_t0 < rule.settle_window_s) {
    const double ms = one_interval_ms();
    xs.push_back(ms);
    busy_ms += ms > 0 ? ms : 1e-3;  // a zero reading must not spin forever
    if (now() - t0 >= rule.settle_timeout_s) break;
  }
  SettleWindow win;
  win.median_ms = core::median(xs);
  win.clock = dev.clocks();
  return win;
}

// sustained: runs the work (samples that are not kept) until the clocks settle or the bound;
// or, where the previous measurement's state carries (carry_holds), after its first windows.
void settle_sustained(backends::Device& dev, const std::function<double()>& one_interval_ms,
                      const TimingOptions& opt, const Clock& now, SampleRun& run) {
  const RegimeRule& rule = opt.regime;
  const double t0 = now();
  if (!dev.clocks()) {
    run.settled = false;  // nothing to see the clocks with: the row says the clock is unknown
    return;
  }
  const RegimeCarry* carry = carry_of(opt, t0);
  std::vector<SettleWindow> windows;
  std::vector<double> xs;
  bool capped_seen = false;
  run.settle = "settled";
  RegimeRule carry_rule = rule;
  carry_rule.settle_window_s = std::min(rule.settle_window_s, rule.carry_window_s);
  for (;;) {
    // While a carried state may hold, its short windows; once it cannot, the full ones.
    const bool checking_carry =
        carry != nullptr && windows.size() < (carry->power == PowerClass::cool ? 1u : 2u);
    windows.push_back(
        settle_window(dev, one_interval_ms, checking_carry ? carry_rule : rule, now, t0, xs));
    const SettleWindow& win = windows.back();
    if (win.clock && has_reason(*win.clock, "power_cap")) capped_seen = true;
    const double elapsed = now() - t0;
    if (carry != nullptr && carry_holds(*carry, windows, rule)) {
      run.settled = true;
      run.settle = "carried";
      break;
    }
    if (windows.size() == 2 && cool(windows[0].clock, rule) && cool(windows[1].clock, rule)) {
      run.settled = true;
      break;
    }
    if (steady(windows, rule) && (!capped_seen || elapsed >= rule.settle_min_capped_s)) {
      run.settled = true;
      break;
    }
    if (elapsed >= rule.settle_timeout_s) {
      run.settled = false;
      break;
    }
  }
  run.settle_s += now() - t0;
}

}  // namespace

std::function<void(double)> sleeper_of(const TimingOptions& opt) {
  if (opt.sleep) return opt.sleep;
  return [](double s) {
    if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
  };
}

double rest_for_burst(backends::Device& dev, const TimingOptions& opt, const Clock& now,
                      std::string* how) {
  const RegimeRule& rule = opt.regime;
  if (rule.regime != ClockRegime::burst) return 0;
  const auto sleep = sleeper_of(opt);
  const double t0 = now();
  int cool_readings = 0;
  for (int reading = 0;; ++reading) {
    const auto c = dev.clocks();
    if (!c) return now() - t0;
    // Rested at the first reading: the state what ran before left is carried (no rest).
    if (how != nullptr) *how = reading == 0 ? "carried" : "settled";
    const bool hot =
        has_reason(*c, "power_cap") ||
        (c->power_limit_w > 0 && c->power_w > rule.rest_power_fraction * c->power_limit_w);
    cool_readings = hot ? 0 : cool_readings + 1;
    // One cool reading when the first one is (nothing ran hot before); else two in a row.
    if ((cool_readings >= 1 && reading == 0) || cool_readings >= 2 ||
        now() - t0 >= rule.rest_timeout_s)
      return now() - t0;
    sleep(0.01);
  }
}

namespace {
// What the next measurement may carry: this one's last reading, if it settled.
void record_carry(RegimeCarry& c, const SampleRun& run,
                  const std::optional<backends::ClockSample>& last, const TimingOptions& opt,
                  const Clock& now) {
  c.valid = run.settled && last && last->sm_mhz > 0;
  if (c.valid) {
    c.power = power_class(last, opt.regime);
    c.sm_mhz = last->sm_mhz;
  }
  c.ended_s = now();
  if (run.settle == "carried") ++c.carried;
  if (run.settle == "settled") ++c.settled;
}
}  // namespace

namespace {
// How long a window of samples between two clock readings runs at most.
constexpr double kWindowWallS = 0.01;

// One window's samples: `window` of them, or fewer once about 10 ms of wall time passed: a sample
// whose host cost is far above its device time (a short kernel read from its trace records) must
// not stretch the window, and with it the stop rule's next look, to a second.
void take_window(const std::function<double()>& one_interval_ms, int window, const Clock& now,
                 std::vector<double>& pending) {
  pending.clear();
  const double window_t0 = now();
  for (int i = 0; i < window; ++i) {
    pending.push_back(one_interval_ms());
    if (now() - window_t0 >= kWindowWallS) break;
  }
}
}  // namespace

SampleRun sample_until_stop(backends::Device& dev, const std::function<double()>& one_interval_ms,
                            int launches_per_sample, double interval_estimate_ms,
                            const TimingOptions& opt, const Clock& now,
                            const std::function<void(bool kept)>& on_window, SampleTime time_by) {
  const StopRule& rule = opt.stop;
  const bool burst = opt.regime.regime == ClockRegime::burst;
  const int k = std::max(1, launches_per_sample);
  // About 10 ms of device time between clock readings: a reading takes the host a fraction of a
  // millisecond, during which the device idles (the samples are synchronous); read after every
  // sample of a 2 ms GEMM, that idling let its clock recover from the power limit and a sustained
  // measurement read the burst speed (H200, 2026-11-30).
  const int window =
      interval_estimate_ms > 0
          ? static_cast<int>(std::clamp(std::ceil(10.0 / interval_estimate_ms), 1.0, 1000.0))
          : 1;
  SampleRun run;
  if (!burst) settle_sustained(dev, one_interval_ms, opt, now, run);
  if (on_window) on_window(false);
  ClockAccumulator clocks;
  std::vector<double> pending;
  pending.reserve(static_cast<std::size_t>(window));
  double sum_s = 0;
  int last_eval_n = 0;
  std::optional<backends::ClockSample> before = dev.clocks();
  const double start_s = now();
  for (;;) {
    take_window(one_interval_ms, window, now, pending);
    std::optional<backends::ClockSample> after = dev.clocks();
    // The window counts as its worse reading. A clock held down by the power limit alone is the
    // work's own sustained speed (the largest GEMMs run there all the time): in the sustained
    // regime it is kept, counted and marked; in the burst regime it is past the burst: dropped,
    // and the device rests before the next window.
    const Reading window_reading =
        std::max(classify(before, opt.throttle_fraction), classify(after, opt.throttle_fraction));
    if (window_reading == Reading::throttled) {
      run.discarded += static_cast<int>(pending.size());
      if (on_window) on_window(false);
    } else if (burst && (past_burst(before, opt.regime) || past_burst(after, opt.regime))) {
      run.regime_discarded += static_cast<int>(pending.size());
      if (on_window) on_window(false);
      run.settle_s += rest_for_burst(dev, opt, now);
      after = dev.clocks();
    } else {
      if (on_window) on_window(true);
      if (window_reading == Reading::power_capped)
        run.power_capped += static_cast<int>(pending.size());
      if (run.per_launch_ms.empty()) clocks.add(before);
      clocks.add(after);
      for (double interval : pending) {
        run.per_launch_ms.push_back(interval / k);
        sum_s += interval * 1e-3;
      }
    }
    before = after;
    const int n = static_cast<int>(run.per_launch_ms.size());
    const double elapsed = now() - start_s;
    if (time_by == SampleTime::wall) sum_s = elapsed;
    const bool may_converge = n >= rule.min_samples && sum_s >= rule.min_time_s;
    const bool must_stop = elapsed >= rule.timeout_s || n >= rule.max_samples;
    // The noise costs a sort: evaluate it when 10% more samples arrived, or when stopping anyway.
    if ((may_converge && n - last_eval_n >= std::max(1, last_eval_n / 10)) || must_stop) {
      last_eval_n = n;
      run.noise = median_rel_std_error(run.per_launch_ms);
      const StopState st =
          evaluate_stop(rule, n, sum_s, run.noise, elapsed, run.discarded + run.regime_discarded);
      if (st.stop) {
        run.converged = st.converged;
        run.stop_reason = st.reason;
        break;
      }
    }
  }
  run.clock = clocks.summary();
  if (opt.carry != nullptr && !burst) record_carry(*opt.carry, run, before, opt, now);
  return run;
}

}  // namespace caliber::timing::detail

namespace caliber::timing {
const char* to_string(PowerClass c) noexcept {
  switch (c) {
    case PowerClass::cool:
      return "cool";
    case PowerClass::warm:
      return "warm";
    case PowerClass::capped:
      return "capped";
  }
  return "?";
}
}  // namespace caliber::timing
