#include "batch/flaggems_tree.hpp"

#include <algorithm>
#include <map>
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

std::map<std::string, fs::path> flaggems_files(const fs::path& root) {
  std::map<std::string, fs::path> files;
  const fs::path bench = root / "benchmark";
  std::vector<fs::path> top, subdirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(bench, ec)) {
    const std::string name = e.path().filename().string();
    if (is_file(e.path()) && !op_of_file(name).empty())
      top.push_back(e.path());
    else if (std::error_code dc; e.is_directory(dc) && name[0] != '.' && name != "__pycache__")
      subdirs.push_back(e.path());
  }
  std::sort(top.begin(), top.end());
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& f : top)
    files.emplace(op_of_file(f.filename().string()), f.lexically_relative(bench));
  for (const auto& d : subdirs) {
    std::vector<fs::path> in;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (is_file(e.path()) && !op_of_file(e.path().filename().string()).empty())
        in.push_back(e.path());
    std::sort(in.begin(), in.end());
    for (const auto& f : in)  // a name the top level (or an earlier folder) has stays theirs
      files.emplace(op_of_file(f.filename().string()), f.lexically_relative(bench));
  }
  return files;
}

std::vector<std::string> flaggems_ops(const fs::path& root) {
  std::vector<std::string> ops;
  for (const auto& [op, file] : flaggems_files(root)) ops.push_back(op);
  return ops;  // the map's order: sorted by name
}

std::string flaggems_op_of(const std::string& knob, const fs::path& root, const std::string& name) {
  std::string op = op_of_file(fs::path(name).filename().string());
  if (op.empty()) op = name;
  const auto files = flaggems_files(root);
  if (op.empty() || op.find('/') != std::string::npos || files.count(op) == 0) {
    std::vector<std::string> ops;
    for (const auto& [o, file] : files) ops.push_back(o);
    throw std::invalid_argument(knob + ": '" + name +
                                "' is not a benchmark of the FlagGems tree '" + root.string() +
                                "' (no benchmark/test_" + op +
                                ".py, nor in a folder of benchmark/); allowed: " + some_ops(ops));
  }
  return op;
}

}  // namespace caliber::run
