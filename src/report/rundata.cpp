#include "report/rundata.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "records/identity.hpp"
#include "records/ops_status.hpp"

namespace fs = std::filesystem;

namespace caliber::report {

namespace {
constexpr const char* kRunLog = core::run_log_file;
}

bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kRunLog, ec);
}

bool is_batch_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "ops_status.csv", ec);
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

namespace {

// A run directory of a batch and, for a group's (batch --ops-per-child), the ops whose rows count.
struct BatchRun {
  fs::path dir;
  std::set<std::string> ops;  // empty: every row counts
};

// The run directories of a folder that holds them. In a batch directory whose ops_status.csv
// names each op's run (its `run` column), exactly those: a group's run, named by several ops,
// keeps only their rows (an op of the group that ran again alone has its rows in its own run);
// an op with no run named there, its newest run of its name. A batch without the column (older
// ones): each name's newest run. Elsewhere (a folder of runs, an ab directory) every run counts.
std::vector<BatchRun> runs_in(const fs::path& d) {
  const bool batch = is_batch_dir(d);
  // name -> (stamp, collision, path) of the newest
  std::map<std::string, std::pair<std::pair<std::string, int>, fs::path>> newest;
  std::vector<BatchRun> unnamed;
  std::map<std::string, fs::path> by_dirname;
  for (const auto& e : fs::directory_iterator(d)) {
    if (!e.is_directory() || !is_run_dir(e.path())) continue;
    by_dirname[e.path().filename().string()] = e.path();
    const auto parsed = parse_run_dir_name(e.path().filename().string());
    if (!parsed || !batch) {
      unnamed.push_back({e.path(), {}});
      continue;
    }
    const auto order = std::make_pair(parsed->stamp, parsed->collision);
    auto it = newest.find(parsed->name);
    if (it == newest.end() || it->second.first < order) newest[parsed->name] = {order, e.path()};
  }
  std::vector<core::OpStatusRow> status;
  if (batch) {
    try {
      status = core::read_ops_status(d);
    } catch (const std::exception&) {
      status.clear();  // unreadable: each name's newest run, as before the column
    }
  }
  const bool named = std::any_of(status.begin(), status.end(),
                                 [](const core::OpStatusRow& r) { return !r.run.empty(); });
  std::vector<BatchRun> found;
  if (named) {
    std::map<fs::path, std::set<std::string>> owners;
    for (const auto& r : status) {
      const auto it = by_dirname.find(r.run);
      if (it != by_dirname.end()) {
        owners[it->second].insert(r.op);
      } else if (const auto n = newest.find(r.op); n != newest.end()) {
        owners[n->second.second].insert(r.op);
      }
    }
    for (auto& [dir, ops] : owners) {
      const auto parsed = parse_run_dir_name(dir.filename().string());
      // A run of one op's own name holds that op's rows only: all of them count, as before.
      const bool own = parsed && ops.size() == 1 && *ops.begin() == parsed->name;
      found.push_back({dir, own ? std::set<std::string>{} : ops});
    }
  } else {
    found = unnamed;
    for (const auto& [name, v] : newest) found.push_back({v.second, {}});
  }
  std::sort(found.begin(), found.end(),
            [](const BatchRun& a, const BatchRun& b) { return a.dir < b.dir; });
  return found;
}

std::vector<BatchRun> expand(const std::vector<fs::path>& dirs) {
  std::vector<BatchRun> out;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw std::runtime_error(d.string() + ": not a directory");
    if (is_run_dir(d)) {
      out.push_back({d, {}});
      continue;
    }
    const auto found = runs_in(d);
    if (found.empty())
      throw std::runtime_error(d.string() +
                               ": neither a run directory (no run.log) nor a batch "
                               "directory (no run directories inside)");
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace

std::vector<fs::path> expand_run_dirs(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> out;
  for (const auto& r : expand(dirs)) out.push_back(r.dir);
  return out;
}

namespace {
// A case's identity within one run.log: the pairing key, the node id and the parameters.
std::string case_identity(const core::CaseRow& row) {
  std::string id = row_key(row) + "\x1f" + row.node.value_or("");
  if (row.params)
    for (const auto& [k, v] : *row.params) id += "\x1f" + k + "=" + v;
  return id;
}

// Keeps the first row of each case, counting the rest.
void drop_duplicate_rows(RunData& r) {
  std::unordered_set<std::string> seen;
  seen.reserve(r.log.cases.size());
  std::vector<core::CaseRow> kept;
  kept.reserve(r.log.cases.size());
  for (auto& row : r.log.cases) {
    if (seen.insert(case_identity(row)).second) {
      kept.push_back(std::move(row));
      continue;
    }
    if (r.duplicate_rows++ == 0)
      r.first_duplicate =
          row.node.value_or(row.op + " " + row.dtype.value_or("") + " " + row.shape.value_or(""))
              .substr(0, 200);
  }
  r.log.cases = std::move(kept);
}
}  // namespace

void DuplicateRows::add(const RunData& run) {
  if (run.duplicate_rows == 0) return;
  rows += run.duplicate_rows;
  if (runs++ == 0) first = run.first_duplicate + " in " + run.dir.filename().string();
}

std::string DuplicateRows::note() const {
  if (rows == 0) return "";
  return std::to_string(rows) + " duplicate case row(s) in " + std::to_string(runs) +
         " run.log(s) were set aside (the same op, dtype, shape and node as an earlier row of "
         "that run.log; the first: " +
         first +
         "): a case's first row counts (docs/limits.md#readers-that-do-not-lose-rows-silently)";
}

std::string duplicate_rows_note(const std::vector<RunData>& runs) {
  DuplicateRows d;
  for (const auto& r : runs) d.add(r);
  return d.note();
}

RunData load_run(const fs::path& run_dir) {
  RunData r;
  // "runs/x/" names the same directory as "runs/x": keep its name (filename() of the first is "").
  r.dir = run_dir.filename().empty() ? run_dir.parent_path() : run_dir;
  r.log = core::read_run_log(run_dir / kRunLog);
  drop_duplicate_rows(r);
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

void check_named_runs(const std::vector<fs::path>& dirs, const std::vector<RunData>& runs) {
  for (const auto& d : dirs) {
    if (!is_run_dir(d)) continue;
    // The run as load_runs read it (the log is not read a second time).
    const auto r = std::find_if(runs.begin(), runs.end(), [&](const RunData& x) {
      std::error_code ec;
      return fs::equivalent(x.dir, d, ec);
    });
    if (r == runs.end()) continue;
    const core::RunLog& log = r->log;
    if (!log.header && log.cases.empty() && !log.footer && (log.bad_lines > 0 || log.truncated))
      throw std::invalid_argument(
          d.string() + "/" + kRunLog + ": not a caliber run.log (none of its lines reads" +
          (log.first_bad_line_error.empty() ? "" : ": " + log.first_bad_line_error.substr(0, 200)) +
          ")");
  }
}

std::vector<RunData> load_runs(const std::vector<fs::path>& dirs) {
  std::vector<RunData> out;
  for (const auto& r : expand(dirs)) {
    RunData run = load_run(r.dir);
    if (!r.ops.empty()) {
      // A group's run: the rows of the ops the batch took from it.
      auto& cases = run.log.cases;
      cases.erase(std::remove_if(cases.begin(), cases.end(),
                                 [&](const core::CaseRow& c) {
                                   return r.ops.count(core::batch_op_of(c)) == 0;
                                 }),
                  cases.end());
    }
    out.push_back(std::move(run));
  }
  return out;
}

std::string row_status(const core::CaseRow& row) {
  return core::status_of(row);
}

std::string row_key(const core::CaseRow& row) {
  return row.op + "\x1f" + row.dtype.value_or("") + "\x1f" + row.shape.value_or("");
}

std::vector<std::string> row_markers(const core::CaseRow& row) {
  return core::all_markers(row);
}

bool row_has_marker(const core::CaseRow& row, const std::string& marker) {
  for (const auto& m : row_markers(row))
    if (m.rfind(marker, 0) == 0) return true;
  return false;
}

std::optional<double> positive_number(const nlohmann::json& v) {
  if (!v.is_number()) return std::nullopt;
  return positive_number(std::optional<double>(v.get<double>()));
}

std::optional<double> positive_number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v) || *v <= 0) return std::nullopt;
  return v;
}

