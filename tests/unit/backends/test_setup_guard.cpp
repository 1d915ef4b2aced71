#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "env_guard.hpp"

using namespace caliber::backends;

namespace {

// A backend whose runtime presence and device count the test chooses.
class FakeBackend final : public Backend {
 public:
  FakeBackend(bool runtime, int devices) : runtime_(runtime), devices_(devices) {}
  std::string name() const override { return "fakevendor"; }
  std::vector<std::string> aliases() const override { return {}; }
  std::vector<std::string> visibility_vars() const override { return {"FAKE_VISIBLE_DEVICES"}; }
  Capabilities capabilities() const override { return {}; }
  Availability availability() const override {
    Availability a;
    a.runtime_found = runtime_;
    a.looked_for = "libfake.so (Fake runtime)";
    a.detail = runtime_ ? "loaded libfake.so" : "not found";
    return a;
  }
  std::vector<DeviceDesc> enumerate() const override {
    return std::vector<DeviceDesc>(static_cast<std::size_t>(devices_));
  }
  std::unique_ptr<Device> open(int, std::uint64_t) const override { return nullptr; }
  Failure classify(int) const override { return Failure::other; }
  std::map<std::string, std::string> child_env(int) const override { return {}; }

 private:
  bool runtime_;
  int devices_;
};

std::string guard_message(const Backend& b) {
  try {
    b.setup_guard();
  } catch (const BackendUnavailable& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SetupGuard, MissingRuntimeNamesWhatWasLookedForAndWhatIsAvailable) {
  const std::string msg = guard_message(FakeBackend(false, 0));
  ASSERT_FALSE(msg.empty());
  EXPECT_EQ(msg.rfind("backend 'fakevendor': looked for libfake.so (Fake runtime): not found; "
                      "available: ",
                      0),
            0u)
      << msg;
  // The host is always there to fall back on.
  EXPECT_NE(msg.find("cpu ("), std::string::npos) << msg;
}

TEST(SetupGuard, RuntimeWithoutDevicesSaysSoAndShowsTheVariable) {
  caliber::test::EnvGuard g("FAKE_VISIBLE_DEVICES", "3");
  const std::string msg = guard_message(FakeBackend(true, 0));
  EXPECT_NE(msg.find("no device is visible"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FAKE_VISIBLE_DEVICES='3'"), std::string::npos) << msg;
}

TEST(SetupGuard, PassesWithRuntimeAndDevice) {
  EXPECT_NO_THROW(FakeBackend(true, 1).setup_guard());
}

TEST(SetupGuard, RealVendorsWithoutRuntimeSayWhatTheyLookedFor) {
  const Backend& rocm = *find_backend("rocm");
  if (rocm.availability().runtime_found) GTEST_SKIP() << "a HIP runtime is installed here";
  const std::string msg = guard_message(rocm);
  EXPECT_EQ(msg.rfind("backend 'rocm': looked for libamdhip64.so", 0), 0u) << msg;
  EXPECT_NE(msg.find("(HIP runtime): not found; available: "), std::string::npos) << msg;
  EXPECT_TRUE(rocm.enumerate().empty());
}

TEST(SetupGuard, OpenOnAVendorWithoutDeviceInterfaceIsRefused) {
  try {
    (void)find_backend("musa")->open(0, 1);
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("not built in this binary"), std::string::npos)
        << e.what();
  }
}

TEST(Availability, EveryBackendSaysWhatItLooksFor) {
  for (const Backend* b : all_backends()) {
    const Availability a = b->availability();
    if (b->capabilities().host) continue;
    EXPECT_FALSE(a.looked_for.empty()) << b->name();
    if (!a.runtime_found) {
      EXPECT_TRUE(b->enumerate().empty()) << b->name();
    }
  }
}
