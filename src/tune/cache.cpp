#include "tune/cache.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>

namespace caliber::tune {

namespace fs = std::filesystem;

namespace {

constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS tune_configs ("
    " op TEXT NOT NULL, provider TEXT NOT NULL, provider_version TEXT NOT NULL,"
    " backend TEXT NOT NULL, device_model TEXT NOT NULL, dtype TEXT NOT NULL, key TEXT NOT NULL,"
    " config TEXT NOT NULL, ms REAL NOT NULL, trials TEXT NOT NULL, created REAL NOT NULL,"
    " PRIMARY KEY (op, provider, provider_version, backend, device_model, dtype, key))";

constexpr const char* kKeyWhere =
    " WHERE op=?1 AND provider=?2 AND provider_version=?3 AND backend=?4 AND device_model=?5"
    " AND dtype=?6 AND key=?7";

// SQLITE_FORMAT (unused by SQLite itself since 3.x) marks a valid database of another schema:
// set aside like a corrupt file, never written into.
constexpr int kOtherSchema = SQLITE_FORMAT;

bool is_corruption(int rc) {
  rc &= 0xff;
  return rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT || rc == kOtherSchema;
}

bool is_busy(int rc) {
  rc &= 0xff;
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string db_error(sqlite3* db, int rc) {
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return msg.empty() ? sqlite3_errstr(rc) : msg;
}

// Some pragmas (journal_mode among them) return BUSY without calling the busy handler, so a
// second process opening the cache at the same moment would fail; retry them within the timeout.
int exec_retry(sqlite3* db, const char* sql, std::string& err) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    char* msg = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
    if (msg) {
      err = msg;
      sqlite3_free(msg);
    }
    if (!is_busy(rc) || std::chrono::steady_clock::now() > deadline) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  [[nodiscard]] bool ok() const { return rc_ == SQLITE_OK; }
  [[nodiscard]] int rc() const { return rc_; }
  sqlite3_stmt* get() { return s_; }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind_key(const CacheKey& k) {
    bind(1, k.op);
    bind(2, k.provider);
    bind(3, k.provider_version);
    bind(4, k.backend);
    bind(5, k.device_model);
    bind(6, k.dtype);
    bind(7, k.key);
  }
  int step() { return rc_ = sqlite3_step(s_); }
  std::string text(int col) {
    auto* p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  }
  double real(int col) { return sqlite3_column_double(s_, col); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
};

// Reads a row: the open connection is only known to work once a page has been read.
int probe(sqlite3* db, std::string& err, bool full_check) {
  Stmt count(db, "SELECT count(*) FROM tune_configs");
  if (!count.ok()) {
    err = db_error(db, count.rc());
    return count.rc();
  }
  int rc = count.step();
  if (rc != SQLITE_ROW) {
    err = db_error(db, rc);
    return rc;
  }
  if (!full_check) return SQLITE_OK;
  Stmt check(db, "PRAGMA quick_check(1)");
  if (!check.ok() || check.step() != SQLITE_ROW) {
    err = db_error(db, check.rc());
    return check.rc() == SQLITE_ROW ? SQLITE_CORRUPT : check.rc();
  }
  std::string verdict = check.text(0);
  if (verdict != "ok") {
    err = "integrity check: " + verdict;
    return SQLITE_CORRUPT;
  }
  return SQLITE_OK;
}

// A database that holds tables but not ours (or ours with other columns) belongs to something
// else: kOtherSchema. An empty database (a new file) is ours to fill.
int check_schema(sqlite3* db, std::string& err) {
  Stmt tables(db, "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'");
  if (!tables.ok()) {
    err = db_error(db, tables.rc());
    return tables.rc();
  }
  std::vector<std::string> names;
  int rc = SQLITE_OK;
  while ((rc = tables.step()) == SQLITE_ROW) names.push_back(tables.text(0));
  if (rc != SQLITE_DONE) {
    err = db_error(db, rc);
    return rc;
  }
  if (names.empty()) return SQLITE_OK;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n.substr(0, 64);
  if (names.size() != 1 || names.front() != "tune_configs") {
    err = "it holds another schema (tables: " + list + ")";
    return kOtherSchema;
  }
  Stmt cols(db, "PRAGMA table_info(tune_configs)");
  if (!cols.ok()) {
    err = db_error(db, cols.rc());
    return cols.rc();
  }
  std::vector<std::string> have;
  while (cols.step() == SQLITE_ROW) have.push_back(cols.text(1));
  const std::vector<std::string> want = {
      "op",     "provider", "provider_version", "backend", "device_model", "dtype", "key",
      "config", "ms",       "trials",           "created"};
  if (have != want) {
    err = "it holds another schema (tune_configs with other columns)";
    return kOtherSchema;
  }
  return SQLITE_OK;
}

// Opens `file` read-write in WAL mode with the schema in place; rc and err say what failed.
int open_read_write(const fs::path& file, sqlite3** out, std::string& err) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    // A file SQLite could only open read-only is not ours to write: the caller reads it instead.
    if (sqlite3_db_readonly(db, "main") == 1) {
      err = "it is read-only";
      rc = SQLITE_READONLY;
    }
    if (rc == SQLITE_OK) rc = check_schema(db, err);
    if (rc == SQLITE_OK) rc = exec_retry(db, "PRAGMA journal_mode=WAL", err);
    if (rc == SQLITE_OK) rc = exec_retry(db, "PRAGMA synchronous=NORMAL", err);
    if (rc == SQLITE_OK) rc = exec_retry(db, kSchema, err);
    if (rc == SQLITE_OK) rc = probe(db, err, true);
  } else {
    err = db_error(db, rc);
  }
  if (rc != SQLITE_OK) {
    if (err.empty()) err = db_error(db, rc);
    sqlite3_close_v2(db);
    return rc;
  }
  *out = db;
  return SQLITE_OK;
}

// Opens `file` read-only: nullptr (and err) when it is not a readable tune cache. The URI form
// with immutable=1 is the fallback for a WAL file whose -shm cannot be created (a recorded run
// directory we may not write to).
sqlite3* open_read_only(const fs::path& file, std::string& err) {
  const std::string uris[] = {"file:" + file.string() + "?mode=ro",
                              "file:" + file.string() + "?mode=ro&immutable=1"};
  for (const auto& uri : uris) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_busy_timeout(db, kBusyTimeoutMs);
      rc = check_schema(db, err);
      if (rc == SQLITE_OK) rc = probe(db, err, false);
    } else {
      err = db_error(db, rc);
    }
    if (rc == SQLITE_OK) return db;
    sqlite3_close_v2(db);
    if (is_corruption(rc)) break;
  }
  return nullptr;
}

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Moves the corrupt file (and its -wal/-shm, which would otherwise be replayed into the fresh
// file) to <file>.corrupt-<timestamp>[-N]. Returns the new name, or empty when it could not.
bool has_sqlite_header(const fs::path& file) {
  static constexpr char kHeader[] = "SQLite format 3";  // with its NUL: the 16-byte header
  std::FILE* f = std::fopen(file.c_str(), "rbe");
  if (f == nullptr) return false;
  char buf[sizeof kHeader] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  return n == sizeof buf && std::memcmp(buf, kHeader, sizeof buf) == 0;
}

fs::path set_aside(const fs::path& file) {
  const std::string base = file.string() + ".corrupt-" + timestamp();
  fs::path target = base;
  std::error_code ec;
  for (int n = 2; fs::exists(target, ec); ++n) target = base + "-" + std::to_string(n);
  fs::rename(file, target, ec);
  if (ec) return {};
  for (const char* side : {"-wal", "-shm"}) {
    fs::path s = file.string() + side;
    std::error_code ec2;
    if (fs::exists(s, ec2)) fs::rename(s, target.string() + side, ec2);
  }
  return target;
}

// Serializes recovery between processes, so two of them finding the same corrupt file do not
// set aside each other's fresh replacement.
class FileLock {
 public:
  explicit FileLock(const fs::path& lock_file) {
    fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

std::string CacheKey::str() const {
  std::string s = op + " " + provider;
  if (!provider_version.empty()) s += "@" + provider_version;
  s += " " + backend;
  if (!device_model.empty()) s += "/" + device_model;
  s += " " + dtype + " " + key;
  return s;
}

std::string trials_to_json(const std::vector<Trial>& trials) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : trials) {
    nlohmann::json j{{"config", t.config.str()}, {"ms", t.ms}, {"rejected", t.rejected}};
    if (!t.error.empty()) j["error"] = t.error;
    if (t.screened_out) j["screened_out"] = true;
    arr.push_back(std::move(j));
  }
  return arr.dump();
}

std::vector<Trial> trials_from_json(const std::string& text) {
  std::vector<Trial> out;
  auto arr = nlohmann::json::parse(text, nullptr, false);
  if (!arr.is_array()) return out;
  for (const auto& j : arr) {
    if (!j.is_object()) continue;
    Trial t;
    auto c = Config::parse(j.value("config", std::string()));
    if (!c) continue;
    t.config = *c;
    t.ms = j.value("ms", 0.0);
    t.rejected = j.value("rejected", false);
    t.error = j.value("error", std::string());
    t.screened_out = j.value("screened_out", false);
    out.push_back(std::move(t));
  }
  return out;
}

fs::path default_cache_path() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "caliber" / "tune.db";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "caliber" / "tune.db";
  return fs::temp_directory_path() / "caliber" / "tune.db";
}

