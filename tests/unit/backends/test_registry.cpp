#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "env_guard.hpp"

using namespace caliber::backends;

TEST(Registry, AutoSelectionOrder) {
  std::vector<std::string> names;
  for (const Backend* b : all_backends()) names.push_back(b->name());
  EXPECT_EQ(names, (std::vector<std::string>{"cuda", "rocm", "musa", "ascend", "cpu"}));
}

TEST(Registry, NamesAndAliasesCaseInsensitive) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cuda", "cuda"},     {"NVIDIA", "cuda"}, {"rocm", "rocm"},     {"amd", "rocm"},
      {"HIP", "rocm"},      {"musa", "musa"},   {"mthreads", "musa"}, {"Moore", "musa"},
      {"ascend", "ascend"}, {"npu", "ascend"},  {"cann", "ascend"},   {"huawei", "ascend"},
      {"cpu", "cpu"},       {"host", "cpu"},    {"CPU", "cpu"}};
  for (const auto& [alias, name] : cases) {
    const Backend* b = find_backend(alias);
    ASSERT_NE(b, nullptr) << alias;
    EXPECT_EQ(b->name(), name) << alias;
    EXPECT_EQ(resolve_backend(alias).name(), name) << alias;
  }
  EXPECT_EQ(find_backend("gpu"), nullptr);
  EXPECT_EQ(find_backend(""), nullptr);
}

TEST(Registry, UnknownNameListsNamesAndAliases) {
  try {
    (void)resolve_backend("tpu");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'tpu'"), std::string::npos) << msg;
    for (const char* word : {"cuda", "nvidia", "rocm", "amd", "hip", "musa", "mthreads", "moore",
                             "ascend", "npu", "cann", "huawei", "cpu", "host"}) {
      EXPECT_NE(msg.find(word), std::string::npos) << word << " missing from: " << msg;
    }
  }
}

TEST(Registry, ValidNamesSpelling) {
  const std::string s = valid_backend_names();
  EXPECT_NE(s.find("cuda (nvidia)"), std::string::npos) << s;
  EXPECT_NE(s.find("rocm (amd, hip)"), std::string::npos) << s;
  EXPECT_NE(s.find("ascend (npu, cann, huawei)"), std::string::npos) << s;
}

TEST(Registry, AutoPicksFirstBackendWithADeviceElseCpu) {
  const Backend& chosen = resolve_backend("auto");
  EXPECT_EQ(&resolve_backend(""), &chosen);
  const Backend* expected = nullptr;
  for (const Backend* b : all_backends()) {
    if (!b->capabilities().host && !b->enumerate().empty()) {
      expected = b;
      break;
    }
  }
  if (expected == nullptr) {
    EXPECT_EQ(chosen.name(), "cpu");
  } else {
    EXPECT_EQ(&chosen, expected);
  }
}

TEST(Registry, AutoWithEveryAcceleratorHiddenFallsBackToCpu) {
  caliber::test::EnvGuard c("CUDA_VISIBLE_DEVICES", "");
  caliber::test::EnvGuard r("ROCR_VISIBLE_DEVICES", "");
  caliber::test::EnvGuard m("MUSA_VISIBLE_DEVICES", "");
  caliber::test::EnvGuard a("ASCEND_RT_VISIBLE_DEVICES", "");
  // The cuda runtime reads its variable once per process, so only assert where it has no device.
  if (find_backend("cuda")->enumerate().empty()) {
    EXPECT_EQ(resolve_backend("auto").name(), "cpu");
  }
}

TEST(Classify, CudaErrorClasses) {
  const Backend& cuda = *find_backend("cuda");
  EXPECT_EQ(cuda.classify(0), Failure::ok);
  for (int code = 900; code <= 908; ++code) {
    EXPECT_EQ(cuda.classify(code), Failure::refused_capture) << code;
  }
  for (int code : {700, 710, 714, 715, 716, 717, 718, 719}) {
    EXPECT_EQ(cuda.classify(code), Failure::fatal_on_device) << code;
  }
  for (int code : {1, 2, 98, 701, 709, 711, 713, 720, 899, 909, 999}) {
    EXPECT_EQ(cuda.classify(code), Failure::other) << code;
  }
}

TEST(Classify, AscendGuessesNoCudaWording) {
  const Backend& ascend = *find_backend("ascend");
  EXPECT_EQ(ascend.classify(0), Failure::ok);
  EXPECT_EQ(ascend.classify(900), Failure::other);
  EXPECT_EQ(ascend.classify(700), Failure::other);
  EXPECT_EQ(find_backend("rocm")->classify(901), Failure::refused_capture);
  EXPECT_EQ(find_backend("musa")->classify(719), Failure::fatal_on_device);
}

