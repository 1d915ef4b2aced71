#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <iostream>

#include "settings/shapes.hpp"
#include "temp_dir.hpp"

using caliber::testing::TempDir;

using namespace caliber::core;
namespace fs = std::filesystem;

namespace {
const fs::path kShapes = fs::path(CALIBER_SOURCE_DIR) / "shapes";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// The ShapeError message of loading `text`, or "" when it loads.
std::string error_of(const std::string& text) {
  TempDir dir;
  write(dir.path() / "bad.yaml", text);
  try {
    (void)ShapeSet::load(dir.path() / "bad.yaml");
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::vector<Shape>& v, const Shape& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST(Shapes, ParseLevel) {
  EXPECT_EQ(parse_word<Level>("core"), Level::core);
  EXPECT_EQ(parse_word<Level>("comprehensive"), Level::comprehensive);
  EXPECT_FALSE(parse_word<Level>("Core").has_value());
  EXPECT_FALSE(parse_word<Level>("bogus").has_value());
  EXPECT_FALSE(parse_word<Level>("").has_value());
  EXPECT_STREQ(to_string(Level::core), "core");
  EXPECT_STREQ(to_string(Level::comprehensive), "comprehensive");
}

TEST(Shapes, CoreFileCountsPerLevel) {
  const auto set = ShapeSet::load(kShapes / "core.yaml");
  struct Want {
    const char* op;
    std::size_t core, comprehensive;
  };
  // core: the issue's family lists; comprehensive adds the sections of core.yaml and models/.
  for (const Want w :
       {Want{"mm", 5, 89}, Want{"bmm", 5, 89}, Want{"add", 5, 11}, Want{"sum", 6, 12},
        Want{"nonzero", 6, 12}, Want{"softmax", 5, 10}, Want{"sort", 4, 7}, Want{"fft", 4, 7},
        Want{"embedding", 3, 6}, Want{"rand", 5, 9}}) {
    EXPECT_EQ(set.shapes_for(w.op, "", Level::core).size(), w.core) << w.op;
    EXPECT_EQ(set.shapes_for(w.op, "", Level::comprehensive).size(), w.comprehensive) << w.op;
  }
  const auto mm = set.shapes_for("mm", "blas", Level::core);
  EXPECT_EQ(mm.front(), (Shape{2, 384, 384, 384}));
  EXPECT_EQ(mm.back(), (Shape{16, 4096, 4096, 4096}));
  EXPECT_TRUE(contains(set.shapes_for("sum", "reduce", Level::core), Shape{1048576}));
  EXPECT_FALSE(contains(set.shapes_for("add", "elementwise", Level::core), Shape{1048576}));
}

TEST(Shapes, ComprehensiveGrowsMmSeveralFold) {
  const auto set = ShapeSet::load(kShapes / "core.yaml");
  const auto core = set.shapes_for("mm", "blas", Level::core);
  const auto comp = set.shapes_for("mm", "blas", Level::comprehensive);
  EXPECT_GE(comp.size(), 4 * core.size());
  // Core shapes come first, in order.
  ASSERT_GT(comp.size(), core.size());
  EXPECT_TRUE(std::equal(core.begin(), core.end(), comp.begin()));
}

TEST(Shapes, ModelShapesOnlyAtComprehensive) {
  const auto set = ShapeSet::load(kShapes / "core.yaml");
  const auto core = set.shapes_for("mm", "blas", Level::core);
  const auto comp = set.shapes_for("mm", "blas", Level::comprehensive);
  for (const Shape& s :
       {Shape{1, 8192, 128256, 4096}, Shape{1, 1, 152064, 3584}, Shape{1, 512, 28672, 4096},
        Shape{1, 4096, 3584, 18944}, Shape{1, 16, 16, 151936}}) {
    EXPECT_FALSE(contains(core, s));
    EXPECT_TRUE(contains(comp, s));
  }
  // Every (N, K) of both models at every M.
  std::size_t model_shapes = 0;
  for (const auto& s : comp) {
    if (s[0] == 1 && (s[3] == 4096 || s[3] == 14336 || s[3] == 3584 || s[3] == 18944)) {
      ++model_shapes;
    }
  }
  EXPECT_EQ(model_shapes, 80u);
  // Model GEMMs are for BLAS only.
  EXPECT_FALSE(contains(set.shapes_for("add", "", Level::comprehensive), Shape{1, 1, 6144, 4096}));
}

TEST(Shapes, HostFile) {
  const auto set = ShapeSet::load(kShapes / "host" / "core.yaml");
  for (const char* op : {"add", "sum", "softmax", "mm", "sort"}) {
    const auto core = set.shapes_for(op, "", Level::core);
    const auto comp = set.shapes_for(op, "", Level::comprehensive);
    EXPECT_FALSE(core.empty()) << op;
    EXPECT_GT(comp.size(), core.size()) << op;
    for (const auto& s : comp) {
      std::int64_t n = 1;
      for (auto d : s) n *= d;
      // Elements, or multiply-adds for (B, M, N, K): small enough for two host cores.
      EXPECT_LE(n, std::int64_t{1} << 26) << op;
    }
  }
}

TEST(Shapes, FamilyFallback) {
  const auto set = ShapeSet::parse(R"(
families:
  pointwise: [[8], [16]]
  reduction: [[32]]
  blas: [[1, 2, 3, 4]]
ops:
  mul: [[99]]
  gemm_like: {family: blas}
comprehensive:
  families:
    pointwise: [[64], [8]]
  ops:
    mul: [[100]]
)",
                                   ".");
  // An op the file does not name takes the family its caller gives, in either spelling.
  EXPECT_EQ(set.shapes_for("relu", "pointwise", Level::core), (std::vector<Shape>{{8}, {16}}));
  EXPECT_EQ(set.shapes_for("relu", "elementwise", Level::core), (std::vector<Shape>{{8}, {16}}));
  EXPECT_EQ(set.shapes_for("prod", "reduce", Level::core), (std::vector<Shape>{{32}}));
  // Duplicates of core shapes are dropped from the additions.
  EXPECT_EQ(set.shapes_for("relu", "pointwise", Level::comprehensive),
            (std::vector<Shape>{{8}, {16}, {64}}));
  // The file's mapping wins over the caller's family.
  EXPECT_EQ(set.shapes_for("gemm_like", "pointwise", Level::core),
            (std::vector<Shape>{{1, 2, 3, 4}}));
  // An op's own list replaces its family's at each level.
  EXPECT_EQ(set.shapes_for("mul", "pointwise", Level::core), (std::vector<Shape>{{99}}));
  EXPECT_EQ(set.shapes_for("mul", "pointwise", Level::comprehensive),
            (std::vector<Shape>{{99}, {100}}));
  EXPECT_TRUE(set.shapes_for("unknown", "nofamily", Level::comprehensive).empty());
  EXPECT_FALSE(set.declared_level().has_value());
}

TEST(Shapes, ArchiveRoundTrips) {
  const auto set = ShapeSet::load(kShapes / "core.yaml");
  std::map<std::string, std::vector<Shape>> used;
  for (const char* op : {"mm", "softmax", "sort"}) {
    used[op] = set.shapes_for(op, "", Level::comprehensive);
  }
  const std::string text = ShapeSet::archive_yaml(Level::comprehensive, "shapes/core.yaml", used);
  EXPECT_NE(text.find("level: comprehensive"), std::string::npos);
  EXPECT_NE(text.find("source: shapes/core.yaml"), std::string::npos);

  TempDir dir;
  write(dir.path() / "shapes.yaml", text);
  const auto back = ShapeSet::load(dir.path() / "shapes.yaml");
  EXPECT_EQ(back.declared_level(), Level::comprehensive);
  for (const auto& [op, shapes] : used) {
    EXPECT_EQ(back.shapes_for(op, "", Level::core), shapes) << op;
    EXPECT_EQ(back.shapes_for(op, "", Level::comprehensive), shapes) << op;
  }
  EXPECT_TRUE(back.shapes_for("add", "pointwise", Level::core).empty());  // only what was used

  const auto core_text = ShapeSet::archive_yaml(Level::core, "x.yaml", {{"add", {{4, 4}}}});
  EXPECT_EQ(ShapeSet::parse(core_text, ".").declared_level(), Level::core);
}

TEST(Shapes, BadFilesRefused) {
  TempDir dir;
  try {
    (void)ShapeSet::load(dir.path() / "nope.yaml");
    ADD_FAILURE() << "missing file accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.yaml"), std::string::npos);
  }
  EXPECT_THROW((void)ShapeSet::load(dir.path()), ShapeError);  // a directory

