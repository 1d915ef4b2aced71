// ops_status.csv, the batch directory's table of its ops (docs/cluster.md, docs/run-log.md): one
// row per op, its reader and writer, and whose rows a run.log row is (batch_op_of). The batch
// (src/batch/) writes it; summary and the other reports read its `run` column to know which run
// directory holds an op's rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "records/runlog_rows.hpp"
#include "settings/settings.hpp"

namespace caliber::core {

inline constexpr const char* kOpsStatusFile = "ops_status.csv";
// The largest ops_status.csv read (docs/limits.md): 10000 ops of long reasons fit in a few MB.
inline constexpr std::uintmax_t kMaxOpsStatusBytes = 16u << 20;

// One line of ops_status.csv. status: ok, failed, crashed, timeout, skipped, interrupted; while
// the batch runs also pending and running (so a batch killed outright still leaves a readable
// file).
struct OpStatusRow {
  std::string op;
  OpStatus status = OpStatus::pending;
  std::string backend;
  std::string device;
  std::string timer;
  int rows = 0;
  double duration_s = 0;
  std::string reason;
  // The run directory (its name, in the batch directory) that holds the op's rows: its own, or
  // the one of the group its child ran with (batch --ops-per-child). Empty: not known (an op that
  // never started, a batch written before this column).
  std::string run;
};

// Line breaks as spaces, and at most `max` characters (a reason on one line of a table).
[[nodiscard]] std::string one_line(std::string s, std::size_t max = 300);

[[nodiscard]] std::string ops_status_csv(const std::vector<OpStatusRow>& rows);
// Throws std::runtime_error on a file without the required columns or that parse_csv refuses.
[[nodiscard]] std::vector<OpStatusRow> parse_ops_status_csv(const std::string& text);
// Read through read_data_file (records/rundir.hpp): a fifo, a device, a symbolic link or a file
// over kMaxOpsStatusBytes throws std::runtime_error naming it, as a file that does not parse does.
[[nodiscard]] std::vector<OpStatusRow> read_ops_status(const std::filesystem::path& batch_dir);

// The rows of a CSV text (RFC 4180 quoting, CRLF or LF). Throws std::runtime_error on a quote
// still open at the end of the text: the rest of the file would be read as one field, and a
// rewrite of it would lose the rows that field swallowed.
[[nodiscard]] std::vector<std::vector<std::string>> parse_csv(const std::string& text);

// The batch op a run.log row belongs to: the FlagGems benchmark file it came from (its params'
// "test", benchmark/test_OP.py::..., names OP) where it has one, else the row's op. A group child
// (batch --ops-per-child) writes the rows of several ops into one run directory; this says whose.
[[nodiscard]] std::string batch_op_of(const CaseRow& row);

}  // namespace caliber::core
