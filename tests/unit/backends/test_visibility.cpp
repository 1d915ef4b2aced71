#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "backends/visibility.hpp"
#include "env_guard.hpp"

using namespace caliber::backends;
using caliber::test::EnvGuard;

namespace {
std::vector<std::string> ids(const Visibility& v) {
  return v.ids;
}
using V = std::vector<std::string>;
}  // namespace

TEST(CudaVisible, UnsetMeansAll) {
  const Visibility v = parse_cuda_visible(std::nullopt);
  EXPECT_TRUE(v.all);
  EXPECT_TRUE(v.ids.empty());
}

TEST(CudaVisible, EmptyHidesEverything) {
  const Visibility v = parse_cuda_visible("");
  EXPECT_FALSE(v.all);
  EXPECT_TRUE(v.ids.empty());
}

TEST(CudaVisible, IndicesInOrder) {
  EXPECT_EQ(ids(parse_cuda_visible("6,7")), (V{"6", "7"}));
  EXPECT_EQ(ids(parse_cuda_visible("3, 1")), (V{"3", "1"}));
}

TEST(CudaVisible, FirstInvalidEntryEndsTheList) {
  EXPECT_EQ(ids(parse_cuda_visible("0,1,bogus,2")), (V{"0", "1"}));
  EXPECT_EQ(ids(parse_cuda_visible("2,-1,3")), (V{"2"}));
  EXPECT_EQ(ids(parse_cuda_visible("-1")), V{});
  // Out of range when the physical count is known: 8 does not exist on a 4-GPU host.
  EXPECT_EQ(ids(parse_cuda_visible("1,8,2", 4)), (V{"1"}));
  EXPECT_EQ(ids(parse_cuda_visible("1,8,2")), (V{"1", "8", "2"}));
}

TEST(CudaVisible, UuidPrefixes) {
  EXPECT_EQ(ids(parse_cuda_visible("GPU-5a3f,1")), (V{"GPU-5a3f", "1"}));
  EXPECT_EQ(ids(parse_cuda_visible("MIG-1c2d")), (V{"MIG-1c2d"}));
  EXPECT_EQ(ids(parse_cuda_visible("0,GPX-12,1")), (V{"0"}));
  EXPECT_EQ(ids(parse_cuda_visible("GPU-,1")), V{});
}

TEST(RocmVisible, RocrAppliedBeforeHip) {
  // ROCr leaves physical 2,3,5 visible; HIP then picks its 2nd and 3rd: physical 3 and 5.
  EXPECT_EQ(ids(parse_rocm_visible("2,3,5", "1,2")), (V{"3", "5"}));
  // HIP alone indexes physical devices.
  EXPECT_EQ(ids(parse_rocm_visible(std::nullopt, "4,1")), (V{"4", "1"}));
  // ROCr alone.
  EXPECT_EQ(ids(parse_rocm_visible("1,0", std::nullopt)), (V{"1", "0"}));
  EXPECT_TRUE(parse_rocm_visible(std::nullopt, std::nullopt).all);
}

TEST(RocmVisible, HipIndexBeyondRocrListEnds) {
  EXPECT_EQ(ids(parse_rocm_visible("2,3", "0,2,1")), (V{"2"}));
  EXPECT_EQ(ids(parse_rocm_visible("GPU-aa11,GPU-bb22", "1")), (V{"GPU-bb22"}));
}

TEST(MusaVisible, IndicesOnly) {
  EXPECT_EQ(ids(parse_musa_visible("3,1")), (V{"3", "1"}));
  EXPECT_EQ(ids(parse_musa_visible("0,GPU-1234,1")), (V{"0"}));
  EXPECT_TRUE(parse_musa_visible(std::nullopt).all);
  EXPECT_TRUE(parse_musa_visible("").ids.empty());
}

TEST(AscendVisible, AscendingLogicalIdsStopAtFirstInvalid) {
  EXPECT_EQ(ids(parse_ascend_visible("0,2,5")), (V{"0", "2", "5"}));
  EXPECT_EQ(ids(parse_ascend_visible("0,2,1,3")), (V{"0", "2"}));  // 1 is not ascending
  EXPECT_EQ(ids(parse_ascend_visible("4,4")), (V{"4"}));           // repeated is not ascending
  EXPECT_EQ(ids(parse_ascend_visible("1,x,2")), (V{"1"}));
  EXPECT_EQ(ids(parse_ascend_visible("0,1,9", 8)), (V{"0", "1"}));
}

