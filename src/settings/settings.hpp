// The typed settings of a run: each knob that takes one of a few words is parsed once (by the knob
// table, src/settings/knobs.cpp) into one of these enums, and the words appear nowhere else.
// to_string gives back the spelling the CLI, run_identity.json and run.log use (docs/run-log.md).
#pragma once

#include <optional>
#include <string_view>

namespace caliber::core {

// --timer: automatic ("auto") follows the backend's capabilities; the rule is
// timing::choose_timer (src/timing/measure.cpp).
enum class TimerKind { automatic, graph, direct };
// --l2: cold evicts the L2 before each sample, warm does not.
enum class L2Policy { cold, warm };
// --clock: which clock state samples come from (docs/timing.md): burst, a rested device at its top
// clock; sustained, after the clock and board power have settled under this very work.
enum class ClockRegime { burst, sustained };
// --sample-method: how a sample's device time is read (docs/timing.md). automatic ("auto"): the
// kernel trace where the backend has one, else events; trace: the kernel trace (events, marked,
// where it cannot be had); events: event pairs.
enum class SampleMethod { automatic, trace, events };
// --tune: off, live (the shared cache), record (this run's tune.db), replay (--replay-from's).
enum class TuneMode { off, live, record, replay };

[[nodiscard]] const char* to_string(TimerKind t) noexcept;
[[nodiscard]] const char* to_string(L2Policy p) noexcept;
[[nodiscard]] const char* to_string(ClockRegime r) noexcept;
[[nodiscard]] const char* to_string(TuneMode m) noexcept;
[[nodiscard]] const char* to_string(SampleMethod m) noexcept;

// The CLI spelling -> the value; nullopt for anything else.
[[nodiscard]] std::optional<TimerKind> parse_timer_kind(std::string_view s) noexcept;
[[nodiscard]] std::optional<L2Policy> parse_l2_policy(std::string_view s) noexcept;
[[nodiscard]] std::optional<ClockRegime> parse_clock_regime(std::string_view s) noexcept;
[[nodiscard]] std::optional<TuneMode> parse_tune_mode(std::string_view s) noexcept;
[[nodiscard]] std::optional<SampleMethod> parse_sample_method(std::string_view s) noexcept;

}  // namespace caliber::core
