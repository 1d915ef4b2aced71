// Timers built on the backend's device interface. Nothing here names a vendor. What each timer
// measures, and how the L2 and the clocks are handled, is explained in docs/timing.md.
//
//  - direct: an event pair around each launch. Where the backend can hold its stream, the flush,
//    the events and the launch are enqueued behind a hold and released together, so the host's
//    launch gap stays out of the pair.
//  - graph: K launches captured into one graph (K from a short estimate, so that one replay lasts
//    about TimingOptions::graph_replay_ms), replayed. Where the backend has event nodes, every
//    launch sits between two event nodes of its own (and, cold, behind a flush node of its own),
//    so each launch is timed alone and sees an evicted L2; elsewhere a replay is timed as a whole
//    and divided by K (the L2 flushed once per replay).
// A case whose capture is refused falls back to the direct timer (markers below); a kernel that
// fails on the device fails its case with no latency and the process must time nothing more.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "core/stats.hpp"
#include "records/markers.hpp"
#include "settings/settings.hpp"

namespace caliber::timing {

// The run settings the timers take, spelled once in settings/settings.hpp. ClockRegime
// (docs/timing.md): burst, a rested device at its top clock (samples the power limit slows are
// discarded and re-taken after a rest); sustained, after the clock and board power have settled
// under this very work (samples at a power-limited clock are the regime itself, kept).
using core::ClockRegime;
using core::L2Method;
using core::L2Policy;
using core::parse_word;
using core::SampleDelimiter;
using core::SampleMethod;
using core::TimerKind;
using core::to_string;

// Marker strings: spelled once, in records/markers.hpp.
inline constexpr const char* kMarkerDirectNoGraph = core::markers::direct_no_graph;
inline constexpr const char* kMarkerCapturePoisoned = core::markers::capture_poisoned;
inline constexpr const char* kMarkerTimerDirect = core::markers::timer_direct;
inline constexpr const char* kMarkerPowerCapped = core::markers::power_capped;
inline constexpr const char* kMarkerStopMissed = core::markers::stop_missed;
inline constexpr const char* kMarkerEventsNoTrace = core::markers::events_no_trace;
// "repeat=N"
[[nodiscard]] std::string repeat_marker(int n);

// Thrown by a launch that failed with an error of its own, not the runtime's (an exception of a
// host language such as Python), while being captured. The graph timer reads it as a refused
// capture, the same as a runtime error the backend classifies as refused: the case falls back to
// the direct timer, where the same launch runs outside any capture (docs/timing.md).
class CaptureRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// When one measurement (one call of the direct timer, or the graph timer) stops sampling.
// It stops once n >= min_samples AND the sampled time >= min_time_s AND noise <= max_noise, or
// when timeout_s of wall time from the first sample (the warmup not counted) has passed; then
// stop_reason names what was missed. The sampled time is the kept samples' sum, or under the
// kernel trace the sampling's wall time (docs/timing.md, Stopping).
//
// Noise is the relative standard error of the median, estimated robustly:
//   sigma = max(1.4826 * MAD, 1.2533 * mean |x - median| over the central 90% of the samples)
//   noise = 1.2533 * sigma / (median * sqrt(n))
// 1.4826 * MAD estimates the standard deviation without letting one outlier (a preempted launch,
// a clock dip) dominate, as stdev/mean would; the trimmed mean absolute deviation covers the case
// where MAD is 0 because quantized event timings tie at the median. 1.2533 / sqrt(n) turns sigma
// into the standard error of the median, the statistic we report. So max_noise is the relative
// precision of the reported number, and a kernel with a steady 3% jitter still converges once it
// has enough samples.
struct StopRule {
  int min_samples = 10;
  double min_time_s = 0.01;  // sampled time (above; a graph sample: one replay)
  double max_noise = 0.005;  // relative standard error of the median (above)
  double timeout_s = 1.0;    // wall time of one measurement's sampling, from its first sample
  double warmup_s = 0.02;    // device-busy time before sampling: long enough for clocks to ramp
  int max_samples = 100000;  // a hard cap, so that a sub-microsecond kernel cannot exhaust memory
};

// The noise target a run uses: `asked`, or where that is 0 (auto) the backend's default: 0.005
// on a device, 0.02 on the host, whose timer on a loaded two-core machine rarely reaches 0.5% in a
// second (docs/timing.md).
[[nodiscard]] double resolved_max_noise(double asked, const backends::Capabilities& caps) noexcept;

// Relative standard error of the median, as defined above (0 for fewer than two samples or a
// zero median); one statistics file: src/core/stats.
using core::median_rel_std_error;

struct StopState {
  bool stop = false;
  bool converged = false;
  std::string reason;  // "converged", "timeout after 1.0 s: noise 1.3% > 0.5%", ...
};
// The decision of the rule for `kept` samples whose summed time is `sum_s`, `elapsed_s` of wall
// time after the start, with `noise` reached. `discarded` only enriches a timeout's reason.
[[nodiscard]] StopState evaluate_stop(const StopRule& rule, int kept, double sum_s, double noise,
                                      double elapsed_s, int discarded = 0);

// How a regime is reached and held (docs/timing.md).
struct RegimeRule {
  // The default, from the H200 measurements (docs/timing.md): the same code twice moved GEMMs by
  // up to 5.4% sustained and 13.6-15% burst, whose top clock a power-hungry GEMM holds for only
  // 0.1-0.5 s.
  ClockRegime regime = ClockRegime::sustained;
  // burst: before sampling, and after a window the power limit slowed, wait (sleeping) until the
  // board has drawn at most rest_power_fraction of its limit, with no power-cap reason, at two
  // readings 10 ms apart. 0.35: an H200 right after a GEMM read 320 W (0.46 of 700) and its next
  // GEMM ran 10-15% slower than after a rest, at the same reported SM clock (2026-11-30).
  double rest_power_fraction = 0.35;
  double rest_timeout_s = 1.0;
  // burst: a kept window's clock readings are at least this fraction of the maximum SM clock; a
  // window below it (the power limit, or a board too hot to boost, whatever reason the backend
  // reports) is dropped and the device rests.
  double burst_clock_fraction = 0.95;
  // sustained: before sampling, run the work in windows of settle_window_s of device time, reading
  // the clocks after each. Settled at once when the first two windows show a cool device (no
  // power-cap reason, power at most rest_power_fraction of the limit, the clock within
  // settle_clock_tol of its maximum): such work cannot move the clock. Otherwise settled when the
  // last four windows' median latencies agree within settle_latency_tol and their clocks within
  // settle_clock_tol of the maximum, and, once the power limit was seen, not before
  // settle_min_capped_s (the board's power control swings the clock for a second or more before
  // it holds). At most settle_timeout_s.
  double cool_power_fraction = 0.5;  // sustained: "cool" work draws at most this much
  double settle_window_s = 0.05;
  double settle_clock_tol = 0.03;
  double settle_latency_tol = 0.01;
  double settle_min_capped_s = 1.5;
  double settle_timeout_s = 5.0;
  // Carried settling (docs/timing.md): a measurement that starts at most carry_gap_s after the
  // previous one ended, whose first window shows the same power class at a clock within
  // settle_clock_tol of where the previous one ended, keeps that state instead of settling
  // again: cool work after one window, warm or power-capped work after two windows that agree
  // as steady() asks of four. The idle gap is where a board's clock recovers, so it is short.
  double carry_gap_s = 0.25;
  // ... and a cool state (no power limit, the clock at its maximum) up to cool_carry_gap_s: such
  // a state has no memory for the gap to erase (no power control winding down, no heat), and the
  // carry's first window must still read the clock where the state left it, so a board that
  // idled down and has not come back settles in full. Checks and inputs of large cases take
  // longer than 0.25 s, and each lapsed carry of cool work cost a full settle's two 50 ms
  // windows instead of one 20 ms window.
  double cool_carry_gap_s = 1.0;
  // The windows that check a carried state are this long (at most settle_window_s): they look
  // for the state the previous measurement left, which a clock reading after 20 ms of the work
  // shows as well as one after 50 ms; the 50 ms windows of a full settling were most of a short
  // kernel's cost per measurement (docs/timing.md).
  double carry_window_s = 0.02;
  // Where a carried state may be kept (the gap above), the warmup is this long at most instead
  // of StopRule::warmup_s: the board is already in the state the warmup brings it to, so the
  // warmup is left with sizing the replay and the first launch's lazy loading, which its first
  // two batches see (docs/timing.md).
  double carried_warmup_s = 0.005;
};

// The power state a window of work leaves the board in: cool (no power-cap reason, at most
// cool_power_fraction of the limit, the clock at its maximum), capped (the power limit holds the
// clock), warm (neither).
enum class PowerClass { cool, warm, capped };
[[nodiscard]] const char* to_string(PowerClass c) noexcept;

// What one measurement's regime left for the next (TimingOptions::carry): the power class and
// SM clock of its last reading, and when its sampling ended (the options' clock). The case
// runner holds one per device; the timers read and update it.
struct RegimeCarry {
  bool valid = false;
  PowerClass power = PowerClass::cool;
  int sm_mhz = 0;
  double ended_s = 0;
  int settled = 0, carried = 0;  // how often each happened, for the run's summary
};

struct TimingOptions {
  TimerKind timer = TimerKind::automatic;
  int repeat = 1;  // median of N direct-timer call medians
  core::ReturnMode return_mode = core::ReturnMode::median;
  std::vector<double> quantiles;  // non-empty: report these, skip repetition
  L2Policy l2 = L2Policy::cold;
  StopRule stop;
  double throttle_fraction = 0.75;  // samples below this fraction of max SM clock are discarded
  bool capture_denied = false;      // op is on the capture deny list (the backend's own list,
                                    // capture_deny_ops(), is also honoured for `op`)
  bool rng = false;                 // op draws from a generator: guard around capture
  std::string op;                   // the op's name, for messages (capture-incompatible, ...)
  double graph_replay_ms = 1.0;     // the graph timer aims one replay at this long
  // Bounds K (and so the graph's memory: one node per launch; a provider whose launch enqueues
  // several kernels gets several nodes per launch).
  int max_graph_launches = 1000;
  int max_kept_samples = 200;  // Measurement::samples_ms is thinned evenly to this many
  // The graph timer times each launch between event nodes of its own where the backend has them
  // (false: a replay as a whole, divided by K).
  bool graph_per_launch = true;
  // The direct timer holds the stream while it enqueues a sample, where the backend can.
  bool direct_hold = true;
  // How a sample's device time is read: the backend's kernel trace (each timed launch's own
  // activity records) or event pairs (docs/timing.md).
  SampleMethod sample_method = SampleMethod::automatic;
  // The caller knows the process's other activity subscriber, if there is one, is idle (a
  // profiler that ran and stopped): the trace may open beside it (backends::TraceShare). Never a
  // knob: the Python front end's device says so for torch's profiler (capi/host_device.cpp).
  bool trace_beside_idle_subscriber = false;
  // On a host backend, the direct timer puts as many launches into one sample as fill about this
  // long (one launch of a few microseconds between two host clock readings is mostly jitter).
  double host_sample_ms = 0.2;
  RegimeRule regime;
  // The regime state shared from one measurement to the next (null: every measurement settles
  // or rests on its own).
  RegimeCarry* carry = nullptr;
  // Wall clock in seconds (tests script it); empty: a steady host clock.
  std::function<double()> now;
  // Sleeps this many seconds (tests script it); empty: the host's sleep.
  std::function<void(double)> sleep;
};

// What the clock readings taken while sampling said.
struct ClockSummary {
  bool known = false;  // false: the backend could not read clocks (the row says so)
  double sm_mean_mhz = 0;
  int sm_min_mhz = 0;
  int sm_max_mhz = 0;
  double power_mean_w = 0;
  double power_limit_w = 0;
  std::vector<std::string> reasons;  // every reason seen, once each
  int readings = 0;
  int other_processes = -1;  // the most other processes seen on the device, -1 when unknown
};

struct Measurement {
  bool ok = false;
  // graph or direct: what really produced the number (none: nothing was timed).
  std::optional<TimerKind> timer;
  double latency_ms = 0;             // per the return mode
  std::vector<double> quantile_ms;   // when quantiles were asked
  std::vector<double> samples_ms;    // per-launch samples kept (for A/B statistics)
  std::vector<std::string> markers;  // BENCHMARK_DIRECT_NO_CUDAGRAPH, timer=direct, repeat=N, ...
  int repeat = 1;                    // calls actually made
  bool repeat_skipped = false;       // asked for but skipped (quantiles / return mode all)
  double noise = 0;                  // relative noise reached (worst call when repeated)
  std::string stop_reason;           // "converged", or "timeout after 1.0 s: noise 1.2% > 0.5%"
  int throttled_discarded = 0;
  int power_capped = 0;  // kept samples taken at a clock lowered only by the power cap (marked)
  int launches_per_sample = 1;  // K of the graph timer
  // How the L2 was kept (settings/settings.hpp: every timed launch behind its own flush, only a
  // replay's first, only a host batch's first, or warm).
  std::optional<L2Method> l2_method;
  // How a sample was delimited (settings/settings.hpp): the graph's event nodes around each
  // launch or a replay divided by K, a direct pair behind a stream hold (no launch gap inside the
  // events) or without, a host batch (K launches between two host clock readings), or the span of
  // each timed launch's own activity records (either timer).
  std::optional<SampleDelimiter> sample_method;
  double timer_resolution_us = 0;  // of the device's event timer, 0 when unknown
  // Kernel trace only (sample_method kernel_trace; 0 otherwise): the event figure of the same
  // samples (a cross-check), the activities of one launch (kernels, copies, memsets) and the
  // median of their summed durations, the records' time unit, and the host time the tracing
  // added per timed launch (collecting and reading the records).
  double event_latency_ms = 0;
  int kernel_count = 0;
  double kernel_sum_ms = 0;
  double record_resolution_us = 0;
  double trace_host_us = 0;
  bool converged = false;  // the stopping rule was met (else kMarkerStopMissed)
  std::optional<ClockRegime> regime;
  ClockSummary clock;
  double settle_s = 0;  // sustained: time spent settling; burst: resting
  bool settled = true;  // sustained: the clock and power settled within the bound
  // How the regime was reached: "settled" (sustained: settled under this work; burst: rested),
  // "carried" (the state the previous measurement left held: docs/timing.md), "" (no clocks).
  std::string settle;
  int regime_discarded = 0;  // burst: samples dropped because the power limit slowed them
  backends::Failure failure = backends::Failure::ok;
  std::string error;  // when !ok
  double wall_s = 0;  // cost of this measurement, warmup and capture included
  // Added by the timing room:
  std::string note;                     // why the timer differs from the one asked, when it does
  std::vector<double> call_medians_ms;  // per call of the direct timer (repeat > 1)
  double estimate_ms = 0;               // per-launch estimate from the warmup
  // The host's time to enqueue one launch, from the warmup's last batch of launches enqueued
  // back to back (docs/timing.md): what an eager call costs the host while the device keeps up.
  double host_ms = 0;
  int total_samples = 0;  // samples kept before thinning to samples_ms
};

// Time `launch` (which only enqueues on the device's stream) on `dev`.
// Errors the device raises (caliber::NativeError) are classified by `backend` and end up in the
// Measurement (ok=false, failure, error); any other exception (ConfigRejected, ...) propagates,
// after a capture in progress has been aborted and the generator restored.
[[nodiscard]] Measurement measure(backends::Device& dev, const backends::Backend& backend,
                                  const std::function<void()>& launch, const TimingOptions& opt);

// Two launches of the same work (one op built twice: the two sides of a paired A/B) timed in one
// captured graph, launches interleaved A B B A ..., each between event nodes of its own and, cold,
// behind a flush of its own: every sample of A has one of B from the same replay, under the same
// clock and power state (docs/ab.md). The stopping rule judges the pair's summed samples; both
// measurements share the regime, the clock facts and the stop. `min_samples` is raised to
// `min_pairs`. nullopt where the pair cannot share a graph (a timer other than the graph, no event
// nodes, a capture deny list, or any error on the way, which is left for the caller's separate
// timing of each side to meet and classify).
struct PairedMeasurement {
  Measurement a, b;
};
[[nodiscard]] std::optional<PairedMeasurement> measure_interleaved(
    backends::Device& dev, const backends::Backend& backend, const std::function<void()>& launch_a,
    const std::function<void()>& launch_b, const TimingOptions& opt, int min_pairs);

// The timer rule, in one place: the timer `measure` uses for these capabilities and this request,
// and why when it is not the one asked. The planner (plan::resolve_timer, which also refuses an
// explicit graph request a backend cannot capture) and the parallel warmup's shards call it too.
struct TimerChoice {
  TimerKind kind = TimerKind::direct;
  std::string note;
};
[[nodiscard]] TimerChoice choose_timer(const backends::Capabilities& caps, TimerKind requested);

// True when the process must time nothing more (fatal_on_device, capture_poisoned).
[[nodiscard]] bool process_unusable(const Measurement& m) noexcept;

// The latency of repeated direct-timer calls: the median over calls of each call's value per the
// return mode (the median of the call medians in the default mode). One call: its value.
[[nodiscard]] double combine_calls(const std::vector<std::vector<double>>& calls,
                                   core::ReturnMode mode);

// Evenly thinned copy of xs with at most `cap` values (first and last kept).
[[nodiscard]] std::vector<double> thin_evenly(std::span<const double> xs, int cap);

}  // namespace caliber::timing
