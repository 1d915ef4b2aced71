// caliber: benchmarks GPU operator libraries honestly, on any accelerator vendor.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "core/terminal.hpp"
#include "records/identity.hpp"

namespace caliber::cli {

std::vector<std::pair<int, CommandAdder>>& commands() {
  static std::vector<std::pair<int, CommandAdder>> list;
  return list;
}

bool register_command(int order, CommandAdder adder) {
  commands().emplace_back(order, std::move(adder));
  return true;
}

namespace {
// CLI11's layout (names in a left column, descriptions beside them) with every description
// wrapped to the terminal's width (core::terminal_columns: COLUMNS, the terminal, else 100).
class WrappingFormatter : public CLI::Formatter {
 public:
  explicit WrappingFormatter(std::size_t width) : width_(width) { column_width(30); }
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    std::stringstream out;
    CLI::detail::format_help(out, make_option_name(opt, is_positional) + make_option_opts(opt),
                             wrap_beside(make_option_desc(opt)), get_column_width());
    return out.str();
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), wrap_beside(sub->get_description()),
                             get_column_width());
    return out.str();
  }
  std::string make_description(const CLI::App* app) const override {
    return caliber::core::wrap_text(CLI::Formatter::make_description(app), width_);
  }

 private:
  [[nodiscard]] std::string wrap_beside(const std::string& desc) const {
    const std::size_t col = get_column_width();
    return caliber::core::wrap_text(desc, width_ > col + 20 ? width_ - col : 20);
  }
  std::size_t width_;
};
}  // namespace

void use_wrapping_help(CLI::App& app) {
  app.formatter(std::make_shared<WrappingFormatter>(caliber::core::terminal_columns()));
}

int usage_error(const std::string& message) {
  std::cerr << "caliber: " << message << "\n";
  return kExitUsage;
}

}  // namespace caliber::cli

int caliber_cli_main(int argc, char** argv) {
  using namespace caliber::cli;
  CLI::App app{
      "caliber: benchmark operator libraries against their vendor baselines, honestly.\n"
      "Each subcommand has its own --help."};
  use_wrapping_help(app);  // before the subcommands, which copy the root's formatter
  app.require_subcommand(1);
  app.set_version_flag("--version", caliber::core::caliber_version_line());
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
