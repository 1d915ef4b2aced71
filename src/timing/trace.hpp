// Internal to src/timing/: the kernel-trace sample method's policy (docs/timing.md). The backend
// delivers activity records (start, end, kind, whether the work was its own); this file decides
// which records belong to which timed launch and what the launch's device time is.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "timing/sampler.hpp"
#include "timing/timer.hpp"

namespace caliber::timing::detail {

// One timed launch as its records show it: the span from its first activity's start to its last
// activity's end, how many activities it had and their summed durations.
struct LaunchTrace {
  double span_ms = 0;
  int activities = 0;
  double busy_ms = 0;
};

// The launches in one collect's records (ordered by start): every maximal run of records that
// are not the backend's own is one launch. The backend's own work (the flush before a cold
// launch, the stream hold, a trace boundary) sits between two launches and belongs to neither.
// `replay`: the records are of graph replays; where some of them carry the graph's id, those that
// carry none are the launcher's own work around the replay (torch's RNG prologue) and belong to
// no launch. A backend that cannot tell (no record has an id) keeps every record.
[[nodiscard]] std::vector<LaunchTrace> split_launches(std::span<const backends::TraceRecord> recs,
                                                      bool replay = false);

// Whether the options and the device ask for the trace, and, when asked but impossible without
// trying (the backend has no trace), why not.
struct TraceWish {
  bool wanted = false;
  bool marked = false;  // a fallback carries the marker (an explicit request, or a backend that
                        // has the trace but could not open it)
};
[[nodiscard]] TraceWish trace_wish(const backends::Capabilities& caps, const TimingOptions& opt);

// A trace open for one measurement: opened on construction when wished for, closed on
// destruction. take() reads the records of the work completed since the last take and returns
// its launches, or nullopt when there are not exactly `expected` (missing records): the trace is
// then given up for the rest of the measurement, which falls back to its events.
class Tracer {
 public:
  Tracer(backends::Device& dev, const TimingOptions& opt, const Clock& now);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  [[nodiscard]] bool active() const noexcept { return active_; }
  // `replay`: the work since the last take was graph replays (split_launches).
  [[nodiscard]] std::optional<std::vector<LaunchTrace>> take(int expected, bool replay = false);
  void discard();  // reads and drops what is there (an upload replay, the settling)

  // The outcome, for the measurement: the marker and a note when the trace was wished for but
  // not (or not throughout) used.
  [[nodiscard]] bool used_throughout() const noexcept { return wanted_ && active_ && !lost_; }
  [[nodiscard]] bool marked_fallback() const noexcept;
  [[nodiscard]] const std::string& why_not() const noexcept { return why_; }
  [[nodiscard]] double host_us_per_launch() const noexcept;
  // The records' ticks per nanosecond: 1, except beside another subscriber whose timestamp clock
  // CUPTI converts to (record_ticks_per_ns); spans are divided by it.
  [[nodiscard]] double ticks_per_ns() const noexcept { return ticks_per_ns_; }

 private:
  backends::Device& dev_;
  Clock now_;
  bool wanted_ = false;
  bool marked_ = false;
  bool active_ = false;
  bool lost_ = false;  // opened, then records went missing
  std::string why_;
  double host_s_ = 0;
  long launches_ = 0;
  double ticks_per_ns_ = 1.0;
};

// The rate of the records' clock against the events' (ticks per ns), from a run of the
// backend's own L2 flushes timed both ways; nullopt when it cannot be read.
[[nodiscard]] std::optional<double> record_ticks_per_ns(backends::Device& dev);

// The kept samples of both kinds, kept or dropped with their window (sample_until_stop's
// on_window): the events of every kept sample for the cross-check, and the trace's per-launch
// facts.
struct TraceRecorder {
  std::vector<double> events_ms;  // per launch, of each kept sample
  std::vector<double> activities, busy_ms;
  std::vector<double> pending_events, pending_activities, pending_busy;
  // One sample of `k` launches: its events per launch, and its records' runs (k, or one for k
  // launches back to back).
  void add(double event_ms_per_launch, const std::vector<LaunchTrace>* launches, int k);
  void window(bool kept);
  void append(const TraceRecorder& other);  // the kept samples of another (a repeated call)
};

// The samples a measurement reports: the trace's where it was used throughout, else (records
// went missing midway) the events' of the same kept samples, so that no row mixes the two.
void choose_samples(const Tracer& tr, const TraceRecorder& rec, std::vector<double>& per_launch_ms);
// The trace's fields (used throughout), or its marker and note (wished for, not used).
void trace_outcome(Measurement& m, const Tracer& tr, const TraceRecorder& rec,
                   double record_resolution_us);

}  // namespace caliber::timing::detail
