// The cuda backend on a real GPU: enumeration with NVML, capture, refused capture, L2 flush,
// device-side fills. Run by scripts/gpu-check.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/describe.hpp"
#include "backends/registry.hpp"

using namespace caliber;
using namespace caliber::backends;

namespace {

const Backend& cuda() {
  return *find_backend("cuda");
}

std::unique_ptr<Device> open_first() {
  if (cuda().enumerate().empty()) return nullptr;
  return cuda().open(0, 1234);
}

#define REQUIRE_GPU(dev)   \
  auto dev = open_first(); \
  if (!dev) GTEST_SKIP() << "no CUDA device visible here";

template <class T>
std::vector<T> read_back(Device& dev, const Buffer& b, std::size_t n) {
  std::vector<T> host(n);
  dev.copy(host.data(), b.get(), n * sizeof(T), CopyKind::device_to_host);
  return host;
}

}  // namespace

TEST(CudaBackend, EnumerateShowsUuidClocksAndSizes) {
  const auto devices = cuda().enumerate();
  if (devices.empty()) GTEST_SKIP() << cuda().availability().detail;
  for (const DeviceDesc& d : devices) {
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
    EXPECT_EQ(d.uuid.size(), 40u) << d.uuid;
    EXPECT_GT(d.sm_clock_max_mhz, 0) << "NVML gave no max SM clock: " << d.extra.at("nvml");
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GT(d.l2_bytes, 0u);
    EXPECT_GT(d.mem_total, 0u);
    EXPECT_FALSE(d.physical_id.empty());
    EXPECT_FALSE(d.driver_version.empty());
    EXPECT_FALSE(d.runtime_version.empty());
  }
  const Availability a = cuda().availability();
  EXPECT_TRUE(a.runtime_found) << a.detail;
  EXPECT_NO_THROW(cuda().setup_guard());
  EXPECT_EQ(resolve_backend("auto").name(), "cuda");
  const auto described = describe_backend(cuda());
  EXPECT_EQ(described.at("devices").size(), devices.size());
  EXPECT_FALSE(described.contains("why_none"));
}

TEST(CudaBackend, OpenOutOfRangeListsDevices) {
  const auto devices = cuda().enumerate();
  if (devices.empty()) GTEST_SKIP();
  EXPECT_THROW((void)cuda().open(static_cast<int>(devices.size()), 1), std::out_of_range);
}

TEST(CudaDevice, PropsCapabilitiesAndClocks) {
  REQUIRE_GPU(dev);
  EXPECT_EQ(dev->backend(), "cuda");
  EXPECT_FALSE(dev->props().host);
  EXPECT_GT(dev->props().l2_bytes, 0u);
  const Capabilities c = dev->capabilities();
  EXPECT_TRUE(c.graph_capture);
  EXPECT_TRUE(c.graph_timer_default);
  EXPECT_TRUE(c.default_rng);
  EXPECT_EQ(c.clusters, dev->props().cc_major >= 9);
  ASSERT_NE(dev->default_generator(), nullptr);
  EXPECT_EQ(dev->default_generator()->seed, 1234u);
  const auto clk = dev->clocks();
  ASSERT_TRUE(clk.has_value()) << "NVML clocks unavailable";
  EXPECT_GT(clk->sm_max_mhz, 0);
  EXPECT_GT(clk->sm_mhz, 0);
  EXPECT_NE(dev->seed(), dev->seed());  // a fresh seed per case
}

TEST(CudaDevice, CaptureOfAKernelReplaysIt) {
  REQUIRE_GPU(dev);
  constexpr std::size_t n = 1 << 16;
  Buffer direct(*dev, n * sizeof(float));
  Buffer captured(*dev, n * sizeof(float));
  dev->memset(captured.get(), 0, n * sizeof(float));
  dev->fill_uniform(direct.get(), DType::f32, n, -1.0, 1.0, 42);
  dev->synchronize();

  dev->begin_capture();
  EXPECT_TRUE(dev->capturing());
  dev->fill_uniform(captured.get(), DType::f32, n, -1.0, 1.0, 42);
  auto graph = dev->end_capture();
  EXPECT_FALSE(dev->capturing());
  ASSERT_NE(graph, nullptr);
  // Nothing ran yet: the capture only recorded the launch.
  dev->synchronize();
  EXPECT_EQ(read_back<float>(*dev, captured, 4), std::vector<float>(4, 0.0f));
  graph->launch();
  dev->synchronize();
  EXPECT_EQ(read_back<float>(*dev, captured, n), read_back<float>(*dev, direct, n));
  EXPECT_EQ(dev->take_last_error(), 0);
  EXPECT_TRUE(dev->healthy());
}

