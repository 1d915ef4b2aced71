// Subcommands register themselves here; main() parses and runs the chosen one. The CLI stays thin:
// a subcommand turns flags into knobs and calls the rooms below it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace caliber::cli {

// Adds a subcommand to `root`. The subcommand's callback stores its exit code in `exit_code`.
using CommandAdder = std::function<void(CLI::App& root, int& exit_code)>;

bool register_command(int order, CommandAdder adder);
[[nodiscard]] std::vector<std::pair<int, CommandAdder>>& commands();

// Exit codes (README.md): 0 success, 1 the work ran and something failed, 2 bad usage or input.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// --help wrapped to the terminal's width, for `app` and the subcommands added to it afterwards.
void use_wrapping_help(CLI::App& app);

// The CLI's single exit point: standard output is flushed and checked (a write error is exit 1
// with a message, never a silent 0), and a code outside 0/1/2 (and 128+signal) becomes 1.
[[nodiscard]] int finish_exit(int exit_code);

// The check of a timeout in seconds (batch's --timeout-per-op, ab's --timeout-per-run): "" when
// allowed, else the refusal. CLI::NonNegativeNumber lets NaN through (NaN < 0 is false), and a NaN
// timeout would be none.
std::string timeout_seconds(const std::string& v);

// Prints "caliber: <message>" on stderr and returns kExitUsage.
int usage_error(const std::string& message);

// A subcommand's work, start to end, returning its exit code: a usage error (core::UsageError,
// settings/usage_error.hpp: every refusal of bad usage or input) is printed by usage_error and is
// exit 2. With `invalid_argument_is_usage`, so is any std::invalid_argument (list, plan and ab,
// whose backend and planner refuse a value that way). Anything else propagates to main.
int run_command(const std::function<int()>& work, bool invalid_argument_is_usage = false);

}  // namespace caliber::cli

// The whole CLI: parses argv, runs the subcommand, returns the exit code. main() (src/cli/entry/)
// is this alone; the Python package's library (src/capi) calls it for `python3 -m caliber run`.
int caliber_cli_main(int argc, char** argv);

#define CALIBER_CLI_CAT_INNER(a, b) a##b
#define CALIBER_CLI_CAT(a, b) CALIBER_CLI_CAT_INNER(a, b)
// CALIBER_COMMAND(order, adder) at namespace scope in src/cli/cmd_<name>.cpp; order sorts --help.
#define CALIBER_COMMAND(order, adder)                                              \
  [[maybe_unused]] static const bool CALIBER_CLI_CAT(caliber_command_, __LINE__) = \
      ::caliber::cli::register_command(order, adder)
