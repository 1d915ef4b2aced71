// The caliber executable: the CLI of src/cli/ (caliber_cli_main, in main.cpp). A command that
// selects cases with --py-ops runs in Python instead (run/py_ops.hpp, docs/python.md).
#include <iostream>

#include "batch/batch.hpp"
#include "cli/commands.hpp"
#include "run/py_ops.hpp"

int main(int argc, char** argv) {
  caliber::run::drop_untrusted_batch_env(std::cerr);
  if (const auto rc = caliber::run::hand_off_to_python(argc, argv, std::cerr)) return *rc;
  return caliber_cli_main(argc, argv);
}
