// Parallel warmup, the parts without child processes: the command line that rebuilds a shard's
// knobs, and the shard plan that parent and children must compute identically.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run/warmup_runner.hpp"
#include "settings/knobs.hpp"
#include "tune/cache.hpp"
#include "tune/warmup_settings.hpp"

namespace caliber::run {
namespace {

// Turns knobs_to_args' output back into the flag map resolve_knobs takes, the way the CLI does:
// leading words are positional ops, then flag/value pairs named by the knob table.
std::map<std::string, std::string> args_to_flags(const std::vector<std::string>& args) {
  std::map<std::string, std::string> flags;
  std::size_t i = 0;
  std::string ops;
  for (; i < args.size() && args[i].rfind("--", 0) != 0; ++i) {
    if (!ops.empty()) ops += ',';
    ops += args[i];
  }
  if (!ops.empty()) flags["ops"] = ops;
  for (; i < args.size(); i += 2) {
    const core::KnobSpec* spec = nullptr;
    for (const auto& s : core::knob_table())
      if (s.flag == args[i]) spec = &s;
    EXPECT_NE(spec, nullptr) << "knobs_to_args wrote a flag the knob table lacks: " << args[i];
    EXPECT_LT(i + 1, args.size()) << args[i] << " has no value";
    if (spec == nullptr || i + 1 >= args.size()) break;
    EXPECT_EQ(flags.count(spec->name), 0u) << args[i] << " given twice";
    flags[spec->name] = args[i + 1];
  }
  return flags;
}

// The path of a shared object mapped into this process: --ops-lib is checked to be a whole
// shared library of this machine when the knobs are resolved.
std::string loaded_shared_object() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash != std::string::npos && line.find(".so", slash) != std::string::npos)
      return line.substr(slash);
  }
  return "";
}

core::Knobs no_env(const std::map<std::string, std::string>& flags) {
  return core::resolve_knobs(flags, [](const std::string&) { return std::nullopt; });
}

TEST(WarmupArgs, RebuildTheKnobsThatDefineCasesAndTuning) {
  core::Knobs k = no_env({{"ops", "mm,softmax"},
                          {"op_file", "/tmp/ops.txt"},
                          {"dtypes", "f64,bf16"},
                          {"level", "comprehensive"},
                          {"shape_mode", "upstream"},
                          {"shapes_file", "/tmp/s.yaml"},
                          {"ops_lib", loaded_shared_object()},
                          {"backend", "cpu"},
                          {"timer", "direct"},
                          {"repeat", "3"},
                          {"quantiles", "0.2,0.5,0.8"},
                          {"l2", "warm"},
                          {"min_samples", "7"},
                          {"min_time", "0.125"},
                          {"max_noise", "0.0031"},
                          {"timeout", "2.75"},
                          {"warmup", "0.3"},
                          {"throttle_fraction", "0.6"},
                          {"capture_deny", "sort,rand"},
                          {"tune", "record"},
                          {"tune_cache", "/tmp/c.db"},
                          {"seed", "123456789"}});
  const core::Knobs r = no_env(args_to_flags(knobs_to_args(k)));
  EXPECT_EQ(r.ops, k.ops);
  EXPECT_EQ(r.op_file, k.op_file);
  EXPECT_EQ(r.dtypes, k.dtypes);
  EXPECT_EQ(r.level, core::Level::comprehensive);
  EXPECT_EQ(r.shape_mode, core::ShapeMode::upstream);
  EXPECT_EQ(r.shapes_file, k.shapes_file);
  EXPECT_EQ(r.ops_lib, k.ops_lib);
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.timer, core::TimerKind::direct);
  EXPECT_EQ(r.repeat, 3);
  EXPECT_EQ(r.quantiles, k.quantiles);
  EXPECT_EQ(r.l2, core::L2Policy::warm);
  EXPECT_EQ(r.min_samples, 7);
  // Exactly equal, not nearly: a shard must tune with the budget its parent would have used.
  EXPECT_EQ(r.min_time_s, k.min_time_s);
  EXPECT_EQ(r.max_noise, k.max_noise);
  EXPECT_EQ(r.timeout_s, k.timeout_s);
  EXPECT_EQ(r.warmup_s, k.warmup_s);
  EXPECT_EQ(r.throttle_fraction, k.throttle_fraction);
  EXPECT_EQ(r.capture_deny, k.capture_deny);
  EXPECT_EQ(r.tune, core::TuneMode::record);
  EXPECT_EQ(r.tune_cache, k.tune_cache);
  EXPECT_EQ(r.seed, 123456789u);
}