fs::path replay_source_file(const fs::path& replay_from) {
  std::error_code ec;
  return fs::is_regular_file(replay_from, ec) ? replay_from : replay_from / "tune.db";
}

std::unique_ptr<ConfigCache> ConfigCache::open(const fs::path& file, Access access,
                                               std::vector<std::string>& warnings) {
  std::unique_ptr<ConfigCache> c(new ConfigCache(file, access));
  std::string err;

  if (access == Access::read_only) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      warnings.push_back("tune cache " + file.string() +
                         " does not exist; no configs can be read from it");
      return c;
    }
    c->db_ = open_read_only(file, err);
    if (c->db_ == nullptr)
      warnings.push_back("tune cache " + file.string() + " cannot be read (" + err +
                         "); it is left untouched and no configs can be read from it");
    return c;
  }

  std::error_code ec;
  // SQLite would create <file>-journal next to a device or replace what a link points at.
  if (fs::exists(fs::symlink_status(file, ec)) && !fs::is_regular_file(file, ec)) {
    warnings.push_back("tune cache " + file.string() +
                       " is not a regular file; tuning results of this run are kept in memory "
                       "only");
    std::string mem_err;
    if (open_read_write(":memory:", &c->db_, mem_err) == SQLITE_OK) c->in_memory_ = true;
    return c;
  }
  if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
  // A file whose mode has no write bit is read-only whoever runs (root's writes would pass
  // SQLite's own check): read, never written, as the output policy treats such a file.
  struct stat st {};
  int rc = SQLITE_READONLY;
  if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      (st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
    err = "its mode has no write bit";
  else
    rc = open_read_write(file, &c->db_, err);
  if (rc != SQLITE_OK && is_corruption(rc)) {
    FileLock lock(file.string() + ".lock");
    // Another process may have rebuilt it while we waited for the lock.
    err.clear();
    rc = open_read_write(file, &c->db_, err);
    if (rc != SQLITE_OK && is_corruption(rc)) {
      const std::string why = err;
      const bool other = (rc & 0xff) == kOtherSchema;
      // Only a damaged SQLite database is ours to move: any other file (a run.log, a text file
      // named by mistake) is left exactly where it is.
      fs::path aside = has_sqlite_header(file) ? set_aside(file) : fs::path();
      if (aside.empty()) {
        warnings.push_back("tune cache " + file.string() + " is not an SQLite database (" + why +
                           "); it is left untouched and tuning results of this run are kept in "
                           "memory only");
        c->use_memory();
        return c;
      }
      if (!aside.empty()) {
        err.clear();
        rc = open_read_write(file, &c->db_, err);
        warnings.push_back("tune cache " + file.string() +
                           (other ? " is not a caliber tune cache (" : " was corrupt (") + why +
                           "): moved to " + aside.string() + " and rebuilt empty");
      }
    }
  }
  if (rc != SQLITE_OK && !is_corruption(rc) && fs::is_regular_file(file, ec)) {
    // A valid cache we may not write (a read-only file or folder): its configs are still good.
    std::string ro_err;
    if (sqlite3* db = open_read_only(file, ro_err)) {
      c->db_ = db;
      c->access_ = Access::read_only;
      warnings.push_back("tune cache " + file.string() + " cannot be written (" + err +
                         "); its configs are used read-only and new tuning results are not "
                         "stored");
      return c;
    }
  }
  if (rc != SQLITE_OK) {
    warnings.push_back("tune cache " + file.string() + " cannot be used (" + err +
                       "); tuning results of this run are kept in memory only");
    std::string mem_err;
    if (open_read_write(":memory:", &c->db_, mem_err) == SQLITE_OK) c->in_memory_ = true;
  }
  return c;
}

