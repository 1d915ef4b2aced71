// CSV quoting, one rule for every CSV caliber writes (ops_status.csv, --format csv, export).
#pragma once

#include <string>

namespace caliber::core {

// A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break, with
// quotes doubled.
[[nodiscard]] inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace caliber::core
