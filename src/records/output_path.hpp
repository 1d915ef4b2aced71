// The one output-path policy every writer of caliber follows (export, report, the tune cache,
// batch logs, ab and batch directories): a file is written only where nothing the user did not
// mean to lose is lost. Checked before anything is created, so a refusal writes nothing.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace caliber::core {

// A refused output path: the message names the knob, the path and why (exit 2).
class OutputRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The inputs of one command, so that no output is one of them: files by device and inode (a
// hard link or a second spelling is still the same file) and, for a directory, every data file
// caliber reads inside its tree (run.log, run_identity.json, ...), by identity and by path.
class CommandInputs {
 public:
  void add_file(const std::filesystem::path& file);
  // `dir` and the data files in its tree, at most a few levels deep (a batch holds runs).
  void add_tree(const std::filesystem::path& dir);
  // The input `file` is, or "" when it is none.
  [[nodiscard]] std::string input_at(const std::filesystem::path& file) const;

 private:
  std::set<std::pair<dev_t, ino_t>> ids_;
  std::vector<std::pair<std::filesystem::path, std::string>> trees_;  // canonical dir, as given
  std::vector<std::pair<std::filesystem::path, std::string>> files_;  // canonical file, as given
};

// The inputs named on a command line: each directory as a tree, each file as itself.
[[nodiscard]] CommandInputs inputs_of(const std::vector<std::filesystem::path>& paths);

// True for the names of the files caliber reads back from a run, batch or ab directory.
[[nodiscard]] bool is_caliber_data_file(const std::string& filename);

// The policy for a file about to be written at `file` for the option `knob`:
//  - not empty, no control characters (a newline in a path is a mistake), not too long;
//  - not an input of the same command (`inputs`), and not an existing file named as caliber's
//    data files are (is_caliber_data_file: another run's run.log, a batch's ops_status.csv);
//  - where something exists at it: a regular file (never a symbolic link, a device, a fifo or a
//    directory) that the user may write (its mode has a write bit and access(W_OK) agrees: a
//    0444 file is refused, not replaced, even for root);
//  - its folder exists, is a directory and is writable.
// Throws OutputRefused naming the knob and the path.
void check_output_file(const std::filesystem::path& file, const std::string& knob,
                       const CommandInputs& inputs = {});

// The path shown in a refusal: cut at 200 bytes, control characters escaped.
[[nodiscard]] std::string shown_path(const std::string& path);

// Opens `file` for appending (a log), never through a symbolic link and never anything but a
// regular file (a fifo is not waited on). Returns the descriptor; throws std::runtime_error.
[[nodiscard]] int open_append_regular(const std::filesystem::path& file);

}  // namespace caliber::core
