#include "settings/settings.hpp"

namespace caliber::core {

// Each enum's words, once. The order is --help's (the knob table's "allowed" text).
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

#undef CALIBER_SPELLINGS

const char* to_string(TimerKind t) noexcept {
  return word_of(t);
}
const char* to_string(L2Policy p) noexcept {
  return word_of(p);
}
const char* to_string(ClockRegime r) noexcept {
  return word_of(r);
}
const char* to_string(TuneMode m) noexcept {
  return word_of(m);
}
const char* to_string(SampleMethod m) noexcept {
  return word_of(m);
}
std::string_view to_string(Level l) noexcept {
  return word_of(l);
}
const char* to_string(ShapeMode m) noexcept {
  return word_of(m);
}
const char* to_string(MeasureMode m) noexcept {
  return word_of(m);
}
const char* to_string(L2Method m) noexcept {
  return word_of(m);
}
const char* to_string(SampleDelimiter d) noexcept {
  return word_of(d);
}
const char* to_string(OpStatus s) noexcept {
  return word_of(s);
}

std::optional<TimerKind> parse_timer_kind(std::string_view s) noexcept {
  return parse_word<TimerKind>(s);
}
std::optional<L2Policy> parse_l2_policy(std::string_view s) noexcept {
  return parse_word<L2Policy>(s);
}
std::optional<ClockRegime> parse_clock_regime(std::string_view s) noexcept {
  return parse_word<ClockRegime>(s);
}
std::optional<TuneMode> parse_tune_mode(std::string_view s) noexcept {
  return parse_word<TuneMode>(s);
}
std::optional<SampleMethod> parse_sample_method(std::string_view s) noexcept {
  return parse_word<SampleMethod>(s);
}
std::optional<Level> parse_level(std::string_view s) noexcept {
  return parse_word<Level>(s);
}
std::optional<OpStatus> parse_op_status(std::string_view s) noexcept {
  return parse_word<OpStatus>(s);
}

}  // namespace caliber::core