TEST(PhysicalId, CallerIndexMapsThroughTheList) {
  const Visibility v = parse_cuda_visible("6,7");
  EXPECT_EQ(physical_id_for(v, 0, 2), "6");
  EXPECT_EQ(physical_id_for(v, 1, 2), "7");
  const Visibility u = parse_cuda_visible("GPU-aaaa,GPU-bbbb");
  EXPECT_EQ(physical_id_for(u, 1, 2), "GPU-bbbb");
  EXPECT_EQ(physical_id_for(parse_cuda_visible(std::nullopt), 3, 4), "3");
}

TEST(PhysicalId, OutOfRangeListsTheDevices) {
  const Visibility v = parse_cuda_visible("6,7");
  try {
    (void)physical_id_for(v, 2, 2);
    FAIL() << "expected out_of_range";
  } catch (const std::out_of_range& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("device 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1 (physical 7)"), std::string::npos) << msg;
  }
  EXPECT_THROW((void)physical_id_for(parse_cuda_visible(""), 0, 0), std::out_of_range);
  EXPECT_THROW((void)physical_id_for(v, -1, 2), std::out_of_range);
}

TEST(ApplyVisibility, FiltersAndReordersToolDevices) {
  std::vector<DeviceDesc> physical(4);
  for (int i = 0; i < 4; ++i) {
    physical[i].index = i;
    physical[i].physical_id = std::to_string(i);
    physical[i].name = "dev" + std::to_string(i);
    physical[i].uuid = "uuid-" + std::to_string(i) + "abc";
  }
  const auto seen = apply_visibility(physical, parse_rocm_visible("3,1", std::nullopt));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].name, "dev3");
  EXPECT_EQ(seen[0].index, 0);
  EXPECT_EQ(seen[1].physical_id, "1");
  EXPECT_EQ(seen[1].index, 1);
  // A UUID entry matches the tool's uuid (printed with or without the GPU- prefix).
  const auto by_uuid = apply_visibility(physical, parse_cuda_visible("GPU-uuid-2"));
  ASSERT_EQ(by_uuid.size(), 1u);
  EXPECT_EQ(by_uuid[0].name, "dev2");
  // An id the tool does not know ends the list, as the runtime would.
  EXPECT_EQ(apply_visibility(physical, parse_musa_visible("2,9,0")).size(), 1u);
  EXPECT_EQ(apply_visibility(physical, parse_musa_visible(std::nullopt)).size(), 4u);
}

TEST(ChildEnv, CudaChildIsPinnedToThePhysicalIdNeverTheIndex) {
  EnvGuard g("CUDA_VISIBLE_DEVICES", "6,7");
  const auto env = find_backend("cuda")->child_env(1);
  ASSERT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 1u);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "7");
  EXPECT_EQ(find_backend("cuda")->child_env(0).at("CUDA_VISIBLE_DEVICES"), "6");
  EXPECT_THROW((void)find_backend("cuda")->child_env(2), std::out_of_range);
}

TEST(ChildEnv, CudaUuidEntriesPinByUuid) {
  EnvGuard g("CUDA_VISIBLE_DEVICES", "GPU-1111aaaa,GPU-2222bbbb");
  EXPECT_EQ(find_backend("nvidia")->child_env(1).at("CUDA_VISIBLE_DEVICES"), "GPU-2222bbbb");
}

TEST(ChildEnv, VendorVariables) {
  EnvGuard r("ROCR_VISIBLE_DEVICES", "4,5");
  EnvGuard h("HIP_VISIBLE_DEVICES", std::nullopt);
  EnvGuard m("MUSA_VISIBLE_DEVICES", "2,3");
  EnvGuard a("ASCEND_RT_VISIBLE_DEVICES", "1,6");
  // No vendor runtime on this machine: enumeration is empty, yet the caller's list still says
  // which physical device the index means.
  const auto rocm = find_backend("rocm")->child_env(1);
  EXPECT_EQ(rocm.at("ROCR_VISIBLE_DEVICES"), "5");
  EXPECT_EQ(rocm.at("HIP_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(find_backend("musa")->child_env(0).at("MUSA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(find_backend("ascend")->child_env(1).at("ASCEND_RT_VISIBLE_DEVICES"), "6");
}
