// caliber: benchmarks GPU operator libraries honestly, on any accelerator vendor.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.hpp"

namespace caliber::cli {

std::vector<std::pair<int, CommandAdder>>& commands() {
  static std::vector<std::pair<int, CommandAdder>> list;
  return list;
}

bool register_command(int order, CommandAdder adder) {
  commands().emplace_back(order, std::move(adder));
  return true;
}

int usage_error(const std::string& message) {
  std::cerr << "caliber: " << message << "\n";
  return kExitUsage;
}

}  // namespace caliber::cli

int main(int argc, char** argv) {
  using namespace caliber::cli;
  CLI::App app{
      "caliber: benchmark operator libraries against their vendor baselines, honestly.\n"
      "Each subcommand has its own --help."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "caliber 0.1.0");
  int exit_code = kExitOk;
  auto& list = commands();
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [order, add] : list) add(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--level: At Most 1 required but received 2" for a flag given twice.
    const std::string what = e.what();
    const auto at = what.find(": At Most 1 required but received ");
    if (at == std::string::npos) {
      app.exit(e);
      return kExitUsage;
    }
    std::cerr << "caliber: " << what.substr(0, at) << ": given "
              << what.substr(at + std::string(": At Most 1 required but received ").size())
              << " times; give it once\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;  // CLI11 would return its own codes; the contract says 2 for bad usage
  } catch (const std::exception& e) {
    std::cerr << "caliber: " << e.what() << "\n";
    return kExitFailed;
  }
  std::fflush(stdout);
  return exit_code;
}
