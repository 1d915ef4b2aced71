#include "batch/lease.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "core/terminal.hpp"

namespace fs = std::filesystem;

namespace caliber::run {

namespace {

// What a lease file says of its holder: its first line, at most 200 bytes, terminal-safe.
std::string read_holder(int fd) {
  char buf[200];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  s = s.substr(0, s.find('\n'));
  return s.empty() ? "an unnamed process" : core::terminal_safe(s);
}

std::string describe_self() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  char when[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "pid " + std::to_string(::getpid()) + " on " + (host[0] ? host : "this host") + " since " +
         when;
}

}  // namespace

std::optional<BatchLease> BatchLease::take(const fs::path& dir, std::string* holder,
                                           std::string* warning) {
  const fs::path file = dir / kBatchLeaseFile;
  const auto unguarded = [&](const std::string& why) {
    if (warning)
      *warning = "'" + file.string() + "': " + why +
                 "; the batch runs without its lease (a second batch could resume this "
                 "directory while it runs)";
    return BatchLease(-1);
  };
  // O_CLOEXEC: the children do not hold it (the lease is the batch process's alone); O_NONBLOCK:
  // a fifo planted in its place does not hang the open.
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0 && errno == ELOOP) throw std::runtime_error("it is a symbolic link");
  if (fd < 0) return unguarded(std::string("cannot be opened: ") + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    if (e != EWOULDBLOCK) {
      ::close(fd);
      return unguarded(std::string("cannot be locked: ") + std::strerror(e));
    }
    if (holder) *holder = read_holder(fd);
    ::close(fd);
    return std::nullopt;
  }
  const std::string me = describe_self() + "\n";
  // Best effort: the lock is the lease, the text only names its holder in a refusal.
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd, me.data(), me.size(), 0);
  }
  return BatchLease(fd);
}

BatchLease::~BatchLease() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor lets the lock go
}

std::optional<std::string> batch_lease_holder(const fs::path& dir) {
  const int fd =
      ::open((dir / kBatchLeaseFile).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0)
    ::flock(fd, LOCK_UN);
  else if (errno == EWOULDBLOCK)
    holder = read_holder(fd);
  ::close(fd);
  return holder;
}

}  // namespace caliber::run