TEST(WarmupArgs, NodeAndReturnModeSurvive) {
  core::Knobs k = no_env({{"node", "mm[f32-M128-N128-K128]"}, {"return_mode", "min"}});
  const core::Knobs r = no_env(args_to_flags(knobs_to_args(k)));
  EXPECT_EQ(r.node, "mm[f32-M128-N128-K128]");
  EXPECT_TRUE(r.ops.empty());
  EXPECT_EQ(r.return_mode, core::ReturnMode::min);
}

TEST(WarmupArgs, LeaveDevicesOutputAndTheWarmupItselfToTheCaller) {
  core::Knobs k = no_env(
      {{"devices", "3,1"}, {"out", "/tmp/elsewhere"}, {"name", "mine"}, {"parallel_warmup", "2"}});
  const auto args = knobs_to_args(k);
  for (const char* knob : {"devices", "out", "name", "parallel_warmup"}) {
    const std::string flag = core::find_knob(knob)->flag;
    EXPECT_EQ(std::count(args.begin(), args.end(), flag), 0) << flag << " must not reach a shard";
  }
  // A fresh seed (0) is not passed: the child has nothing to repeat.
  EXPECT_EQ(std::count(args.begin(), args.end(), core::find_knob("seed")->flag), 0);
}

Case make_case(const std::string& op, DType dt, std::vector<std::int64_t> shape, bool col = false) {
  Case c;
  c.op = op;
  c.dtype = dt;
  c.shape = std::move(shape);
  c.dim_names = {"M", "N", "K"};
  if (col) c.params["B"] = "col";
  return c;
}

std::vector<Case> mm_cases() {
  std::vector<Case> cs;
  for (std::int64_t s : {128, 256, 384, 512})
    for (DType dt : {DType::f32, DType::f64})
      for (bool col : {false, true}) cs.push_back(make_case("mm", dt, {s, s, s}, col));
  return cs;
}

TEST(WarmupPlan, EveryCaseOnExactlyOneShard) {
  const auto cases = mm_cases();
  std::vector<double> costs;
  for (const auto& c : cases) costs.push_back(static_cast<double>(c.shape[0] * c.shape[0]));
  for (int n : {1, 2, 3, 5}) {
    const auto plan = plan_warmup_shards(cases, costs, n);
    ASSERT_EQ(plan.size(), static_cast<std::size_t>(n));
    std::vector<int> seen(cases.size(), 0);
    for (const auto& shard : plan) {
      EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end()));
      for (std::size_t i : shard) ++seen.at(i);
    }
    for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(seen[i], 1) << cases[i].node_id();
  }
}

TEST(WarmupPlan, VariantsOfOneShapeShareTheirShard) {
  const auto cases = mm_cases();
  const std::vector<double> costs(cases.size(), 1.0);
  const auto plan = plan_warmup_shards(cases, costs, 3);
  std::map<std::string, std::set<std::size_t>> shard_of;  // op+dtype+shape -> shards
  for (std::size_t s = 0; s < plan.size(); ++s)
    for (std::size_t i : plan[s]) {
      Case base = cases[i];
      base.params.clear();
      shard_of[base.node_id()].insert(s);
    }
  EXPECT_EQ(shard_of.size(), cases.size() / 2);
  for (const auto& [node, shards] : shard_of) EXPECT_EQ(shards.size(), 1u) << node;
}

TEST(WarmupPlan, BalancedByCostAndDeterministic) {
  // One expensive shape and many cheap ones: the expensive pair alone on a shard.
  std::vector<Case> cases = {make_case("mm", DType::f32, {4096, 4096, 4096}),
                             make_case("mm", DType::f32, {4096, 4096, 4096}, true)};
  for (std::int64_t s = 1; s <= 6; ++s) cases.push_back(make_case("mm", DType::f32, {s, s, s}));
  std::vector<double> costs = {50, 50, 10, 10, 10, 10, 10, 10};
  const auto plan = plan_warmup_shards(cases, costs, 2);
  const auto again = plan_warmup_shards(cases, costs, 2);
  EXPECT_EQ(plan, again);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(plan[1], (std::vector<std::size_t>{2, 3, 4, 5, 6, 7}));
}

