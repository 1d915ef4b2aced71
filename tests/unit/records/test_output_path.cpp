// The one output-path policy (core/output_path.hpp) and the library check (core/library_file.hpp):
// what a writer may replace, what an op library must look like before dlopen, and the
// terminal-safe and CSV-safe text of cells read from files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "temp_dir.hpp"
#include "core/terminal.hpp"
#include "records/csv.hpp"
#include "records/output_path.hpp"
#include "records/rundir.hpp"
#include "settings/library_file.hpp"

namespace caliber::core {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The path of a shared object mapped into this process.
std::string loaded_shared_object() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash != std::string::npos && line.find(".so", slash) != std::string::npos)
      return line.substr(slash);
  }
  return "";
}

std::string refusal(const fs::path& file, const CommandInputs& in = {}) {
  try {
    check_output_file(file, "--out", in);
  } catch (const OutputRefused& e) {
    return e.what();
  }
  return "";
}

TEST(OutputPath, ANewFileInAWritableFolderIsAllowed) {
  testing::TempDir t;
  EXPECT_EQ(refusal(t.path() / "new.csv"), "");
  write(t.path() / "old.csv", "x");
  EXPECT_EQ(refusal(t.path() / "old.csv"), "");  // a regular file of the user's may be replaced
}

TEST(OutputPath, AnInputOfTheCommandIsRefusedByPathAndByInode) {
  testing::TempDir t;
  const fs::path run = t.path() / "R";
  fs::create_directories(run / "sub");
  write(run / "run.log", "{}\n");
  write(run / "run_identity.json", "{}\n");
  const CommandInputs in = inputs_of({run});
  EXPECT_NE(refusal(run / "run.log", in).find("is an input of this command"), std::string::npos);
  EXPECT_NE(refusal(run / "sub" / ".." / "run_identity.json", in).find("input"), std::string::npos);
  ::link((run / "run.log").c_str(), (t.path() / "alias.csv").c_str());
  EXPECT_NE(refusal(t.path() / "alias.csv", in).find("input"), std::string::npos);
  // A file of another name in the run directory (report.html) is not an input.
  EXPECT_EQ(refusal(run / "report.html", in), "");
  // A named input file is one too.
  CommandInputs files;
  files.add_file(t.path() / "alias.csv");
  EXPECT_NE(refusal(run / "run.log", files).find("input"), std::string::npos);
}

TEST(OutputPath, LinksDevicesDirectoriesAndReadOnlyFilesAreRefused) {
  testing::TempDir t;
  write(t.path() / "target", "keep");
  fs::create_symlink(t.path() / "target", t.path() / "link");
  EXPECT_NE(refusal(t.path() / "link").find("symbolic link"), std::string::npos);
  EXPECT_NE(refusal("/dev/null").find("device, fifo or socket"), std::string::npos);
  EXPECT_NE(refusal(t.path()).find("directory"), std::string::npos);
  write(t.path() / "ro", "keep");
  ::chmod((t.path() / "ro").c_str(), 0444);
  // Refused even for root, whom access(W_OK) lets through.
  EXPECT_NE(refusal(t.path() / "ro").find("read-only"), std::string::npos);
  EXPECT_NE(refusal(t.path() / "missing" / "x.csv").find("folder must exist"), std::string::npos);
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
  EXPECT_NE(refusal(t.path() / "new\nline").find("control character"), std::string::npos);
  EXPECT_EQ(read(t.path() / "target"), "keep");
}

TEST(OutputPath, WriteFileAtomicKeepsAReadOnlyFileAndTheModeOfAWritableOne) {
  testing::TempDir t;
  const fs::path ro = t.path() / "ro.csv";
  write(ro, "keep");
  ::chmod(ro.c_str(), 0444);
  EXPECT_THROW(write_file_atomic(ro, "new"), std::runtime_error);
  EXPECT_EQ(read(ro), "keep");
  struct stat st {};
  ASSERT_EQ(::stat(ro.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  const fs::path own = t.path() / "own.csv";
  write(own, "old");
  ::chmod(own.c_str(), 0600);
  write_file_atomic(own, "new");
  ASSERT_EQ(::stat(own.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(own), "new");
}

TEST(OutputPath, AppendingNeverFollowsALinkNorOpensAFifo) {
  testing::TempDir t;
  write(t.path() / "target", "keep");
  fs::create_symlink(t.path() / "target", t.path() / "op.log");
  EXPECT_THROW((void)open_append_regular(t.path() / "op.log"), std::runtime_error);
  EXPECT_EQ(read(t.path() / "target"), "keep");
  ASSERT_EQ(::mkfifo((t.path() / "fifo").c_str(), 0600), 0);
  EXPECT_THROW((void)open_append_regular(t.path() / "fifo"), std::runtime_error);
  const int fd = open_append_regular(t.path() / "new.log");
  EXPECT_GE(fd, 0);
  ::close(fd);
}

TEST(LibraryFile, OnlyAWholeSharedObjectOfThisMachinePasses) {
  testing::TempDir t;
  EXPECT_NE(shared_library_problem((t.path() / "none.so").string()), std::nullopt);
  write(t.path() / "text.so", "not a library at all, but long enough to hold an ELF header....");
  EXPECT_NE(shared_library_problem((t.path() / "text.so").string())->find("not an ELF"),
            std::string::npos);
  ASSERT_EQ(::mkfifo((t.path() / "fifo.so").c_str(), 0600), 0);
  EXPECT_NE(shared_library_problem((t.path() / "fifo.so").string())->find("regular"),
            std::string::npos);
  // A shared object this test has loaded (libc, libstdc++) is whole; its first 1000 bytes are
  // not (dlopen of them faults with SIGBUS).
  const std::string lib = loaded_shared_object();
  ASSERT_FALSE(lib.empty()) << "no shared object in /proc/self/maps";
  EXPECT_EQ(shared_library_problem(lib), std::nullopt) << lib;
  std::ifstream in(lib, std::ios::binary);
  std::string head(1000, '\0');
  in.read(head.data(), 1000);
  write(t.path() / "cut.so", head);
  EXPECT_NE(shared_library_problem((t.path() / "cut.so").string())->find("cut short"),
            std::string::npos);
}

TEST(TerminalSafe, ControlCharactersArePrintedAsQuestionMarks) {
  EXPECT_EQ(terminal_safe("a\x1b]0;x\x07z\n\tok"), "a?]0;x?z\n\tok");
  EXPECT_EQ(terminal_safe("csi \xc2\x9b"
                          "31m"),
            "csi ?31m");
  EXPECT_EQ(terminal_safe("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 text stays
}

TEST(CsvTextCell, FormulasBecomeTextNumbersStay) {
  EXPECT_EQ(csv_text_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
  EXPECT_EQ(csv_text_cell("+cmd"), "'+cmd");
  EXPECT_EQ(csv_text_cell("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(csv_text_cell("-2+3"), "'-2+3");
  EXPECT_EQ(csv_text_cell("-1.5"), "-1.5");
  EXPECT_EQ(csv_text_cell("-"), "-");
  EXPECT_EQ(csv_text_cell("mm"), "mm");
}

}  // namespace
}  // namespace caliber::core
