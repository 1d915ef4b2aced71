// The caliber executable: the CLI of src/cli/ (caliber_cli_main, in main.cpp). A command that
// selects cases with --py-ops runs in Python instead (run/py_ops.hpp, docs/python.md).
#include <iostream>

#include "batch/batch.hpp"
#include "cli/commands.hpp"
#include "run/py_ops.hpp"

int main(int argc, char** argv) {
  caliber::run::drop_untrusted_batch_env(std::cerr);
  // A batch's child watches its batch from its first step, and lets through the SIGTERM the
  // batch held blocked, before anything else: a command handed to Python included, whose
  // interpreter would otherwise inherit SIGTERM blocked and outlive a killed batch.
  caliber::run::watch_batch_parent();
  if (const auto rc = caliber::run::hand_off_to_python(argc, argv, std::cerr)) {
    caliber::run::note_orphaned_batch_child(*rc);  // its batch died while the interpreter ran
    return *rc;
  }
  return caliber_cli_main(argc, argv);
}
