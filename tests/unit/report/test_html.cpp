// The HTML reporter: escaping, tables, numbers right-aligned, banners and warnings present.
#include <gtest/gtest.h>

#include <algorithm>

#include "records/identity.hpp"
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
  // Every caliber key has its column (device_model shows as the device's name): a sustained and
  // a burst run, which compare refuses to pair, must not look alike there.
  for (const auto& key : caliber::core::caliber_keys()) {
    const std::string col = key == "device_model" ? "device" : key;
    EXPECT_NE(std::find(cal.columns.begin(), cal.columns.end(), col), cal.columns.end()) << key;
  }
}

namespace {
std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}
}  // namespace

TEST(Svg, OneMarkPerDrawableValueAndNothingForAnEmptyChart) {
  Chart c;
  c.id = "x";
  c.title = "t <&>";
  c.log_x = true;
  c.reference = 1;
  EXPECT_EQ(render_svg(c), "");  // no rows
  c.rows.push_back({"a<b", {Mark{Mark::Kind::point, 0, -1.0, {}, {}, {}, {}, {}, {}, "neg"}}});
  EXPECT_EQ(render_svg(c), "");  // nothing positive on a log axis
  Mark p;
  p.value = 1.5;
  p.lo = 1.2;
  p.hi = 1.9;
  p.title = "pair <1>";
  c.rows.push_back({"b", {p}});
  Mark box;
  box.kind = Mark::Kind::box;
  box.value = 2;
  box.q1 = 1.8;
  box.q3 = 2.2;
  box.lo = 1;
  box.hi = 3;
  box.samples = {1, 1.8, 2, 2.2, 3};
  c.rows.push_back({"c", {box}});
  const std::string svg = render_svg(c);
  EXPECT_EQ(svg.rfind("<svg class=\"chart\" id=\"x\"", 0), 0u) << svg;
  EXPECT_EQ(count(svg, "class=\"mark\""), 2u);  // the negative value is not drawn
  EXPECT_EQ(count(svg, "r=\"1.4\""), 5u);       // every sample as a dot
  EXPECT_NE(svg.find("<title>pair &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b</text>"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the reference line at 1
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(Svg, ThousandsOfSamplesAreThinned) {
  Chart c;
  c.id = "many";
  Mark box;
  box.kind = Mark::Kind::box;
  box.value = 1;
  for (int i = 0; i < 5000; ++i) box.samples.push_back(1 + i * 1e-4);
  c.rows.push_back({"r", {box}});
  const std::string svg = render_svg(c);
  EXPECT_LE(count(svg, "r=\"1.4\""), 400u);
  EXPECT_GE(count(svg, "r=\"1.4\""), 300u);
}

TEST(Html, FiguresOfARunAndOfACompare) {
  using namespace caliber::testing;
  TempDir t;
  RowSpec s;
  s.op = "add";
  s.cand = samples(1.0, 0.01, 20, 1);
  s.base = samples(2.0, 0.01, 20, 2);
  json a = make_row(s);
  a["pct_peak_bw"] = 40.0;
  s.op = "mm";
  json m = make_row(s);
  RowSpec only_base;  // a baseline-only op: a latency chart, no speedup chart
  only_base.op = "sort";
  only_base.base = samples(3.0, 0.01, 20, 3);
  const auto dir = write_run(t.path(), "r-20261130-101010", {a, m, make_row(only_base)});
  const auto runs = load_runs({dir});
  const auto figs = run_figures(runs);
  std::vector<std::string> headings;
  for (const auto& f : figs) headings.push_back(f.heading);
  EXPECT_EQ(headings, (std::vector<std::string>{
                          "Speedup per shape: add", "Latency distribution: add",
                          "Speedup per shape: mm", "Latency distribution: mm",
                          "Latency distribution: sort", "Percent of the measured peak"}));
  // The speedup's interval excludes 1 by far: drawn as "above 1".
  EXPECT_NE(figs[0].svg.find(kFasterColor), std::string::npos);
  const auto res = compare_loaded(runs, runs);
  const auto cf = compare_figures(res);
  ASSERT_EQ(cf.size(), 1u);
  EXPECT_EQ(count(cf[0].svg, "class=\"mark\""), res.pairs.size());
  const std::string page = render_html(Report{}, "p", figs, 0);
  EXPECT_EQ(count(page, "<svg class=\"chart\""), figs.size());
}

TEST(Html, AnAbDirectoryGivesTheAbPage) {
  using namespace caliber::testing;
  TempDir t;
  RowSpec s;
  s.cand = samples(1.0, 0.01, 20, 1);
  s.base = samples(2.0, 0.01, 20, 2);
  const auto ab = t.path() / "ab-20261130-101010";
  write_run(ab, "A-1-20261130-101011", {make_row(s)});
  write_run(ab, "B-1-20261130-101012", {make_row(s)});
  write_run(ab, "A-2-20261130-101013", {make_row(s)});
  EXPECT_FALSE(ab_sides(ab));  // no ab.json: a batch, not an A/B
  std::ofstream(ab / "ab.json") << "{}\n";
  const auto sides = ab_sides(ab);
  ASSERT_TRUE(sides);
  EXPECT_EQ(sides->first.size(), 2u);
  EXPECT_EQ(sides->second.size(), 1u);
  // An ab.json without the sides' switches: titled by the runs of each side and the rounds.
  EXPECT_NE(
      html_report({ab}).find(
          "caliber A/B: A = A-1-20261130-101011 and 1 more vs B = B-1-20261130-101012, 2 rounds"),
      std::string::npos);
  // With them (what caliber ab writes): the title, the heading and the pairs table's first note
  // say what A and B were, also for the rounds named by hand (`report --ab A-1,A-2 B-1`).
  std::ofstream(ab / "ab.json") << R"({"a": {"switch": "X=0"}, "b": {"switch": "X=1"}})"
                                << "\n";
  const std::string page = html_report({ab});
  EXPECT_NE(page.find("<title>caliber A/B: A = X=0 vs B = X=1, 2 rounds</title>"),
            std::string::npos);
  EXPECT_NE(page.find("<h1>caliber A/B: A = X=0 vs B = X=1, 2 rounds</h1>"), std::string::npos);
  EXPECT_NE(page.find("A = X=0; B = X=1; 2"), std::string::npos);
  EXPECT_NE(html_ab_report(sides->first, sides->second).find("caliber A/B: A = X=0 vs B = X=1"),
            std::string::npos);
  // Runs outside an ab directory: the op libraries their identities name, else their names.
  TempDir u;
  json lib = identity();
  lib["ops_libs"] = {"/opt/mine.so"};
  const auto la = write_run(u.path(), "a-20261130-101010", {make_row(s)}, lib);
  const auto lb = write_run(u.path(), "b-20261130-101010", {make_row(s)});
  const std::string plain = html_ab_report({la}, {lb});
  EXPECT_NE(plain.find("caliber A/B: A = --ops-lib=/opt/mine.so (a-20261130-101010) vs B = "
                       "b-20261130-101010, 1 run a side"),
            std::string::npos);
  // Runs named by hand are no ab rounds: the first note counts them, and says nothing of
  // interleaving or processes a round.
  EXPECT_NE(plain.find("1 run(s) of A, 1 of B, named by hand"), std::string::npos);
  EXPECT_EQ(plain.find("interleaved round"), std::string::npos);
  // A FlagGems run's tree is named by --flaggems, the flag that gave it (--ops-lib is refused
  // with it).
  json fg = identity();
  fg["ops_libs"] = {"flaggems:/src/FlagGems"};
  const auto fa = write_run(u.path(), "flaggems-20261130-101010", {make_row(s)}, fg);
  EXPECT_NE(html_ab_report({fa}, {lb}).find("A = --flaggems /src/FlagGems (flaggems-20261130"),
            std::string::npos);
  // Identical sides a run each: no pair can be SAME against the default run-to-run terms, so
  // the warning says the pairs are UNSURE, not that the sides gave the same numbers.
  const std::string unsure = html_ab_report({lb}, {lb});
  EXPECT_NE(unsure.find("UNSURE of"), std::string::npos);
  EXPECT_EQ(unsure.find("gave the same numbers"), std::string::npos);
  EXPECT_EQ(count(page, "<svg class=\"chart\""), 1u);
}

TEST(Html, EachMarkerOnceInTheCasesTable) {
  using namespace caliber::testing;
  TempDir t;
  RowSpec s;
  s.cand = samples(1.0, 0.01, 5, 1);
  s.base = samples(2.0, 0.01, 5, 2);
  s.markers = {"timer=direct"};
  json row = make_row(s);
  for (auto& p : row["providers"]) p["markers"] = {"timer=direct"};  // as the run driver writes
  const auto dir = write_run(t.path(), "add-20261130-101010", {row});
  const Table cases = cases_table(load_runs({dir}));
  ASSERT_EQ(cases.rows.size(), 1u);
  EXPECT_EQ(cases.rows[0].back().text, "timer=direct");
}
