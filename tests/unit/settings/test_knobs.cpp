// The knob table: validation and messages of every knob, the old runner's environment spellings,
// precedence (flag > environment > default) and the rules that tie knobs together.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "settings/knobs.hpp"

using namespace caliber::core;

namespace {

using Env = std::map<std::string, std::string>;

std::function<std::optional<std::string>(const std::string&)> env_of(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

Knobs resolve(const std::map<std::string, std::string>& flags, const Env& env = {}) {
  return resolve_knobs(flags, env_of(env));
}

// The KnobError message of resolving these inputs, or "" when they are accepted.
std::string refusal(const std::map<std::string, std::string>& flags, const Env& env = {}) {
  try {
    (void)resolve(flags, env);
  } catch (const KnobError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST(KnobTable, EveryKnobHasAFlagAGroupAndHelp) {
  const std::set<std::string> groups = {"Selection", "Timing", "Autotune", "Output"};
  std::set<std::string> names, flags, envs;
  for (const auto& s : knob_table()) {
    EXPECT_TRUE(groups.count(s.group)) << s.name << " is in group '" << s.group << "'";
    EXPECT_FALSE(s.help.empty()) << s.name;
    // A flag, or (environment-only knobs) an environment spelling.
    EXPECT_FALSE(s.flag.empty() && s.env.empty()) << s.name;
    EXPECT_TRUE(s.apply) << s.name;
    EXPECT_TRUE(names.insert(s.name).second) << "knob named twice: " << s.name;
    if (!s.flag.empty()) {
      EXPECT_TRUE(flags.insert(s.flag).second) << "flag used twice: " << s.flag;
    }
    if (!s.env.empty()) {
      EXPECT_TRUE(envs.insert(s.env).second) << "env used twice: " << s.env;
    }
    EXPECT_EQ(find_knob(s.name), &s);
  }
  EXPECT_EQ(find_knob("no_such_knob"), nullptr);
  // Each of the four groups holds at least one knob, so the grouped --help has no empty section.
  for (const auto& g : groups) {
    EXPECT_TRUE(std::any_of(knob_table().begin(), knob_table().end(), [&](const KnobSpec& s) {
      return s.group == g;
    })) << g;
  }
}

// The old runner's environment names are kept letter for letter (the old runner's, README.md).
TEST(KnobTable, EnvironmentSpellingsOfTheOldRunner) {
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"backend", {"--backend", "ZL_BACKEND"}},
      {"level", {"--level", "BENCH_LEVEL"}},
      {"shape_mode", {"--shape-mode", "SHAPE_MODE"}},
      {"ops", {"OP...", "OP"}},
      {"op_file", {"--op-file", "OP_FILE"}},
      {"node", {"--node", "TEST_NODE"}},
      {"repeat", {"--repeat", "ZL_DIRECT_REPEAT"}},
      {"replay_from", {"--replay-from", "REPLAY_FROM"}},
      {"parallel_warmup", {"--parallel-warmup", "PARALLEL_WARMUP_GPUS"}},
  };
  for (const auto& [name, fe] : expected) {
    const KnobSpec* s = find_knob(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->flag, fe.first) << name;
    EXPECT_EQ(s->env, fe.second) << name;
  }
  // Knobs the old runner had no variable for take no environment spelling of their own.
  for (const char* name : {"devices", "dtypes", "timer", "l2", "tune", "out", "shapes_file"}) {
    const KnobSpec* s = find_knob(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_TRUE(s->env.empty()) << name << " reads " << s->env;
  }
  // The environment-only knobs: read through the table, kept as given, refused by no command.
  for (const auto& [name, env] :
       std::map<std::string, std::string>{{"python", "CALIBER_PYTHON"},
                                          {"shapes_dir", "CALIBER_SHAPES_DIR"},
                                          {"scheduler", "CALIBER_SCHEDULER"}}) {
    const KnobSpec* s = find_knob(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_TRUE(s->flag.empty()) << name;
    EXPECT_EQ(s->env, env) << name;
  }
  const Knobs envs = resolve({}, {{"CALIBER_PYTHON", "/opt/py3"},
                                  {"CALIBER_SHAPES_DIR", "/s"},
                                  {"CALIBER_SCHEDULER", "bogus"}});
  EXPECT_EQ(envs.python, "/opt/py3");
  EXPECT_EQ(envs.shapes_dir, "/s");
  EXPECT_EQ(envs.scheduler, "bogus");  // batch refuses it, naming --scheduler (CALIBER_SCHEDULER)
  // CALIBER_CHECK_THREADS, environment only too, is refused when it is no thread count (the check
  // helpers would quietly use the host's threads instead).
  EXPECT_TRUE(find_knob("check_threads")->flag.empty());
  EXPECT_EQ(resolve({}, {{"CALIBER_CHECK_THREADS", " 4 "}}).check_threads, 4u);
  for (const char* bad : {"0", "257", "four", "2.5"}) {
    const std::string msg = refusal({}, {{"CALIBER_CHECK_THREADS", bad}});
    EXPECT_TRUE(contains(msg, "CALIBER_CHECK_THREADS")) << bad << ": " << msg;
    EXPECT_TRUE(contains(msg, bad)) << msg;
    EXPECT_TRUE(contains(msg, "1 to 256")) << msg;
  }
  EXPECT_EQ(find_knob("level")->group, "Selection");
  EXPECT_EQ(find_knob("repeat")->group, "Timing");
  EXPECT_EQ(find_knob("tune")->group, "Autotune");
  EXPECT_EQ(find_knob("out")->group, "Output");
}

TEST(KnobDefaults, NothingGivenGivesTheContractDefaults) {
  const Knobs k = resolve({});
  EXPECT_EQ(k.backend, "auto");
  EXPECT_TRUE(k.devices.empty());
  EXPECT_TRUE(k.ops.empty());
  EXPECT_TRUE(k.node.empty());
  EXPECT_TRUE(k.dtypes.empty());
  EXPECT_EQ(k.level, Level::core);
  EXPECT_EQ(k.shape_mode, ShapeMode::file);
  EXPECT_EQ(k.timer, TimerKind::automatic);
  EXPECT_EQ(k.repeat, 1);
  EXPECT_EQ(k.return_mode, ReturnMode::median);
  EXPECT_EQ(k.l2, L2Policy::cold);
  EXPECT_EQ(k.tune, TuneMode::live);
  EXPECT_TRUE(k.replay_from.empty());
  EXPECT_EQ(k.parallel_warmup, 0);
  EXPECT_EQ(k.out, "runs");
}

TEST(KnobMessage, NamesFlagEnvValueAndAllowed) {
  EXPECT_EQ(knob_message(*find_knob("level"), "bogus"),
            "--level (BENCH_LEVEL): 'bogus' is not allowed; allowed: core, comprehensive");
  EXPECT_EQ(knob_message(*find_knob("timer"), "x", "is odd"),
            "--timer: 'x' is odd; allowed: auto, graph, direct");
}

// One bad value for every knob that validates: the refusal is a KnobError on one line naming
// the flag and the value as given.
TEST(KnobValidation, EveryValidatingKnobRefusesABadValue) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"backend", " "},
      {"devices", "x"},
      {"devices", "-1"},
      {"devices", "0,0"},
      {"devices", ","},
      {"dtypes", "f8"},
      {"dtypes", ","},
      {"level", "bogus"},
      {"level", "Core"},
      {"shape_mode", "remote"},
      {"timer", "cupti"},
      {"repeat", "0"},
      {"repeat", "1001"},
      {"repeat", "abc"},
      {"repeat", "2.5"},
      {"repeat", ""},
      {"quantiles", "1.5"},
      {"quantiles", "-0.1"},
      {"quantiles", "half"},
      {"return_mode", "p50"},
      {"l2", "hot"},
      {"min_samples", "0"},
      {"min_time", "-1"},
      {"max_noise", "0"},
      {"max_noise", "2"},
      {"timeout", "0"},
      {"timeout", "nan"},
      {"warmup", "inf"},
      {"warmup", "0x10"},  // strtod reads hexadecimal: 16 s of warmup
      {"timeout", "1e999"},
      {"throttle_fraction", "0"},
      {"tune", "sometimes"},
      {"parallel_warmup", "0"},
      {"parallel_warmup", "two"},
      {"out", ""},
      {"name", "a/b"},
      {"name", "has space"},
      {"name", "."},
      {"name", ".."},
      {"seed", "0"},
      {"shape", "4096xa"},
      {"shape", "0x4"},
      {"shape", "4x-1"},
      {"shape", "x"},
      {"shape", "1x2x3x4x5x6x7x8x9x10x11x12x13x14x15x16x17"},
  };
  for (const auto& [name, value] : bad) {
    const std::string msg = refusal({{name, value}});
    const KnobSpec* s = find_knob(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(msg.empty()) << name << "='" << value << "' was accepted";
    EXPECT_TRUE(contains(msg, s->flag)) << msg;
    EXPECT_TRUE(contains(msg, value)) << msg;
    EXPECT_FALSE(contains(msg, "\n")) << msg;
  }
}

TEST(KnobValidation, ShapesAreParsedDeduplicatedAndInOrder) {
  // The CLI turns the newlines CLI11 joins repeated --shape with into commas (KnobOptions::given).
  const Knobs k = resolve({{"shape", "4096x4096, 1x2x3,4096x4096,7"}});
  EXPECT_EQ(k.shapes, (std::vector<std::vector<std::int64_t>>{{4096, 4096}, {1, 2, 3}, {7}}));
  EXPECT_TRUE(resolve({}).shapes.empty());
}

TEST(KnobValidation, LevelNamesBothLevels) {
  const std::string msg = refusal({{"level", "bogus"}});
  EXPECT_TRUE(contains(msg, "core")) << msg;
  EXPECT_TRUE(contains(msg, "comprehensive")) << msg;
  EXPECT_TRUE(contains(msg, "BENCH_LEVEL")) << msg;
}

TEST(KnobValidation, GoodValuesAreParsed) {
  const Knobs k = resolve({{"backend", " NVIDIA "},
                           {"devices", "0, 2,5"},
                           {"dtypes", "float16,bf16 f32"},
                           {"level", "comprehensive"},
                           {"shape_mode", "upstream"},
                           {"timer", "direct"},
                           {"repeat", " 7 "},
                           {"quantiles", "0.2,0.5,0.8"},
                           {"return_mode", "min"},
                           {"l2", "warm"},
                           {"max_noise", "1"},
                           {"tune", "record"},
                           {"parallel_warmup", "2"},
                           {"out", "/tmp/x"},
                           {"name", "my_run-1.a"},
                           {"seed", "42"}});
  EXPECT_EQ(k.backend, "nvidia");  // lowercased; alias resolution belongs to the registry
  EXPECT_EQ(k.devices, (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(k.dtypes, (std::vector<std::string>{"f16", "bf16", "f32"}));
  EXPECT_EQ(k.level, Level::comprehensive);
  EXPECT_EQ(k.shape_mode, ShapeMode::upstream);
  EXPECT_EQ(k.timer, TimerKind::direct);
  EXPECT_EQ(k.repeat, 7);
  EXPECT_EQ(k.quantiles, (std::vector<double>{0.2, 0.5, 0.8}));
  EXPECT_EQ(k.return_mode, ReturnMode::min);
  EXPECT_EQ(k.l2, L2Policy::warm);
  EXPECT_DOUBLE_EQ(k.max_noise, 1.0);
  EXPECT_EQ(k.tune, TuneMode::record);
  EXPECT_EQ(k.parallel_warmup, 2);
  EXPECT_EQ(k.out, "/tmp/x");
  EXPECT_EQ(k.name, "my_run-1.a");
  EXPECT_EQ(k.seed, 42u);
}

TEST(KnobValidation, OpsSplitOnCommasAndSpaces) {
  EXPECT_EQ(resolve({{"ops", "add,sum"}}).ops, (std::vector<std::string>{"add", "sum"}));
  EXPECT_EQ(resolve({}, {{"OP", "add sum, mm"}}).ops,
            (std::vector<std::string>{"add", "sum", "mm"}));
}

TEST(KnobValidation, UnknownKnobIsRefused) {
  EXPECT_TRUE(contains(refusal({{"levle", "core"}}), "levle"));
}

TEST(KnobPrecedence, FlagBeatsEnvironmentBeatsDefault) {
  EXPECT_EQ(resolve({}, {{"BENCH_LEVEL", "comprehensive"}}).level, Level::comprehensive);
  EXPECT_EQ(resolve({{"level", "core"}}, {{"BENCH_LEVEL", "comprehensive"}}).level, Level::core);
  EXPECT_EQ(resolve({}, {{"ZL_DIRECT_REPEAT", "5"}}).repeat, 5);
  EXPECT_EQ(resolve({{"repeat", "3"}}, {{"ZL_DIRECT_REPEAT", "5"}}).repeat, 3);
  EXPECT_EQ(resolve({}, {{"ZL_BACKEND", "cpu"}}).backend, "cpu");
  EXPECT_EQ(resolve({{"backend", "cuda"}}, {{"ZL_BACKEND", "cpu"}}).backend, "cuda");
  EXPECT_EQ(resolve({}, {{"TEST_NODE", "add[f32-65536]"}}).node, "add[f32-65536]");
  EXPECT_EQ(resolve({}, {{"OP_FILE", "/x/ops.txt"}}).op_file, "/x/ops.txt");
  EXPECT_EQ(resolve({}, {{"SHAPE_MODE", "upstream"}}).shape_mode, ShapeMode::upstream);
  EXPECT_EQ(resolve({}, {{"PARALLEL_WARMUP_GPUS", "4"}}).parallel_warmup, 4);
  // The flag shadows a bad environment value: it is never read.
  EXPECT_EQ(resolve({{"level", "core"}}, {{"BENCH_LEVEL", "bogus"}}).level, Level::core);
  // A name that is not the knob's environment spelling is ignored.
  EXPECT_EQ(resolve({}, {{"LEVEL", "comprehensive"}}).level, Level::core);
}

TEST(KnobPrecedence, BadEnvironmentValueNamesTheVariable) {
  std::string msg = refusal({}, {{"BENCH_LEVEL", "bogus"}});
  EXPECT_TRUE(contains(msg, "BENCH_LEVEL")) << msg;
  EXPECT_TRUE(contains(msg, "bogus")) << msg;
  msg = refusal({}, {{"ZL_DIRECT_REPEAT", "abc"}});
  EXPECT_TRUE(contains(msg, "ZL_DIRECT_REPEAT")) << msg;
  EXPECT_TRUE(contains(msg, "abc")) << msg;
  msg = refusal({}, {{"PARALLEL_WARMUP_GPUS", "-3"}});
  EXPECT_TRUE(contains(msg, "PARALLEL_WARMUP_GPUS")) << msg;
}

TEST(KnobPrecedence, EmptyEnvironmentIsUnset) {
  // PARALLEL_WARMUP_GPUS= must stay a silent no-op, as in the old runner.
  EXPECT_EQ(resolve({}, {{"PARALLEL_WARMUP_GPUS", ""}}).parallel_warmup, 0);
  EXPECT_EQ(resolve({}, {{"BENCH_LEVEL", "  "}}).level, Level::core);
  EXPECT_EQ(resolve({}, {{"ZL_DIRECT_REPEAT", ""}}).repeat, 1);
}

TEST(KnobCrossRules, ReplayFromImpliesReplay) {
  EXPECT_EQ(resolve({{"replay_from", "/r/run-1"}}).tune, TuneMode::replay);
  EXPECT_EQ(resolve({}, {{"REPLAY_FROM", "/r/run-1"}}).tune, TuneMode::replay);
  const Knobs k = resolve({{"tune", "replay"}, {"replay_from", "/r/run-1"}});
  EXPECT_EQ(k.tune, TuneMode::replay);
  EXPECT_EQ(k.replay_from, "/r/run-1");
}

TEST(KnobCrossRules, ReplayNeedsASource) {
  const std::string msg = refusal({{"tune", "replay"}});
  EXPECT_TRUE(contains(msg, "--tune")) << msg;
  EXPECT_TRUE(contains(msg, "--replay-from")) << msg;
}

TEST(KnobCrossRules, ReplaySourceWithAnotherModeIsRefused) {
  const std::string msg = refusal({{"tune", "live"}, {"replay_from", "/r/run-1"}});
  EXPECT_TRUE(contains(msg, "--replay-from")) << msg;
  EXPECT_TRUE(contains(msg, "live")) << msg;
  // The environment's source meets an explicit --tune the same way.
  EXPECT_FALSE(refusal({{"tune", "off"}}, {{"REPLAY_FROM", "/r"}}).empty());
}

TEST(KnobCrossRules, RecordWithASourceResumesIt) {
  // --tune record --replay-from RUN: the record continues from RUN's database (not a replay).
  const Knobs k = resolve({{"tune", "record"}}, {{"REPLAY_FROM", "/r/run-1"}});
  EXPECT_EQ(k.tune, TuneMode::record);
  EXPECT_EQ(k.replay_from, "/r/run-1");
}

TEST(KnobCrossRules, NodeExcludesOps) {
  EXPECT_TRUE(contains(refusal({{"node", "add"}, {"ops", "sum"}}), "--node"));
  EXPECT_TRUE(contains(refusal({{"node", "add"}, {"op_file", "/x"}}), "--node"));
  EXPECT_FALSE(refusal({}, {{"TEST_NODE", "add"}, {"OP", "sum"}}).empty());
  EXPECT_EQ(resolve({{"node", "mm[f32-M128-N128-K128]"}}).node, "mm[f32-M128-N128-K128]");
}

TEST(KnobCrossRules, ParallelWarmupNeedsTuning) {
  const std::string msg = refusal({{"parallel_warmup", "2"}, {"tune", "off"}});
  EXPECT_TRUE(contains(msg, "PARALLEL_WARMUP_GPUS")) << msg;
  EXPECT_TRUE(contains(msg, "off")) << msg;
  EXPECT_EQ(resolve({{"parallel_warmup", "2"}, {"tune", "record"}}).parallel_warmup, 2);
}

TEST(KnobCrossRules, MinTimeMustFitInTheTimeout) {
  const std::string msg = refusal({{"min_time", "2"}, {"timeout", "1"}});
  EXPECT_TRUE(contains(msg, "--min-time")) << msg;
  EXPECT_TRUE(contains(msg, "--timeout")) << msg;
  EXPECT_EQ(resolve({{"min_time", "0.5"}, {"timeout", "1"}}).min_time_s, 0.5);
}

// --flaggems (docs/flaggems.md): the checkout is checked by the knob; FlagGems' --mode maps to an
// L2 policy and a graph sample method; its host-clock modes and its --parallel are refused.
TEST(KnobFlagGems, RootModeAndParallel) {
  const std::string root = ::testing::TempDir() + "caliber_fg_root";
  EXPECT_TRUE(contains(refusal({{"flaggems", root + "_none"}}), "does not exist"));
  (void)std::system(("rm -rf " + root + " && mkdir -p " + root + "/benchmark").c_str());
  EXPECT_TRUE(contains(refusal({{"flaggems", root}}), "is not a FlagGems checkout"));
  (void)std::system(
      ("touch " + root + "/benchmark/conftest.py " + root + "/benchmark/base.py").c_str());
  const Knobs kernel = resolve({{"flaggems", root}});
  EXPECT_EQ(kernel.mode, MeasureMode::kernel);
  EXPECT_EQ(kernel.l2, L2Policy::cold);
  EXPECT_TRUE(kernel.per_launch);
  const Knobs graph = resolve({{"flaggems", root}, {"mode", "cudagraph"}});
  EXPECT_EQ(graph.l2, L2Policy::warm);
  EXPECT_FALSE(graph.per_launch);
  EXPECT_TRUE(contains(refusal({{"flaggems", root}, {"mode", "cudagraph"}, {"l2", "cold"}}),
                       "contradicts"));
  for (const char* host_clock : {"operator", "wrapper"})
    EXPECT_TRUE(contains(refusal({{"flaggems", root}, {"mode", host_clock}}), "host wall clock"));
  EXPECT_TRUE(contains(refusal({{"mode", "kernel"}}), "needs --flaggems"));
  EXPECT_TRUE(contains(refusal({{"flaggems", root}, {"parallel", "8"}}), "concurrent"));
}

// A FlagGems node id longer than an op name may be is pointed at --node, which takes it.
TEST(KnobFlagGems, ALongNodeIdAsAnOpIsPointedAtNode) {
  const std::string node = "benchmark/test_add.py::test_add_" + std::string(120, 'x');
  const std::string why = refusal({{"ops", node}});
  EXPECT_TRUE(contains(why, "longer than 128 characters")) << why;
  EXPECT_TRUE(contains(why, "goes through --node")) << why;
  EXPECT_FALSE(contains(refusal({{"ops", std::string(129, 'y')}}), "--node"));
  EXPECT_EQ(refusal({{"node", node}}), "");
}

TEST(KnobTiming, ClockRegimeAndNoiseAuto) {
  EXPECT_EQ(resolve({}).clock, ClockRegime::sustained);
  EXPECT_EQ(resolve({}, {{"CALIBER_CLOCK", "burst"}}).clock, ClockRegime::burst);
  const std::string msg = refusal({{"clock", "turbo"}});
  EXPECT_TRUE(contains(msg, "turbo")) << msg;
  EXPECT_TRUE(contains(msg, "burst")) << msg;
  EXPECT_EQ(resolve({}).max_noise, 0);  // auto: the backend's default
  EXPECT_EQ(resolve({{"max_noise", "auto"}}).max_noise, 0);
  EXPECT_EQ(resolve({{"max_noise", "0.01"}}).max_noise, 0.01);
}

TEST(KnobTiming, SampleMethod) {
  EXPECT_EQ(resolve({}).sample_method, SampleMethod::automatic);
  EXPECT_EQ(resolve({{"sample_method", "events"}}).sample_method, SampleMethod::events);
  EXPECT_EQ(resolve({}, {{"CALIBER_SAMPLE_METHOD", "trace"}}).sample_method, SampleMethod::trace);
  EXPECT_EQ(
      resolve({{"sample_method", "auto"}}, {{"CALIBER_SAMPLE_METHOD", "trace"}}).sample_method,
      SampleMethod::automatic);
  const std::string msg = refusal({{"sample_method", "cupti"}});
  EXPECT_TRUE(contains(msg, "--sample-method")) << msg;
  EXPECT_TRUE(contains(msg, "cupti")) << msg;
  EXPECT_TRUE(contains(msg, "auto, trace, events")) << msg;
}

TEST(Lists, SplitListDropsEmptiesSplitFieldsKeepsThem) {
  EXPECT_EQ(split_list("a, b  c,,d"), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(split_fields("a,,b ", ','), (std::vector<std::string>{"a", "", "b "}));
  EXPECT_EQ(split_fields("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split_fields(",", ','), (std::vector<std::string>{"", ""}));
}
