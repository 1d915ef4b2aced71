#include "report/export.hpp"

#include "core/csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/stats.hpp"

namespace caliber::report {

using nlohmann::json;

std::optional<ExportFormat> parse_export_format(std::string_view s) noexcept {
  if (s == "csv") return ExportFormat::csv;
  if (s == "json") return ExportFormat::json;
  if (s == "gbench") return ExportFormat::gbench;
  return std::nullopt;
}

const char* export_format_names() noexcept {
  return "csv, json, gbench";
}

namespace {

const json kNull = nullptr;
// Google Benchmark entries are in ns: compare.py prints whole units, and a GPU kernel is often
// well under a millisecond.
constexpr double kNsPerMs = 1e6;

const json& at(const json& j, const char* key) {
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

json number_or_null(const json& v) {
  if (v.is_number() && std::isfinite(v.get<double>())) return v;
  return nullptr;
}

json text_or_null(const json& v) {
  if (v.is_string()) return v;
  if (v.is_null()) return nullptr;
  return v.dump();
}

long long integer_or_zero(const json& v) {
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number() && std::isfinite(v.get<double>())) return std::llround(v.get<double>());
  return 0;
}

// 0.5 -> "p50_ms", 0.999 -> "p99.9_ms".
std::string quantile_column(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%.6g_ms", q * 100.0);
  return buf;
}

std::vector<double> run_quantiles(const RunData& r) {
  std::vector<double> qs;
  const json& q = at(r.identity, "quantiles");
  if (q.is_array())
    for (const auto& x : q)
      if (x.is_number()) qs.push_back(x.get<double>());
  return qs;
}

std::vector<std::string> string_list(const json& v) {
  std::vector<std::string> out;
  if (v.is_array())
    for (const auto& x : v)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

void add_unique(std::vector<std::string>& out, const std::vector<std::string>& more) {
  for (const auto& m : more)
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The markers of one provider's row: its own, and those of the case that no provider carries
// (compat_lifted, a tuning marker set before the providers existed).
std::string provider_markers(const json& row, const json* prov) {
  std::vector<std::string> out;
  if (prov != nullptr) add_unique(out, string_list(at(*prov, "markers")));
  std::vector<std::string> on_providers;
  const json& provs = at(row, "providers");
  if (provs.is_array())
    for (const auto& p : provs) add_unique(on_providers, string_list(at(p, "markers")));
  for (const auto& m : string_list(at(row, "markers")))
    if (std::find(on_providers.begin(), on_providers.end(), m) == on_providers.end())
      add_unique(out, {m});
  return join(out, " ");
}

struct Peaks {
  double copy_gbps = 0, gemm_tflops = 0;
};

Peaks run_peaks(const RunData& r) {
  Peaks p;
  const json& peaks = at(r.identity, "peaks");
  if (auto v = positive_number(at(peaks, "copy_gbps"))) p.copy_gbps = *v;
  if (auto v = positive_number(at(peaks, "gemm_tflops"))) p.gemm_tflops = *v;
  return p;
}

// The recorded percent of peak, or the rate over the run's peak when the row predates it.
json pct_of_peak(const json& prov, const char* pct_key, const char* rate_key, double peak) {
  const json& recorded = at(prov, pct_key);
  if (recorded.is_number()) return number_or_null(recorded);
  const auto rate = positive_number(at(prov, rate_key));
  if (rate && peak > 0) return 100.0 * *rate / peak;
  return nullptr;
}

using core::csv_field;

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
    return buf;
  }
  if (v.is_string()) return csv_field(v.get<std::string>());
  return csv_field(v.dump());
}

}  // namespace

ExportTable export_table(const std::vector<RunData>& runs) {
  ExportTable t;
  std::set<double> qset;
  for (const auto& r : runs)
    for (double q : run_quantiles(r)) qset.insert(q);
  const std::vector<double> qs(qset.begin(), qset.end());

  using K = ColumnKind;
  t.columns = {{"run", K::text},        {"backend", K::text},     {"device", K::text},
               {"git_commit", K::text}, {"op", K::text},          {"dtype", K::text},
               {"shape", K::text},      {"node", K::text},        {"params", K::json},
               {"family", K::text},     {"provider", K::text},    {"role", K::text},
               {"status", K::text},     {"latency_ms", K::number}};
  for (double q : qs) t.columns.push_back({quantile_column(q), K::number});
  const std::vector<ExportColumn> rest = {{"min_ms", K::number},
                                          {"max_ms", K::number},
                                          {"samples", K::integer},
                                          {"noise", K::number},
                                          {"gbps", K::number},
                                          {"tflops", K::number},
                                          {"pct_peak_bw", K::number},
                                          {"pct_peak_flops", K::number},
                                          {"speedup", K::number},
                                          {"timer", K::text},
                                          {"repeat", K::integer},
                                          {"launches_per_sample", K::integer},
                                          {"regime", K::text},
                                          {"l2_method", K::text},
                                          {"sm_clock_mean_mhz", K::number},
                                          {"sm_clock_min_mhz", K::number},
                                          {"power_w", K::number},
                                          {"clock_reasons", K::text},
                                          {"markers", K::text},
                                          {"stop_reason", K::text},
                                          {"converged", K::boolean},
                                          {"accuracy", K::boolean},
                                          {"throttled_discarded", K::integer},
                                          {"power_capped_samples", K::integer},
                                          {"error", K::text}};
  t.columns.insert(t.columns.end(), rest.begin(), rest.end());

  int unfinished = 0, truncated = 0, no_peaks = 0, bad_lines = 0;
  for (const auto& run : runs) {
    if (run.log.footer.is_null()) ++unfinished;
    if (run.log.truncated) ++truncated;
    bad_lines += run.log.bad_lines;
    const Peaks peaks = run_peaks(run);
    if (peaks.copy_gbps <= 0 && peaks.gemm_tflops <= 0 && !run.log.cases.empty()) ++no_peaks;
    const auto rq = run_quantiles(run);
    const json& id = run.identity;
    const json device = text_or_null(at(at(id, "device"), "name"));

    for (const auto& row : run.log.cases) {
      std::vector<const json*> provs;
      const json& plist = at(row, "providers");
      if (plist.is_array())
        for (const auto& p : plist)
          if (p.is_object()) provs.push_back(&p);
      if (provs.empty()) provs.push_back(nullptr);
      // The row's speedup belongs to its first candidate (baseline over that candidate).
      const json* first_cand = nullptr;
      for (const json* p : provs)
        if (p != nullptr && at(*p, "role") == "candidate") {
          first_cand = p;
          break;
        }

      for (const json* p : provs) {
        const json& prov = p != nullptr ? *p : kNull;
        std::vector<json> cells;
        cells.push_back(run.dir.filename().string());
        cells.push_back(text_or_null(at(id, "backend")));
        cells.push_back(device);
        cells.push_back(text_or_null(at(id, "git_commit")));
        for (const char* k : {"op", "dtype", "shape", "node"})
          cells.push_back(text_or_null(at(row, k)));
        cells.push_back(at(row, "params").is_object() ? at(row, "params") : kNull);
        cells.push_back(text_or_null(at(row, "family")));
        cells.push_back(text_or_null(at(prov, "name")));
        cells.push_back(text_or_null(at(prov, "role")));
        cells.push_back(row_status(row));
        cells.push_back(number_or_null(at(prov, "latency_ms")));
        const json& qv = at(prov, "quantiles_ms");
        for (double q : qs) {
          json v = nullptr;
          const auto it = std::find(rq.begin(), rq.end(), q);
          if (it != rq.end() && qv.is_array()) {
            const auto i = static_cast<std::size_t>(it - rq.begin());
            if (i < qv.size()) v = number_or_null(qv[i]);
          }
          cells.push_back(v);
        }
        std::vector<double> samples;
        for (const auto& s :
             at(prov, "samples_ms").is_array() ? at(prov, "samples_ms") : json::array())
          if (s.is_number() && std::isfinite(s.get<double>())) samples.push_back(s.get<double>());
        if (samples.empty()) {
          cells.push_back(nullptr);
          cells.push_back(nullptr);
        } else {
          cells.push_back(*std::min_element(samples.begin(), samples.end()));
          cells.push_back(*std::max_element(samples.begin(), samples.end()));
        }
        cells.push_back(static_cast<long long>(samples.size()));
        cells.push_back(number_or_null(at(prov, "noise")));
        cells.push_back(number_or_null(at(prov, "gbps")));
        cells.push_back(number_or_null(at(prov, "tflops")));
        cells.push_back(pct_of_peak(prov, "pct_peak_bw", "gbps", peaks.copy_gbps));
        cells.push_back(pct_of_peak(prov, "pct_peak_flops", "tflops", peaks.gemm_tflops));
        cells.push_back(p != nullptr && p == first_cand ? number_or_null(at(row, "speedup"))
                                                        : json(nullptr));
        cells.push_back(
            text_or_null(at(prov, "timer").is_null() ? at(row, "timer") : at(prov, "timer")));
        cells.push_back(
            integer_or_zero(at(prov, "repeat").is_null() ? at(row, "repeat") : at(prov, "repeat")));
        cells.push_back(integer_or_zero(at(prov, "launches_per_sample")));
        cells.push_back(text_or_null(at(prov, "regime")));
        cells.push_back(text_or_null(at(prov, "l2_method")));
        cells.push_back(number_or_null(at(prov, "sm_clock_mean_mhz")));
        cells.push_back(number_or_null(at(prov, "sm_clock_min_mhz")));
        cells.push_back(number_or_null(at(prov, "power_w")));
        const auto reasons = string_list(at(prov, "clock_reasons"));
        cells.push_back(reasons.empty() ? json(nullptr) : json(join(reasons, ";")));
        cells.push_back(provider_markers(row, p));
        cells.push_back(text_or_null(at(prov, "stop_reason")));
        cells.push_back(at(prov, "converged").is_boolean() ? at(prov, "converged") : kNull);
        cells.push_back(at(prov, "accuracy").is_boolean() ? at(prov, "accuracy") : kNull);
        cells.push_back(integer_or_zero(at(prov, "throttled_discarded")));
        cells.push_back(integer_or_zero(at(prov, "power_capped_samples")));
        json err = text_or_null(at(prov, "error"));
        if (err.is_null() && (p == nullptr || p == provs.front())) {
          err = text_or_null(at(row, "error"));
          if (err.is_null()) err = text_or_null(at(row, "reason"));
        }
        cells.push_back(err);
        t.rows.push_back(std::move(cells));
      }
    }
  }
  if (unfinished > 0)
    t.notes.push_back(std::to_string(unfinished) +
                      " run(s) have no footer: they did not finish (crash, timeout or interrupt); "
                      "their rows are exported as far as they go");
  if (truncated > 0)
    t.notes.push_back(std::to_string(truncated) +
                      " run.log(s) end in a cut line (an interrupted run); that line is ignored");
  if (bad_lines > 0)
    t.notes.push_back(std::to_string(bad_lines) + " unreadable run.log line(s) were skipped");
  if (no_peaks > 0)
    t.notes.push_back(std::to_string(no_peaks) +
                      " run(s) have no measured peaks (--peaks off or not measurable): their "
                      "pct_peak_bw and pct_peak_flops are empty");
  return t;
}

std::string render_export_csv(const ExportTable& t) {
  std::ostringstream o;
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    o << (c ? "," : "") << csv_field(t.columns[c].name);
  o << "\n";
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      o << (c ? "," : "") << csv_cell(c < row.size() ? row[c] : kNull);
    o << "\n";
  }
  return o.str();
}

