#include <gtest/gtest.h>

#include "report/table.hpp"

using namespace caliber::report;

TEST(Table, CsvQuotesFieldsThatNeedIt) {
  Report r;
  Table t;
  t.id = "x";
  t.columns = {"name", "value"};
  t.rows.push_back({text_cell("a,b"), number_cell(1.5)});
  t.rows.push_back({text_cell("say \"hi\""), number_cell(std::nullopt)});
  r.tables.push_back(t);
  EXPECT_EQ(render_csv(r), "name,value\n\"a,b\",1.5\n\"say \"\"hi\"\"\",\n");
}

// A Markdown cell keeps its table ('|' escaped) and opens no HTML element where it is rendered
// (an op name or a commit text is not ours to trust).
TEST(Table, MarkdownCellsEscapeBarsAndTags) {
  Report r;
  Table t;
  t.id = "x";
  t.columns = {"op"};
  t.rows.push_back({text_cell("<script>a|b</script>")});
  r.tables.push_back(t);
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| &lt;script>a\\|b&lt;/script> |"), std::string::npos) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
}

TEST(Table, TextAlignsColumns) {
  Report r;
  Table t;
  t.id = "x";
  t.columns = {"op", "n"};
  t.rows.push_back({text_cell("softmax"), integer_cell(7)});
  t.rows.push_back({text_cell("mm"), integer_cell(12345)});
  r.tables.push_back(t);
  EXPECT_EQ(render_text(r), "op           n\n-------  -----\nsoftmax      7\nmm       12345\n");
}

TEST(Table, BannersAndWarningsAreShown) {
  Report r;
  r.banners.push_back("CALIBER MISMATCH: level: core vs comprehensive");
  r.warnings.push_back("the switch may not be live");
  const auto text = render_text(r);
  EXPECT_NE(text.find("CALIBER MISMATCH: level: core vs comprehensive"), std::string::npos);
  EXPECT_NE(text.find("WARNING: the switch may not be live"), std::string::npos);
  const auto j = render_json(r);
  EXPECT_EQ(j["banners"][0], "CALIBER MISMATCH: level: core vs comprehensive");
}

// The same WARNING (or note) raised by two parts of a report is printed once, in every format.
TEST(Table, ARepeatedWarningOrNoteIsPrintedOnce) {
  Report r;
  Table t;
  t.id = "pairs";
  t.columns = {"op"};
  t.notes = {"a note", "another", "a note"};
  r.tables.push_back(t);
  r.warnings = {"the host was loaded", "the host was loaded"};
  const auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  for (const auto f : {Format::table, Format::md}) {
    const std::string out = render(r, f);
    EXPECT_EQ(count(out, "the host was loaded"), 1u) << out;
    EXPECT_EQ(count(out, "a note"), 1u) << out;
  }
  EXPECT_EQ(count(render_csv_side(r), "the host was loaded"), 1u);
  EXPECT_EQ(render_json(r)["warnings"].size(), 1u);
  EXPECT_EQ(render_json(r)["pairs"]["notes"].size(), 2u);
}

TEST(Table, FormatNames) {
  EXPECT_EQ(parse_format("md"), Format::md);
  EXPECT_EQ(parse_format("json"), Format::json);
  EXPECT_FALSE(parse_format("xml"));
}

TEST(Table, NumberCells) {
  EXPECT_EQ(number_cell(1.23456).text, "1.235");
  EXPECT_EQ(number_cell(0.012345).text, "0.01235");
  EXPECT_EQ(number_cell(1234.6).text, "1235");
  EXPECT_EQ(number_cell(std::nan("")).text, "-");
  EXPECT_TRUE(number_cell(std::nan("")).value.is_null());
}

TEST(Table, CsvIsTheFirstTableAloneAndTheRestGoesToStderr) {
  Report r;
  r.banners.push_back("CALIBER MISMATCH: level: core vs comprehensive");
  Table a;
  a.id = "pairs";
  a.columns = {"op", "n"};
  a.rows.push_back({text_cell("mm"), integer_cell(3)});
  a.notes.push_back("a note under pairs");
  Table b;
  b.id = "ops";
  b.title = "Per op";
  b.columns = {"op"};
  b.rows.push_back({text_cell("mm")});
  r.tables = {a, b};
  r.warnings.push_back("no case could be paired");
  const Rendered s = render_streams(r, Format::csv);
  EXPECT_EQ(s.out, "op,n\nmm,3\n");
  EXPECT_NE(s.err.find("CALIBER MISMATCH"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("note: a note under pairs"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("Per op"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("WARNING: no case could be paired"), std::string::npos) << s.err;
  const Rendered t = render_streams(r, Format::table);
  EXPECT_TRUE(t.err.empty());
  EXPECT_NE(t.out.find("Per op"), std::string::npos);
}
