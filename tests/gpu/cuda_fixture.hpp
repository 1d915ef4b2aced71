// Shared by the GPU op tests: the cuda device, opened once per process, and the corpus's ops.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <string>

#include "backends/registry.hpp"
#include "caliber/caliber.hpp"
#include "op_case.hpp"

namespace caliber::gpu_test {

// Opened once and kept for the process: reopening a context per test would dominate the run.
// nullptr when no cuda device can be opened.
inline backends::Device* cuda_device() {
  static backends::Device* dev = []() -> backends::Device* {
    const auto* b = backends::find_backend("cuda");
    if (b == nullptr) return nullptr;
    try {
      return b->open(0, 1234).release();
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return dev;
}

// A fresh instance of the cuda corpus's op `name`, or nullptr.
inline std::unique_ptr<Op> cuda_op(const std::string& name) {
  for (const auto& r : registered_ops()) {
    if (r.backend != "cuda") continue;
    auto op = r.factory();
    if (op->info().name == name) return op;
  }
  return nullptr;
}

using test_support::case_of;
using test_support::shape_str;

// The fixture of every GPU op test: skips, saying so, where no cuda device can be opened.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device() == nullptr) GTEST_SKIP() << "no cuda device";
  }
};

}  // namespace caliber::gpu_test
