#include "records/ops_status.hpp"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "records/csv.hpp"
#include "records/rundir.hpp"

namespace fs = std::filesystem;

namespace caliber::core {

namespace {

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {"op",   "status",     "backend", "device", "timer",
                                                "rows", "duration_s", "reason",  "run"};
  return cols;
}

}  // namespace

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  std::size_t line = 1, quote_line = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      quote_line = line;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n') {
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (quoted)
    throw std::runtime_error("the quoted field opened on line " + std::to_string(quote_line) +
                             " is never closed (a '\"' is missing)");
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string one_line(std::string s, std::size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string ops_status_csv(const std::vector<OpStatusRow>& rows) {
  std::ostringstream o;
  const auto& cols = csv_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) o << (i ? "," : "") << cols[i];
  o << "\n";
  for (const auto& r : rows) {
    char dur[32];
    std::snprintf(dur, sizeof dur, "%.3f", r.duration_s);
    o << csv_field(r.op) << "," << csv_field(to_string(r.status)) << "," << csv_field(r.backend)
      << "," << csv_field(r.device) << "," << csv_field(r.timer) << "," << r.rows << "," << dur
      << "," << csv_field(one_line(r.reason)) << "," << csv_field(r.run) << "\n";
  }
  return o.str();
}

std::vector<OpStatusRow> parse_ops_status_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  try {
    rows = parse_csv(text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("ops_status.csv cannot be parsed: ") + e.what());
  }
  if (rows.empty()) throw std::runtime_error("ops_status.csv is empty");
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  for (const char* needed : {"op", "status"})
    if (!col.count(needed))
      throw std::runtime_error(std::string("ops_status.csv has no '") + needed + "' column");
  auto get = [&](const std::vector<std::string>& r, const char* name) -> std::string {
    const auto it = col.find(name);
    if (it == col.end() || it->second >= r.size()) return "";
    return r[it->second];
  };
  std::vector<OpStatusRow> out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    OpStatusRow s;
    s.op = get(rows[i], "op");
    if (s.op.empty()) continue;
    // A word no caliber writes (a hand-edited file) reads as pending: it is run again on resume,
    // as every status but ok is.
    s.status = parse_word<OpStatus>(get(rows[i], "status")).value_or(OpStatus::pending);
    s.backend = get(rows[i], "backend");
    s.device = get(rows[i], "device");
    s.timer = get(rows[i], "timer");
    try {
      s.rows = std::stoi(get(rows[i], "rows"));
    } catch (...) {
      s.rows = 0;
    }
    try {
      s.duration_s = std::stod(get(rows[i], "duration_s"));
    } catch (...) {
      s.duration_s = 0;
    }
    s.reason = get(rows[i], "reason");
    s.run = get(rows[i], "run");
    // A name, never a path: a hand-edited value that climbs out of the batch directory is not
    // followed (read as not known).
    if (s.run.find('/') != std::string::npos || s.run == "." || s.run == "..") s.run.clear();
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<OpStatusRow> read_ops_status(const fs::path& batch_dir) {
  const fs::path file = batch_dir / kOpsStatusFile;
  return parse_ops_status_csv(read_data_file(file, kMaxOpsStatusBytes, Links::refuse));
}

std::string batch_op_of(const CaseRow& row) {
  if (row.params) {
    const auto t = row.params->find("test");
    if (t != row.params->end()) {
      // benchmark/test_OP.py::test_x[...] (a pytest node id): the file's OP.
      const std::string file = t->second.substr(0, t->second.find("::"));
      const std::string base = fs::path(file).filename().string();
      if (base.size() > 8 && base.rfind("test_", 0) == 0 &&
          base.compare(base.size() - 3, 3, ".py") == 0)
        return base.substr(5, base.size() - 8);
    }
  }
  return row.op;
}

}  // namespace caliber::core
