#pragma once
// A batch directory's lease (docs/limits.md, "Processes"): the `caliber batch` process
// that runs in a directory holds an exclusive flock on its .batch.lease for its whole life. The
// kernel lets go when that process ends, however it ends (SIGKILL included), so the lease says
// whether a batch still runs there: a second batch does not resume a directory in use, and a row
// that still says `running` in a directory nobody holds was left by a batch that died.
#include <filesystem>
#include <optional>
#include <string>

namespace caliber::run {

inline constexpr const char* kBatchLeaseFile = ".batch.lease";

class BatchLease {
 public:
  // Takes the lease of `dir` (which exists) for this process; nullopt when another process holds
  // it, with *holder set to what the lease file says of it ("pid N on HOST since TIME").
  // Throws std::runtime_error ("it is a symbolic link") for a link in the lease file's place.
  // Where the file cannot be created or the file system takes no locks (some network file
  // systems), a lease that holds nothing, with *warning saying why: the batch runs as before
  // leases, unguarded.
  static std::optional<BatchLease> take(const std::filesystem::path& dir, std::string* holder,
                                        std::string* warning);

  BatchLease(BatchLease&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  BatchLease& operator=(BatchLease&&) = delete;
  BatchLease(const BatchLease&) = delete;
  BatchLease& operator=(const BatchLease&) = delete;
  ~BatchLease();

 private:
  explicit BatchLease(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Who holds `dir`'s lease, when a live process does ("pid N on HOST since TIME", or "an unnamed
// process" when the file says nothing readable); nullopt when none does, or `dir` has no lease file
// (a batch of an older caliber).
std::optional<std::string> batch_lease_holder(const std::filesystem::path& dir);

}  // namespace caliber::run
