// The shared number formatters, the text-table layout and the settings' spellings (core/format.hpp,
// core/text_table.hpp, settings/settings.hpp).
#include <gtest/gtest.h>

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
    EXPECT_EQ(parse_timer_kind(to_string(t)), t);
  EXPECT_STREQ(to_string(TimerKind::automatic), "auto");
  for (auto p : {L2Policy::cold, L2Policy::warm}) EXPECT_EQ(parse_l2_policy(to_string(p)), p);
  for (auto r : {ClockRegime::burst, ClockRegime::sustained})
    EXPECT_EQ(parse_clock_regime(to_string(r)), r);
  for (auto m : {TuneMode::off, TuneMode::live, TuneMode::record, TuneMode::replay})
    EXPECT_EQ(parse_tune_mode(to_string(m)), m);
  EXPECT_FALSE(parse_timer_kind("fast").has_value());
  EXPECT_FALSE(parse_l2_policy("lukewarm").has_value());
  EXPECT_FALSE(parse_tune_mode("").has_value());
}

}  // namespace
}  // namespace caliber::core
