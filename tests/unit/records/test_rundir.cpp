#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "records/rundir.hpp"
#include "temp_dir.hpp"

using caliber::testing::TempDir;

using namespace caliber::core;
namespace fs = std::filesystem;

namespace {
// A fixed local time, so the expected directory name does not depend on the clock.
std::chrono::system_clock::time_point fixed_time() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 29;
  tm.tm_hour = 15;
  tm.tm_min = 28;
  tm.tm_sec = 25;
  tm.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(std::mktime(&tm));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(RunDir, NameAndSuffixes) {
  TempDir dir;
  const auto parent = dir.path() / "runs" / "nested";  // created on demand
  const auto a = claim_run_dir(parent, "mm", fixed_time());
  EXPECT_EQ(a, parent / "mm-20261129-152825");
  EXPECT_TRUE(fs::is_directory(a));
  const auto b = claim_run_dir(parent, "mm", fixed_time());
  EXPECT_EQ(b, parent / "mm-20261129-152825-2");
  const auto c = claim_run_dir(parent, "mm", fixed_time());
  EXPECT_EQ(c, parent / "mm-20261129-152825-3");
  // A separator in the name cannot escape the parent.
  const auto d = claim_run_dir(parent, "a/b", fixed_time());
  EXPECT_EQ(d.parent_path(), parent);
}

TEST(RunDir, ExistingFileIsACollisionToo) {
  TempDir dir;
  { std::ofstream(dir.path() / "x-20261129-152825") << "not a dir"; }
  const auto a = claim_run_dir(dir.path(), "x", fixed_time());
  EXPECT_EQ(a.filename(), "x-20261129-152825-2");
}

TEST(RunDir, TenThreadsGetTenDirectories) {
  TempDir dir;
  const auto when = fixed_time();
  std::vector<fs::path> got(10);
  std::vector<std::thread> threads;
  for (int i = 0; i < 10; ++i) {
    threads.emplace_back([&, i] { got[i] = claim_run_dir(dir.path(), "race", when); });
  }
  for (auto& t : threads) t.join();
  const std::set<fs::path> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), 10u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 10);
  EXPECT_TRUE(distinct.count(dir.path() / "race-20261129-152825"));
  EXPECT_TRUE(distinct.count(dir.path() / "race-20261129-152825-10"));
}

TEST(RunDir, TenProcessesGetTenDirectories) {
  TempDir dir;
  const auto when = fixed_time();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::vector<pid_t> kids;
  for (int i = 0; i < 10; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      int rc = 0;
      try {
        const std::string p = claim_run_dir(dir.path(), "proc", when).string() + "\n";
        if (::write(fds[1], p.data(), p.size()) != static_cast<ssize_t>(p.size())) rc = 2;
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);  // never run the parent's test teardown in the child
    }
    kids.push_back(pid);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fds[0]);
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(k, &status, 0), k);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<std::string> lines;
  for (std::size_t pos = 0, e; (e = out.find('\n', pos)) != std::string::npos; pos = e + 1) {
    lines.insert(out.substr(pos, e - pos));
  }
  EXPECT_EQ(lines.size(), 10u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 10);
}

TEST(RunDir, UnwritableParentThrows) {
  TempDir dir;
  { std::ofstream(dir.path() / "file") << "x"; }
  EXPECT_THROW((void)claim_run_dir(dir.path() / "file", "r", fixed_time()), std::runtime_error);
}

TEST(RunDir, WriteFileAtomic) {
  TempDir dir;
  const auto f = dir.path() / "run_identity.json";
  write_file_atomic(f, "first");
  EXPECT_EQ(slurp(f), "first");
  write_file_atomic(f, "second, longer");
  EXPECT_EQ(slurp(f), "second, longer");
  // No temporary is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
  EXPECT_THROW(write_file_atomic(dir.path() / "missing" / "x", "y"), std::runtime_error);
}

// A data file read back: never a fifo (it hung the reader), a device (/dev/zero grew memory
// without bound), or a file over its ceiling; a symbolic link only where links are followed.
TEST(RunDir, ReadDataFileRefusesWhatIsNoSmallRegularFile) {
  TempDir dir;
  const auto f = dir.path() / "batch.json";
  { std::ofstream(f) << "{}"; }
  EXPECT_EQ(read_data_file(f, 16), "{}");
  const auto why = [](const fs::path& p, std::uintmax_t max, Links links = Links::follow) {
    try {
      (void)read_data_file(p, max, links);
    } catch (const DataFileError& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
      return e.why();
    }
    return std::string("read");
  };
  EXPECT_EQ(why(f, 1), "larger than 1 bytes (2 bytes)");
  EXPECT_EQ(why(dir.path() / "none", 16), "it does not exist");
  const auto fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(why(fifo, 16), "not a regular file (a fifo, device or socket)");
  EXPECT_EQ(why("/dev/zero", 16), "not a regular file (a fifo, device or socket)");
  EXPECT_EQ(why(dir.path(), 16), "not a regular file (a directory)");
  const auto link = dir.path() / "link";
  fs::create_symlink(f, link);
  EXPECT_EQ(why(link, 16), "read");
  EXPECT_NE(why(link, 16, Links::refuse).find("symbolic link"), std::string::npos);
}

TEST(RunDir, Iso8601Utc) {
  const auto t = std::chrono::system_clock::from_time_t(1795966105);  // 2026-11-29T15:28:25Z
  EXPECT_EQ(iso8601_utc(t), "2026-11-29T15:28:25Z");
}
