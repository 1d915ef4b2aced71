// The SQLite config cache: tuned winners keyed by op, provider and its version, backend, device
// model, dtype and key. Safe with several processes writing (WAL, busy timeout, BEGIN IMMEDIATE).
// A corrupt file is set aside and rebuilt rather than ending the run.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "caliber/config.hpp"

struct sqlite3;

namespace caliber::tune {

struct CacheKey {
  std::string op, provider, provider_version, backend, device_model, dtype, key;
  [[nodiscard]] std::string str() const;  // "mm lt-tuned@1.2 cuda/H200 bf16 M=4096,N=4096"
  bool operator==(const CacheKey&) const = default;
};

struct Trial {
  Config config;
  double ms = 0;
  bool rejected = false;
  std::string error;
  // Timed by a sweep's screening pass only (ms is the screen's figure): it did not go on to the
  // sweep's own pass (tuner.hpp, Screen).
  bool screened_out = false;
  bool operator==(const Trial&) const = default;
};

struct CacheRecord {
  Config config;  // the winner
  double ms = 0;
  std::vector<Trial> trials;
  double created = 0;  // unix seconds
};

[[nodiscard]] std::string trials_to_json(const std::vector<Trial>& trials);
// Unparseable text gives an empty list: the winner is what matters, trials are for the record.
[[nodiscard]] std::vector<Trial> trials_from_json(const std::string& text);

class ConfigCache {
 public:
  enum class Access { read_write, read_only };

  // Opens (and for read_write creates) the cache at `file`. Never throws for a bad file:
  // read_write sets a corrupt file aside as <file>.corrupt-<timestamp> and starts a fresh one;
  // a file that cannot be used at all falls back to an in-memory cache. read_only never touches
  // the file and reports a bad one as unusable (every lookup misses). Each problem adds one line
  // to `warnings`.
  [[nodiscard]] static std::unique_ptr<ConfigCache> open(const std::filesystem::path& file,
                                                         Access access,
                                                         std::vector<std::string>& warnings);
  ~ConfigCache();
  ConfigCache(const ConfigCache&) = delete;
  ConfigCache& operator=(const ConfigCache&) = delete;

  [[nodiscard]] std::optional<CacheRecord> find(const CacheKey& key);
  // The stored text of the config the last find() found but could not parse; "" otherwise.
  [[nodiscard]] const std::string& unparseable() const noexcept { return unparseable_; }
  // false when the cache is read-only or the write failed (the reason goes to last_error()).
  bool store(const CacheKey& key, const CacheRecord& rec);
  // Removes the key; false when it cannot (read-only source) or the write failed.
  bool evict(const CacheKey& key);
  [[nodiscard]] std::vector<std::pair<CacheKey, CacheRecord>> all();

  [[nodiscard]] bool writable() const noexcept {
    return access_ == Access::read_write && db_ != nullptr;
  }
  [[nodiscard]] bool usable() const noexcept { return db_ != nullptr; }
  [[nodiscard]] bool in_memory() const noexcept { return in_memory_; }
  [[nodiscard]] const std::filesystem::path& file() const noexcept { return file_; }
  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }
  // Leave a self-contained file behind (no -wal/-shm), so a recorded tune.db can be archived
  // and later opened read-only from a directory we may not write to.
  void make_portable();

 private:
  // Closes what is open and keeps this run's results in memory only.
  void use_memory();
  ConfigCache(std::filesystem::path file, Access access)
      : file_(std::move(file)), access_(access) {}
  bool write_txn(const std::string& what, const std::function<bool()>& body);

  std::filesystem::path file_;
  Access access_;
  ::sqlite3* db_ = nullptr;
  bool in_memory_ = false;
  std::string last_error_;
  std::string unparseable_;
};

// $XDG_CACHE_HOME/caliber/tune.db, else ~/.cache/caliber/tune.db.
[[nodiscard]] std::filesystem::path default_cache_path();

// The tune.db that --replay-from names (replayed, or resumed by --tune record): the file itself,
// else <run>/tune.db.
[[nodiscard]] std::filesystem::path replay_source_file(const std::filesystem::path& replay_from);

}  // namespace caliber::tune
