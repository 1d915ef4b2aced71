// The HTML reporter: escaping, tables, numbers right-aligned, banners and warnings present.
#include <gtest/gtest.h>

#include "report/html.hpp"
#include "unit/report/fixtures.hpp"

using namespace caliber::report;

TEST(Html, EscapesEverythingItPlacesInThePage) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  Report r;
  r.banners.push_back("CALIBER MISMATCH: level: core vs <script>");
  Table t;
  t.title = "t<1>";
  t.columns = {"op", "ms"};
  t.rows.push_back({text_cell("mm[bf16-M1]"), number_cell(0.25)});
  r.tables.push_back(t);
  r.warnings.push_back("WARNING: x & y");
  const std::string html = render_html(r, "title & more");
  EXPECT_NE(html.find("<title>title &amp; more</title>"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">" + number_cell(0.25).text + "</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>mm[bf16-M1]</td>"), std::string::npos);
  EXPECT_NE(html.find("WARNING: x &amp; y"), std::string::npos);
}

TEST(Html, CasesAndCaliberTablesFromRuns) {
  caliber::testing::TempDir t;
  caliber::testing::RowSpec s;
  s.op = "add";
  s.dtype = "f32";
  s.shape = "64";
  s.cand = caliber::testing::samples(1.0, 0.01, 20, 1);
  s.base = caliber::testing::samples(2.0, 0.01, 20, 2);
  const auto dir =
      caliber::testing::write_run(t.path(), "add-20261129-101010", {caliber::testing::make_row(s)});
  const auto runs = load_runs({dir});
  ASSERT_EQ(runs.size(), 1u);
  const Table cases = cases_table(runs);
  ASSERT_EQ(cases.rows.size(), 1u);
  EXPECT_EQ(cases.rows[0][0].text, "add");
  EXPECT_EQ(cases.rows[0].size(), cases.columns.size());
  const Table cal = caliber_table(runs);
  ASSERT_EQ(cal.rows.size(), 1u);
  EXPECT_EQ(cal.rows[0][0].text, "add-20261129-101010");
  EXPECT_EQ(cal.rows[0].size(), cal.columns.size());
}