  const std::string malformed = error_of("families:\n  pointwise: [[1, 2]\nops: {}\n");
  EXPECT_NE(malformed.find("bad.yaml"), std::string::npos) << malformed;
  EXPECT_NE(malformed.find("malformed YAML at line"), std::string::npos) << malformed;

  for (const char* bad : {"families: {pointwise: [[64, abc]]}", "families: {pointwise: [[1.5]]}",
                          "families: {pointwise: [[0, 4]]}", "families: {pointwise: [[-3]]}",
                          "families: {pointwise: [[99999999999999999999]]}"}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("dimension"), std::string::npos) << bad << " -> " << e;
    EXPECT_NE(e.find("bad.yaml:1:"), std::string::npos) << bad << " -> " << e;
  }
  EXPECT_NE(error_of("families: {pointwise: [64, 64]}").find("non-empty list"), std::string::npos);
  EXPECT_NE(error_of("families: {pointwise: [[]]}").find("non-empty list"), std::string::npos);
  EXPECT_NE(error_of("familes: {pointwise: [[64]]}").find("unknown key 'familes'"),
            std::string::npos);
  EXPECT_NE(error_of("comprehensive: {shapes: []}").find("unknown key 'shapes'"),
            std::string::npos);
  EXPECT_NE(error_of("level: bogus\n").find("core or comprehensive"), std::string::npos);
  EXPECT_NE(error_of("ops: {mm: {famly: blas}}").find("op mm"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("ops: {[mm]: [[1]]}").find("plain name"), std::string::npos);
  EXPECT_NE(error_of("- [1, 2]").find("must be a map"), std::string::npos);
  EXPECT_EQ(error_of("families: {pointwise: [[64, 64]]}"), "");
}

