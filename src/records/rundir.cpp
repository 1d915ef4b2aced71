#include "records/rundir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <streambuf>
#include <system_error>
#include <vector>

namespace caliber::core {

namespace {

std::string format_time(std::chrono::system_clock::time_point t, const char* fmt, bool utc) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  if (utc) {
    gmtime_r(&tt, &tm);
  } else {
    localtime_r(&tt, &tm);
  }
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, fmt, &tm);
  return std::string(buf, n);
}

// A name with a separator would claim a directory somewhere else than under `parent`.
std::string safe_name(const std::string& name) {
  std::string s = name.empty() ? std::string("run") : name;
  for (char& c : s) {
    if (c == '/' || c == '\\' || c == '\0') c = '_';
  }
  if (s == "." || s == "..") s = "run";
  return s;
}

}  // namespace

std::filesystem::path claim_run_dir(const std::filesystem::path& parent, const std::string& name,
                                    std::chrono::system_clock::time_point when) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec && !std::filesystem::is_directory(parent)) {
    throw std::runtime_error("cannot create " + parent.string() + ": " + ec.message());
  }
  const std::string base = safe_name(name) + "-" + format_time(when, "%Y%m%d-%H%M%S", false);
  // mkdir either creates the directory or fails with EEXIST, atomically: two runs started in
  // the same second can never both believe they own one directory.
  constexpr int max_attempts = 100000;
  for (int n = 1; n <= max_attempts; ++n) {
    const std::filesystem::path candidate =
        parent / (n == 1 ? base : base + "-" + std::to_string(n));
    if (::mkdir(candidate.c_str(), 0777) == 0) return candidate;
    if (errno != EEXIST) {
      throw std::runtime_error("cannot create run directory " + candidate.string() + ": " +
                               std::strerror(errno));
    }
  }
  throw std::runtime_error("cannot claim a run directory under " + parent.string() + " for " +
                           base + ": every suffix up to -" + std::to_string(max_attempts) +
                           " is taken");
}

void check_out_dir(const std::filesystem::path& parent) {
  const std::string text = parent.string();
  if (text.empty()) throw std::invalid_argument("'' is empty; allowed: a directory path");
  if (text.size() > kMaxOutPath)
    throw std::invalid_argument("a path of " + std::to_string(text.size()) +
                                " characters is too long (at most " + std::to_string(kMaxOutPath) +
                                ")");
  for (const auto& part : parent)
    if (part.string().size() > 255)
      throw std::invalid_argument("'" + text.substr(0, 80) + "...' has a name of " +
                                  std::to_string(part.string().size()) +
                                  " characters (at most 255)");
  // The deepest part of the path that exists decides: a directory we may write into.
  std::filesystem::path p =
      parent.is_absolute() ? parent : std::filesystem::current_path() / parent;
  p = p.lexically_normal();
  while (true) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        throw std::invalid_argument("'" + text + "': " + p.string() + " is not a directory");
      if (::access(p.c_str(), W_OK | X_OK) != 0)
        throw std::invalid_argument("'" + text + "': " + p.string() + " is not writable (" +
                                    std::strerror(errno) + ")");
      return;
    }
    if (errno != ENOENT)
      throw std::invalid_argument("'" + text + "': " + p.string() + ": " + std::strerror(errno));
    // A name that is there as a symbolic link to nothing: creating the directory would fail.
    if (struct stat lst{}; ::lstat(p.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      throw std::invalid_argument("'" + text + "': " + p.string() +
                                  " is a symbolic link to nothing (a dangling link); allowed: a "
                                  "directory, or a path that does not exist yet");
    if (!p.has_parent_path() || p.parent_path() == p) return;
    p = p.parent_path();
  }
}

namespace {

// An ostream's buffer over a file descriptor: writes in 64 KiB blocks, remembers the first
// error (errno) and then takes nothing more.
class FdBuf final : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(64 * 1024) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  [[nodiscard]] int error() const noexcept { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        break;
      }
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return error_ == 0;
  }
  int fd_;
  int error_ = 0;
  std::vector<char> buf_;
};

}  // namespace

