#include "records/runlog.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace caliber::core {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// True when the file exists, is not empty and its last byte is not a newline: a writer died
// mid-line, and appending straight after would glue the next row onto that fragment.
bool ends_mid_line(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto size = static_cast<std::streamoff>(in.tellg());
  if (size <= 0) return false;
  in.seekg(size - 1);
  char last = '\n';
  in.get(last);
  return last != '\n';
}

// The length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
std::size_t utf8_len(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  unsigned min = 0;
  unsigned cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string repair_json_line(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  bool in_string = false;
  std::size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    const std::size_t n = utf8_len(line, i);
    if (n == 0) {  // an invalid byte, inside a string or not
      out += '?';
      ++i;
      continue;
    }
    if (in_string) {
      if (c == '\\' && i + 1 < line.size()) {
        out += c;
        out += line[i + 1];
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      out.append(line, i, n);
      i += n;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      ++i;
      continue;
    }
    // Outside strings: NaN, Infinity, -Infinity, and numbers too large for a double -> null.
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c)) ||
        std::isalpha(static_cast<unsigned char>(c))) {
      std::size_t j = i + 1;
      while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) ||
                                 line[j] == '.' || line[j] == '+' || line[j] == '-'))
        ++j;
      const std::string tok = line.substr(i, j - i);
      const std::string word = tok[0] == '-' ? tok.substr(1) : tok;
      if (word == "NaN" || word == "nan" || word == "Infinity" || word == "inf" || word == "Inf") {
        out += "null";
      } else if (!tok.empty() &&
                 (tok[0] == '-' || std::isdigit(static_cast<unsigned char>(tok[0])))) {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(tok.c_str(), &end);
        out += (errno == ERANGE && std::isinf(v)) ? std::string("null") : tok;
      } else {
        out += tok;
      }
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

RunLogWriter::RunLogWriter(const std::filesystem::path& file) {
  const bool fragment = ends_mid_line(file);
  f_ = std::fopen(file.c_str(), "ab");
  if (f_ == nullptr) {
    throw std::runtime_error("cannot open " + file.string() + " for appending: " + errno_text());
  }
  if (fragment) {
    std::fputc('\n', f_);
    std::fflush(f_);
  }
}

RunLogWriter::~RunLogWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void RunLogWriter::append(const nlohmann::json& row) {
  // replace: a provider's error text may carry invalid UTF-8; the row must still be written.
  std::string line = row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0) {
    throw std::runtime_error("cannot append to run.log: " + errno_text());
  }
}

int check_schema(const nlohmann::json& obj, const std::string& what) {
  if (!obj.is_object()) return 0;
  const auto it = obj.find("schema");
  if (it == obj.end() || it->is_null()) return 0;
  if (!it->is_number_integer() || it->get<long long>() < 0)
    throw SchemaError(what + ": schema '" + it->dump() +
                      "' is not allowed (a non-negative integer; docs/run-log.md)");
  const long long v = it->get<long long>();
  if (v > schema_version)
    throw SchemaError(what + ": schema " + std::to_string(v) +
                      " is newer than this caliber reads (up to " + std::to_string(schema_version) +
                      "): read it with a newer caliber (docs/run-log.md, Compatibility)");
  return static_cast<int>(v);
}

RunLog read_run_log(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();

  RunLog log;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;

    nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() && complete) {
      row = nlohmann::json::parse(repair_json_line(line), nullptr, /*allow_exceptions=*/false);
      if (!row.is_discarded() && row.is_object()) ++log.repaired_lines;
    }
    if (row.is_discarded() || !row.is_object()) {
      // Only the very last line can have been cut by a writer that died; elsewhere it is damage.
      if (!complete) {
        log.truncated = true;
      } else {
        ++log.bad_lines;
      }
      continue;
    }
    const auto type = row.find(field::type);
    if (type == row.end() || !type->is_string()) {
      ++log.bad_lines;
      continue;
    }
    const auto& t = type->get_ref<const std::string&>();
    try {
      if (t == row_type::case_row) {
        log.cases.push_back(case_row_from_json(row));
      } else if (t == row_type::header) {
        if (!log.header) {
          log.schema = check_schema(row, file.string());
          log.header = header_from_json(row);
        }
      } else if (t == row_type::footer) {
        log.footer = footer_from_json(row);
      } else {
        ++log.bad_lines;
      }
    } catch (const RowError& e) {
      if (log.bad_lines++ == 0) log.first_bad_line_error = e.what();
    }
  }
  return log;
}

}  // namespace caliber::core