void ConfigCache::use_memory() {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
  std::string err;
  if (open_read_write(":memory:", &db_, err) == SQLITE_OK) in_memory_ = true;
}

ConfigCache::~ConfigCache() {
  if (db_) sqlite3_close_v2(db_);
}

std::optional<CacheRecord> ConfigCache::find(const CacheKey& key) {
  unparseable_.clear();
  if (!db_) return std::nullopt;
  const std::string sql =
      std::string("SELECT config, ms, trials, created FROM tune_configs") + kKeyWhere;
  Stmt s(db_, sql.c_str());
  if (!s.ok()) {
    last_error_ = db_error(db_, s.rc());
    return std::nullopt;
  }
  s.bind_key(key);
  int rc = s.step();
  if (rc != SQLITE_ROW) {
    if (rc != SQLITE_DONE) last_error_ = db_error(db_, rc);
    return std::nullopt;
  }
  auto cfg = Config::parse(s.text(0));
  if (!cfg) {
    unparseable_ = s.text(0);
    last_error_ = "unparseable config '" + s.text(0) + "' for " + key.str();
    return std::nullopt;
  }
  CacheRecord r;
  r.config = *cfg;
  r.ms = s.real(1);
  r.trials = trials_from_json(s.text(2));
  r.created = s.real(3);
  return r;
}

