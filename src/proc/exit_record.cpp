#include "proc/exit_record.hpp"

#include <map>
#include <sstream>
#include <string>

namespace caliber::run::slurm {

std::optional<ExitRecord> parse_exit_record(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    const auto eq = w.find('=');
    if (eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
  }
  if (!kv.count("rc")) return std::nullopt;
  ExitRecord r;
  try {
    r.rc = std::stoi(kv["rc"]);
  } catch (...) {
    return std::nullopt;
  }
  r.node = kv["node"];
  r.job_id = kv["job"];
  try {
    const long double a = std::stold(kv.at("start_ns"));
    const long double b = std::stold(kv.at("end_ns"));
    if (b >= a) r.duration_s = static_cast<double>((b - a) / 1e9L);
  } catch (...) {
    r.duration_s = -1;
  }
  return r;
}

}  // namespace caliber::run::slurm
