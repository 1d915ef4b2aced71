#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "backends/ascend/ascend_tools.hpp"
#include "backends/musa/musa_tools.hpp"
#include "backends/probe.hpp"
#include "backends/rocm/rocm_tools.hpp"

using namespace caliber::backends;

namespace {
std::string sample(const std::string& name) {
  std::ifstream in(std::string(CALIBER_SOURCE_DIR) + "/tests/unit/backends/samples/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
constexpr std::uint64_t MiB = 1024ULL * 1024;
}  // namespace

TEST(AmdSmi, ListJson) {
  const auto d = rocm::parse_amd_smi_list(sample("amd_smi_list.json"));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].physical_id, "0");
  EXPECT_EQ(d[2].physical_id, "2");
  EXPECT_EQ(d[1].uuid, "6bff74a1-0000-1000-80b6-3c1c2e0a9d77");
  EXPECT_EQ(d[1].extra.at("pci_bus_id"), "0000:26:00.0");
}

TEST(AmdSmi, OlderGpuDataWrapper) {
  const auto d = rocm::parse_amd_smi_list(sample("amd_smi_list_gpu_data.json"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].physical_id, "1");
  EXPECT_EQ(d[0].extra.at("pci_bus_id"), "0000:c1:00.0");
}

TEST(AmdSmi, RejectsGarbage) {
  EXPECT_THROW((void)rocm::parse_amd_smi_list("amd-smi: command failed"), std::invalid_argument);
  EXPECT_THROW((void)rocm::parse_amd_smi_list("{\"other\": 1}"), std::invalid_argument);
  EXPECT_TRUE(rocm::parse_amd_smi_list("[]").empty());
}

TEST(RocmSmi, ProductNames) {
  const auto n = rocm::parse_rocm_smi_productname(sample("rocm_smi_productname.json"));
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].name, "AMD Instinct MI300X OAM");
  EXPECT_EQ(n[2].compute_capability, "gfx942");
  EXPECT_EQ(n[1].extra.at("sku"), "M3000100");
}

TEST(RocmSmi, OlderSpellingAndOrder) {
  // "Card series" (lower case), cards out of order, and a "system" entry that is no device.
  const auto n = rocm::parse_rocm_smi_productname(sample("rocm_smi_productname_old.json"));
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].physical_id, "0");
  EXPECT_EQ(n[1].physical_id, "1");
  EXPECT_EQ(n[1].name, "Instinct MI210");
}

TEST(RocmSmi, MergeNamesIntoAmdSmiList) {
  auto d = rocm::parse_amd_smi_list(sample("amd_smi_list.json"));
  rocm::merge_product_names(d,
                            rocm::parse_rocm_smi_productname(sample("rocm_smi_productname.json")));
  EXPECT_EQ(d[1].name, "AMD Instinct MI300X OAM");
  EXPECT_EQ(d[1].compute_capability, "gfx942");
  EXPECT_EQ(d[1].uuid, "6bff74a1-0000-1000-80b6-3c1c2e0a9d77");
}

TEST(MthreadsGmi, ValuesWithUnits) {
  const auto d = musa::parse_mthreads_gmi(sample("mthreads_gmi.json"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "MTT S5000");
  EXPECT_EQ(d[0].physical_id, "0");
  EXPECT_EQ(d[0].mem_total, 81920 * MiB);
  EXPECT_EQ(d[0].mem_used, 1536 * MiB);
  EXPECT_EQ(d[0].sm_clock_mhz, 1750);
  EXPECT_EQ(d[0].sm_clock_max_mhz, 2000);
  EXPECT_EQ(d[0].mem_clock_mhz, 1600);
  EXPECT_EQ(d[0].driver_version, "3.1.0");
  EXPECT_EQ(d[1].uuid, "0b71e2c4-93af-5d18-a6c2-5e04d9f7b331");
  EXPECT_EQ(d[1].extra.at("pci_bus_id"), "00000000:5e:00.0");
}

TEST(MthreadsGmi, SnakeCaseKeysAndBareList) {
  const std::string text = R"([{"index": 3, "product_name": "MTT S4000",
      "memory_usage": {"total": "48 GiB", "used": "512MiB"}}])";
  const auto d = musa::parse_mthreads_gmi(text);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].physical_id, "3");
  EXPECT_EQ(d[0].name, "MTT S4000");
  EXPECT_EQ(d[0].mem_total, 48ULL * 1024 * MiB);
  EXPECT_EQ(d[0].mem_used, 512 * MiB);
  EXPECT_THROW((void)musa::parse_mthreads_gmi("{\"Driver Version\": \"3.1.0\"}"),
               std::invalid_argument);
  EXPECT_THROW((void)musa::parse_mthreads_gmi("not json"), std::invalid_argument);
}

