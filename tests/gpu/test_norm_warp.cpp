// GPU tests of the norm family's warp path (ops/norm/norm.cu, config key "warp" = lanes per row):
// every config of softmax, log_softmax, layer_norm and rms_norm passes the gate or is rejected on
// ragged shapes (rows of one element, odd lengths that forbid 16-byte vectors, lengths that
// leave lanes of the last vector idle, the warp path's longest rows and one past them, odd row
// counts that leave groups of a warp without a row, and row counts that make every warp loop);
// the warp path is the default exactly where the row fits it, and configs it cannot run are
// rejected before anything is launched.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

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

// Mirrors the host rule of norm.cu: 16-byte vectors (4 f32, 8 f16/bf16) that divide the row,
// at most 8 per lane of a full warp.
bool warp_fits(DType t, std::int64_t cols) {
  const std::int64_t v = t == DType::f32 ? 4 : 8;
  return cols % v == 0 && cols / v <= 32 * 8;
}

class NormWarpGpu : public caliber::gpu_test::CudaTest {};

TEST_F(NormWarpGpu, EveryConfigPassesOrIsRejectedOnRaggedRows) {
  const std::vector<std::vector<std::int64_t>> shapes{
      {33, 1},    {99, 7},   {5, 8},    {7, 24},   {31, 100},   {65, 128},    {9, 1000},
      {17, 1024}, {3, 2048}, {5, 2056}, {3, 4095}, {100003, 8}, {35001, 128}, {4099, 1024}};
  for (const char* name : {"softmax", "log_softmax", "layer_norm", "rms_norm"}) {
    auto op = cuda_op(name);
    ASSERT_NE(op, nullptr) << name;
    for (const auto& shape : shapes) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::int64_t cols = shape.back();
      for (DType t : {DType::f32, DType::f16, DType::bf16}) {
        const std::string what =
            std::string(name) + " " + shape_str(shape) + " " + std::string(caliber::to_string(t));
        auto w = op->setup(*cuda_device(), case_of(*op, t, shape));
        const auto providers = w->providers();
        ASSERT_EQ(providers.size(), 2u) << what;
        const auto& space = providers[1].space;
        EXPECT_EQ(space.default_config.has("warp"), warp_fits(t, cols))
            << what << ": default " << space.default_config.str();
        int warp_configs = 0, passed = 0;
        for (const auto& cfg : space.configs) {
          try {
            w->prepare(1, cfg);
          } catch (const caliber::ConfigRejected&) {
            EXPECT_FALSE(cfg.has("warp")) << what << " " << cfg.str() << ": offered, then rejected";
            continue;
          }
          const auto acc = w->check(1);
          EXPECT_TRUE(acc.passed) << what << " " << cfg.str() << ": " << acc.detail;
          if (acc.passed) ++passed;
          if (cfg.has("warp")) ++warp_configs;
        }
        EXPECT_GT(passed, 0) << what;
        if (warp_fits(t, cols)) {
          EXPECT_GE(warp_configs, 2) << what;
        } else {
          EXPECT_EQ(warp_configs, 0) << what;
          EXPECT_THROW(w->prepare(1, caliber::Config{{{"warp", 32}, {"block", 128}}}),
                       caliber::ConfigRejected)
              << what;
        }
        // The default config runs and passes too (the config untuned runs get).
        w->prepare(1, space.default_config);
        const auto acc = w->check(1);
        EXPECT_TRUE(acc.passed) << what << " default " << space.default_config.str() << ": "
                                << acc.detail;
        EXPECT_THROW(w->prepare(1, caliber::Config{{{"warp", 3}, {"block", 128}}}),
                     caliber::ConfigRejected)
            << what;
        EXPECT_THROW(w->prepare(1, caliber::Config{{{"warp", 32}, {"block", 512}}}),
                     caliber::ConfigRejected)
            << what;
        EXPECT_THROW(w->prepare(1, caliber::Config{{{"warp", 32}, {"block", 100}}}),
                     caliber::ConfigRejected)
            << what;
      }
      // Progress on the device log: which shape a slow or stuck run was on.
      std::cerr << "[norm warp] " << name << " " << shape_str(shape) << ": "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                << " s\n";
    }
  }
}

}  // namespace
