// GPU tests of cumsum's single-pass look-back scan (ops/reduce/reduce.cu, algo=1): every
// look-back config passes the gate on shapes that put many rows in one tile (cols below and
// above the vector width, odd lengths), a row across a tile edge, and long rows over many tiles;
// and launches stay correct after graph captures, replays and more than 2^14 launches (the
// launch tag of the status words wraps there).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "caliber/caliber.hpp"
#include "gpu/cuda_fixture.hpp"

namespace {

using caliber::DType;
using caliber::gpu_test::case_of;
using caliber::gpu_test::cuda_device;
using caliber::gpu_test::cuda_op;
using caliber::gpu_test::shape_str;

class ScanLookbackGpu : public caliber::gpu_test::CudaTest {};

TEST_F(ScanLookbackGpu, EveryLookbackConfigPassesOnShortAndLongRows) {
  const std::vector<std::vector<std::int64_t>> shapes{
      {1},        {5, 3},    {1000, 7},   {999, 8},   {300, 1001},
      {64, 4096}, {7, 4097}, {2, 300001}, {1, 65537}, {3, 999999}};
  auto op = cuda_op("cumsum");
  ASSERT_NE(op, nullptr);
  for (const auto& shape : shapes) {
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      auto w = op->setup(*cuda_device(), case_of(*op, t, shape));
      const auto providers = w->providers();
      ASSERT_EQ(providers.size(), 2u);
      const auto& space = providers[1].space;
      EXPECT_EQ(space.default_config.get("algo", 1), 0) << "the three-pass scan is the default";
      int lookback = 0;
      for (const auto& cfg : space.configs) {
        if (cfg.get("algo", 0) != 1) continue;
        w->prepare(1, cfg);
        const auto acc = w->check(1);
        EXPECT_TRUE(acc.passed) << shape_str(shape) << " " << caliber::to_string(t) << " "
                                << cfg.str() << ": " << acc.detail;
        ++lookback;
      }
      EXPECT_GE(lookback, 6) << shape_str(shape);
      EXPECT_THROW(w->prepare(1, caliber::Config{{{"algo", 1}, {"block", 256}, {"items", 12}}}),
                   caliber::ConfigRejected);
      EXPECT_THROW(w->prepare(1, caliber::Config{{{"algo", 1}, {"block", 1024}, {"items", 8}}}),
                   caliber::ConfigRejected);
      EXPECT_THROW(w->prepare(1, caliber::Config{{{"algo", 7}, {"block", 256}}}),
                   caliber::ConfigRejected);
    }
  }
}

// Status words are not cleared between launches: each launch's tag tells them apart. Captured
// and replayed launches, and a run past the tag's 2^14 wrap, must leave the next launch right.
TEST_F(ScanLookbackGpu, CorrectAfterCapturesReplaysAndTagWrap) {
  auto* dev = cuda_device();
  auto op = cuda_op("cumsum");
  ASSERT_NE(op, nullptr);
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{2, 40000}, {512, 300}}) {
    auto w = op->setup(*dev, case_of(*op, DType::f32, shape));
    const caliber::Config lookback{{{"algo", 1}, {"block", 256}, {"items", 16}}};
    w->prepare(1, lookback);
    EXPECT_TRUE(w->check(1).passed) << shape_str(shape);
    dev->begin_capture();
    try {
      for (int i = 0; i < 3; ++i) w->launch(1);
      auto graph = dev->end_capture();
      for (int r = 0; r < 5; ++r) graph->launch();
      dev->synchronize();
    } catch (const std::exception& e) {
      dev->abort_capture();
      ADD_FAILURE() << shape_str(shape) << ": capture failed: " << e.what();
    }
    const auto after_replay = w->check(1);
    EXPECT_TRUE(after_replay.passed) << shape_str(shape) << ": " << after_replay.detail;
    for (int i = 0; i < (1 << 14) + 5; ++i) w->launch(1);
    dev->synchronize();
    const auto after_wrap = w->check(1);
    EXPECT_TRUE(after_wrap.passed) << shape_str(shape) << ": " << after_wrap.detail;
  }
}

}  // namespace