TEST(NpuSmi, Table910B) {
  const auto d = ascend::parse_npu_smi_info(sample("npu_smi_info_910b.txt"));
  ASSERT_EQ(d.size(), 3u);  // the process table's "1 0" row is not a device
  EXPECT_EQ(d[0].name, "910B3");
  EXPECT_EQ(d[0].physical_id, "0");
  EXPECT_EQ(d[2].physical_id, "2");
  EXPECT_EQ(d[0].mem_total, 65536 * MiB);
  EXPECT_EQ(d[0].mem_used, 3339 * MiB);
  EXPECT_EQ(d[2].mem_used, 20480 * MiB);  // "20480/ 65536": closed-up spacing
  EXPECT_EQ(d[1].extra.at("pci_bus_id"), "0000:C2:00.0");
  EXPECT_EQ(d[2].extra.at("health"), "Warning");
  EXPECT_EQ(d[0].driver_version, "23.0.6");
}

TEST(NpuSmi, Table310PTwoChipsPerCard) {
  const auto d = ascend::parse_npu_smi_info(sample("npu_smi_info_310p.txt"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "310P3");
  EXPECT_EQ(d[1].name, "310P3");
  EXPECT_EQ(d[0].physical_id, "0");
  EXPECT_EQ(d[1].physical_id, "1");
  EXPECT_EQ(d[0].extra.at("npu_id"), "8");
  EXPECT_EQ(d[1].extra.at("chip_id"), "1");
  EXPECT_EQ(d[0].mem_total, 44280 * MiB);  // no HBM column: Memory-Usage is the device memory
  EXPECT_EQ(d[1].mem_total, 43693 * MiB);
  EXPECT_EQ(d[1].mem_used, 1554 * MiB);
}

TEST(NpuSmi, EmptyOrUnrelatedText) {
  EXPECT_TRUE(ascend::parse_npu_smi_info("").empty());
  EXPECT_TRUE(ascend::parse_npu_smi_info("npu-smi: command not found\n").empty());
}

TEST(NpuSmi, NumbersPastSixtyFourBitsAreNotUsage) {
  // Found by fuzz_smi: std::stoull threw std::out_of_range out of the parser.
  std::string text = sample("npu_smi_info_910b.txt");
  const auto at = text.find("3339 / 65536");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "3339 / 99999999999999999999999");
  std::vector<caliber::backends::DeviceDesc> d;
  EXPECT_NO_THROW(d = ascend::parse_npu_smi_info(text));
  EXPECT_FALSE(d.empty());
}

TEST(RocmSmi, CardNumbersPastAnIntAreSkipped) {
  EXPECT_NO_THROW((void)rocm::parse_rocm_smi_productname(
      R"({"card99999999999999999999": {"Card Series": "x"}, "card1": {"Card Series": "y"}})"));
}

TEST(Units, BytesAndClocks) {
  EXPECT_EQ(parse_bytes("81920MiB"), 81920 * MiB);
  EXPECT_EQ(parse_bytes("80 GB"), 80ULL * 1024 * MiB);
  EXPECT_EQ(parse_bytes("1024 KiB"), MiB);
  EXPECT_EQ(parse_bytes("65536", MiB), 65536 * MiB);
  EXPECT_EQ(parse_bytes("N/A"), 0u);
  EXPECT_EQ(parse_bytes("12 parsecs"), 0u);
  EXPECT_EQ(parse_mhz("1750MHz"), 1750);
  EXPECT_EQ(parse_mhz("1.98 GHz"), 1980);
  EXPECT_EQ(parse_mhz("1500"), 1500);
  EXPECT_EQ(parse_mhz("N/A"), 0);
}

// Found by fuzz_smi: a clock or size past the integer's range was undefined behaviour.
TEST(Units, OutOfRangeNumbersReadAsUnknown) {
  EXPECT_EQ(parse_mhz("28888888888888888 MHz"), 0);
  EXPECT_EQ(parse_mhz("3e9 GHz"), 0);
  EXPECT_EQ(parse_mhz("-5 MHz"), 0);
  EXPECT_EQ(parse_mhz("nan"), 0);
  EXPECT_EQ(parse_mhz("inf MHz"), 0);
  EXPECT_EQ(parse_bytes("1e30 TiB"), 0u);
  EXPECT_EQ(parse_bytes("-1 GiB"), 0u);
  EXPECT_EQ(parse_bytes("nan MiB"), 0u);
}

namespace {

std::vector<caliber::backends::DeviceDesc> one_device_per_line(const std::string& text) {
  std::vector<caliber::backends::DeviceDesc> out;
  for (char c : text)
    if (c == '\n') out.emplace_back();
  if (text.find("garbage") != std::string::npos) throw std::runtime_error("does not parse");
  return out;
}

}  // namespace

TEST(DevicesFromTool, ParsedOutputOrNoneWhenTheToolFailsOrItsOutputDoesNotParse) {
  using caliber::backends::devices_from_tool;
  EXPECT_EQ(devices_from_tool("printf 'a\\nb\\n'", one_device_per_line).size(), 2u);
  EXPECT_TRUE(devices_from_tool("printf 'garbage\\n'", one_device_per_line).empty());
  EXPECT_TRUE(devices_from_tool("printf 'a\\n'; exit 3", one_device_per_line).empty());
  EXPECT_TRUE(devices_from_tool("caliber-no-such-tool --json", one_device_per_line).empty());
}
