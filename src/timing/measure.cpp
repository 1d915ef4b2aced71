// measure(): timer choice, the graph timer with its classified per-case fallback, the direct timer
// with repetition across calls.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "timing/sampler.hpp"
#include "timing/timer.hpp"
#include "timing/trace.hpp"

namespace caliber::timing {

using backends::Failure;

double resolved_max_noise(double asked, const backends::Capabilities& caps) noexcept {
  if (asked > 0) return asked;
  return caps.host ? 0.02 : 0.005;
}

std::string repeat_marker(int n) {
  return "repeat=" + std::to_string(n);
}

bool process_unusable(const Measurement& m) noexcept {
  return backends::leaves_process_unusable(m.failure);
}

std::vector<double> thin_evenly(std::span<const double> xs, int cap) {
  const std::size_t n = xs.size();
  if (cap <= 0) return {};
  const auto c = static_cast<std::size_t>(cap);
  if (n <= c) return {xs.begin(), xs.end()};
  std::vector<double> out;
  out.reserve(c);
  if (c == 1) {
    out.push_back(xs[n / 2]);
    return out;
  }
  for (std::size_t i = 0; i < c; ++i) out.push_back(xs[i * (n - 1) / (c - 1)]);
  return out;
}

double combine_calls(const std::vector<std::vector<double>>& calls, core::ReturnMode mode) {
  if (calls.size() == 1) return core::reduce(calls.front(), mode);
  if (mode == core::ReturnMode::median || mode == core::ReturnMode::all) {
    return core::median_of_medians(calls);
  }
  std::vector<double> per_call;
  per_call.reserve(calls.size());
  for (const auto& c : calls) per_call.push_back(core::reduce(c, mode));
  return core::median(per_call);
}

TimerChoice choose_timer(const backends::Capabilities& caps, TimerKind requested) {
  switch (requested) {
    case TimerKind::direct:
      return {TimerKind::direct, ""};
    case TimerKind::graph:
      if (caps.graph_capture) return {TimerKind::graph, ""};
      return {TimerKind::direct,
              "graph timer requested but this backend cannot capture graphs: timed with the "
              "direct timer"};
    case TimerKind::automatic:
      break;
  }
  if (caps.graph_timer_default && caps.graph_capture) return {TimerKind::graph, ""};
  return {TimerKind::direct, ""};
}

namespace {

using detail::Clock;
using detail::Tracer;
using detail::TraceRecorder;

// How a row ended up on the direct timer, which decides its markers and how errors are read.
enum class DirectMode { chosen, fallback, denied };

std::string op_label(const TimingOptions& opt) {
  return opt.op.empty() ? std::string("this op") : "op '" + opt.op + "'";
}

void fail(Measurement& m, Failure f, std::string error) {
  m.ok = false;
  m.failure = f;
  m.error = std::move(error);
  m.latency_ms = 0;
  m.quantile_ms.clear();
  m.samples_ms.clear();
}

void fail_fatal(Measurement& m, const std::string& what) {
  fail(m, Failure::fatal_on_device,
       "kernel failed on the device: " + what +
           "; no latency is reported and nothing more can be timed in this process");
}

void fail_poisoned(Measurement& m, const TimingOptions& opt, const std::string& what) {
  fail(m, Failure::capture_poisoned,
       std::string(kMarkerCapturePoisoned) + ": " + op_label(opt) +
           " is capture-incompatible (not broken): its graph capture attempt left the device "
           "context unusable (" +
           what + "); nothing more can be timed in this process");
  m.markers = {kMarkerCapturePoisoned};
}

// An error outside any capture: fatal stays fatal, the rest fails the case only.
void fail_classified(Measurement& m, const backends::Backend& backend, const NativeError& e,
                     const std::string& during) {
  const Failure f = backend.classify(e.code());
  if (f == Failure::fatal_on_device) {
    fail_fatal(m, e.what());
  } else if (f == Failure::capture_poisoned) {
    fail(m, f, during + ": " + e.what());
  } else {
    fail(m, Failure::other, during + ": " + e.what());
  }
}

// Latency and quantiles of the kept samples per the return mode; repeated calls give the median of
// the per-call values (the median of medians in the default mode).
void summarize(Measurement& m, const std::vector<std::vector<double>>& calls,
               const TimingOptions& opt) {
  std::vector<double> all;
  for (const auto& c : calls) all.insert(all.end(), c.begin(), c.end());
  m.latency_ms = combine_calls(calls, opt.return_mode);
  if (calls.size() > 1) {
    for (const auto& c : calls) m.call_medians_ms.push_back(core::median(c));
  }
  if (!opt.quantiles.empty()) m.quantile_ms = core::quantiles(all, opt.quantiles);
  m.total_samples = static_cast<int>(all.size());
  m.samples_ms = thin_evenly(all, opt.max_kept_samples);
  m.ok = true;
  m.failure = Failure::ok;
}

L2Method l2_method_for(const TimingOptions& opt, bool flush_each_launch) {
  if (opt.l2 == L2Policy::warm) return L2Method::warm;
  return flush_each_launch ? L2Method::flush_per_launch : L2Method::flush_per_replay;
}

// Folds one sampling run's regime and clock facts into the measurement (a repeated direct timer
// folds each call's).
void absorb(Measurement& m, const detail::SampleRun& r) {
  m.throttled_discarded += r.discarded;
  m.power_capped += r.power_capped;
  m.regime_discarded += r.regime_discarded;
  m.settle_s += r.settle_s;
  m.settled = m.settled && r.settled;
  // Carried only when every call carried.
  if (r.settle == "settled" || m.settle.empty()) m.settle = r.settle;
  const ClockSummary& c = r.clock;
  m.clock.other_processes = std::max(m.clock.other_processes, c.other_processes);
  if (!c.known) return;
  ClockSummary& t = m.clock;
  if (!t.known) {
    const int others = t.other_processes;  // already the most of both
    t = c;
    t.other_processes = others;
    return;
  }
  const int n = t.readings + c.readings;
  t.sm_mean_mhz = (t.sm_mean_mhz * t.readings + c.sm_mean_mhz * c.readings) / n;
  if (c.power_mean_w > 0)
    t.power_mean_w = t.power_mean_w > 0
                         ? (t.power_mean_w * t.readings + c.power_mean_w * c.readings) / n
                         : c.power_mean_w;
  t.sm_min_mhz = std::min(t.sm_min_mhz, c.sm_min_mhz);
  t.sm_max_mhz = std::max(t.sm_max_mhz, c.sm_max_mhz);
  t.power_limit_w = std::max(t.power_limit_w, c.power_limit_w);
  for (const auto& x : c.reasons)
    if (std::find(t.reasons.begin(), t.reasons.end(), x) == t.reasons.end()) t.reasons.push_back(x);
  t.readings = n;
}

// The markers every timer adds at the end: a power-limited clock, a missed stopping rule, another
// process's work on the device.
void finish_markers(Measurement& m) {
  if (m.power_capped > 0) m.markers.push_back(kMarkerPowerCapped);
  if (!m.converged) m.markers.push_back(kMarkerStopMissed);
  if (m.clock.other_processes > 0) m.markers.push_back(core::markers::device_shared);
}

// A sample's value: the summed spans of its `k` launches' own records where the trace reads them
// (`runs` separate spans: k where the backend's own work separates the launches, 1 for a replay of
// k launches back to back), else its events' interval `event_ms`; both are kept for the row.
// `replay`: the sample was a graph replay (the records of the launcher's own work around it are
// no launch's: split_launches).
double traced_or_events(Tracer& tr, TraceRecorder& rec, double event_ms, int k, int runs,
                        bool replay = false) {
  if (!tr.active()) {
    rec.add(event_ms / k, nullptr, k);
    return event_ms;
  }
  const auto launches = tr.take(runs, replay);
  rec.add(event_ms / k, launches ? &*launches : nullptr, k);
  if (!launches) return event_ms;
  double sum = 0;
  for (const detail::LaunchTrace& t : *launches) sum += t.span_ms;
  return sum;
}

// One whole call of the direct timer: warmup, then an event pair around each launch; where the
// backend can hold its stream, each sample is enqueued behind a hold and released at once, so the
// host's launch gap stays outside the events.
detail::SampleRun direct_call(backends::Device& dev, const std::function<void()>& launch,
                              const TimingOptions& opt, const Clock& now, detail::WarmupResult& w,
                              bool& hold, int& launches_per_sample, Tracer& tr,
                              TraceRecorder& rec) {
  w = detail::warmup(dev, launch, detail::warmup_rule(opt, now()), now);
  tr.discard();  // the warmup's records are no sample's
  // On the host a launch is the work itself (no launch gap, no event cost), and a host clock
  // reading around one launch of a microsecond measures mostly the scheduler's jitter: a sample
  // there is as many launches as fill about host_sample_ms (docs/timing.md).
  int k = 1;
  if (dev.capabilities().host && w.estimate_ms > 0)
    k = static_cast<int>(std::clamp(std::ceil(opt.host_sample_ms / w.estimate_ms * (1 - 1e-9)), 1.0,
                                    double(std::max(1, opt.max_graph_launches))));
  launches_per_sample = k;
  auto start = dev.create_event();
  auto end = dev.create_event();
  const bool cold = opt.l2 == L2Policy::cold;
  auto one = [&]() {
    const bool held = hold && dev.hold_stream();
    if (cold) dev.flush_l2();  // outside the events: its time is never measured
    dev.record(*start);
    for (int i = 0; i < k; ++i) launch();
    dev.record(*end);
    if (held) dev.release_stream();
    const double ms = dev.elapsed_ms(*start, *end);
    // A launch that waits on the device waited on the hold too, until it gave up: this sample
    // holds the gap after all, and holding the next ones would only cost that wait again.
    if (held && dev.hold_gave_up()) hold = false;
    return traced_or_events(tr, rec, ms, k, k);
  };
  return detail::sample_until_stop(
      dev, one, k, w.estimate_ms * k, opt, now, [&rec](bool kept) { rec.window(kept); },
      tr.active() ? detail::SampleTime::wall : detail::SampleTime::summed);
}

// How the direct timer's samples were delimited, and why the hold was dropped where it was.
void describe_direct(Measurement& m, const TimingOptions& opt, bool hold, bool hold_asked) {
  m.sample_method = hold ? SampleDelimiter::held : SampleDelimiter::unheld;
  if (m.launches_per_sample > 1) {
    m.sample_method = SampleDelimiter::host_batch;  // K launches between two host clock readings
    if (opt.l2 == L2Policy::cold) m.l2_method = L2Method::flush_per_sample;
  }
  if (hold_asked && !hold)
    m.note =
        "the stream hold gave up (the launch waits on the device): launch gaps are inside "
        "the events";
}

Measurement direct_with_repeat(backends::Device& dev, const backends::Backend& backend,
                               const std::function<void()>& launch, const TimingOptions& opt,
                               const Clock& now, DirectMode mode) {
  Measurement m;
  m.timer = TimerKind::direct;
  m.l2_method = l2_method_for(opt, true);
  bool hold = opt.direct_hold && dev.capabilities().stream_hold;
  const bool hold_asked = hold;
  const int asked = std::max(1, opt.repeat);
  const bool sequence_wanted = !opt.quantiles.empty() || opt.return_mode == core::ReturnMode::all;
  // A median across calls is undefined for a sequence (quantiles, return mode all).
  m.repeat_skipped = asked > 1 && sequence_wanted;
  const int calls = m.repeat_skipped ? 1 : asked;
  m.repeat = calls;
  std::vector<std::vector<double>> samples;
  std::vector<TraceRecorder> recs(static_cast<std::size_t>(calls));
  std::string first_timeout;
  std::optional<Tracer> tr;
  try {
    tr.emplace(dev, opt, now);
    for (int i = 0; i < calls; ++i) {
      detail::WarmupResult w;
      int k = 1;
      detail::SampleRun r =
          direct_call(dev, launch, opt, now, w, hold, k, *tr, recs[static_cast<std::size_t>(i)]);
      if (i == 0) {
        m.estimate_ms = w.estimate_ms;
        m.host_ms = w.host_ms;
      }
      m.launches_per_sample = std::max(m.launches_per_sample, k);
      absorb(m, r);
      m.noise = std::max(m.noise, r.noise);
      if (!r.converged && first_timeout.empty()) {
        first_timeout = calls > 1 ? "call " + std::to_string(i + 1) + "/" + std::to_string(calls) +
                                        ": " + r.stop_reason
                                  : r.stop_reason;
      }
      if (r.per_launch_ms.empty()) {
        fail(m, Failure::other,
             "no sample kept: " + r.stop_reason);  // every sample was taken while throttled
        m.stop_reason = r.stop_reason;
        return m;
      }
      samples.push_back(std::move(r.per_launch_ms));
    }
  } catch (const NativeError& e) {
    if (mode == DirectMode::fallback) {
      // The capture was refused and the context looked healthy, yet the fallback failed: the
      // capture attempt is what broke it.
      fail_poisoned(m, opt, std::string("the direct fallback then failed: ") + e.what());
    } else {
      fail_classified(m, backend, e, "direct timing failed");
    }
    return m;
  }
  m.stop_reason = first_timeout.empty() ? "converged" : first_timeout;
  m.converged = first_timeout.empty();
  TraceRecorder all;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    detail::choose_samples(*tr, recs[i], samples[i]);
    all.append(recs[i]);
  }
  describe_direct(m, opt, hold, hold_asked);
  summarize(m, samples, opt);
  if (mode == DirectMode::chosen) {
    m.markers = {kMarkerTimerDirect};
    if (calls > 1) m.markers.push_back(repeat_marker(calls));
  } else {
    m.markers = {kMarkerDirectNoGraph, kMarkerTimerDirect, repeat_marker(calls)};
  }
  detail::trace_outcome(m, *tr, all, dev.trace_resolution_us());
  finish_markers(m);
  return m;
}

// Milliseconds one flush takes, from a few timed on their own (0 in warm mode).
double flush_estimate_ms(backends::Device& dev, const TimingOptions& opt) {
  if (opt.l2 != L2Policy::cold) return 0;
  auto start = dev.create_event();
  auto end = dev.create_event();
  dev.flush_l2();  // the first may pay for lazy loading
  dev.record(*start);
  for (int i = 0; i < 3; ++i) dev.flush_l2();
  dev.record(*end);
  return dev.elapsed_ms(*start, *end) / 3;
}

// Launches in one replay: about graph_replay_ms of work, the flushes inside it included, at
// least 1 and at most max_graph_launches. The 1e-9 keeps an exact ratio (1 ms / 0.01 ms) from
// rounding up to one launch more.
int graph_launch_count(double estimate_ms, double flush_ms, const TimingOptions& opt) {
  const double per_launch_ms = estimate_ms + flush_ms;
  const double want =
      per_launch_ms > 0 ? std::ceil(opt.graph_replay_ms / per_launch_ms * (1 - 1e-9)) : 1.0;
  return static_cast<int>(std::clamp(want, 1.0, double(std::max(1, opt.max_graph_launches))));
}

// One capture of K launches, or why there is none: a native error's code, or the launch's own
// refusal to run under capture (CaptureRefused).
struct Capture {
  std::unique_ptr<backends::Graph> graph;
  int code = 0;
  bool refused = false;
  std::string what;
};

// One capture of what `body` enqueues, the generator guarded: the graph, or why there is none (a
// native error's code, or a launch's own refusal to run under capture). Any other exception
// aborts the capture and propagates.
Capture capture_of(backends::Device& dev, const TimingOptions& opt,
                   const std::function<void()>& body) {
  Capture c;
  detail::RngCaptureGuard guard(dev, opt.rng);
  try {
    dev.begin_capture();
    body();
    c.graph = dev.end_capture();
  } catch (const NativeError& e) {
    c.code = e.code();
    c.what = e.what();
    dev.abort_capture();
  } catch (const CaptureRefused& e) {
    c.refused = true;
    c.what = e.what();
    dev.abort_capture();
  } catch (...) {
    dev.abort_capture();
    throw;
  }
  return c;
}

// Per launch, each launch sits between two event nodes of its own (cold: behind a flush node of
// its own); marks holds those events, two a launch.
// Traced (`boundaries`) and warm, a boundary of the backend's own precedes each launch instead of
// the flush, so that the replay's records show where one launch ends and the next begins.
Capture capture_launches(backends::Device& dev, const std::function<void()>& launch,
                         const TimingOptions& opt, int k, bool per_launch, bool boundaries,
                         const std::vector<std::unique_ptr<backends::Event>>& marks) {
  return capture_of(dev, opt, [&] {
    for (int i = 0; i < k; ++i) {
      if (per_launch) {
        if (opt.l2 == L2Policy::cold) dev.flush_l2();
        if (opt.l2 != L2Policy::cold && boundaries) dev.trace_boundary();
        dev.record_in_graph(*marks[2 * i]);
      }
      launch();
      if (per_launch) dev.record_in_graph(*marks[2 * i + 1]);
    }
  });
}

// A capture that ran out of device memory (the launch's own allocation refused, or the native
// out-of-memory error): a launch that allocates its output (a torch op) holds that memory in the
// graph once per launch captured, so fewer launches a graph may fit where K did not.
bool ran_out_of_memory(const Capture& c) {
  std::string what = c.what;
  std::transform(what.begin(), what.end(), what.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return what.find("out of memory") != std::string::npos;
}

// A failed capture, by its class: a refused capture falls back to the direct timer for this case
// (unless the device is no longer healthy); the others fail the measurement.
Measurement after_failed_capture(backends::Device& dev, const backends::Backend& backend,
                                 const std::function<void()>& launch, const TimingOptions& opt,
                                 const Clock& now, Measurement m, Capture c) {
  const Failure f = c.refused     ? Failure::refused_capture
                    : c.code != 0 ? backend.classify(c.code)
                                  : Failure::other;
  if (c.what.empty()) c.what = "capture produced no graph";
  switch (f) {
    case Failure::refused_capture: {
      (void)dev.take_last_error();
      if (!dev.healthy()) {
        fail_poisoned(m, opt, "capture refused: " + c.what);
        return m;
      }
      Measurement d = direct_with_repeat(dev, backend, launch, opt, now, DirectMode::fallback);
      if (d.ok) {
        const std::string why = "capture refused (" + c.what + "): timed with the direct timer";
        d.note = d.note.empty() ? why : why + "; " + d.note;
      }
      return d;
    }
    case Failure::fatal_on_device:
      fail_fatal(m, c.what);
      return m;
    case Failure::capture_poisoned:
      fail_poisoned(m, opt, c.what);
      return m;
    case Failure::ok:
    case Failure::other:
      break;
  }
  fail(m, Failure::other, "graph capture failed: " + c.what);
  return m;
}

// Samples of the captured graph until the stopping rule ends them. One sample: one replay. Per
// launch, the sum of its launches' own intervals (so the caller's division by K gives their mean);
// else the replay's interval, flushed before it. The first replay uploads the graph: not a sample.
detail::SampleRun replay_samples(backends::Device& dev, backends::Graph& graph,
                                 const TimingOptions& opt, const Clock& now, int k,
                                 double estimate_ms, bool per_launch,
                                 const std::vector<std::unique_ptr<backends::Event>>& marks,
                                 Tracer& tr, TraceRecorder& rec) {
  auto start = dev.create_event();
  auto end = dev.create_event();
  const bool cold = opt.l2 == L2Policy::cold;
  auto one = [&]() {
    if (!per_launch && cold) dev.flush_l2();  // between replays, outside the events
    dev.record(*start);
    graph.launch();
    dev.record(*end);
    const double whole = dev.elapsed_ms(*start, *end);
    if (!per_launch) return traced_or_events(tr, rec, whole, k, 1, true);
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += dev.elapsed_ms(*marks[2 * i], *marks[2 * i + 1]);
    return traced_or_events(tr, rec, sum, k, k, true);
  };
  dev.record(*start);
  graph.launch();
  dev.record(*end);
  (void)dev.elapsed_ms(*start, *end);
  tr.discard();
  return detail::sample_until_stop(
      dev, one, k, estimate_ms * k, opt, now, [&rec](bool kept) { rec.window(kept); },
      tr.active() ? detail::SampleTime::wall : detail::SampleTime::summed);
}

// The graph timer: warm up, size a replay, capture it, replay it until the stopping rule ends.
// Each launch between event nodes of its own (and, cold, behind a flush node of its own), where
// the backend has event nodes; else a replay timed whole, flushed once.
Measurement graph_with_fallback(backends::Device& dev, const backends::Backend& backend,
                                const std::function<void()>& launch, const TimingOptions& opt,
                                const Clock& now) {
  Measurement m;
  m.timer = TimerKind::graph;
  const bool per_launch = opt.graph_per_launch && dev.capabilities().graph_event_nodes;
  m.l2_method = l2_method_for(opt, per_launch);
  m.sample_method =
      per_launch ? SampleDelimiter::events_per_launch : SampleDelimiter::events_per_replay;
  detail::WarmupResult w;
  double flush_ms = 0;
  try {
    w = detail::warmup(dev, launch, detail::warmup_rule(opt, now()), now);
    if (per_launch) flush_ms = flush_estimate_ms(dev, opt);
  } catch (const NativeError& e) {
    fail_classified(m, backend, e, "launch failed before capture");
    return m;
  }
  m.estimate_ms = w.estimate_ms;
  m.host_ms = w.host_ms;
  int k = graph_launch_count(w.estimate_ms, flush_ms, opt);
  m.launches_per_sample = k;

  std::vector<std::unique_ptr<backends::Event>> marks;  // start, end of each launch
  if (per_launch) {
    marks.reserve(2 * static_cast<std::size_t>(k));
    for (int i = 0; i < 2 * k; ++i) marks.push_back(dev.create_event());
  }
  // Opened before the capture: the graph's kernels are then recorded in every replay.
  std::optional<Tracer> tr;
  tr.emplace(dev, opt, now);
  Capture c = capture_launches(dev, launch, opt, k, per_launch, tr->active(), marks);
  if (k > 1 && !c.graph && ran_out_of_memory(c)) {
    // K launches' memory did not fit in one graph: one launch a replay, once, before the
    // direct fallback (docs/timing.md, "Graph capture").
    (void)dev.take_last_error();
    if (dev.healthy()) {
      const std::string why = "capture of " + std::to_string(k) + " launches ran out of memory (" +
                              c.what + "): one launch a replay";
      k = 1;
      m.launches_per_sample = k;
      c = capture_launches(dev, launch, opt, k, per_launch, tr->active(), marks);
      if (c.graph) m.note = why;
    }
  }
  if (c.code != 0 || c.refused || !c.graph) {
    tr.reset();  // the fallback opens its own
    return after_failed_capture(dev, backend, launch, opt, now, std::move(m), std::move(c));
  }
  detail::SampleRun r;
  TraceRecorder rec;
  try {
    r = replay_samples(dev, *c.graph, opt, now, k, w.estimate_ms, per_launch, marks, *tr, rec);
  } catch (const NativeError& e) {
    fail_classified(m, backend, e, "graph replay failed");
    return m;
  }
  detail::choose_samples(*tr, rec, r.per_launch_ms);
  absorb(m, r);
  m.noise = r.noise;
  m.stop_reason = r.stop_reason;
  m.converged = r.converged;
  if (r.per_launch_ms.empty()) {
    fail(m, Failure::other, "no sample kept: " + r.stop_reason);
    return m;
  }
  summarize(m, {r.per_launch_ms}, opt);
  detail::trace_outcome(m, *tr, rec, dev.trace_resolution_us());
  finish_markers(m);
  return m;
}

// A refused capture can leave its code behind where the device cannot clear it: an op library
// linked with its own copy of the runtime keeps a last-error state of its own, set by the call
// that refused the capture (a synchronize), and the op's next error check reads it (the common
// last-error read of the vendor runtime after a launch), perhaps in another provider of the same
// library timed later. Outside any capture such a code cannot be the launch's own, and that read
// cleared it: the launch runs again, once per measurement. A launch that fails so twice fails as
// before.
std::function<void()> forgiving_capture_leftover(backends::Device& dev,
                                                 const backends::Backend& backend,
                                                 const std::function<void()>& launch) {
  auto spent = std::make_shared<bool>(false);
  return [&dev, &backend, &launch, spent] {
    try {
      launch();
    } catch (const NativeError& e) {
      if (*spent || dev.capturing() || backend.classify(e.code()) != Failure::refused_capture)
        throw;
      *spent = true;
      (void)dev.take_last_error();
      launch();
    }
  };
}

}  // namespace

Measurement measure(backends::Device& dev, const backends::Backend& backend,
                    const std::function<void()>& raw_launch, const TimingOptions& opt) {
  const std::function<void()> launch = forgiving_capture_leftover(dev, backend, raw_launch);
  const Clock now = detail::clock_of(opt);
  const double t0 = now();
  backends::Capabilities caps = backend.capabilities();
  caps.graph_capture = caps.graph_capture && dev.capabilities().graph_capture;
  const TimerChoice choice = choose_timer(caps, opt.timer);
  // burst: start from a rested device (its cost is part of the measurement's).
  std::string rest_how;
  const double rested_s = detail::rest_for_burst(dev, opt, now, &rest_how);
  Measurement m;
  // The backend's built-in deny list counts as much as the caller's flag.
  const std::vector<std::string> deny = backend.capture_deny_ops();
  const bool denied = opt.capture_denied || (!opt.op.empty() && std::find(deny.begin(), deny.end(),
                                                                          opt.op) != deny.end());
  if (choice.kind == TimerKind::graph && denied) {
    m = direct_with_repeat(dev, backend, launch, opt, now, DirectMode::denied);
    if (m.ok) {
      m.note = op_label(opt) +
               " is on the capture deny list (its capture attempt poisons the context): timed "
               "with the direct timer";
    }
  } else if (choice.kind == TimerKind::graph) {
    m = graph_with_fallback(dev, backend, launch, opt, now);
  } else {
    m = direct_with_repeat(dev, backend, launch, opt, now, DirectMode::chosen);
    if (m.note.empty()) m.note = choice.note;
  }
  m.regime = opt.regime.regime;
  m.settle_s += rested_s;
  if (opt.regime.regime == ClockRegime::burst) m.settle = rest_how;
  m.timer_resolution_us = dev.timer_resolution_us();
  if (m.ok && !m.clock.known) {
    const std::string why =
        "the backend reads no clocks: the clock regime is declared, not verified";
    m.note = m.note.empty() ? why : m.note + "; " + why;
  }
  m.wall_s = now() - t0;
  return m;
}

}  // namespace caliber::timing

