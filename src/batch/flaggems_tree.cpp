#include "batch/flaggems_tree.hpp"

#include <algorithm>
#include <stdexcept>
#include <system_error>

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// "test_add.py" -> "add"; anything else -> "".
std::string op_of_file(const std::string& file) {
  const std::string pre = "test_", ext = ".py";
  if (file.size() <= pre.size() + ext.size() || file.compare(0, pre.size(), pre) != 0 ||
      file.compare(file.size() - ext.size(), ext.size(), ext) != 0)
    return "";
  return file.substr(pre.size(), file.size() - pre.size() - ext.size());
}

std::string some_ops(const std::vector<std::string>& ops) {
  std::string s;
  for (std::size_t i = 0; i < ops.size() && i < 8; ++i) s += (i ? ", " : "") + ops[i];
  if (ops.size() > 8) s += ", ... (" + std::to_string(ops.size()) + " in all)";
  return s;
}

}  // namespace

std::string flaggems_root_of(const std::vector<std::string>& run_args) {
  const std::string flag = kFlagGemsFlag;
  std::string root;
  for (std::size_t i = 0; i < run_args.size(); ++i) {
    const std::string& a = run_args[i];
    if (a == flag && i + 1 < run_args.size())
      root = run_args[++i];
    else if (a.rfind(flag + "=", 0) == 0)
      root = a.substr(flag.size() + 1);
  }
  return root;
}

void check_flaggems_root(const std::string& knob, const fs::path& root) {
  // Built in steps: GCC 12 warns of a bogus memcpy bound on "'" + s + "'".
  std::string shown = "'";
  shown += root.string();
  shown += "'";
  std::error_code ec;
  if (root.empty() || !fs::is_directory(root, ec))
    throw std::invalid_argument(knob + ": " + shown +
                                " is not a directory; allowed: a FlagGems checkout");
  if (!is_file(root / "benchmark" / "conftest.py"))
    throw std::invalid_argument(knob + ": " + shown +
                                " is not a FlagGems checkout: it has no benchmark/conftest.py");
  if (!is_file(root / "benchmark" / "base.py"))
    throw std::invalid_argument(knob + ": " + shown +
                                " is not a FlagGems checkout: it has no benchmark/base.py");
  if (flaggems_ops(root).empty())
    throw std::invalid_argument(knob + ": " + shown +
                                " is not a FlagGems checkout: benchmark/ has no test_*.py");
}

std::vector<std::string> flaggems_ops(const fs::path& root) {
  std::vector<std::string> ops;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "benchmark", ec)) {
    const std::string op = op_of_file(e.path().filename().string());
    if (!op.empty() && is_file(e.path())) ops.push_back(op);
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::string flaggems_op_of(const std::string& knob, const fs::path& root, const std::string& name) {
  std::string op = op_of_file(fs::path(name).filename().string());
  if (op.empty()) op = name;
  if (op.empty() || op.find('/') != std::string::npos ||
      !is_file(root / "benchmark" / ("test_" + op + ".py")))
    throw std::invalid_argument(
        knob + ": '" + name + "' is not a benchmark of the FlagGems tree '" + root.string() +
        "' (no benchmark/test_" + op + ".py); allowed: " + some_ops(flaggems_ops(root)));
  return op;
}

}  // namespace caliber::run
