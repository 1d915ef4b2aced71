#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <regex>

#include "records/identity.hpp"
#include "records/runlog.hpp"
#include "temp_dir.hpp"

using caliber::testing::TempDir;

using namespace caliber::core;
using nlohmann::json;

namespace {
json sample() {
  return {
      {"level", "core"},   {"timer", "graph"},
      {"backend", "cuda"}, {"device", {{"name", "NVIDIA H200"}, {"index", 0}, {"physical_id", 7}}},
      {"tune", "live"},    {"repeat", 1},
      {"l2", "cold"},      {"host", "box"}};
}
}  // namespace

TEST(Identity, CaliberKeys) {
  // The clock regime is part of the caliber: a burst figure and a sustained one of the same GEMM
  // differ by 15-20% on the H200 (docs/timing.md).
  const std::vector<std::string> want = {"level", "timer",  "backend", "device_model",
                                         "tune",  "repeat", "l2",      "clock"};
  EXPECT_EQ(caliber_keys(), want);
}

TEST(Identity, SameCaliberNoDiff) {
  json b = sample();
  b["host"] = "other";  // not a caliber key
  b["device"]["physical_id"] = 3;
  EXPECT_TRUE(diff_identity(sample(), b).empty());
}

TEST(Identity, DiffNamesEachKey) {
  json b = sample();
  b["level"] = "comprehensive";
  b["device"]["name"] = "NVIDIA H100";
  b["repeat"] = 5;
  const auto d = diff_identity(sample(), b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].key, "level");
  EXPECT_EQ(d[0].a, "core");
  EXPECT_EQ(d[0].b, "comprehensive");
  EXPECT_EQ(d[1].key, "device_model");
  EXPECT_EQ(d[1].a, "NVIDIA H200");
  EXPECT_EQ(d[1].b, "NVIDIA H100");
  EXPECT_EQ(d[2].key, "repeat");
  EXPECT_EQ(d[2].a, "1");
  EXPECT_EQ(d[2].b, "5");
}

TEST(Identity, MissingKeyIsADifference) {
  json b = sample();
  b.erase("timer");
  const auto d = diff_identity(sample(), b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "timer");
  EXPECT_EQ(d[0].b, "");
  EXPECT_TRUE(diff_identity(json::object(), json::object()).empty());
}

TEST(Identity, WriteReadRoundTrip) {
  TempDir dir;
  write_identity(dir.path(), sample());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "run_identity.json"));
  EXPECT_EQ(read_identity(dir.path()), sample());
  std::ifstream in(dir.path() / "run_identity.json");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "{");  // pretty-printed for people to read
}

TEST(Identity, ReadErrors) {
  TempDir dir;
  EXPECT_THROW((void)read_identity(dir.path()), std::runtime_error);
  { std::ofstream(dir.path() / "run_identity.json") << "{\"level\": "; }
  EXPECT_THROW((void)read_identity(dir.path()), std::runtime_error);
}

TEST(Identity, BuildAndHost) {
  EXPECT_FALSE(caliber_version().empty());
  // The project version from CMakeLists.txt, through the generated header.
  EXPECT_TRUE(std::regex_match(caliber_version(), std::regex(R"(\d+\.\d+\.\d+)")))
      << caliber_version();
  EXPECT_TRUE(
      std::regex_match(caliber_git_commit(), std::regex(R"(unknown|[0-9a-f]{12}(-dirty)?)")))
      << caliber_git_commit();
  EXPECT_EQ(caliber_version_line().rfind("caliber " + caliber_version(), 0), 0u)
      << caliber_version_line();
  EXPECT_FALSE(host_name().empty());
  EXPECT_NE(host_name(), "unknown");
}

TEST(Identity, RunHeaderText) {
  const std::string h = run_header_text(sample());
  for (const char* part : {"backend cuda", "device 0 (NVIDIA H200)", "timer graph", "level core",
                           "tune live", "repeat 1", "l2 cold"}) {
    EXPECT_NE(h.find(part), std::string::npos) << part << " not in: " << h;
  }
  json partial = sample();
  partial.erase("timer");
  partial.erase("device");
  const std::string p = run_header_text(partial);
  EXPECT_NE(p.find("timer ?"), std::string::npos) << p;
  EXPECT_NE(p.find("device ?"), std::string::npos) << p;
}

TEST(Identity, SlurmFromTheJobEnvironment) {
  const std::map<std::string, std::string> job = {{"SLURM_JOB_ID", "42"},
                                                  {"SLURMD_NODENAME", "gpu07"},
                                                  {"SLURM_ARRAY_JOB_ID", "40"},
                                                  {"SLURM_ARRAY_TASK_ID", "2"},
                                                  {"SLURM_CLUSTER_NAME", ""}};
  auto env = [&](const std::string& k) -> std::optional<std::string> {
    const auto it = job.find(k);
    if (it == job.end()) return std::nullopt;
    return it->second;
  };
  const json s = slurm_identity(env);
  EXPECT_EQ(
      s,
      json({{"node", "gpu07"}, {"job_id", "42"}, {"array_job_id", "40"}, {"array_task_id", "2"}}));
  // Outside a job: null, whatever else the environment holds.
  auto outside = [&](const std::string& k) -> std::optional<std::string> {
    if (k == "SLURMD_NODENAME") return "gpu07";
    return std::nullopt;
  };
  EXPECT_TRUE(slurm_identity(outside).is_null());
}

TEST(Identity, NodeIsTheSlurmNodeElseTheHost) {
  json id = {{"host", "login1"}};
  EXPECT_EQ(node_of(id), "login1");
  id["slurm"] = {{"node", "gpu07"}, {"job_id", "42"}};
  EXPECT_EQ(node_of(id), "gpu07");
  id["slurm"] = nullptr;
  EXPECT_EQ(node_of(id), "login1");
  EXPECT_EQ(node_of(json::object()), "");
  EXPECT_EQ(node_of(json()), "");
}

TEST(Identity, NewerSchemaRefused) {
  TempDir dir;
  std::ofstream(dir.path() / caliber::core::identity_file)
      << nlohmann::json{{"schema", caliber::core::schema_version + 1}}.dump();
  EXPECT_THROW((void)caliber::core::read_identity(dir.path()), caliber::core::SchemaError);
  std::ofstream(dir.path() / caliber::core::identity_file)
      << nlohmann::json{{"level", "core"}}.dump();
  EXPECT_EQ(caliber::core::read_identity(dir.path())["level"], "core");
}

// The host's load: a reading has the load averages and the core count; a reading above its
// cores is "loaded", at or below is not, and an older identity without one says nothing.
TEST(Identity, HostLoad) {
  const nlohmann::json now = host_load();
  ASSERT_TRUE(now["cores"].is_number());
  EXPECT_GE(now["cores"].get<int>(), 1);
  EXPECT_TRUE(now["load1"].is_number());
  nlohmann::json id = {
      {"host_load",
       {{"start", {{"load1", 2.0}, {"cores", 2}}}, {"end", {{"load1", 2.01}, {"cores", 2}}}}}};
  const auto r = loaded_host_readings(id);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], "end: load 2.01 on 2 cores");
  EXPECT_TRUE(loaded_host_readings(nlohmann::json{{"host", "x"}}).empty());
  EXPECT_TRUE(loaded_host_readings(nlohmann::json{{"host_load", "junk"}}).empty());
  id["host_load"]["start"]["load1"] = "high";  // not a number: ignored
  EXPECT_EQ(loaded_host_readings(id).size(), 1u);
}
