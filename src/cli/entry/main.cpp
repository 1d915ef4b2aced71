// The caliber executable: the CLI of src/cli/ (caliber_cli_main, in main.cpp).
#include "cli/commands.hpp"

int main(int argc, char** argv) {
  return caliber_cli_main(argc, argv);
}