bool ConfigCache::write_txn(const std::string& what, const std::function<bool()>& body) {
  if (!writable()) {
    last_error_ = "tune cache " + file_.string() + " is read-only";
    return false;
  }
  std::string err;
  int rc = exec_retry(db_, "BEGIN IMMEDIATE", err);
  if (rc != SQLITE_OK) {
    last_error_ = what + ": " + (err.empty() ? db_error(db_, rc) : err);
    return false;
  }
  if (!body()) {
    exec_retry(db_, "ROLLBACK", err);
    return false;
  }
  rc = exec_retry(db_, "COMMIT", err);
  if (rc != SQLITE_OK) {
    last_error_ = what + ": " + (err.empty() ? db_error(db_, rc) : err);
    exec_retry(db_, "ROLLBACK", err);
    return false;
  }
  return true;
}

bool ConfigCache::store(const CacheKey& key, const CacheRecord& rec) {
  return write_txn("store " + key.str(), [&] {
    Stmt s(db_,
           "INSERT OR REPLACE INTO tune_configs (op, provider, provider_version, backend, "
           "device_model,"
           " dtype, key, config, ms, trials, created) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
    if (!s.ok()) {
      last_error_ = db_error(db_, s.rc());
      return false;
    }
    s.bind_key(key);
    s.bind(8, rec.config.str());
    s.bind(9, rec.ms);
    s.bind(10, trials_to_json(rec.trials));
    s.bind(11, rec.created > 0 ? rec.created : unix_now());
    int rc = s.step();
    if (rc != SQLITE_DONE) {
      last_error_ = db_error(db_, rc);
      return false;
    }
    return true;
  });
}

bool ConfigCache::evict(const CacheKey& key) {
  return write_txn("evict " + key.str(), [&] {
    const std::string sql = std::string("DELETE FROM tune_configs") + kKeyWhere;
    Stmt s(db_, sql.c_str());
    if (!s.ok()) {
      last_error_ = db_error(db_, s.rc());
      return false;
    }
    s.bind_key(key);
    int rc = s.step();
    if (rc != SQLITE_DONE) {
      last_error_ = db_error(db_, rc);
      return false;
    }
    return true;
  });
}

std::vector<std::pair<CacheKey, CacheRecord>> ConfigCache::all() {
  std::vector<std::pair<CacheKey, CacheRecord>> out;
  if (!db_) return out;
  Stmt s(db_,
         "SELECT op, provider, provider_version, backend, device_model, dtype, key, config, ms,"
         " trials, created FROM tune_configs ORDER BY op, provider, provider_version, backend,"
         " device_model, dtype, key");
  if (!s.ok()) {
    last_error_ = db_error(db_, s.rc());
    return out;
  }
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    CacheKey k{s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)};
    auto cfg = Config::parse(s.text(7));
    if (!cfg) continue;
    CacheRecord r{*cfg, s.real(8), trials_from_json(s.text(9)), s.real(10)};
    out.emplace_back(std::move(k), std::move(r));
  }
  if (rc != SQLITE_DONE) last_error_ = db_error(db_, rc);
  return out;
}

void ConfigCache::make_portable() {
  if (!writable() || in_memory_) return;
  std::string err;
  exec_retry(db_, "PRAGMA wal_checkpoint(TRUNCATE)", err);
  exec_retry(db_, "PRAGMA journal_mode=DELETE", err);
}

}  // namespace caliber::tune
