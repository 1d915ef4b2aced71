#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "records/runlog.hpp"
#include "temp_dir.hpp"

using caliber::testing::TempDir;

using namespace caliber::core;
using nlohmann::json;

namespace {
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(RunLog, WriteThenRead) {
  TempDir dir;
  const auto file = dir.path() / run_log_file;
  {
    RunLogWriter w(file);
    w.append({{"type", "header"}, {"backend", "cpu"}});
    w.append({{"type", "case"}, {"op", "add"}, {"note", "two\nlines"}});
    // Flushed before returning: visible to a reader while the writer is still open.
    const auto mid = read_run_log(file);
    EXPECT_EQ(mid.cases.size(), 1u);
    EXPECT_FALSE(mid.footer.has_value());
    w.append({{"type", "case"}, {"op", "mm"}});
    w.append({{"type", "footer"}, {"cases", 2}});
  }
  const std::string text = slurp(file);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);  // one row per line
  const auto log = read_run_log(file);
  EXPECT_EQ(log.header->identity["backend"], "cpu");
  ASSERT_EQ(log.cases.size(), 2u);
  EXPECT_EQ(log.cases[0].op, "add");
  EXPECT_EQ(log.cases[0].extra["note"], "two\nlines");
  EXPECT_EQ(log.cases[1].op, "mm");
  EXPECT_EQ(log.footer->cases, 2u);
  EXPECT_FALSE(log.truncated);
  EXPECT_EQ(log.bad_lines, 0);
}

TEST(RunLog, WriterAppendsToExisting) {
  TempDir dir;
  const auto file = dir.path() / "run.log";
  { RunLogWriter(file).append({{"type", "case"}, {"op", "a"}}); }
  { RunLogWriter(file).append({{"type", "case"}, {"op", "b"}}); }
  const auto log = read_run_log(file);
  ASSERT_EQ(log.cases.size(), 2u);
  EXPECT_EQ(log.cases[1].op, "b");
}

TEST(RunLog, TruncatedLastLineTolerated) {
  TempDir dir;
  const auto file = dir.path() / "run.log";
  {
    std::ofstream out(file);
    out << R"({"type":"header","backend":"cpu"})"
        << "\n"
        << R"({"type":"case","op":"add","latency_ms":0.5})"
        << "\n"
        << R"({"type":"case","op":"mm","laten)";
  }
  const auto log = read_run_log(file);
  EXPECT_TRUE(log.truncated);
  EXPECT_EQ(log.bad_lines, 0);
  ASSERT_EQ(log.cases.size(), 1u);
  EXPECT_EQ(log.cases[0].op, "add");
  EXPECT_FALSE(log.footer.has_value());

  // A writer resuming after the cut starts on a fresh line, so its row survives.
  { RunLogWriter(file).append({{"type", "footer"}}); }
  const auto again = read_run_log(file);
  EXPECT_FALSE(again.truncated);
  EXPECT_EQ(again.bad_lines, 1);  // the fragment is now an inner damaged line
  EXPECT_TRUE(again.footer.has_value());
}

TEST(RunLog, BadInnerLinesCounted) {
  TempDir dir;
  const auto file = dir.path() / "run.log";
  {
    std::ofstream out(file);
    out << "not json\n"
        << R"({"type":"case","op":"add"})"
        << "\n"
        << "\n"  // blank lines are ignored
        << R"([1,2,3])"
        << "\n"  // not an object
        << R"({"op":"no type"})"
        << "\n"  // no type
        << R"({"type":"weird"})"
        << "\n"                              // unknown type
        << R"({"type":"case","op":"sum"})";  // complete, just no newline at the end
  }
  const auto log = read_run_log(file);
  EXPECT_FALSE(log.truncated);
  EXPECT_EQ(log.bad_lines, 4);
  ASSERT_EQ(log.cases.size(), 2u);
  EXPECT_EQ(log.cases[1].op, "sum");
  EXPECT_FALSE(log.header.has_value());
}

TEST(RunLog, UnreadableThrows) {
  TempDir dir;
  EXPECT_THROW((void)read_run_log(dir.path() / "missing.log"), std::runtime_error);
  EXPECT_THROW(RunLogWriter(dir.path() / "no" / "such" / "dir" / "run.log"), std::runtime_error);
}

// docs/run-log.md, Compatibility: no schema is 0 and is read; this schema and older are read; a
// newer one, or one that is not an integer, is refused with a message naming the file.
TEST(RunLog, SchemaCompatibility) {
  TempDir dir;
  auto write = [&](const json& header) {
    const auto file = dir.path() / run_log_file;
    std::filesystem::remove(file);
    RunLogWriter w(file);
    w.append(header);
    w.append({{"type", "case"}, {"op", "add"}});
    return file;
  };
  EXPECT_EQ(read_run_log(write({{"type", "header"}})).schema, 0);
  EXPECT_EQ(read_run_log(write({{"type", "header"}, {"schema", schema_version}})).schema,
            schema_version);
  EXPECT_EQ(read_run_log(write({{"type", "header"}, {"schema", 0}})).cases.size(), 1u);
  try {
    (void)read_run_log(write({{"type", "header"}, {"schema", schema_version + 1}}));
    FAIL() << "a newer schema was read";
  } catch (const SchemaError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("run.log"), std::string::npos) << msg;
    EXPECT_NE(msg.find("schema " + std::to_string(schema_version + 1)), std::string::npos) << msg;
    EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  }
  EXPECT_THROW((void)read_run_log(write({{"type", "header"}, {"schema", "1"}})), SchemaError);
  EXPECT_THROW((void)read_run_log(write({{"type", "header"}, {"schema", 1.5}})), SchemaError);
  EXPECT_EQ(check_schema(json::object(), "x"), 0);
  EXPECT_THROW((void)check_schema({{"schema", -1}}, "x"), SchemaError);
}
