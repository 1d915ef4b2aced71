// Ops that misbehave on purpose, for the batch, failure, compat and A/B tests. They live in a test
// op library (tests/ops_lib, built as caliber_test_ops), never in the shipped binary: a test loads
// it with --ops-lib (tests/cli/lib.sh: test_ops_lib). Written on the public API alone, like any
// user's op library.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "caliber/op.hpp"

namespace caliber::testops {

inline constexpr const char* kTestSwitchEnv = "CALIBER_TEST_SWITCH";
inline constexpr const char* kCudaGuardReason =
    "test_cuda_guard: skipped because the guard requires torch.cuda.is_available()";

// test_phases: its set-up and its check sleep this long (the run's phase times must show them).
inline constexpr double kPhasesInputsS = 0.3;
inline constexpr double kPhasesCheckS = 0.2;

// test_abort, test_hang, test_fail, test_switch, test_cuda_guard, test_phases.
[[nodiscard]] std::vector<std::string> test_op_names();
// One of them by name (nullptr for another name).
[[nodiscard]] std::unique_ptr<Op> make_test_op(std::string_view name);

}  // namespace caliber::testops