TEST(Classify, FailureNames) {
  EXPECT_STREQ(to_string(Failure::ok), "ok");
  EXPECT_STREQ(to_string(Failure::refused_capture), "refused_capture");
  EXPECT_STREQ(to_string(Failure::fatal_on_device), "fatal_on_device");
  EXPECT_STREQ(to_string(Failure::capture_poisoned), "capture_poisoned");
  EXPECT_STREQ(to_string(Failure::other), "other");
}

TEST(Capabilities, PerBackendFlags) {
  const Capabilities cuda = find_backend("cuda")->capabilities();
  EXPECT_TRUE(cuda.graph_capture);
  EXPECT_TRUE(cuda.graph_timer_default);
  EXPECT_TRUE(cuda.default_rng);
  EXPECT_TRUE(cuda.l2_known);
  for (const char* name : {"rocm", "musa", "ascend"}) {
    const Capabilities c = find_backend(name)->capabilities();
    EXPECT_TRUE(c.graph_capture) << name;
    EXPECT_FALSE(c.graph_timer_default) << name;  // non-cuda backends time directly
    EXPECT_FALSE(c.clusters) << name;
    EXPECT_FALSE(c.host) << name;
  }
  const Capabilities cpu = find_backend("cpu")->capabilities();
  EXPECT_TRUE(cpu.host);
  EXPECT_FALSE(cpu.graph_timer_default);
  EXPECT_FALSE(cpu.clusters);
}

TEST(Capabilities, VisibilityVariables) {
  EXPECT_EQ(find_backend("cuda")->visibility_vars(),
            std::vector<std::string>{"CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(find_backend("rocm")->visibility_vars(),
            (std::vector<std::string>{"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}));
  EXPECT_EQ(find_backend("musa")->visibility_vars(),
            std::vector<std::string>{"MUSA_VISIBLE_DEVICES"});
  EXPECT_EQ(find_backend("ascend")->visibility_vars(),
            std::vector<std::string>{"ASCEND_RT_VISIBLE_DEVICES"});
}

#include "backends/describe.hpp"

TEST(Describe, EveryBackendListedAndWhyNoneWhenEmpty) {
  const auto j = describe_backends();
  ASSERT_EQ(j.at("backends").size(), all_backends().size());
  for (const auto& b : j.at("backends")) {
    const bool empty = b.at("devices").empty();
    EXPECT_EQ(b.contains("why_none"), empty) << b.at("name");
    if (empty) {
      EXPECT_FALSE(b.at("why_none").get<std::string>().empty());
    }
    EXPECT_TRUE(b.at("capabilities").contains("graph_timer_default"));
  }
  const auto& musa = j.at("backends").at(2);
  EXPECT_EQ(musa.at("name"), "musa");
  ASSERT_EQ(musa.at("compat_rules").size(), 2u);  // caliber's fft, and FlagGems' test_fft.py
  EXPECT_EQ(musa.at("compat_rules")[0].at("op"), "fft");
  EXPECT_EQ(musa.at("compat_rules")[1].at("op"), "flaggems:test_fft.py");
  const std::string text = format_backends(j);
  for (const char* word : {"cuda (nvidia)", "rocm (amd, hip)", "cpu (host)", "capabilities:"}) {
    EXPECT_NE(text.find(word), std::string::npos) << word;
  }
}

TEST(Describe, RuntimeWithoutDeviceNamesTheVisibilityValue) {
  caliber::test::EnvGuard g("MUSA_VISIBLE_DEVICES", "");
  const auto m = describe_backend(*find_backend("musa"));
  EXPECT_TRUE(m.at("visibility").at("MUSA_VISIBLE_DEVICES").is_string());
  EXPECT_TRUE(m.at("devices").empty());
}

TEST(Describe, EachDeviceSaysWhatPinsAChildToIt) {
  caliber::test::EnvGuard g("CALIBER_CPU_DEVICES", "2");
  caliber::test::EnvGuard v("CALIBER_CPU_VISIBLE_DEVICES", "1,0");
  const auto m = describe_backend(*find_backend("cpu"));
  ASSERT_EQ(m.at("devices").size(), 2u);
  // The caller's device 0 is physical group 1: a child is pinned by the physical id.
  EXPECT_EQ(m.at("devices")[0].at("child_env"),
            (nlohmann::json{{"CALIBER_CPU_VISIBLE_DEVICES", "1"}}));
  EXPECT_EQ(m.at("devices")[1].at("child_env"),
            (nlohmann::json{{"CALIBER_CPU_VISIBLE_DEVICES", "0"}}));
}
