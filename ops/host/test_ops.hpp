// Ops that misbehave on purpose, for the batch, compat and A/B tests: they exist in the registry
// only when CALIBER_TEST_OPS=1 at start-up, so a real run never lists them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "caliber/op.hpp"

namespace caliber::host {

inline constexpr const char* kTestOpsEnv = "CALIBER_TEST_OPS";
inline constexpr const char* kTestSwitchEnv = "CALIBER_TEST_SWITCH";
inline constexpr const char* kCudaGuardReason =
    "test_cuda_guard: skipped because the guard requires torch.cuda.is_available()";

// test_abort, test_hang, test_fail, test_switch, test_cuda_guard.
[[nodiscard]] std::vector<std::string> test_op_names();
// One of them by name (nullptr for another name), whether or not they were registered.
[[nodiscard]] std::unique_ptr<Op> make_test_op(std::string_view name);

}  // namespace caliber::host