TEST(CudaDevice, SynchronizeInsideCaptureIsRefusedAndClassified) {
  REQUIRE_GPU(dev);
  Buffer b(*dev, 1024 * sizeof(float));
  dev->begin_capture();
  dev->fill_uniform(b.get(), DType::f32, 1024, 0.0, 1.0, 7);
  const cudaError_t sync = cudaStreamSynchronize(static_cast<cudaStream_t>(dev->stream()));
  EXPECT_NE(sync, cudaSuccess);
  EXPECT_EQ(cuda().classify(static_cast<int>(sync)), Failure::refused_capture)
      << "code " << static_cast<int>(sync);
  try {
    (void)dev->end_capture();
    FAIL() << "end_capture accepted an invalidated capture";
  } catch (const NativeError& e) {
    EXPECT_EQ(cuda().classify(e.code()), Failure::refused_capture) << e.what();
  }
  dev->abort_capture();
  (void)dev->take_last_error();
  // A refusal is ordinary: the context goes on, and the next capture works.
  EXPECT_TRUE(dev->healthy());
  dev->begin_capture();
  dev->fill_uniform(b.get(), DType::f32, 1024, 0.0, 1.0, 7);
  auto g = dev->end_capture();
  g->launch();
  EXPECT_NO_THROW(dev->synchronize());
}

TEST(CudaDevice, AbortCaptureMidwayLeavesAUsableContext) {
  REQUIRE_GPU(dev);
  Buffer b(*dev, 4096);
  dev->begin_capture();
  dev->memset(b.get(), 1, 4096);
  dev->abort_capture();
  EXPECT_FALSE(dev->capturing());
  EXPECT_TRUE(dev->healthy());
  dev->memset(b.get(), 3, 4096);
  const auto bytes = read_back<unsigned char>(*dev, b, 4096);
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == 3; }));
}

TEST(CudaDevice, FlushL2TakesTimeOnTheStream) {
  REQUIRE_GPU(dev);
  auto start = dev->create_event();
  auto stop = dev->create_event();
  dev->flush_l2();  // first touch
  dev->record(*start);
  for (int i = 0; i < 10; ++i) dev->flush_l2();
  dev->record(*stop);
  const double ms = dev->elapsed_ms(*start, *stop);
  // Writing 10 x L2 (60 MiB on an H200) cannot be free, nor take seconds.
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 1000.0);
  EXPECT_TRUE(dev->healthy());
  // Flushes can also live inside a graph (cold-L2 graph timing between replays).
  dev->begin_capture();
  dev->flush_l2();
  auto g = dev->end_capture();
  g->launch();
  EXPECT_NO_THROW(dev->synchronize());
}

TEST(CudaDevice, FillUniformRangesAndNoZeros) {
  REQUIRE_GPU(dev);
  constexpr std::size_t n = 100000;
  {
    Buffer b(*dev, n * sizeof(float));
    dev->fill_uniform(b.get(), DType::f32, n, -2.0, 3.0, 99);
    const auto v = read_back<float>(*dev, b, n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x >= -2.0f && x < 3.0f; }));
    EXPECT_TRUE(std::none_of(v.begin(), v.end(), [](float x) { return x == 0.0f; }));
    double mean = 0;
    for (float x : v) mean += x;
    mean /= n;
    EXPECT_NEAR(mean, 0.5, 0.05);
  }
  {
    Buffer b(*dev, n * sizeof(int));
    dev->fill_uniform(b.get(), DType::i32, n, -3.0, 4.0, 5);
    const auto v = read_back<int>(*dev, b, n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](int x) { return x >= -3 && x <= 3 && x != 0; }));
    EXPECT_NE(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  }
  for (DType t : {DType::f16, DType::bf16}) {
    Buffer b(*dev, n * 2);
    dev->fill_uniform(b.get(), t, n, -1.0, 1.0, 11);
    const auto raw = read_back<std::uint16_t>(*dev, b, n);
    // +0 and -0 are 0x0000 and 0x8000 in both formats.
    EXPECT_TRUE(std::none_of(raw.begin(), raw.end(), [](std::uint16_t x) {
      return (x & 0x7fff) == 0;
    })) << to_string(t);
  }
  {
    Buffer a(*dev, n * 8), b(*dev, n * 8);
    dev->fill_uniform(a.get(), DType::c64, n, 0.0, 1.0, 1);
    dev->fill_uniform(b.get(), DType::c64, n, 0.0, 1.0, 2);
    EXPECT_NE(read_back<float>(*dev, a, 2 * n), read_back<float>(*dev, b, 2 * n));
  }
}

TEST(CudaDevice, OutOfMemoryIsANativeErrorClassifiedOther) {
  REQUIRE_GPU(dev);
  try {
    (void)dev->alloc(std::size_t{1} << 50);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const NativeError& e) {
    EXPECT_EQ(cuda().classify(e.code()), Failure::other) << e.what();
  }
  (void)dev->take_last_error();
  EXPECT_TRUE(dev->healthy());
}
