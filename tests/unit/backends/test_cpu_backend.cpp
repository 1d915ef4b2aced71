// The cpu backend's rules without touching the machine's state: host text parsers, the split of
// cores into devices, the visibility list, the device description, and the host device itself.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_device.hpp"

namespace cpu = caliber::backends::cpu;
using caliber::DType;

namespace {

TEST(CpuHostInfo, ModelNameFromCpuinfo) {
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
      "processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n";
  EXPECT_EQ(cpu::parse_model_name(x86), "AMD EPYC 9654 96-Core Processor");
  const std::string arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: Neoverse V2 board\n";
  EXPECT_EQ(cpu::parse_model_name(arm), "Neoverse V2 board");
  EXPECT_EQ(cpu::parse_model_name(""), "unknown host cpu");
}

TEST(CpuHostInfo, Meminfo) {
  const std::string m =
      "MemTotal:       131072000 kB\nMemFree:  100 kB\nMemAvailable:   65536 kB\n";
  EXPECT_EQ(cpu::parse_meminfo_bytes(m, "MemTotal"), 131072000ull * 1024);
  EXPECT_EQ(cpu::parse_meminfo_bytes(m, "MemAvailable"), 65536ull * 1024);
  EXPECT_EQ(cpu::parse_meminfo_bytes(m, "Mem"), std::nullopt);
  EXPECT_EQ(cpu::parse_meminfo_bytes("MemTotal: lots kB\n", "MemTotal"), std::nullopt);
}

TEST(CpuHostInfo, CpuListRoundTrip) {
  EXPECT_EQ(cpu::parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(cpu::parse_cpu_list(" 5 \n"), (std::vector<int>{5}));
  EXPECT_EQ(cpu::parse_cpu_list("3,1,1"), (std::vector<int>{1, 3}));
  EXPECT_EQ(cpu::parse_cpu_list(""), std::nullopt);
  EXPECT_EQ(cpu::parse_cpu_list("3-1"), std::nullopt);
  EXPECT_EQ(cpu::parse_cpu_list("a"), std::nullopt);
  EXPECT_EQ(cpu::parse_cpu_list("1,,2"), std::nullopt);
  EXPECT_EQ(cpu::format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu::format_cpu_list({4}), "4");
}

TEST(CpuHostInfo, CacheSize) {
  EXPECT_EQ(cpu::parse_cache_size("32K\n"), 32u * 1024);
  EXPECT_EQ(cpu::parse_cache_size("32768K"), 32u * 1024 * 1024);
  EXPECT_EQ(cpu::parse_cache_size("2M"), 2u * 1024 * 1024);
  EXPECT_EQ(cpu::parse_cache_size("0K"), std::nullopt);
  EXPECT_EQ(cpu::parse_cache_size("big"), std::nullopt);
}

TEST(CpuHostInfo, LargestCacheLevelFromSysfs) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("caliber_cache_" + std::to_string(::getpid()));
  auto write = [&](const std::string& idx, const std::string& level, const std::string& type,
                   const std::string& size) {
    std::filesystem::create_directories(dir / idx);
    std::ofstream(dir / idx / "level") << level << "\n";
    std::ofstream(dir / idx / "type") << type << "\n";
    std::ofstream(dir / idx / "size") << size << "\n";
  };
  write("index0", "1", "Data", "48K");
  write("index1", "1", "Instruction", "32K");
  write("index2", "2", "Unified", "2048K");
  write("index3", "3", "Unified", "105M");
  cpu::HostFacts f;
  cpu::read_llc(dir, f);
  EXPECT_EQ(f.llc_level, 3);
  EXPECT_EQ(f.llc_bytes, 105ull << 20);
  cpu::HostFacts none;
  cpu::read_llc(dir / "missing", none);
  EXPECT_EQ(none.llc_bytes, 0u);
  std::filesystem::remove_all(dir);
}

TEST(CpuLayout, SplitCoresEvenlyAndContiguously) {
  const std::vector<int> cores = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto g = cpu::split_cores(cores, 3);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g[1], (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(g[2], (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(cpu::split_cores(cores, 1)[0], cores);
  // More devices than cores: every device still has a core.
  const auto many = cpu::split_cores({4, 5}, 3);
  EXPECT_EQ(many, (std::vector<std::vector<int>>{{4}, {5}, {4}}));
}

TEST(CpuLayout, DeviceCount) {
  EXPECT_EQ(cpu::parse_device_count(std::nullopt), 1);
  EXPECT_EQ(cpu::parse_device_count(std::string("4")), 4);
  EXPECT_EQ(cpu::parse_device_count(std::string("0")), std::nullopt);
  EXPECT_EQ(cpu::parse_device_count(std::string("two")), std::nullopt);
  EXPECT_EQ(cpu::parse_device_count(std::string("-1")), std::nullopt);
}

TEST(CpuLayout, VisibilityFollowsCudaRules) {
  EXPECT_EQ(cpu::parse_visible(std::nullopt, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(cpu::parse_visible(std::string("2,0"), 3), (std::vector<int>{2, 0}));
  // The first invalid entry ends the list.
  EXPECT_EQ(cpu::parse_visible(std::string("1,7,0"), 3), (std::vector<int>{1}));
  EXPECT_EQ(cpu::parse_visible(std::string("1,x,0"), 3), (std::vector<int>{1}));
  EXPECT_EQ(cpu::parse_visible(std::string("1,1,0"), 3), (std::vector<int>{1}));
  EXPECT_EQ(cpu::parse_visible(std::string(""), 3), (std::vector<int>{}));
  EXPECT_EQ(cpu::parse_visible(std::string("-1"), 3), (std::vector<int>{}));
}

cpu::HostFacts sample_facts() {
  cpu::HostFacts f;
  f.model_name = "Sample CPU";
  f.cores = {0, 1, 2, 3, 4, 5, 6, 7};
  f.mem_total = 64ull << 30;
  f.mem_available = 48ull << 30;
  f.llc_bytes = 32ull << 20;
  f.llc_level = 3;
  f.kernel = "Linux 6.1.0";
  return f;
}

TEST(CpuLayout, DefaultIsOneDeviceTheWholeHost) {
  const auto f = sample_facts();
  const auto l = cpu::make_layout(f, std::nullopt, std::nullopt);
  EXPECT_TRUE(l.error.empty());
  ASSERT_EQ(l.visible.size(), 1u);
  const auto d = cpu::describe_device(f, l, 0);
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.physical_id, "0");
  EXPECT_EQ(d.name, "Sample CPU");
  EXPECT_EQ(d.sm_count, 8);
  EXPECT_EQ(d.mem_total, 64ull << 30);
  EXPECT_EQ(d.mem_used, 16ull << 30);
  EXPECT_EQ(d.l2_bytes, 32ull << 20);
  EXPECT_EQ(d.extra.at("cores"), "0-7");
  EXPECT_EQ(d.driver_version, "Linux 6.1.0");
}

// Under CALIBER_CPU_VISIBLE_DEVICES=3,1 the caller's device 1 is group 1, device 0 is group 3: a
// child is pinned with the group, never the bare index.
TEST(CpuLayout, GroupsAndPhysicalIds) {
  const auto f = sample_facts();
  const auto l = cpu::make_layout(f, std::string("4"), std::string("3,1"));
  ASSERT_EQ(l.visible.size(), 2u);
  const auto d0 = cpu::describe_device(f, l, 0);
  const auto d1 = cpu::describe_device(f, l, 1);
  EXPECT_EQ(d0.physical_id, "3");
  EXPECT_EQ(d0.extra.at("cores"), "6-7");
  EXPECT_EQ(d1.physical_id, "1");
  EXPECT_EQ(d1.extra.at("cores"), "2-3");
  EXPECT_EQ(d1.sm_count, 2);
  EXPECT_EQ(d1.index, 1);
  EXPECT_THROW((void)cpu::describe_device(f, l, 2), std::out_of_range);
}

TEST(CpuLayout, BadDeviceCountIsReported) {
  const auto l = cpu::make_layout(sample_facts(), std::string("lots"), std::nullopt);
  EXPECT_NE(l.error.find("CALIBER_CPU_DEVICES='lots'"), std::string::npos) << l.error;
  EXPECT_EQ(l.groups, 1);
}

// ---------------------------------------------------------------------------------------------
// The device.

cpu::CpuDevice make_device(std::uint64_t l2 = 256 * 1024) {
  caliber::backends::DeviceDesc d;
  d.name = "test host";
  d.sm_count = 2;
  d.l2_bytes = l2;
  d.mem_total = 1ull << 30;
  caliber::backends::Capabilities caps;
  caps.host = true;
  caps.l2_known = l2 != 0;
  return cpu::CpuDevice(d, caps, 99);
}

TEST(CpuDevice, PropsAndIdentity) {
  auto dev = make_device();
  EXPECT_EQ(dev.backend(), "cpu");
  EXPECT_TRUE(dev.props().host);
  EXPECT_EQ(dev.props().sm_count, 2);
  EXPECT_EQ(dev.props().l2_bytes, 256u * 1024);
  EXPECT_EQ(dev.stream(), nullptr);
  EXPECT_EQ(dev.seed(), 99u);
  EXPECT_FALSE(dev.capturing());
  EXPECT_EQ(dev.default_generator(), nullptr);
  EXPECT_FALSE(dev.capabilities().graph_capture);
  EXPECT_FALSE(dev.capabilities().default_rng);
  EXPECT_TRUE(dev.healthy());
  EXPECT_EQ(dev.take_last_error(), 0);
  EXPECT_FALSE(dev.clocks().has_value());
  EXPECT_GT(dev.free_bytes(), 0u);
}

TEST(CpuDevice, MemoryIsAlignedAndCopies) {
  auto dev = make_device();
  caliber::Buffer a(dev, 1000), b(dev, 1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.get()) % 64, 0u);
  dev.memset(a.get(), 0x3C, 1000);
  dev.copy(b.get(), a.get(), 1000, caliber::CopyKind::device_to_device);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.as<unsigned char>()[i], 0x3C);
  caliber::Buffer empty(dev, 0);
  EXPECT_NE(empty.get(), nullptr);
}

TEST(CpuDevice, EventsMeasureHostTime) {
  auto dev = make_device();
  auto s = dev.create_event();
  auto e = dev.create_event();
  EXPECT_THROW((void)dev.elapsed_ms(*s, *e), caliber::NativeError);
  dev.record(*s);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  dev.record(*e);
  const double ms = dev.elapsed_ms(*s, *e);
  EXPECT_GE(ms, 19.0);
  EXPECT_LT(ms, 5000.0);
}

TEST(CpuDevice, HasNoGraphs) {
  auto dev = make_device();
  try {
    dev.begin_capture();
    FAIL() << "begin_capture did not throw";
  } catch (const caliber::NativeError& e) {
    EXPECT_EQ(e.code(), -1);
    EXPECT_EQ(e.api(), "capture");
    EXPECT_NE(std::string(e.what()).find("no graphs"), std::string::npos);
  }
  EXPECT_THROW((void)dev.end_capture(), caliber::NativeError);
  dev.abort_capture();
}

TEST(CpuDevice, FlushWritesAPersistentBufferOfTheCacheSize) {
  auto dev = make_device(512 * 1024);
  dev.flush_l2();
  EXPECT_EQ(dev.flush_bytes(), 512u * 1024);
  dev.flush_l2();
  EXPECT_EQ(dev.flush_bytes(), 512u * 1024);
  auto unknown = make_device(0);
  unknown.flush_l2();
  EXPECT_EQ(unknown.flush_bytes(), cpu::CpuDevice::kFallbackFlushBytes);
}

TEST(CpuFill, FloatsInRangeNeverZeroAndReproducible) {
  auto dev = make_device();
  std::vector<float> a(100000), b(100000), c(100000);
  dev.fill_uniform(a.data(), DType::f32, a.size(), -1.0, 1.0, 7);
  dev.fill_uniform(b.data(), DType::f32, b.size(), -1.0, 1.0, 7);
  dev.fill_uniform(c.data(), DType::f32, c.size(), -1.0, 1.0, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0;
  for (float v : a) {
    ASSERT_NE(v, 0.0f);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    mean += v;
  }
  EXPECT_NEAR(mean / static_cast<double>(a.size()), 0.0, 0.02);
  // A range that holds only values rounding to zero or hi still gives non-zero values inside it.
  std::vector<double> d(1000);
  dev.fill_uniform(d.data(), DType::f64, d.size(), 0.0, 1e-300, 3);
  for (double v : d) {
    ASSERT_GT(v, 0.0);
    ASSERT_LT(v, 1e-300);
  }
}

TEST(CpuFill, IntegersInRangeAndNeverZero) {
  auto dev = make_device();
  std::vector<std::int32_t> a(20000);
  dev.fill_uniform(a.data(), DType::i32, a.size(), -3, 4, 5);
  std::set<std::int32_t> seen(a.begin(), a.end());
  EXPECT_EQ(seen, (std::set<std::int32_t>{-3, -2, -1, 1, 2, 3}));
  std::vector<std::int64_t> b(1000);
  dev.fill_uniform(b.data(), DType::i64, b.size(), -1e15, 1e15, 5);
  bool big = false;
  for (auto v : b) {
    ASSERT_NE(v, 0);
    big |= v > (std::int64_t{1} << 40);
  }
  EXPECT_TRUE(big);
  EXPECT_THROW(dev.fill_uniform(a.data(), DType::i32, a.size(), 0, 1e12, 5), std::invalid_argument);
  EXPECT_THROW(dev.fill_uniform(a.data(), DType::f32, a.size(), 1, 1, 5), std::invalid_argument);
}

TEST(CpuFill, HalfAndBfloatAreRoundedAndNonZero) {
  auto dev = make_device();
  std::vector<std::uint16_t> h(5000), bf(5000);
  dev.fill_uniform(h.data(), DType::f16, h.size(), -2.0, 2.0, 1);
  dev.fill_uniform(bf.data(), DType::bf16, bf.size(), -2.0, 2.0, 1);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float hv = cpu::half_bits_to_float(h[i]);
    const float bv = cpu::bf16_bits_to_float(bf[i]);
    ASSERT_TRUE(hv != 0 && hv >= -2 && hv < 2) << hv;
    ASSERT_TRUE(bv != 0 && bv >= -2 && bv < 2) << bv;
  }
  EXPECT_EQ(cpu::float_to_half_rne(1.0f), 0x3C00);
  EXPECT_EQ(cpu::float_to_half_rne(-2.5f), 0xC100);
  EXPECT_EQ(cpu::float_to_half_rne(65504.0f), 0x7BFF);
  EXPECT_EQ(cpu::float_to_half_rne(1e6f), 0x7C00);
  EXPECT_EQ(cpu::float_to_half_rne(5.9604644775390625e-8f), 0x0001);
  EXPECT_EQ(cpu::float_to_bf16_rne(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between two bf16 values: ties go to even.
  EXPECT_EQ(cpu::float_to_bf16_rne(1.00390625f), 0x3F80);
  EXPECT_EQ(cpu::float_to_bf16_rne(1.01171875f), 0x3F82);
}

}  // namespace
