// The shared number formatters, the text-table layout and the settings' spellings (core/format.hpp,
// core/text_table.hpp, settings/settings.hpp).
#include <gtest/gtest.h>

#include <set>

#include "core/format.hpp"
#include "core/text_table.hpp"
#include "settings/settings.hpp"

namespace caliber::core {
namespace {

TEST(Format, FixedGeneralAndBytes) {
  EXPECT_EQ(fixed(3.14159, 2), "3.14");
  EXPECT_EQ(fixed(0.5, 0), "0");  // round half to even, as printf
  EXPECT_EQ(general(0.000123456, 3), "0.000123");
  EXPECT_EQ(general(12345.0, 3), "1.23e+04");
  EXPECT_EQ(gib(1.5 * 1024 * 1024 * 1024, 2), "1.50 GiB");
  EXPECT_EQ(mib(512.0 * 1024 * 1024, 0), "512 MiB");
}

// A latency keeps three significant digits where fixed decimals would lose them: the run table
// printed a 0.226 us candidate as 0.0002 beside a speedup of 8.50 (which 0.0002 would make 9.5).
TEST(Format, LatencyKeepsItsDigitsBelowTenMicroseconds) {
  EXPECT_EQ(latency_ms(0.0002262, 4), "0.000226");
  EXPECT_EQ(latency_ms(0.004696, 4), "0.0047");
  EXPECT_EQ(latency_ms(0.1877, 4), "0.1877");
  EXPECT_EQ(latency_ms(12.5, 2), "12.50");
  EXPECT_EQ(latency_ms(0.0, 4), "0.0000");
}

TEST(Format, DurationText) {
  EXPECT_EQ(duration_text(8.4), "8s");
  EXPECT_EQ(duration_text(75), "1m15s");
  EXPECT_EQ(duration_text(3700), "1h01m");
  EXPECT_EQ(duration_text(-3), "0s");
}

TEST(TextTable, AlignsPadsAndTrims) {
  TextTable t({false, true});
  t.add_row({"op", "ms"});
  t.add_rule();
  t.add_row({"mm", "1.5"});
  t.add_row({"softmax"});  // a missing cell is empty
  EXPECT_EQ(t.str(),
            "op        ms\n"
            "-------  ---\n"
            "mm       1.5\n"
            "softmax\n");
}

TEST(Settings, SpellingsRoundTrip) {
  for (auto t : {TimerKind::automatic, TimerKind::graph, TimerKind::direct})
    EXPECT_EQ(parse_word<TimerKind>(to_string(t)), t);
  EXPECT_STREQ(to_string(TimerKind::automatic), "auto");
  for (auto p : {L2Policy::cold, L2Policy::warm}) EXPECT_EQ(parse_word<L2Policy>(to_string(p)), p);
  for (auto r : {ClockRegime::burst, ClockRegime::sustained})
    EXPECT_EQ(parse_word<ClockRegime>(to_string(r)), r);
  for (auto m : {TuneMode::off, TuneMode::live, TuneMode::record, TuneMode::replay})
    EXPECT_EQ(parse_word<TuneMode>(to_string(m)), m);
  EXPECT_FALSE(parse_word<TimerKind>("fast").has_value());
  EXPECT_FALSE(parse_word<L2Policy>("lukewarm").has_value());
  EXPECT_FALSE(parse_word<TuneMode>("").has_value());
}

// Each enum's one word list: every value has a distinct word that parses back to it, and
// allowed_words lists them in --help's order.
template <class E>
void expect_words_round_trip(std::size_t count) {
  std::set<std::string> words;
  for (const auto& sp : spellings<E>()) {
    EXPECT_EQ(parse_word<E>(sp.word), sp.value) << sp.word;
    EXPECT_STREQ(word_of(sp.value), sp.word);
    EXPECT_TRUE(words.insert(sp.word).second) << "word twice: " << sp.word;
  }
  EXPECT_EQ(words.size(), count);
  EXPECT_FALSE(parse_word<E>("").has_value());
  EXPECT_FALSE(parse_word<E>(" " + std::string(spellings<E>()[0].word)).has_value());
}

TEST(Settings, EveryEnumHasOneWordPerValue) {
  expect_words_round_trip<TimerKind>(3);
  expect_words_round_trip<L2Policy>(2);
  expect_words_round_trip<ClockRegime>(2);
  expect_words_round_trip<SampleMethod>(3);
  expect_words_round_trip<TuneMode>(4);
  expect_words_round_trip<Level>(2);
  expect_words_round_trip<ShapeMode>(2);
  expect_words_round_trip<MeasureMode>(2);
  expect_words_round_trip<PeaksMode>(3);
  expect_words_round_trip<SettleMode>(2);
  expect_words_round_trip<SchedulerKind>(2);
  expect_words_round_trip<Switch>(2);
  expect_words_round_trip<L2Method>(4);
  expect_words_round_trip<SampleDelimiter>(6);
  expect_words_round_trip<OpStatus>(8);
  expect_words_round_trip<ReturnMode>(5);
  EXPECT_FALSE(parse_word<ReturnMode>("Median").has_value());
  // The words run.log and ops_status.csv carry, letter for letter (docs/run-log.md).
  EXPECT_STREQ(to_string(L2Method::flush_per_launch), "flush-per-launch");
  EXPECT_STREQ(to_string(SampleDelimiter::kernel_trace), "kernel-trace");
  EXPECT_STREQ(to_string(OpStatus::interrupted), "interrupted");
  EXPECT_EQ(allowed_words<ClockRegime>(), "sustained, burst");
  EXPECT_EQ(allowed_words<TimerKind>(), "auto, graph, direct");
  EXPECT_EQ(spelled(std::optional<TimerKind>()), "");
  EXPECT_EQ(spelled(std::optional<TimerKind>(TimerKind::graph)), "graph");
}

}  // namespace
}  // namespace caliber::core