TEST(WarmupPlan, MoreShardsThanGroupsLeavesSomeEmpty) {
  const std::vector<Case> cases = {make_case("mm", DType::f32, {8, 8, 8}),
                                   make_case("mm", DType::f32, {8, 8, 8}, true)};
  const auto plan = plan_warmup_shards(cases, {1, 1}, 2);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].size() + plan[1].size(), 2u);
  EXPECT_TRUE(plan[0].empty() || plan[1].empty());
}

TEST(WarmupPlan, RefusesMismatchedCostsAndNoShards) {
  const auto cases = mm_cases();
  EXPECT_THROW((void)plan_warmup_shards(cases, {1.0}, 2), std::invalid_argument);
  EXPECT_THROW((void)plan_warmup_shards(cases, std::vector<double>(cases.size(), 1.0), 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace caliber::run

namespace caliber::run {
namespace {

namespace fs = std::filesystem;

// The merge job of a warmup across Slurm nodes: a shard without an exit record, or with rc != 0,
// is a failed shard with a note (its keys are tuned live later); the result is written for the
// batch; record mode is refused.
TEST(WarmupMergeJob, FailedAndMissingShardsAreNotedAndTheResultWritten) {
  const fs::path dir = fs::temp_directory_path() / ("caliber-merge-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "shard-0.exit") << "rc=0 node=n1 job=5 start_ns=1 end_ns=2\n";
  std::ofstream(dir / "shard-1.exit") << "rc=1 node=n2 job=6 start_ns=1 end_ns=2\n";
  std::ofstream(dir / "shard-1.log") << "tune shard 1/3: boom\n";
  core::Knobs k;
  k.tune_cache = (dir / "cache.db").string();
  std::ostringstream out, err;
  EXPECT_EQ(run_warmup_merge(k, dir, 3, out, err), 0);
  std::ifstream in(dir / kWarmupResultFile);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["shards"], 3);
  EXPECT_EQ(j["failed_shards"], 2) << j.dump();
  EXPECT_EQ(j["merged_into"], k.tune_cache);
  const std::string notes = j["notes"].dump();
  EXPECT_NE(notes.find("shard 1 (array task 1 on n2) failed: exit 1; log: tune shard 1/3: boom"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("shard 2 (array task 2) wrote no exit record"), std::string::npos) << notes;
  EXPECT_NE(out.str().find("parallel warmup: 3 shards, 0 keys"), std::string::npos) << out.str();
  EXPECT_EQ(warmup_from_json(j).failed_shards, 2);

  k.tune = core::TuneMode::record;
  EXPECT_THROW((void)run_warmup_merge(k, dir, 3, out, err), UsageError);
  fs::remove_all(dir);
}

// Which cache a shard reads besides its own: the shared one in live mode; in record mode nothing,
// or the record it resumes (--replay-from), so that a resumed record's shards sweep only what
// that record lacks.
TEST(WarmupShardSettings, ARecordShardReadsOnlyTheRecordItResumes) {
  core::Knobs k;
  k.tune = core::TuneMode::live;
  k.tune_cache = "/shared/tune.db";
  EXPECT_EQ(shard_tune_settings(k, "/w/shard-0.db").read_also, "/shared/tune.db");
  k.tune = core::TuneMode::record;
  EXPECT_TRUE(shard_tune_settings(k, "/w/shard-0.db").read_also.empty());
  k.replay_from = "/runs/rec-1";  // a run directory: its tune.db
  EXPECT_EQ(shard_tune_settings(k, "/w/shard-0.db").read_also, "/runs/rec-1/tune.db");
  EXPECT_EQ(shard_tune_settings(k, "/w/shard-0.db").shared_cache, "/w/shard-0.db");
  EXPECT_EQ(tune::replay_source_file("/runs/rec-1"), "/runs/rec-1/tune.db");
}

}  // namespace
}  // namespace caliber::run