namespace caliber::timing {
namespace {

// The two sides' launches of one replay, per launch, kept or dropped with their window.
struct PairRecorder {
  std::vector<double> a, b;  // kept, per launch
  std::vector<std::pair<double, double>> pending;
  void window(bool kept) {
    if (kept)
      for (const auto& [x, y] : pending) {
        a.push_back(x);
        b.push_back(y);
      }
    pending.clear();
  }
};

// K pairs in one capture: A B, then B A, ... (neither side always first after the other's
// launch), each launch behind a flush of its own (cold) between event nodes of its own.
Capture capture_pairs(backends::Device& dev, const std::function<void()>& launch_a,
                      const std::function<void()>& launch_b, const TimingOptions& opt, int k,
                      const std::vector<std::unique_ptr<backends::Event>>& marks) {
  return capture_of(dev, opt, [&] {
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < 2; ++j) {
        const bool side_a = (i % 2 == 0) == (j == 0);
        const std::size_t slot = 4 * static_cast<std::size_t>(i) + (side_a ? 0 : 2);
        if (opt.l2 == L2Policy::cold) dev.flush_l2();
        dev.record_in_graph(*marks[slot]);
        (side_a ? launch_a : launch_b)();
        dev.record_in_graph(*marks[slot + 1]);
      }
    }
  });
}

