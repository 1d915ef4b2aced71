#include "settings/settings.hpp"

namespace caliber::core {

// Each enum's words, once. The order is --help's (the knob table's "allowed" text).
// NOLINTBEGIN(bugprone-macro-parentheses): a template argument cannot be parenthesized.
#define CALIBER_SPELLINGS(E, ...)                          \
  template <>                                              \
  std::span<const Spelling<E>> spellings<E>() noexcept {   \
    static constexpr Spelling<E> kWords[] = {__VA_ARGS__}; \
    return kWords;                                         \
  }                                                        \
  static_assert(true)

CALIBER_SPELLINGS(TimerKind, {TimerKind::automatic, "auto"}, {TimerKind::graph, "graph"},
                  {TimerKind::direct, "direct"});
CALIBER_SPELLINGS(L2Policy, {L2Policy::cold, "cold"}, {L2Policy::warm, "warm"});
CALIBER_SPELLINGS(ClockRegime, {ClockRegime::sustained, "sustained"},
                  {ClockRegime::burst, "burst"});
CALIBER_SPELLINGS(SampleMethod, {SampleMethod::automatic, "auto"}, {SampleMethod::trace, "trace"},
                  {SampleMethod::events, "events"});
CALIBER_SPELLINGS(TuneMode, {TuneMode::off, "off"}, {TuneMode::live, "live"},
                  {TuneMode::record, "record"}, {TuneMode::replay, "replay"});
CALIBER_SPELLINGS(Level, {Level::core, "core"}, {Level::comprehensive, "comprehensive"});
CALIBER_SPELLINGS(ShapeMode, {ShapeMode::file, "file"}, {ShapeMode::upstream, "upstream"});
CALIBER_SPELLINGS(MeasureMode, {MeasureMode::kernel, "kernel"},
                  {MeasureMode::cudagraph, "cudagraph"});
CALIBER_SPELLINGS(Switch, {Switch::on, "on"}, {Switch::off, "off"});
CALIBER_SPELLINGS(PeaksMode, {PeaksMode::on, "on"}, {PeaksMode::off, "off"},
                  {PeaksMode::refresh, "refresh"});
CALIBER_SPELLINGS(SchedulerKind, {SchedulerKind::local, "local"}, {SchedulerKind::slurm, "slurm"});
CALIBER_SPELLINGS(SettleMode, {SettleMode::carry, "carry"}, {SettleMode::each, "each"});
CALIBER_SPELLINGS(L2Method, {L2Method::flush_per_launch, "flush-per-launch"},
                  {L2Method::flush_per_replay, "flush-per-replay"},
                  {L2Method::flush_per_sample, "flush-per-sample"}, {L2Method::warm, "warm"});
CALIBER_SPELLINGS(SampleDelimiter, {SampleDelimiter::events_per_launch, "events-per-launch"},
                  {SampleDelimiter::events_per_replay, "events-per-replay"},
                  {SampleDelimiter::held, "held"}, {SampleDelimiter::unheld, "unheld"},
                  {SampleDelimiter::host_batch, "host-batch"},
                  {SampleDelimiter::kernel_trace, "kernel-trace"});
CALIBER_SPELLINGS(OpStatus, {OpStatus::pending, "pending"}, {OpStatus::running, "running"},
                  {OpStatus::ok, "ok"}, {OpStatus::failed, "failed"},
                  {OpStatus::skipped, "skipped"}, {OpStatus::crashed, "crashed"},
                  {OpStatus::timeout, "timeout"}, {OpStatus::interrupted, "interrupted"});

CALIBER_SPELLINGS(ReturnMode, {ReturnMode::min, "min"}, {ReturnMode::max, "max"},
                  {ReturnMode::mean, "mean"}, {ReturnMode::median, "median"},
                  {ReturnMode::all, "all"});

#undef CALIBER_SPELLINGS
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace caliber::core
