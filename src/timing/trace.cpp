// The kernel-trace sample method's policy: which records belong to which timed launch, when the
// trace is used and what a row says when it is not (docs/timing.md).
#include "timing/trace.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/format.hpp"
#include "core/stats.hpp"

namespace caliber::timing::detail {

std::vector<LaunchTrace> split_launches(std::span<const backends::TraceRecord> recs, bool replay) {
  const bool by_graph = replay && std::any_of(recs.begin(), recs.end(),
                                              [](const auto& r) { return !r.own && r.graph != 0; });
  std::vector<LaunchTrace> out;
  bool in_run = false;
  std::uint64_t first = 0, last = 0;
  auto close_run = [&] {
    if (!in_run) return;
    out.back().span_ms = static_cast<double>(last - first) * 1e-6;
    in_run = false;
  };
  for (const backends::TraceRecord& r : recs) {
    if (r.own) {
      close_run();
      continue;
    }
    if (by_graph && r.graph == 0) continue;  // the launcher's, around the replay: no launch's
    if (!in_run) {
      out.emplace_back();
      first = r.start_ns;
      last = r.end_ns;
      in_run = true;
    }
    first = std::min(first, r.start_ns);
    last = std::max(last, r.end_ns);
    LaunchTrace& t = out.back();
    ++t.activities;
    if (r.end_ns > r.start_ns) t.busy_ms += static_cast<double>(r.end_ns - r.start_ns) * 1e-6;
  }
  close_run();
  return out;
}

std::optional<double> record_ticks_per_ns(backends::Device& dev) {
  // Runs of the backend's own L2 flush between two events: milliseconds by the events, ticks by
  // the flushes' records (first start to last end). Two runs of different lengths, so that what
  // is the same in both (the events' floor, the gaps to the first and last flush) cancels in
  // their difference: about 2 ms of flushes on the H200 (31 us each).
  constexpr int kShort = 16, kLong = 80;
  const std::unique_ptr<backends::Event> e0 = dev.create_event(), e1 = dev.create_event();
  auto one_run = [&](int n) -> std::optional<std::pair<double, double>> {
    (void)dev.trace_collect();
    dev.record(*e0);
    for (int i = 0; i < n; ++i) dev.flush_l2();
    dev.record(*e1);
    const double ms = dev.elapsed_ms(*e0, *e1);
    dev.synchronize();
    std::uint64_t first = 0, last = 0;
    int flushes = 0;
    for (const backends::TraceRecord& r : dev.trace_collect()) {
      if (!r.own) continue;
      first = flushes == 0 ? r.start_ns : std::min(first, r.start_ns);
      last = flushes == 0 ? r.end_ns : std::max(last, r.end_ns);
      ++flushes;
    }
    if (flushes < n || !(ms > 0) || last <= first) return std::nullopt;
    return std::make_pair(ms, static_cast<double>(last - first));
  };
  const auto a = one_run(kShort), b = one_run(kLong);
  if (!a || !b || !(b->first > a->first)) return std::nullopt;
  const double rate = (b->second - a->second) / ((b->first - a->first) * 1e6);
  if (!(rate > 0.01 && rate < 100)) return std::nullopt;
  // Within the method's error of nanoseconds: nanoseconds (an unscaled clock is not rescaled).
  return std::abs(rate - 1) < 0.01 ? 1.0 : rate;
}

TraceWish trace_wish(const backends::Capabilities& caps, const TimingOptions& opt) {
  TraceWish w;
  if (opt.sample_method == SampleMethod::events) return w;
  if (opt.sample_method == SampleMethod::trace) {
    w.wanted = true;
    w.marked = true;
    return w;
  }
  // auto: where the backend has a trace; a backend without one times by events, unmarked.
  w.wanted = caps.kernel_trace && !caps.host;
  w.marked = w.wanted;
  return w;
}

Tracer::Tracer(backends::Device& dev, const TimingOptions& opt, const Clock& now)
    : dev_(dev), now_(now) {
  const backends::Capabilities caps = dev.capabilities();
  const TraceWish w = trace_wish(caps, opt);
  wanted_ = w.wanted;
  marked_ = w.marked;
  if (!wanted_) return;
  if (!caps.kernel_trace) {
    why_ = "this backend has no kernel trace";
    return;
  }
  const backends::TraceOpen o = dev.trace_open({opt.trace_beside_idle_subscriber});
  if (!o.ok) {
    why_ = o.why.empty() ? "the kernel trace did not open" : o.why;
    return;
  }
  active_ = true;
  (void)dev.trace_collect();  // nothing from before belongs to this measurement
  if (o.beside_idle_subscriber) {
    // The other subscriber may have given CUPTI a timestamp clock of its own (torch's Kineto:
    // TSC ticks, 2.09 per ns on the H200 of 2026-12-04): read the records' rate, scale by it.
    const std::optional<double> rate = record_ticks_per_ns(dev);
    if (!rate) {
      why_ = "beside another activity subscriber the records' clock could not be read";
      dev.trace_close();
      active_ = false;
      return;
    }
    ticks_per_ns_ = *rate;
  }
}

Tracer::~Tracer() {
  if (active_) dev_.trace_close();
}

std::optional<std::vector<LaunchTrace>> Tracer::take(int expected, bool replay) {
  if (!active_ || lost_) return std::nullopt;
  const double t0 = now_();
  const std::vector<backends::TraceRecord> recs = dev_.trace_collect();
  std::vector<LaunchTrace> launches = split_launches(recs, replay);
  for (LaunchTrace& t : launches) {
    t.span_ms /= ticks_per_ns_;
    t.busy_ms /= ticks_per_ns_;
  }
  host_s_ += now_() - t0;
  launches_ += expected;
  if (static_cast<int>(launches.size()) != expected) {
    lost_ = true;
    why_ = "the device's records showed " + std::to_string(launches.size()) + " launches where " +
           std::to_string(expected) + " were timed";
    return std::nullopt;
  }
  return launches;
}

void Tracer::discard() {
  if (active_ && !lost_) (void)dev_.trace_collect();
}

bool Tracer::marked_fallback() const noexcept {
  return wanted_ && marked_ && (!active_ || lost_);
}

double Tracer::host_us_per_launch() const noexcept {
  return launches_ > 0 ? host_s_ * 1e6 / static_cast<double>(launches_) : 0;
}

void TraceRecorder::add(double event_ms_per_launch, const std::vector<LaunchTrace>* launches,
                        int k) {
  pending_events.push_back(event_ms_per_launch);
  if (launches == nullptr || launches->empty()) return;
  double acts = 0, busy = 0;
  for (const LaunchTrace& t : *launches) {
    acts += t.activities;
    busy += t.busy_ms;
  }
  const auto n = static_cast<double>(std::max(1, k));
  pending_activities.push_back(acts / n);
  pending_busy.push_back(busy / n);
}

void TraceRecorder::window(bool kept) {
  if (kept) {
    events_ms.insert(events_ms.end(), pending_events.begin(), pending_events.end());
    activities.insert(activities.end(), pending_activities.begin(), pending_activities.end());
    busy_ms.insert(busy_ms.end(), pending_busy.begin(), pending_busy.end());
  }
  pending_events.clear();
  pending_activities.clear();
  pending_busy.clear();
}

void TraceRecorder::append(const TraceRecorder& o) {
  events_ms.insert(events_ms.end(), o.events_ms.begin(), o.events_ms.end());
  activities.insert(activities.end(), o.activities.begin(), o.activities.end());
  busy_ms.insert(busy_ms.end(), o.busy_ms.begin(), o.busy_ms.end());
}

void choose_samples(const Tracer& tr, const TraceRecorder& rec,
                    std::vector<double>& per_launch_ms) {
  if (tr.used_throughout() || !tr.marked_fallback()) return;
  if (rec.events_ms.size() == per_launch_ms.size()) per_launch_ms = rec.events_ms;
}

void trace_outcome(Measurement& m, const Tracer& tr, const TraceRecorder& rec,
                   double record_resolution_us) {
  if (tr.used_throughout()) {
    m.sample_method = SampleDelimiter::kernel_trace;
    if (!rec.events_ms.empty()) m.event_latency_ms = core::median(rec.events_ms);
    if (!rec.activities.empty())
      m.kernel_count = static_cast<int>(core::median(rec.activities) + 0.5);
    if (!rec.busy_ms.empty()) m.kernel_sum_ms = core::median(rec.busy_ms);
    m.record_resolution_us = record_resolution_us;
    m.trace_host_us = tr.host_us_per_launch();
    if (tr.ticks_per_ns() != 1.0) {
      const std::string why = "kernel trace beside another activity subscriber, whose clock runs " +
                              core::fixed(tr.ticks_per_ns(), 4) +
                              " ticks per ns: the records are scaled by it";
      m.note = m.note.empty() ? why : m.note + "; " + why;
    }
    return;
  }
  if (!tr.marked_fallback()) return;
  m.markers.push_back(kMarkerEventsNoTrace);
  const std::string why = "kernel trace not used (" + tr.why_not() + "): timed by events";
  m.note = m.note.empty() ? why : m.note + "; " + why;
}

}  // namespace caliber::timing::detail
