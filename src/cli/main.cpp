// caliber: benchmarks GPU operator libraries honestly, on any accelerator vendor.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "core/terminal.hpp"
#include "records/identity.hpp"
#include "records/output_path.hpp"
#include "settings/usage_error.hpp"

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

int finish_exit(int exit_code) {
  // Output that did not reach its file is not a result: a full disk under `> out.json` must not
  // pass for a complete export. std::cout writes through stdio's stdout here.
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int why = errno;
  if (!flushed || std::ferror(stdout) != 0 || !std::cout.good()) {
    std::cerr << "caliber: cannot write standard output"
              << (why != 0 ? std::string(" (") + std::strerror(why) + ")" : std::string())
              << "; the output is incomplete\n";
    std::clearerr(stdout);
    std::cout.clear();
    return exit_code == kExitUsage ? kExitUsage : kExitFailed;
  }
  // The contract has three codes and 128+N for a run ended by signal N (SIGINT: 130); anything
  // else (a child's own code passed up) is a failure.
  const bool by_signal = exit_code > 128 && exit_code < 128 + 65;
  if (exit_code != kExitOk && exit_code != kExitFailed && exit_code != kExitUsage && !by_signal) {
    std::cerr << "caliber: exit code " << exit_code << " is not caliber's; exiting 1\n";
    return kExitFailed;
  }
  return exit_code;
}

int usage_error(const std::string& message) {
  std::cerr << "caliber: " << message << "\n";
  return kExitUsage;
}

int run_command(const std::function<int()>& work, bool invalid_argument_is_usage) {
  try {
    return work();
  } catch (const core::UsageError& e) {
    return usage_error(e.what());
  } catch (const std::invalid_argument& e) {
    if (!invalid_argument_is_usage) throw;
    return usage_error(e.what());
  }
}

}  // namespace caliber::cli

namespace {

// Where a caliber executable that handed this command to Python wants to hear how far the CLI
// got (run/py_ops.cpp): "started" here, "done N" at the exit point. Read once and cleared, so the
// children this process starts do not write into it.
// Only the file such an executable makes is taken (mkstemp's caliber-handoff-XXXXXX in the temp
// directory, a regular file of this user): a stale or hostile value names nothing to append to.
std::string& handoff_status_file() {
  static std::string file = [] {
    const char* v = std::getenv("CALIBER_PY_HANDOFF_STATUS");
    std::string f = v != nullptr ? v : "";
    ::unsetenv("CALIBER_PY_HANDOFF_STATUS");
    if (f.empty()) return f;
    std::error_code ec;
    const std::filesystem::path p(f);
    const auto tmp = std::filesystem::temp_directory_path(ec);
    struct stat st {};
    if (ec || p.parent_path() != tmp || p.filename().string().rfind("caliber-handoff-", 0) != 0 ||
        ::lstat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
      f.clear();
    return f;
  }();
  return file;
}

void note_handoff(const std::string& line) {
  const std::string& file = handoff_status_file();
  if (file.empty()) return;
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  const std::string text = line + "\n";
  [[maybe_unused]] const auto n = ::write(fd, text.data(), text.size());
  ::close(fd);
}

// CLI11 reads `--out=` (an empty value, as `--out=$UNSET` gives) as a flag waiting for its value
// and takes the next argument for it: `--out= --quiet` wrote into ./--quiet/. An empty value
// after `=` is refused before parsing, naming the flag.
std::string empty_inline_value(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    const auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos && eq + 1 == a.size())
      return a.substr(0, eq);
  }
  return "";
}

int run_cli(int argc, char** argv);

}  // namespace

int caliber_cli_main(int argc, char** argv) {
  note_handoff("started");
  const int rc = caliber::cli::finish_exit(run_cli(argc, argv));
  note_handoff("done " + std::to_string(rc));
  return rc;
}

namespace {

int run_cli(int argc, char** argv) {
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
  if (argc > 1 && argv[1][0] != '-') {
    // CLI11 would say "A subcommand is required" of a misspelt one.
    std::string names;
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known)
      return usage_error("'" + caliber::core::shown_path(argv[1]) +
                         "' is not a subcommand; allowed: " + names);
  }
  if (const std::string flag = empty_inline_value(argc, argv); !flag.empty())
    return usage_error(caliber::core::shown_path(flag) + ": '' (given as '" +
                       caliber::core::shown_path(flag) +
                       "=') is empty; allowed: a value after the '='");
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
  } catch (const CLI::ExtrasError& e) {
    // CLI11 says only "The following argument was not expected: --ops"; ops are positional.
    const std::string what = e.what();
    app.exit(e);
    if (what.find(" --ops") != std::string::npos || what.find(" --op ") != std::string::npos ||
        what.find(" --op=") != std::string::npos || what.find(" --ops=") != std::string::npos)
      std::cerr << "caliber: there is no --ops flag: ops are positional (caliber run add sum; "
                   "--op-file FILE lists them in a file)\n";
    return kExitUsage;
  } catch (const CLI::RequiredError& e) {
    // CLI11 says only "DIR is required": name the subcommand and where its help is.
    std::string sub = "caliber";
    for (const auto* s : app.get_subcommands()) sub += " " + s->get_name();
    std::cerr << sub << ": " << e.what() << " (" << sub << " --help says what it takes)\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;  // CLI11 would return its own codes; the contract says 2 for bad usage
  } catch (const std::exception& e) {
    std::cerr << "caliber: " << e.what() << "\n";
    return kExitFailed;
  }
  return exit_code;
}

}  // namespace
