#include "report/rundata.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <stdexcept>

#include "core/identity.hpp"

namespace fs = std::filesystem;

namespace caliber::report {

namespace {
constexpr const char* kRunLog = core::run_log_file;
}

bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kRunLog, ec);
}

std::optional<RunDirName> parse_run_dir_name(const std::string& dirname) {
  static const std::regex re(R"(^(.+)-(\d{8}-\d{6})(?:-(\d+))?$)");
  std::smatch m;
  if (!std::regex_match(dirname, m, re)) return std::nullopt;
  RunDirName r;
  r.name = m[1];
  r.stamp = m[2];
  r.collision = m[3].matched ? std::stoi(m[3]) : 1;
  return r;
}

std::vector<fs::path> expand_run_dirs(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> out;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw std::runtime_error(d.string() + ": not a directory");
    if (is_run_dir(d)) {
      out.push_back(d);
      continue;
    }
    // name -> (stamp, collision, path) of the newest
    std::map<std::string, std::pair<std::pair<std::string, int>, fs::path>> newest;
    std::vector<fs::path> unnamed;
    for (const auto& e : fs::directory_iterator(d)) {
      if (!e.is_directory() || !is_run_dir(e.path())) continue;
      const auto parsed = parse_run_dir_name(e.path().filename().string());
      if (!parsed) {
        unnamed.push_back(e.path());
        continue;
      }
      const auto order = std::make_pair(parsed->stamp, parsed->collision);
      auto it = newest.find(parsed->name);
      if (it == newest.end() || it->second.first < order) newest[parsed->name] = {order, e.path()};
    }
    std::vector<fs::path> found = unnamed;
    for (const auto& [name, v] : newest) found.push_back(v.second);
    if (found.empty())
      throw std::runtime_error(d.string() +
                               ": neither a run directory (no run.log) nor a batch "
                               "directory (no run directories inside)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

RunData load_run(const fs::path& run_dir) {
  RunData r;
  // "runs/x/" names the same directory as "runs/x": keep its name (filename() of the first is "").
  r.dir = run_dir.filename().empty() ? run_dir.parent_path() : run_dir;
  r.log = core::read_run_log(run_dir / kRunLog);
  try {
    r.identity = core::read_identity(run_dir);
  } catch (const core::SchemaError&) {
    throw;  // a newer format is refused, not read as "no identity"
  } catch (const std::exception& e) {
    r.identity = nullptr;
    r.identity_error = e.what();
  }
  return r;
}

std::vector<RunData> load_runs(const std::vector<fs::path>& dirs) {
  std::vector<RunData> out;
  for (const auto& d : expand_run_dirs(dirs)) out.push_back(load_run(d));
  return out;
}

std::string row_string(const nlohmann::json& row, const char* key) {
  if (!row.is_object()) return "";
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::string row_status(const nlohmann::json& row) {
  std::string s = row_string(row, core::field::status);
  return s.empty() ? core::status::ok : s;
}

std::string row_key(const nlohmann::json& row) {
  return row_string(row, core::field::op) + "\x1f" + row_string(row, core::field::dtype) + "\x1f" +
         row_string(row, core::field::shape);
}

namespace {
// Appends the markers of `obj` that `out` does not hold yet: the run driver copies each
// provider's markers onto the row too, and a marker is one fact however many carry it.
void collect_markers(const nlohmann::json& obj, std::vector<std::string>& out) {
  if (!obj.is_object()) return;
  const auto it = obj.find(core::field::markers);
  if (it == obj.end() || !it->is_array()) return;
  for (const auto& m : *it)
    if (m.is_string() && std::find(out.begin(), out.end(), m.get<std::string>()) == out.end())
      out.push_back(m.get<std::string>());
}
}  // namespace

std::vector<std::string> row_markers(const nlohmann::json& row) {
  std::vector<std::string> out;
  collect_markers(row, out);
  if (row.is_object()) {
    const auto p = row.find(core::field::providers);
    if (p != row.end() && p->is_array())
      for (const auto& prov : *p) collect_markers(prov, out);
  }
  return out;
}

bool row_has_marker(const nlohmann::json& row, const std::string& marker) {
  for (const auto& m : row_markers(row))
    if (m.rfind(marker, 0) == 0) return true;
  return false;
}

std::optional<double> positive_number(const nlohmann::json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0) return std::nullopt;
  return d;
}

std::optional<double> row_speedup(const nlohmann::json& row) {
  if (!row.is_object() || row_status(row) != core::status::ok) return std::nullopt;
  const auto acc = row.find(core::field::accuracy);
  if (acc != row.end() && acc->is_boolean() && !acc->get<bool>()) return std::nullopt;
  const auto s = row.find(core::field::speedup);
  if (s == row.end()) return std::nullopt;
  return positive_number(*s);
}

std::vector<ProviderSamples> row_providers(const nlohmann::json& row) {
  std::vector<ProviderSamples> out;
  if (!row.is_object()) return out;
  const auto p = row.find(core::field::providers);
  if (p != row.end() && p->is_array() && !p->empty()) {
    for (const auto& prov : *p) {
      if (!prov.is_object()) continue;
      ProviderSamples s;
      s.name = row_string(prov, core::field::name);
      s.role = row_string(prov, core::field::role);
      if (s.role.empty()) s.role = core::role::candidate;
      const auto lat = prov.find(core::field::latency_ms);
      if (lat != prov.end()) s.latency_ms = positive_number(*lat).value_or(0);
      const auto samples = prov.find(core::field::samples_ms);
      if (samples != prov.end() && samples->is_array())
        for (const auto& x : *samples)
          if (auto v = positive_number(x)) s.samples_ms.push_back(*v);
      s.raw_samples = !s.samples_ms.empty();
      if (s.samples_ms.empty() && s.latency_ms > 0) s.samples_ms.push_back(s.latency_ms);
      out.push_back(std::move(s));
    }
    return out;
  }
  auto add = [&](const char* key, const char* role) {
    const auto it = row.find(key);
    if (it == row.end()) return;
    const auto v = positive_number(*it);
    if (!v) return;
    ProviderSamples s;
    s.name = role;
    s.role = role;
    s.latency_ms = *v;
    s.samples_ms = {*v};
    out.push_back(std::move(s));
  };
  add(core::field::latency_ms, core::role::candidate);
  add(core::field::latency_base_ms, core::role::baseline);
  return out;
}

}  // namespace caliber::report