// One list used through a YAML alias many times expands every time: past kMaxShapesPerFile
// shapes in all (an include's lists count too) the file is refused before the next list is
// expanded, however many aliases follow (2000 aliases of 100000 shapes took 284 s and 11 GB).
TEST(Shapes, AliasBombIsRefusedByTheTotal) {
  std::string big = "ops:\n  big: &L [";
  for (int i = 1; i <= 100000; ++i) big += (i > 1 ? ",[" : "[") + std::to_string(i) + "]";
  big += "]\n";
  std::string bomb = big;
  for (int i = 0; i < 2000; ++i) bomb += "  op" + std::to_string(i) + ": *L\n";
  // CPU time, not wall time: a loaded host (ASan, ctest -j2) stretched the wall past the bound,
  // while the expansion this guards against costs minutes of CPU anywhere.
  const std::clock_t c0 = std::clock();
  const std::string e = error_of(bomb);
  const double s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  std::cout << "alias bomb refused after " << s << " s of CPU\n";
  EXPECT_NE(e.find("op op9: its 100000 shapes take the shape file past 1000000 shapes in all"),
            std::string::npos)
      << e.substr(0, 300);
  EXPECT_NE(e.find("bad.yaml:"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(s, 60.0) << "the refusal comes before the aliases are all expanded (s of CPU)";
  // Nine uses of the list (900000 shapes) are within the ceiling.
  std::string nine = big;
  for (int i = 0; i < 9; ++i) nine += "  op" + std::to_string(i) + ": *L\n";
  EXPECT_EQ(error_of(nine), "");

  // An included file's lists count toward the including file's total.
  TempDir dir;
  std::string inc = "families:\n  f0: &L [";
  for (int i = 1; i <= 100000; ++i) inc += (i > 1 ? ",[" : "[") + std::to_string(i) + "]";
  inc += "]\nops:\n";
  for (int i = 0; i < 5; ++i) inc += "  x" + std::to_string(i) + ": *L\n";
  write(dir.path() / "inc.yaml", inc);
  write(dir.path() / "top.yaml", "ops:\n" + big.substr(5) +
                                     "comprehensive:\n  include: [inc.yaml]\n" +
                                     "  ops: {a: *L, b: *L, c: *L, d: *L}\n");
  try {
    (void)ShapeSet::load(dir.path() / "top.yaml");
    ADD_FAILURE() << "11 lists of 100000 shapes across two files were accepted";
  } catch (const ShapeError& e2) {
    EXPECT_NE(std::string(e2.what()).find("1000000 shapes in all"), std::string::npos) << e2.what();
  }
}

TEST(Shapes, IncludesResolveRelativeAndReportTheirErrors) {
  TempDir dir;
  write(dir.path() / "main.yaml",
        "families: {blas: [[1, 2, 2, 2]]}\ncomprehensive: {include: [m/a.yaml]}\n");
  write(dir.path() / "m" / "a.yaml", "families: {blas: [[1, 8, 8, 8]]}\ninclude: [b.yaml]\n");
  write(dir.path() / "m" / "b.yaml", "ops: {mm: [[1, 9, 9, 9]]}\n");
  const auto set = ShapeSet::load(dir.path() / "main.yaml");
  EXPECT_EQ(set.shapes_for("bmm", "blas", Level::comprehensive),
            (std::vector<Shape>{{1, 2, 2, 2}, {1, 8, 8, 8}}));
  EXPECT_EQ(set.shapes_for("mm", "blas", Level::comprehensive),
            (std::vector<Shape>{{1, 2, 2, 2}, {1, 9, 9, 9}}));
  EXPECT_EQ(set.shapes_for("mm", "blas", Level::core), (std::vector<Shape>{{1, 2, 2, 2}}));

  write(dir.path() / "m" / "b.yaml", "families: {blas: [[1, x]]}\n");
  try {
    (void)ShapeSet::load(dir.path() / "main.yaml");
    ADD_FAILURE() << "bad include accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("b.yaml:1:"), std::string::npos) << e.what();
  }
  write(dir.path() / "m" / "b.yaml", "include: [a.yaml]\n");
  EXPECT_THROW((void)ShapeSet::load(dir.path() / "main.yaml"), ShapeError);  // a cycle
  fs::remove(dir.path() / "m" / "b.yaml");
  EXPECT_THROW((void)ShapeSet::load(dir.path() / "main.yaml"), ShapeError);  // missing include
}
