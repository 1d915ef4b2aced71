// The typed settings of a run: each knob that takes one of a few words is parsed once (by the knob
// table, src/settings/knobs.cpp) into one of these enums, and the words appear nowhere else.
// to_string gives back the spelling the CLI, run_identity.json and run.log use (docs/run-log.md).
// The same holds for the words a measurement reports about itself (L2Method, SampleDelimiter) and
// for the status of an op in a batch (OpStatus): each enum's words are listed once, in
// settings.cpp, and parse_word / to_string / allowed_words read that one list.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/stats.hpp"

namespace caliber::core {

// --timer: automatic ("auto") follows the backend's capabilities; the rule is
// timing::choose_timer (src/timing/measure.cpp). A measurement's own timer is graph or direct.
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
// --level: core (each op's core shapes) or comprehensive (core plus the additions).
enum class Level { core, comprehensive };
// --shape-mode: file (caliber's shapes/) or upstream (the provider library's own core shapes).
enum class ShapeMode { file, upstream };
// --mode (FlagGems' measurement mode, --flaggems only): kernel, per-launch events with a cold L2
// (do_bench); cudagraph, back-to-back replays with a warm L2 (do_bench_cudagraph).
enum class MeasureMode { kernel, cudagraph };
// --peaks: measured once and cached (on), measured again into the cache (refresh), or not (off).
enum class PeaksMode { on, off, refresh };
// --settle: carry the clock regime from one measurement to the next, or settle each on its own.
enum class SettleMode { carry, each };
// batch --scheduler (CALIBER_SCHEDULER): children on this host, or one Slurm job array.
enum class SchedulerKind { local, slurm };
// A switch given as a word: on or off (--paired-crossover, ab's --crossover).
enum class Switch { on, off };

// How a measurement kept the L2 (the row's l2_method): every timed launch behind its own flush
// ("flush-per-launch"), only a replay's first launch ("flush-per-replay"), only a host batch's
// first launch ("flush-per-sample"), or no flush ("warm").
enum class L2Method { flush_per_launch, flush_per_replay, flush_per_sample, warm };
// How a measurement delimited a sample (the row's sample_method): event nodes around each launch
// of a graph ("events-per-launch"), a replay divided by its launches ("events-per-replay"), a
// direct pair behind a stream hold ("held") or without ("unheld"), launches between two host
// clock readings ("host-batch"), or the span of each launch's own activity records
// ("kernel-trace").
enum class SampleDelimiter {
  events_per_launch,
  events_per_replay,
  held,
  unheld,
  host_batch,
  kernel_trace
};
// An op's state in a batch (ops_status.csv's status column, docs/cluster.md).
enum class OpStatus { pending, running, ok, failed, skipped, crashed, timeout, interrupted };

// One enum value and its word.
template <class E>
struct Spelling {
  E value;
  const char* word;
};
// Every value of E with its word, in the order --help lists them (defined in settings.cpp for each
// enum above).
template <class E>
[[nodiscard]] std::span<const Spelling<E>> spellings() noexcept;
// Whether E is one of the enums above, whose words settings.cpp lists.
template <class E>
inline constexpr bool kSpelled = false;
// A template argument cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CALIBER_SPELLED(E)                  \
  template <>                               \
  inline constexpr bool kSpelled<E> = true; \
  template <>                               \
  std::span<const Spelling<E>> spellings<E>() noexcept
CALIBER_SPELLED(TimerKind);
CALIBER_SPELLED(L2Policy);
CALIBER_SPELLED(ClockRegime);
CALIBER_SPELLED(SampleMethod);
CALIBER_SPELLED(TuneMode);
CALIBER_SPELLED(Level);
CALIBER_SPELLED(ShapeMode);
CALIBER_SPELLED(MeasureMode);
CALIBER_SPELLED(Switch);
CALIBER_SPELLED(PeaksMode);
CALIBER_SPELLED(SchedulerKind);
CALIBER_SPELLED(SettleMode);
CALIBER_SPELLED(L2Method);
CALIBER_SPELLED(SampleDelimiter);
CALIBER_SPELLED(OpStatus);
CALIBER_SPELLED(ReturnMode);
#undef CALIBER_SPELLED
// NOLINTEND(bugprone-macro-parentheses)

// The word -> the value; nullopt for anything else (exact spelling, no trimming).
template <class E>
[[nodiscard]] std::optional<E> parse_word(std::string_view s) noexcept {
  for (const auto& sp : spellings<E>())
    if (s == sp.word) return sp.value;
  return std::nullopt;
}
// The value -> its word.
template <class E>
[[nodiscard]] const char* word_of(E e) noexcept {
  for (const auto& sp : spellings<E>())
    if (sp.value == e) return sp.word;
  return "";
}
// "auto, graph, direct": the words of E in order, for messages and --help.
template <class E>
[[nodiscard]] std::string allowed_words() {
  std::string out;
  for (const auto& sp : spellings<E>()) out += (out.empty() ? "" : ", ") + std::string(sp.word);
  return out;
}

// The value -> its word, for every enum above (the spelling the CLI, run.log and the identity use).
template <class E>
requires kSpelled<E>
[[nodiscard]] const char* to_string(E e) noexcept {
  return word_of(e);
}
// An optional value's word, "" when there is none (a measurement that failed before it timed).
template <class E>
[[nodiscard]] std::string spelled(const std::optional<E>& e) {
  return e ? std::string(to_string(*e)) : std::string();
}

}  // namespace caliber::core