void write_file_atomic(const std::filesystem::path& file, const std::string& content) {
  write_file_atomic(file, [&content](std::ostream& out) { out << content; });
}

void write_file_atomic(const std::filesystem::path& file,
                       const std::function<void(std::ostream&)>& write) {
  static std::atomic<unsigned> counter{0};
  // Never replace what is not a regular file: `--html /dev/null` run as root must not turn the
  // device into a file, and a symbolic link is not followed and replaced.
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw std::runtime_error("cannot write " + file.string() + ": it exists and is not a regular " +
                             "file (" +
                             (S_ISLNK(st.st_mode)   ? "a symbolic link"
                              : S_ISDIR(st.st_mode) ? "a directory"
                                                    : "a device, fifo or socket") +
                             "); refusing to replace it");
  }
  const bool exists = ::lstat(file.c_str(), &st) == 0;
  // A file the user made read-only is kept, not replaced (rename would succeed in a writable
  // folder, and root passes access(W_OK) whatever the mode).
  if (exists &&
      ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || ::access(file.c_str(), W_OK) != 0))
    throw std::runtime_error("cannot write " + file.string() +
                             ": it is read-only; refusing to replace it");
  // Appending piece by piece: GCC 12 warns falsely (-Wrestrict) on `"." + std::string`.
  std::string tmp_name = ".";
  tmp_name += file.filename().string();
  tmp_name += ".tmp.";
  tmp_name += std::to_string(::getpid());
  tmp_name += ".";
  tmp_name += std::to_string(counter.fetch_add(1));
  const std::filesystem::path tmp = file.parent_path() / tmp_name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(errno));
  }
  if (exists) ::fchmod(fd, st.st_mode & 07777);  // the replacement keeps the file's mode
  const auto give_up = [&](const std::string& why) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + file.string() + ": " + why);
  };
  {
    FdBuf buf(fd);
    std::ostream out(&buf);
    try {
      write(out);
    } catch (const std::exception& e) {
      give_up(e.what());
    }
    out.flush();
    if (buf.error() != 0) give_up(std::strerror(buf.error()));
    if (!out) give_up("the output stream failed");
  }
  // Without the sync a crash after the rename can leave an empty file under the final name.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + file.string() + ": " + why);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot replace " + file.string() + ": " + why);
  }
}

std::string read_data_file(const std::filesystem::path& file, std::uintmax_t max_bytes,
                           Links links) {
  const auto refuse = [&](const std::string& why) { throw DataFileError(file, why); };
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (links == Links::refuse) flags |= O_NOFOLLOW;
  const int fd = ::open(file.c_str(), flags);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (err == ENOENT) refuse("it does not exist");
    if (err == ELOOP && links == Links::refuse && ::lstat(file.c_str(), &st) == 0 &&
        S_ISLNK(st.st_mode))
      refuse("it is a symbolic link; caliber neither reads nor rewrites this file through one");
    refuse(std::strerror(err));
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = S_ISDIR(st.st_mode) ? "not a regular file (a directory)"
                              : "not a regular file (a fifo, device or socket)";
  else if (static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    why = "larger than " + std::to_string(max_bytes) + " bytes (" + std::to_string(st.st_size) +
          " bytes)";
  std::string text;
  if (why.empty()) {
    text.reserve(static_cast<std::size_t>(st.st_size));
    char buf[64 * 1024];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = std::strerror(errno);
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > max_bytes) {  // grew while read
        why = "larger than " + std::to_string(max_bytes) + " bytes";
        break;
      }
    }
  }
  ::close(fd);
  if (!why.empty()) refuse(why);
  return text;
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  return format_time(t, "%Y-%m-%dT%H:%M:%SZ", true);
}

}  // namespace caliber::core
