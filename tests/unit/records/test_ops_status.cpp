// ops_status.csv (records/ops_status.hpp): its columns, quoting and status words, and whose rows
// a run.log row is (batch_op_of).
#include "records/ops_status.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace caliber::core;

TEST(OpsStatus, CsvRoundTripWithQuoting) {
  std::vector<OpStatusRow> rows(2);
  rows[0] = {"add", OpStatus::ok, "cpu", "0", "direct", 12, 1.5, "", "add-20261202-070000"};
  rows[1] = {
      "mm", OpStatus::crashed, "cpu", "1", "", 0, 0.25, "crashed: SIGSEGV, \"boom\"\nsecond line",
      ""};
  const std::string csv = ops_status_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "op,status,backend,device,timer,rows,duration_s,reason,run");
  const auto back = parse_ops_status_csv(csv);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].op, "add");
  EXPECT_EQ(back[0].rows, 12);
  EXPECT_EQ(back[0].run, "add-20261202-070000");
  EXPECT_DOUBLE_EQ(back[0].duration_s, 1.5);
  EXPECT_EQ(back[1].status, OpStatus::crashed);
  EXPECT_EQ(back[1].reason, "crashed: SIGSEGV, \"boom\" second line");  // kept on one line
}

TEST(OpsStatus, MissingColumnsAreRefused) {
  EXPECT_THROW((void)parse_ops_status_csv("name,state\nadd,ok\n"), std::runtime_error);
  EXPECT_THROW((void)parse_ops_status_csv(""), std::runtime_error);
}

// A quote still open at the end swallowed every later row into one field: the file read as the
// rows before it, and a resume's rewrite lost the others. It does not parse.
TEST(OpsStatus, AnUnclosedQuoteIsRefused) {
  const std::string text = "op,status,reason\nadd,ok,\"never closed\nmm,failed,x\nsum,crashed,y\n";
  try {
    (void)parse_ops_status_csv(text);
    ADD_FAILURE() << "an unclosed quote was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("opened on line 2 is never closed"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)parse_csv("a,\"b"), std::runtime_error);
  EXPECT_EQ(parse_csv("a,\"b\"\"c\"\n").at(0).at(1), "b\"c");  // a closed quote still reads
}

TEST(OpsStatus, EveryStatusWordReadsBack) {
  // Every status word caliber writes reads back as itself; any other word (a hand-edited file) as
  // pending, which resume runs again as it runs every status but ok.
  for (const auto& sp : spellings<OpStatus>())
    EXPECT_EQ(parse_ops_status_csv(std::string("op,status\nadd,") + sp.word + "\n")[0].status,
              sp.value)
        << sp.word;
  EXPECT_EQ(parse_ops_status_csv("op,status\nadd,weird\n")[0].status, OpStatus::pending);
}

TEST(OpsStatus, TheRunColumnReadsBackAsANameOnly) {
  std::vector<OpStatusRow> rows(2);
  rows[0].op = "add";
  rows[0].status = OpStatus::ok;
  rows[0].run = "group-add-3-20261202-070000";
  rows[1].op = "sum";
  const auto back = parse_ops_status_csv(ops_status_csv(rows));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].run, "group-add-3-20261202-070000");
  EXPECT_EQ(back[1].run, "");
  // A hand-edited value that would lead out of the batch directory is not followed.
  for (const char* bad : {"../elsewhere", "/etc", "a/b", "..", "."})
    EXPECT_EQ(parse_ops_status_csv(std::string("op,status,run\nadd,ok,") + bad + "\n")[0].run, "")
        << bad;
  // A file written before the column: every run unknown.
  EXPECT_EQ(parse_ops_status_csv("op,status,rows\nadd,ok,3\n")[0].run, "");
}

TEST(OpsStatus, ARowBelongsToItsFlagGemsFileElseToItsOp) {
  CaseRow r;
  r.op = "softmax_backward";
  EXPECT_EQ(batch_op_of(r), "softmax_backward");
  r.params = std::map<std::string, std::string>{
      {"test", "benchmark/test_softmax.py::test_softmax_backward[f16]"}};
  EXPECT_EQ(batch_op_of(r), "softmax");  // test_softmax.py yields softmax and softmax_backward
  r.params = std::map<std::string, std::string>{{"test", "benchmark/test_add.py"}};
  EXPECT_EQ(batch_op_of(r), "add");
  for (const char* other : {"", "benchmark/conftest.py::x", "test_.py::x", "notes.txt"}) {
    r.params = std::map<std::string, std::string>{{"test", other}};
    EXPECT_EQ(batch_op_of(r), "softmax_backward") << other;
  }
  r.params = std::map<std::string, std::string>{{"B", "4"}};  // a corpus variant, no test
  EXPECT_EQ(batch_op_of(r), "softmax_backward");
}
