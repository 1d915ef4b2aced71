#include "settings/settings.hpp"

namespace caliber::core {

const char* to_string(TimerKind t) noexcept {
  switch (t) {
    case TimerKind::automatic:
      return "auto";
    case TimerKind::graph:
      return "graph";
    case TimerKind::direct:
      return "direct";
  }
  return "auto";
}

const char* to_string(L2Policy p) noexcept {
  return p == L2Policy::warm ? "warm" : "cold";
}

const char* to_string(ClockRegime r) noexcept {
  return r == ClockRegime::sustained ? "sustained" : "burst";
}

const char* to_string(TuneMode m) noexcept {
  switch (m) {
    case TuneMode::off:
      return "off";
    case TuneMode::live:
      return "live";
    case TuneMode::record:
      return "record";
    case TuneMode::replay:
      return "replay";
  }
  return "off";
}

std::optional<TimerKind> parse_timer_kind(std::string_view s) noexcept {
  if (s == "auto") return TimerKind::automatic;
  if (s == "graph") return TimerKind::graph;
  if (s == "direct") return TimerKind::direct;
  return std::nullopt;
}

std::optional<L2Policy> parse_l2_policy(std::string_view s) noexcept {
  if (s == "cold") return L2Policy::cold;
  if (s == "warm") return L2Policy::warm;
  return std::nullopt;
}

std::optional<ClockRegime> parse_clock_regime(std::string_view s) noexcept {
  if (s == "burst") return ClockRegime::burst;
  if (s == "sustained") return ClockRegime::sustained;
  return std::nullopt;
}

std::optional<TuneMode> parse_tune_mode(std::string_view s) noexcept {
  if (s == "off") return TuneMode::off;
  if (s == "live") return TuneMode::live;
  if (s == "record") return TuneMode::record;
  if (s == "replay") return TuneMode::replay;
  return std::nullopt;
}

const char* to_string(SampleMethod m) noexcept {
  switch (m) {
    case SampleMethod::trace:
      return "trace";
    case SampleMethod::events:
      return "events";
    case SampleMethod::automatic:
      break;
  }
  return "auto";
}

std::optional<SampleMethod> parse_sample_method(std::string_view s) noexcept {
  if (s == "auto") return SampleMethod::automatic;
  if (s == "trace") return SampleMethod::trace;
  if (s == "events") return SampleMethod::events;
  return std::nullopt;
}

}  // namespace caliber::core
