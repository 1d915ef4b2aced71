// GPU tests: run by scripts/gpu-check on a machine with a GPU. Without one they skip with exit 77
// (ctest's SKIP_RETURN_CODE) and say so, never pass silently.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "backends/registry.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing needs no device (scripts/gpu-check lists the suites to run each in its own process).
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  const auto* cuda = caliber::backends::find_backend("cuda");
  if (cuda == nullptr || cuda->enumerate().empty()) {
    std::printf(
        "SKIPPED: no GPU on this machine: the GPU tests run through scripts/gpu-check on one\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
