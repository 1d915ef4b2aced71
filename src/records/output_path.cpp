#include "records/output_path.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "records/rundir.hpp"

namespace caliber::core {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxShown = 200;
constexpr int kTreeDepth = 4;  // a batch directory holds runs, which hold their files
constexpr std::size_t kMaxTreeEntries = 200000;  // a hostile tree costs a bounded walk

// The canonical form of a path that may not exist yet: its folder resolved, its name kept.
fs::path canonical_of(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) return p.lexically_normal();
  abs = abs.lexically_normal();
  if (abs.filename().empty()) abs = abs.parent_path();
  const fs::path parent = fs::weakly_canonical(abs.parent_path(), ec);
  if (ec) return abs;
  return parent / abs.filename();
}

bool inside(const fs::path& p, const fs::path& dir) {
  auto d = dir.begin();
  auto q = p.begin();
  for (; d != dir.end(); ++d, ++q)
    if (q == p.end() || *q != *d) return false;
  return true;
}

[[noreturn]] void refuse(const std::string& knob, const fs::path& file, const std::string& why) {
  throw OutputRefused(knob + ": '" + shown_path(file.string()) + "' " + why);
}

void check_name(const fs::path& file, const std::string& knob) {
  const std::string s = file.string();
  if (s.empty()) refuse(knob, file, "is empty; allowed: a file path");
  for (const unsigned char c : s)
    if (c < 0x20 || c == 0x7f)
      refuse(knob, file, "holds a control character (a newline?); allowed: a file path without");
  if (s.size() > kMaxOutPath)
    refuse(knob, file, "is longer than " + std::to_string(kMaxOutPath) + " characters");
  for (const auto& part : file)
    if (part.string().size() > 255) refuse(knob, file, "has a name longer than 255 characters");
}

void check_existing(const fs::path& file, const std::string& knob, const struct stat& st) {
  if (S_ISLNK(st.st_mode))
    refuse(knob, file, "is a symbolic link; caliber never writes through one (name the target)");
  if (S_ISDIR(st.st_mode)) refuse(knob, file, "is a directory; allowed: a file path");
  if (!S_ISREG(st.st_mode))
    refuse(knob, file, "is a device, fifo or socket; caliber replaces only regular files");
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || ::access(file.c_str(), W_OK) != 0)
    refuse(knob, file, "exists and is read-only; caliber does not replace it (chmod u+w first)");
}

void check_folder(const fs::path& file, const std::string& knob) {
  fs::path dir = file.parent_path();
  if (dir.empty()) dir = ".";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    refuse(knob, file,
           "lies in " + dir.string() + ", which cannot be used (" + std::strerror(errno) +
               "); its folder must exist");
  if (!S_ISDIR(st.st_mode)) refuse(knob, file, "lies under " + dir.string() + ", not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    refuse(knob, file, "lies in " + dir.string() + ", which is not writable");
}

}  // namespace

bool is_caliber_data_file(const std::string& name) {
  static const std::set<std::string> names = {
      "run.log",     "run_identity.json", "shapes.yaml",    "tune.db",
      "ab.json",     "batch.json",        "ops_status.csv", "warmup_result.json",
      "tune.db-wal", "tune.db-journal",   "tune.db-shm"};
  return names.count(name) > 0;
}

void CommandInputs::add_file(const fs::path& file) {
  if (file.empty()) return;
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) ids_.insert({st.st_dev, st.st_ino});
  files_.emplace_back(canonical_of(file), file.string());
}

void CommandInputs::add_tree(const fs::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  trees_.emplace_back(fs::weakly_canonical(dir, ec), dir.string());
  if (ec) trees_.back().first = canonical_of(dir);
  std::size_t seen = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > kMaxTreeEntries) break;
    if (it.depth() >= kTreeDepth) it.disable_recursion_pending();
    if (!is_caliber_data_file(it->path().filename().string())) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) == 0) ids_.insert({st.st_dev, st.st_ino});
  }
}

CommandInputs inputs_of(const std::vector<fs::path>& paths) {
  CommandInputs in;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec))
      in.add_tree(p);
    else
      in.add_file(p);
  }
  return in;
}

std::string CommandInputs::input_at(const fs::path& file) const {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && ids_.count({st.st_dev, st.st_ino}) > 0)
    return file.string();
  const fs::path c = canonical_of(file);
  for (const auto& [f, given] : files_)
    if (c == f) return given;
  for (const auto& [d, given] : trees_) {
    if (c == d) return given;
    if (inside(c, d) && is_caliber_data_file(c.filename().string())) return c.string();
  }
  return "";
}

std::string shown_path(const std::string& path) {
  std::string out;
  for (const unsigned char c : path.substr(0, kMaxShown)) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (path.size() > kMaxShown) out += "...(" + std::to_string(path.size()) + " bytes)";
  return out;
}

void check_output_file(const fs::path& file, const std::string& knob, const CommandInputs& inputs) {
  check_name(file, knob);
  if (const std::string in = inputs.input_at(file); !in.empty())
    refuse(knob, file,
           "is an input of this command (" + shown_path(in) +
               "); caliber never writes over what it reads");
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0) {
    check_existing(file, knob, st);
    // A results directory's own file (another run's run.log, a batch's ops_status.csv) is never
    // an output, input of this command or not: the run or batch it belongs to would be lost.
    if (is_caliber_data_file(file.filename().string()))
      refuse(knob, file,
             "is a data file of caliber's results (" + file.filename().string() +
                 "); caliber never writes over one: name another file");
  } else if (errno != ENOENT)
    refuse(knob, file, std::string("cannot be used (") + std::strerror(errno) + ")");
  check_folder(file, knob);
}

int open_append_regular(const fs::path& file) {
  const int fd = ::open(file.c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0)
    throw std::runtime_error(
        "cannot open " + file.string() + ": " + std::strerror(errno) +
        (errno == ELOOP ? " (a symbolic link: caliber never writes through one)" : ""));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("cannot open " + file.string() +
                             ": it is not a regular file; refusing to write into it");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace caliber::core