Measurement side_of(const detail::SampleRun& r, std::vector<double> samples, int k,
                    double estimate_ms, const TimingOptions& opt) {
  Measurement m;
  m.timer = TimerKind::graph;
  m.l2_method = l2_method_for(opt, true);
  m.sample_method = SampleDelimiter::events_per_launch;
  m.launches_per_sample = k;
  m.estimate_ms = estimate_ms;
  absorb(m, r);
  m.noise = r.noise;
  m.stop_reason = r.stop_reason;
  m.converged = r.converged;
  summarize(m, {samples}, opt);
  finish_markers(m);
  m.regime = opt.regime.regime;
  return m;
}

}  // namespace

std::optional<PairedMeasurement> measure_interleaved(backends::Device& dev,
                                                     const backends::Backend& backend,
                                                     const std::function<void()>& launch_a,
                                                     const std::function<void()>& launch_b,
                                                     const TimingOptions& opt, int min_pairs) {
  backends::Capabilities caps = backend.capabilities();
  caps.graph_capture = caps.graph_capture && dev.capabilities().graph_capture;
  const std::vector<std::string> deny = backend.capture_deny_ops();
  if (choose_timer(caps, opt.timer).kind != TimerKind::graph || opt.capture_denied ||
      !opt.graph_per_launch || !dev.capabilities().graph_event_nodes ||
      (!opt.op.empty() && std::find(deny.begin(), deny.end(), opt.op) != deny.end()))
    return std::nullopt;
  const Clock now = detail::clock_of(opt);
  const double t0 = now();
  TimingOptions o = opt;
  o.stop.min_samples = std::max(o.stop.min_samples, min_pairs);
  std::string rest_how;
  const double rested_s = detail::rest_for_burst(dev, o, now, &rest_how);
  try {
    const detail::WarmupResult wa = detail::warmup(dev, launch_a, o.stop, now);
    const detail::WarmupResult wb = detail::warmup(dev, launch_b, o.stop, now);
    const double flush_ms = flush_estimate_ms(dev, o);
    // A replay of K pairs: about graph_replay_ms of work, the flushes included.
    const int k = graph_launch_count(wa.estimate_ms + wb.estimate_ms, 2 * flush_ms, o);
    std::vector<std::unique_ptr<backends::Event>> marks;
    for (int i = 0; i < 4 * k; ++i) marks.push_back(dev.create_event());
    Capture c = capture_pairs(dev, launch_a, launch_b, o, k, marks);
    if (!c.graph) {
      (void)dev.take_last_error();
      return std::nullopt;
    }
    PairRecorder rec;
    auto start = dev.create_event();
    auto end = dev.create_event();
    auto one = [&]() {
      dev.record(*start);
      c.graph->launch();
      dev.record(*end);
      (void)dev.elapsed_ms(*start, *end);
      double sa = 0, sb = 0;
      for (int i = 0; i < k; ++i) {
        sa += dev.elapsed_ms(*marks[4 * i], *marks[4 * i + 1]);
        sb += dev.elapsed_ms(*marks[4 * i + 2], *marks[4 * i + 3]);
      }
      rec.pending.emplace_back(sa / k, sb / k);
      return sa + sb;
    };
    (void)one();  // the first replay uploads the graph: not a sample
    rec.pending.clear();
    const detail::SampleRun r =
        detail::sample_until_stop(dev, one, k, (wa.estimate_ms + wb.estimate_ms) * k, o, now,
                                  [&](bool kept) { rec.window(kept); });
    if (rec.a.empty() || rec.a.size() != rec.b.size()) return std::nullopt;
    PairedMeasurement p{side_of(r, std::move(rec.a), k, wa.estimate_ms, o),
                        side_of(r, std::move(rec.b), k, wb.estimate_ms, o)};
    for (Measurement* m : {&p.a, &p.b}) {
      m->settle_s += rested_s;
      if (o.regime.regime == ClockRegime::burst) m->settle = rest_how;
      m->timer_resolution_us = dev.timer_resolution_us();
      m->wall_s = now() - t0;
    }
    return p;
  } catch (const std::exception&) {
    (void)dev.take_last_error();
    return std::nullopt;
  }
}

}  // namespace caliber::timing
