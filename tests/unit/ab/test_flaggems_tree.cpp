// A FlagGems checkout as batch and ab see it (batch/flaggems_tree.hpp): the root's check, its op
// list, a named op, the --flaggems value among run flags, and ab's two-tree sides.
#include "batch/flaggems_tree.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "ab/ab.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using caliber::testing::TempDir;

namespace caliber::run {
namespace {

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "# stand-in\n";
}

fs::path make_tree(const fs::path& root, const std::vector<std::string>& files) {
  touch(root / "benchmark" / "conftest.py");
  touch(root / "benchmark" / "base.py");
  for (const auto& f : files) touch(root / "benchmark" / f);
  return root;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FlagGemsTree, OpsAreTheBenchmarkFilesSorted) {
  TempDir t;
  const auto root = make_tree(
      t.path() / "fg", {"test_mm.py", "test_add.py", "helper.py", "test_.py", "test_norm.txt"});
  fs::create_directories(root / "benchmark" / "test_dir.py");  // a directory is not a file
  EXPECT_EQ(flaggems_ops(root), (std::vector<std::string>{"add", "mm"}));
  EXPECT_EQ(refusal([&] { check_flaggems_root("--flaggems", root); }), "");
}

TEST(FlagGemsTree, RootRefusalsNameTheKnobAndTheValue) {
  TempDir t;
  const std::string missing = (t.path() / "nope").string();
  EXPECT_EQ(refusal([&] { check_flaggems_root("--flaggems-a", missing); }),
            "--flaggems-a: '" + missing + "' is not a directory; allowed: a FlagGems checkout");
  fs::create_directories(t.path() / "empty");
  EXPECT_NE(refusal([&] {
              check_flaggems_root("--flaggems", t.path() / "empty");
            }).find("has no benchmark/conftest.py"),
            std::string::npos);
  touch(t.path() / "nobase" / "benchmark" / "conftest.py");
  EXPECT_NE(refusal([&] {
              check_flaggems_root("--flaggems", t.path() / "nobase");
            }).find("has no benchmark/base.py"),
            std::string::npos);
  const auto bare = make_tree(t.path() / "bare", {});
  EXPECT_NE(refusal([&] { check_flaggems_root("--flaggems", bare); }).find("has no test_*.py"),
            std::string::npos);
}

TEST(FlagGemsTree, NamedOpsAreFilesOfTheTree) {
  TempDir t;
  const auto root = make_tree(t.path() / "fg", {"test_add.py", "test_mm.py"});
  EXPECT_EQ(flaggems_op_of("op", root, "add"), "add");
  EXPECT_EQ(flaggems_op_of("op", root, "test_mm.py"), "mm");
  EXPECT_EQ(flaggems_op_of("op", root, (root / "benchmark" / "test_mm.py").string()), "mm");
  const std::string msg = refusal([&] { (void)flaggems_op_of("op", root, "softmax"); });
  EXPECT_NE(msg.find("op: 'softmax' is not a benchmark of the FlagGems tree"), std::string::npos);
  EXPECT_NE(msg.find("allowed: add, mm"), std::string::npos);
  EXPECT_NE(refusal([&] { (void)flaggems_op_of("op", root, "../x"); }), "");
}

TEST(FlagGemsTree, RootAmongRunFlags) {
  EXPECT_EQ(flaggems_root_of({"--tune=record", "--flaggems=/a/b"}), "/a/b");
  EXPECT_EQ(flaggems_root_of({"--flaggems", "/c", "--level=core"}), "/c");
  EXPECT_EQ(flaggems_root_of({"--py-ops=x.py"}), "");
}

TEST(FlagGemsTree, AbSidesOfTwoTrees) {
  TempDir t;
  const auto a = make_tree(t.path() / "a", {"test_add.py"});
  const auto b = make_tree(t.path() / "b", {"test_add.py"});
  AbSide sa, sb;
  add_flaggems_sides(sa, sb, a.string(), b.string(), {}, false);
  parse_ab_switch({}, {}, sa, sb);
  EXPECT_EQ(sa.args, (std::vector<std::string>{"--flaggems=" + fs::canonical(a).string()}));
  EXPECT_EQ(sb.args, (std::vector<std::string>{"--flaggems=" + fs::canonical(b).string()}));
  // One tree without the other, with --ops-lib-a/b, with --flaggems, or the same tree twice.
  AbSide x, y;
  EXPECT_NE(refusal([&] {
              add_flaggems_sides(x, y, a.string(), "", {}, false);
            }).find("--flaggems-a: '" + a.string() + "' is given without --flaggems-b"),
            std::string::npos);
  EXPECT_NE(refusal([&] { add_flaggems_sides(x, y, a.string(), b.string(), {}, true); }), "");
  EXPECT_NE(refusal([&] {
              add_flaggems_sides(x, y, a.string(), b.string(), {"--flaggems=" + a.string()}, false);
            }).find("one tree for both sides"),
            std::string::npos);
  AbSide p, q;
  add_flaggems_sides(p, q, a.string(), (t.path() / "a" / ".").string(), {}, false);
  EXPECT_NE(refusal([&] { parse_ab_switch({}, {}, p, q); }).find("identical"), std::string::npos);
  AbSide m, n;
  EXPECT_NE(refusal([&] {
              add_flaggems_sides(m, n, a.string(), (t.path() / "none").string(), {}, false);
            }).find("--flaggems-b: '"),
            std::string::npos);
}

}  // namespace
}  // namespace caliber::run