json render_export_json(const ExportTable& t) {
  json out = json::array();
  for (const auto& row : t.rows) {
    json obj = json::object();
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      obj[t.columns[c].name] = c < row.size() ? row[c] : kNull;
    out.push_back(std::move(obj));
  }
  return out;
}

json render_export_gbench(const std::vector<RunData>& runs) {
  json context = json::object();
  if (!runs.empty()) {
    const json& id = runs.front().identity;
    context["date"] = text_or_null(at(id, "start_time"));
    context["host_name"] = text_or_null(at(id, "host"));
  }
  context["executable"] = "caliber";
  // Google Benchmark describes the host CPU here; caliber times a device, so these say nothing.
  context["num_cpus"] = 0;
  context["mhz_per_cpu"] = 0;
  context["cpu_scaling_enabled"] = false;
  context["caches"] = json::array();
  context["load_avg"] = json::array();
  context["library_build_type"] = "release";
  json caliber_runs = json::array();
  for (const auto& r : runs) {
    const json& id = r.identity;
    caliber_runs.push_back({{"run", r.dir.filename().string()},
                            {"backend", text_or_null(at(id, "backend"))},
                            {"device", text_or_null(at(at(id, "device"), "name"))},
                            {"timer", text_or_null(at(id, "timer"))},
                            {"level", text_or_null(at(id, "level"))},
                            {"tune", text_or_null(at(id, "tune"))},
                            {"l2", text_or_null(at(id, "l2"))},
                            {"git_commit", text_or_null(at(id, "git_commit"))},
                            {"caliber_version", text_or_null(at(id, "caliber_version"))}});
  }
  context["caliber_runs"] = caliber_runs;

  json benchmarks = json::array();
  std::map<std::string, int> family;  // benchmark name -> family_index
  for (const auto& run : runs)
    for (const auto& row : run.log.cases) {
      const json& plist = at(row, "providers");
      std::string node = row_string(row, "node");
      if (node.empty())
        node = row_string(row, "op") + "[" + row_string(row, "dtype") + "-" +
               row_string(row, "shape") + "]";
      auto base_entry = [&](const std::string& name) {
        auto [it, inserted] = family.try_emplace(name, static_cast<int>(family.size()));
        return json{{"name", name},
                    {"family_index", it->second},
                    {"per_family_instance_index", 0},
                    {"run_name", name},
                    {"threads", 1}};
      };
      if (!plist.is_array() || plist.empty()) {
        // Nothing was timed: one errored entry, which compare.py leaves out.
        json e = base_entry(node);
        e["run_type"] = "iteration";
        e["repetitions"] = 1;
        e["repetition_index"] = 0;
        e["iterations"] = 0;
        e["error_occurred"] = true;
        std::string msg = row_string(row, "error");
        if (msg.empty()) msg = row_string(row, "reason");
        e["error_message"] = row_status(row) + (msg.empty() ? "" : ": " + msg);
        benchmarks.push_back(std::move(e));
        continue;
      }
      for (const auto& prov : plist) {
        if (!prov.is_object()) continue;
        const std::string name = node + "/" + row_string(prov, "name");
        std::vector<double> samples;
        const json& sv = at(prov, "samples_ms");
        if (sv.is_array())
          for (const auto& s : sv)
            if (auto v = positive_number(s)) samples.push_back(*v);
        const auto latency = positive_number(at(prov, "latency_ms"));
        if (samples.empty() && latency) samples.push_back(*latency);
        if (samples.empty()) {
          json e = base_entry(name);
          e["run_type"] = "iteration";
          e["repetitions"] = 1;
          e["repetition_index"] = 0;
          e["iterations"] = 0;
          e["error_occurred"] = true;
          std::string msg = row_string(prov, "error");
          if (msg.empty()) msg = row_string(row, "error");
          e["error_message"] = msg.empty() ? row_status(row) : msg;
          benchmarks.push_back(std::move(e));
          continue;
        }
        const long long per_sample =
            std::max(1LL, integer_or_zero(at(prov, "launches_per_sample")));
        const auto n = static_cast<long long>(samples.size());
        for (long long i = 0; i < n; ++i) {
          json e = base_entry(name);
          e["run_type"] = "iteration";
          e["repetitions"] = n;
          e["repetition_index"] = i;
          e["iterations"] = per_sample;
          e["real_time"] = samples[static_cast<std::size_t>(i)] * kNsPerMs;
          e["cpu_time"] = samples[static_cast<std::size_t>(i)] * kNsPerMs;
          e["time_unit"] = "ns";
          benchmarks.push_back(std::move(e));
        }
        double mean = 0;
        for (double s : samples) mean += s;
        mean /= static_cast<double>(n);
        double var = 0;
        for (double s : samples) var += (s - mean) * (s - mean);
        const double stddev = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
        const double median = latency ? *latency : core::median(samples);
        auto aggregate = [&](const char* agg, double value) {
          json e = base_entry(name + "_" + agg);
          e["run_name"] = name;
          e["run_type"] = "aggregate";
          e["repetitions"] = n;
          e["threads"] = 1;
          e["aggregate_name"] = agg;
          e["aggregate_unit"] = "time";
          e["iterations"] = n;
          e["real_time"] = value * kNsPerMs;
          e["cpu_time"] = value * kNsPerMs;
          e["time_unit"] = "ns";
          return e;
        };
        json med = aggregate("median", median);
        // Rates as Google Benchmark's counters (per second), at the median.
        if (auto g = positive_number(at(prov, "gbps"))) med["bytes_per_second"] = *g * 1e9;
        if (auto f = positive_number(at(prov, "tflops"))) med["flops_per_second"] = *f * 1e12;
        med["label"] = row_string(prov, "role");
        benchmarks.push_back(std::move(med));
        benchmarks.push_back(aggregate("mean", mean));
        benchmarks.push_back(aggregate("stddev", stddev));
      }
    }
  return {{"context", context}, {"benchmarks", benchmarks}};
}

ExportResult export_dirs(const std::vector<std::filesystem::path>& dirs, ExportFormat format) {
  const auto runs = load_runs(dirs);
  if (runs.empty()) throw std::runtime_error("no run directory under the given paths");
  ExportTable t = export_table(runs);
  ExportResult r;
  r.notes = t.notes;
  switch (format) {
    case ExportFormat::csv:
      r.text = render_export_csv(t);
      break;
    case ExportFormat::json:
      r.text = render_export_json(t).dump(1, ' ', false, json::error_handler_t::replace) + "\n";
      break;
    case ExportFormat::gbench:
      r.text =
          render_export_gbench(runs).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
      break;
  }
  return r;
}

}  // namespace caliber::report