const core::ProviderRow* provider_with_role(const core::CaseRow& row, const char* role) {
  if (!row.providers) return nullptr;
  for (const auto& p : *row.providers)
    if (p.role == role) return &p;
  return nullptr;
}

const nlohmann::json& json_member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null = nullptr;
  if (!j.is_object()) return null;
  const auto it = j.find(key);
  return it == j.end() ? null : *it;
}

std::optional<double> row_speedup(const core::CaseRow& row) {
  if (row_status(row) != core::status::ok) return std::nullopt;
  if (row.accuracy && *row.accuracy && !**row.accuracy) return std::nullopt;
  if (!row.speedup || !*row.speedup) return std::nullopt;
  return positive_number(*row.speedup);
}

double figure_of_runs(std::span<const double> latencies_ms) {
  return core::median(latencies_ms);
}

std::vector<ProviderSamples> row_providers(const core::CaseRow& row) {
  std::vector<ProviderSamples> out;
  if (row.providers && !row.providers->empty()) {
    for (const auto& prov : *row.providers) {
      ProviderSamples s;
      s.name = prov.name;
      s.role = prov.role.value_or("");
      if (s.role.empty()) s.role = core::role::candidate;
      s.latency_ms = positive_number(prov.latency_ms).value_or(0);
      if (prov.samples_ms)
        for (const double x : *prov.samples_ms)
          if (auto v = positive_number(std::optional<double>(x))) s.samples_ms.push_back(*v);
      s.raw_samples = !s.samples_ms.empty();
      if (prov.samples_total && *prov.samples_total > 0) s.samples_total = *prov.samples_total;
      if (s.samples_ms.empty() && s.latency_ms > 0) s.samples_ms.push_back(s.latency_ms);
      out.push_back(std::move(s));
    }
    return out;
  }
  auto add = [&](const std::optional<double>& latency, const char* role) {
    const auto v = positive_number(latency);
    if (!v) return;
    ProviderSamples s;
    s.name = role;
    s.role = role;
    s.latency_ms = *v;
    s.samples_ms = {*v};
    out.push_back(std::move(s));
  };
  add(row.latency_ms, core::role::candidate);
  add(row.latency_base_ms, core::role::baseline);
  return out;
}

}  // namespace caliber::report
