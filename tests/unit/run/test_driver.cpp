// The run driver in process (run_benchmark) on the cpu backend, with the tiny ops of
// unit_ops.hpp and a temporary --out: the run directory's files, each case's row and status, the
// counts and the exit code, a raising op failing alone, and bad input refused before anything is
// written, naming its knob.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "records/runlog.hpp"
#include "run/driver.hpp"
#include "temp_dir.hpp"
#include "unit_ops.hpp"

namespace caliber::run {
namespace {

namespace fs = std::filesystem;
using caliber::testing::TempDir;
using nlohmann::json;

// A fast, fixed run of `ops` on the cpu backend: shapes N=256 and N=512, f32, seed 7, into t.
core::Knobs fast_knobs(const TempDir& t, std::vector<std::string> ops) {
  core::Knobs k = test::fast_cpu_knobs();
  k.ops = std::move(ops);
  k.shapes = {{256}, {512}};
  k.dtypes = {"f32"};
  k.tune_cache = (t.path() / "tune.db").string();
  k.out = (t.path() / "runs").string();
  k.name = "unit";
  k.seed = 7;
  return k;
}

struct Ran {
  RunOutcome outcome;
  core::RunLog log;
  // The rows as written (JSON), so that the checks read what a reader of run.log reads.
  json header, footer;
  std::vector<json> cases;
  std::string out, err;
};

RunRequest request_of(const core::Knobs& k) {
  RunRequest r;
  r.knobs = k;
  return r;
}

Ran run(const core::Knobs& k) {
  std::ostringstream out, err;
  Ran r;
  r.outcome = run_benchmark(request_of(k), out, err);
  r.log = core::read_run_log(r.outcome.run_dir / core::run_log_file);
  if (r.log.header) r.header = core::to_json(*r.log.header);
  if (r.log.footer) r.footer = core::to_json(*r.log.footer);
  for (const auto& row : r.log.cases) r.cases.push_back(core::to_json(row));
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string str(const json& row, const char* key) {
  return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : "";
}

TEST(RunBenchmark, EachCaseGetsItsRowStatusAndTheFooterCountsThem) {
  TempDir t;
  const Ran r = run(fast_knobs(t, {"unit_raise", "unit_ok", "unit_skip", "unit_wrong"}));
  EXPECT_EQ(r.outcome.exit_code, 1);  // a case failed
  EXPECT_EQ(r.outcome.ok, 2);
  EXPECT_EQ(r.outcome.failed, 4);
  EXPECT_EQ(r.outcome.skipped, 2);
  ASSERT_EQ(r.cases.size(), 8u);
  EXPECT_EQ(r.header["cases"], 8);
  EXPECT_EQ(r.header["seed"], 7);
  const std::vector<std::string> nodes = {"unit_raise[f32-N256]", "unit_raise[f32-N512]",
                                          "unit_ok[f32-N256]",    "unit_ok[f32-N512]",
                                          "unit_skip[f32-N256]",  "unit_skip[f32-N512]",
                                          "unit_wrong[f32-N256]", "unit_wrong[f32-N512]"};
  const std::vector<std::string> statuses = {"failed",  "failed",  "ok",     "ok",
                                             "skipped", "skipped", "failed", "failed"};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const json& row = r.cases[i];
    EXPECT_EQ(str(row, core::field::node), nodes[i]) << row.dump();
    EXPECT_EQ(str(row, core::field::status), statuses[i]) << row.dump();
  }
  // The raising candidate fails its own case with its message; the next op is not touched.
  EXPECT_NE(str(r.cases[0], core::field::error).find(test::kPlantedError), std::string::npos)
      << r.cases[0].dump();
  for (int i : {2, 3}) {
    const json& row = r.cases[i];
    EXPECT_GT(row[core::field::latency_ms].get<double>(), 0) << row.dump();
    EXPECT_GT(row[core::field::latency_base_ms].get<double>(), 0) << row.dump();
    EXPECT_EQ(row[core::field::providers].size(), 2u);
  }
  EXPECT_EQ(str(r.cases[4], core::field::reason), test::kSkipReason);
  EXPECT_EQ(r.cases[6][core::field::accuracy], false) << r.cases[6].dump();
  ASSERT_TRUE(r.footer.is_object());
  EXPECT_EQ(r.footer["ok"], 2);
  EXPECT_EQ(r.footer["failed"], 4);
  EXPECT_EQ(r.footer["skipped"], 2);
  EXPECT_NE(r.out.find("ok 2, failed 4, skipped 2"), std::string::npos) << r.out;
}

TEST(RunBenchmark, AllOkExitsZeroAndRecordsTheRun) {
  TempDir t;
  const Ran r = run(fast_knobs(t, {"unit_ok"}));
  EXPECT_EQ(r.outcome.exit_code, 0);
  EXPECT_EQ(r.outcome.ok, 2);
  EXPECT_EQ(r.outcome.run_dir.parent_path(), t.path() / "runs");
  EXPECT_EQ(r.outcome.run_dir.filename().string().rfind("unit", 0), 0u);
  json identity = json::parse(std::ifstream(r.outcome.run_dir / "run_identity.json"));
  EXPECT_EQ(identity["backend"], "cpu");
  EXPECT_EQ(identity["ops"], json::array({"unit_ok"}));
  EXPECT_EQ(identity["seed"], 7);
  EXPECT_TRUE(fs::is_regular_file(r.outcome.run_dir / "shapes.yaml"));
  EXPECT_FALSE(r.log.truncated);
  EXPECT_EQ(r.log.bad_lines, 0);
}

TEST(RunBenchmark, ACaseBeyondFreeMemoryIsSkippedSayingHowMuch) {
  TempDir t;
  const Ran r = run(fast_knobs(t, {"unit_huge"}));
  EXPECT_EQ(r.outcome.exit_code, 0);
  EXPECT_EQ(r.outcome.skipped, 2);
  EXPECT_NE(str(r.cases[0], core::field::reason).find("needs"), std::string::npos)
      << r.cases[0].dump();
}

// Each bad knob: a UsageError that names the knob (and the value), and no --out directory.
struct BadKnob {
  const char* what;
  void (*spoil)(core::Knobs&);
  const char* says;
};

void PrintTo(const BadKnob& b, std::ostream* os) {
  *os << b.what;
}

class RunBenchmarkRefuses : public ::testing::TestWithParam<BadKnob> {};

TEST_P(RunBenchmarkRefuses, NamingTheKnobAndWritingNothing) {
  TempDir t;
  core::Knobs k = fast_knobs(t, {"unit_ok"});
  GetParam().spoil(k);
  std::ostringstream out, err;
  try {
    (void)run_benchmark(request_of(k), out, err);
    FAIL() << GetParam().what << ": no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().says), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(t.path() / "runs")) << GetParam().what;
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, RunBenchmarkRefuses,
    ::testing::Values(
        BadKnob{"unknown op", [](core::Knobs& k) { k.ops = {"nope"}; },
                "unknown op 'nope' for backend cpu; ops: "},
        BadKnob{"dtype no op has", [](core::Knobs& k) { k.dtypes = {"bf16"}; }, "--dtypes: 'bf16'"},
        BadKnob{"node of no case",
                [](core::Knobs& k) {
                  k.ops.clear();
                  k.node = "unit_ok[f32-N7]";
                },
                "--node (TEST_NODE): 'unit_ok[f32-N7]' matches no case"},
        BadKnob{"node glob of no op",
                [](core::Knobs& k) {
                  k.ops.clear();
                  k.node = "zz*";
                },
                "--node (TEST_NODE): 'zz*' matches no op"},
        BadKnob{"shape of the wrong rank",
                [](core::Knobs& k) {
                  k.shapes = {{4, 4}};
                },
                "--shape: '4x4' does not fit op unit_ok"},
        BadKnob{"device", [](core::Knobs& k) { k.devices = {99}; }, "--devices: '99'"},
        BadKnob{"backend", [](core::Knobs& k) { k.backend = "nonesuch"; }, "--backend"},
        BadKnob{"replay source",
                [](core::Knobs& k) {
                  k.tune = core::TuneMode::replay;
                  k.replay_from = "/nonexistent/run";
                },
                "--replay-from (REPLAY_FROM): '/nonexistent/run'"},
        BadKnob{"parallel warmup", [](core::Knobs& k) { k.parallel_warmup = 3; },
                "--parallel-warmup (PARALLEL_WARMUP_GPUS): '3'"}),
    [](const auto& info) {
      std::string n = info.param.what;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

}  // namespace
}  // namespace caliber::run
