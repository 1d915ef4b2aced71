#include "report/export.hpp"

#include "records/csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
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
  if (s == "flaggems-log") return ExportFormat::flaggems_log;
  return std::nullopt;
}

const char* export_format_names() noexcept {
  return "csv, json, gbench, flaggems-log";
}

namespace {

const json kNull = nullptr;
// Google Benchmark entries are in ns: compare.py prints whole units, and a GPU kernel is often
// well under a millisecond.
constexpr double kNsPerMs = 1e6;

json text_or_null(const json& v) {
  if (v.is_string()) return v;
  if (v.is_null()) return nullptr;
  return v.dump();
}

// 0.5 -> "p50_ms", 0.999 -> "p99.9_ms".
std::string quantile_column(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%.6g_ms", q * 100.0);
  return buf;
}

std::vector<double> run_quantiles(const RunData& r) {
  std::vector<double> qs;
  const json& q = json_member(r.identity, "quantiles");
  if (q.is_array())
    for (const auto& x : q)
      if (x.is_number()) qs.push_back(x.get<double>());
  return qs;
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
std::string provider_markers(const core::CaseRow& row, const core::ProviderRow* prov) {
  std::vector<std::string> out;
  if (prov != nullptr && prov->markers) add_unique(out, *prov->markers);
  std::vector<std::string> on_providers;
  if (row.providers)
    for (const auto& p : *row.providers)
      if (p.markers) add_unique(on_providers, *p.markers);
  if (row.markers)
    for (const auto& m : *row.markers)
      if (std::find(on_providers.begin(), on_providers.end(), m) == on_providers.end())
        add_unique(out, {m});
  return join(out, " ");
}

// A typed field as an export cell: null when absent (or not finite).
json number_or_null(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}
json number_or_null(const std::optional<int>& v) {
  return v ? json(*v) : json(nullptr);
}
json text_or_null(const std::optional<std::string>& v) {
  return v ? json(*v) : json(nullptr);
}
json bool_or_null(const std::optional<bool>& v) {
  return v ? json(*v) : json(nullptr);
}

struct Peaks {
  double copy_gbps = 0, gemm_tflops = 0;
};

Peaks run_peaks(const RunData& r) {
  Peaks p;
  const json& peaks = json_member(r.identity, "peaks");
  if (auto v = positive_number(json_member(peaks, "copy_gbps"))) p.copy_gbps = *v;
  if (auto v = positive_number(json_member(peaks, "gemm_tflops"))) p.gemm_tflops = *v;
  return p;
}

// The recorded percent of peak, or the rate over the run's peak when the row predates it.
json pct_of_peak(const std::optional<double>& recorded, const std::optional<double>& rate,
                 double peak) {
  if (recorded) return number_or_null(recorded);
  const auto r = positive_number(rate);
  if (r && peak > 0) return 100.0 * *r / peak;
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
  if (v.is_string()) return core::csv_text_cell(v.get<std::string>());
  return csv_field(v.dump());
}

}  // namespace

namespace {

// The columns of csv and json (docs/run-log.md, Exports), with one per quantile any run asked for.
std::vector<ExportColumn> export_columns(const std::vector<double>& qs) {
  using K = ColumnKind;
  std::vector<ExportColumn> cols = {
      {"run", K::text},    {"backend", K::text},     {"device", K::text},   {"git_commit", K::text},
      {"op", K::text},     {"dtype", K::text},       {"shape", K::text},    {"node", K::text},
      {"params", K::json}, {"family", K::text},      {"provider", K::text}, {"role", K::text},
      {"status", K::text}, {"latency_ms", K::number}};
  for (double q : qs) cols.push_back({quantile_column(q), K::number});
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
  cols.insert(cols.end(), rest.begin(), rest.end());
  return cols;
}

// What every row of one run shares: its name, identity cells, quantiles and peaks.
struct RunCells {
  std::string name;
  json backend, device, git_commit;
  std::vector<double> quantiles;  // the run's own
  Peaks peaks;
};

RunCells run_cells(const RunData& run) {
  const json& id = run.identity;
  return {run.dir.filename().string(),
          text_or_null(json_member(id, "backend")),
          text_or_null(json_member(json_member(id, "device"), "name")),
          text_or_null(json_member(id, "git_commit")),
          run_quantiles(run),
          run_peaks(run)};
}

// The quantile cells of one provider: one per column quantile, empty where its run did not ask.
void quantile_cells(std::vector<json>& cells, const RunCells& rc, const core::ProviderRow* p,
                    const std::vector<double>& qs) {
  for (double q : qs) {
    json v = nullptr;
    const auto it = std::find(rc.quantiles.begin(), rc.quantiles.end(), q);
    if (it != rc.quantiles.end() && p != nullptr && p->quantiles_ms) {
      const auto i = static_cast<std::size_t>(it - rc.quantiles.begin());
      if (i < p->quantiles_ms->size())
        v = number_or_null(std::optional<double>((*p->quantiles_ms)[i]));
    }
    cells.push_back(v);
  }
}

// The min, max and count of a provider's stored samples.
void sample_cells(std::vector<json>& cells, const core::ProviderRow* p) {
  std::vector<double> samples;
  if (p != nullptr && p->samples_ms)
    for (double s : *p->samples_ms)
      if (std::isfinite(s)) samples.push_back(s);
  if (samples.empty()) {
    cells.push_back(nullptr);
    cells.push_back(nullptr);
  } else {
    cells.push_back(*std::min_element(samples.begin(), samples.end()));
    cells.push_back(*std::max_element(samples.begin(), samples.end()));
  }
  cells.push_back(static_cast<long long>(samples.size()));
}

// One export row: provider `p` of case row `row` (p null: a case without providers).
std::vector<json> provider_cells(const RunCells& rc, const core::CaseRow& row,
                                 const core::ProviderRow* p, bool first_cand, bool first,
                                 const std::vector<double>& qs) {
  static const core::ProviderRow kNone;
  const core::ProviderRow& prov = p != nullptr ? *p : kNone;
  std::vector<json> cells = {rc.name, rc.backend, rc.device, rc.git_commit};
  cells.push_back(row.op);
  cells.push_back(text_or_null(row.dtype));
  cells.push_back(text_or_null(row.shape));
  cells.push_back(text_or_null(row.node));
  cells.push_back(row.params ? json(*row.params) : kNull);
  cells.push_back(text_or_null(row.family));
  cells.push_back(p != nullptr ? json(prov.name) : kNull);
  cells.push_back(text_or_null(prov.role));
  cells.push_back(row_status(row));
  cells.push_back(number_or_null(prov.latency_ms));
  quantile_cells(cells, rc, p, qs);
  sample_cells(cells, p);
  cells.push_back(number_or_null(prov.noise));
  cells.push_back(number_or_null(prov.gbps));
  cells.push_back(number_or_null(prov.tflops));
  cells.push_back(pct_of_peak(prov.pct_peak_bw, prov.gbps, rc.peaks.copy_gbps));
  cells.push_back(pct_of_peak(prov.pct_peak_flops, prov.tflops, rc.peaks.gemm_tflops));
  cells.push_back(first_cand && row.speedup && *row.speedup ? number_or_null(*row.speedup)
                                                            : json(nullptr));
  cells.push_back(text_or_null(prov.timer ? prov.timer : row.timer));
  cells.push_back(static_cast<long long>(prov.repeat.value_or(row.repeat.value_or(0))));
  cells.push_back(static_cast<long long>(prov.launches_per_sample.value_or(0)));
  cells.push_back(text_or_null(prov.regime));
  cells.push_back(text_or_null(prov.l2_method));
  cells.push_back(number_or_null(prov.sm_clock_mean_mhz));
  cells.push_back(number_or_null(prov.sm_clock_min_mhz));
  cells.push_back(number_or_null(prov.power_w));
  const auto reasons = prov.clock_reasons.value_or(std::vector<std::string>{});
  cells.push_back(reasons.empty() ? json(nullptr) : json(join(reasons, ";")));
  cells.push_back(provider_markers(row, p));
  cells.push_back(text_or_null(prov.stop_reason));
  cells.push_back(bool_or_null(prov.converged));
  cells.push_back(bool_or_null(prov.accuracy));
  cells.push_back(static_cast<long long>(prov.throttled_discarded.value_or(0)));
  cells.push_back(static_cast<long long>(prov.power_capped_samples.value_or(0)));
  json err = text_or_null(prov.error);
  if (err.is_null() && first) {
    err = text_or_null(row.error);
    if (err.is_null()) err = text_or_null(row.reason);
  }
  cells.push_back(err);
  return cells;
}

// One export row per provider of a case row (one with an empty provider when it has none).
void add_case_rows(ExportTable& t, const RunCells& rc, const core::CaseRow& row,
                   const std::vector<double>& qs) {
  std::vector<const core::ProviderRow*> provs;
  if (row.providers)
    for (const auto& p : *row.providers) provs.push_back(&p);
  if (provs.empty()) provs.push_back(nullptr);
  // The row's speedup belongs to its first candidate (baseline over that candidate).
  const core::ProviderRow* first_cand = nullptr;
  for (const auto* p : provs)
    if (p != nullptr && p->role == core::role::candidate) {
      first_cand = p;
      break;
    }
  for (const auto* p : provs)
    t.rows.push_back(
        provider_cells(rc, row, p, p != nullptr && p == first_cand, p == provs.front(), qs));
}

}  // namespace

ExportTable export_table(const std::vector<RunData>& runs) {
  ExportTable t;
  std::set<double> qset;
  for (const auto& r : runs)
    for (double q : run_quantiles(r)) qset.insert(q);
  const std::vector<double> qs(qset.begin(), qset.end());
  t.columns = export_columns(qs);

  int unfinished = 0, truncated = 0, no_peaks = 0, bad_lines = 0;
  for (const auto& run : runs) {
    if (!run.log.footer) ++unfinished;
    if (run.log.truncated) ++truncated;
    bad_lines += run.log.bad_lines;
    const RunCells rc = run_cells(run);
    if (rc.peaks.copy_gbps <= 0 && rc.peaks.gemm_tflops <= 0 && !run.log.cases.empty()) ++no_peaks;
    for (const auto& row : run.log.cases) add_case_rows(t, rc, row, qs);
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
  if (const std::string dup = duplicate_rows_note(runs); !dup.empty()) t.notes.push_back(dup);
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

namespace {

// Google Benchmark's "context": the first run's date and host, and caliber's runs.
json gbench_context(const std::vector<RunData>& runs) {
  json context = json::object();
  if (!runs.empty()) {
    const json& id = runs.front().identity;
    context["date"] = text_or_null(json_member(id, "start_time"));
    context["host_name"] = text_or_null(json_member(id, "host"));
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
    caliber_runs.push_back(
        {{"run", r.dir.filename().string()},
         {"backend", text_or_null(json_member(id, "backend"))},
         {"device", text_or_null(json_member(json_member(id, "device"), "name"))},
         {"timer", text_or_null(json_member(id, "timer"))},
         {"level", text_or_null(json_member(id, "level"))},
         {"tune", text_or_null(json_member(id, "tune"))},
         {"l2", text_or_null(json_member(id, "l2"))},
         {"git_commit", text_or_null(json_member(id, "git_commit"))},
         {"caliber_version", text_or_null(json_member(id, "caliber_version"))}});
  }
  context["caliber_runs"] = caliber_runs;
  return context;
}

// A value dumped as nlohmann's dump(2) would print it `depth` levels down: every line after the
// first indented by two spaces a level (its strings hold no raw line break).
std::string dump_at(const json& v, int depth) {
  const std::string flat = v.dump(2, ' ', false, json::error_handler_t::replace);
  const std::string pad(static_cast<std::size_t>(2 * depth), ' ');
  std::string out;
  out.reserve(flat.size() + flat.size() / 8);
  for (char c : flat) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

// The benchmark entries, with a family index per benchmark name, written to the stream as they
// are made: the elements of the "benchmarks" array of a document printed with dump(2).
class GbenchEntries {
 public:
  explicit GbenchEntries(std::ostream& out) : out_(out) {}
  [[nodiscard]] bool empty() const noexcept { return first_; }

  json base_entry(const std::string& name) {
    auto [it, inserted] = family_.try_emplace(name, static_cast<int>(family_.size()));
    return json{{"name", name},
                {"family_index", it->second},
                {"per_family_instance_index", 0},
                {"run_name", name},
                {"threads", 1}};
  }
  void push(const json& e) {
    out_ << (first_ ? "[\n    " : ",\n    ") << dump_at(e, 2);
    first_ = false;
  }
  // An entry for something not timed, which compare.py leaves out.
  void add_error(const std::string& name, const std::string& message) {
    json e = base_entry(name);
    e["run_type"] = "iteration";
    e["repetitions"] = 1;
    e["repetition_index"] = 0;
    e["iterations"] = 0;
    e["error_occurred"] = true;
    e["error_message"] = message;
    push(e);
  }
  // One iteration entry per sample, then the median (with rates), mean and stddev aggregates.
  void add_samples(const std::string& name, const std::vector<double>& samples, double median,
                   long long per_sample, const core::ProviderRow& prov) {
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
      push(e);
    }
    double mean = 0;
    for (double s : samples) mean += s;
    mean /= static_cast<double>(n);
    double var = 0;
    for (double s : samples) var += (s - mean) * (s - mean);
    const double stddev = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
    json med = aggregate(name, "median", median, n);
    // Rates as Google Benchmark's counters (per second), at the median.
    if (auto g = positive_number(prov.gbps)) med["bytes_per_second"] = *g * 1e9;
    if (auto f = positive_number(prov.tflops)) med["flops_per_second"] = *f * 1e12;
    med["label"] = prov.role.value_or("");
    push(med);
    push(aggregate(name, "mean", mean, n));
    push(aggregate(name, "stddev", stddev, n));
  }

 private:
  json aggregate(const std::string& name, const char* agg, double value, long long n) {
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
  }
  std::ostream& out_;
  bool first_ = true;
  std::map<std::string, int> family_;  // benchmark name -> family_index
};

// The entries of one case row: one benchmark per provider, or one errored entry.
void gbench_case(GbenchEntries& out, const core::CaseRow& row) {
  std::string node = row.node.value_or("");
  if (node.empty())
    node = row.op + "[" + row.dtype.value_or("") + "-" + row.shape.value_or("") + "]";
  if (!row.providers || row.providers->empty()) {
    std::string msg = row.error.value_or("");
    if (msg.empty()) msg = row.reason.value_or("");
    out.add_error(node, row_status(row) + (msg.empty() ? "" : ": " + msg));
    return;
  }
  for (const auto& prov : *row.providers) {
    const std::string name = node + "/" + prov.name;
    std::vector<double> samples;
    if (prov.samples_ms)
      for (double s : *prov.samples_ms)
        if (auto v = positive_number(std::optional<double>(s))) samples.push_back(*v);
    const auto latency = positive_number(prov.latency_ms);
    if (samples.empty() && latency) samples.push_back(*latency);
    if (samples.empty()) {
      std::string msg = prov.error.value_or("");
      if (msg.empty()) msg = row.error.value_or("");
      out.add_error(name, msg.empty() ? row_status(row) : msg);
      continue;
    }
    const long long per_sample =
        std::max(1LL, static_cast<long long>(prov.launches_per_sample.value_or(0)));
    out.add_samples(name, samples, latency ? *latency : core::median(samples), per_sample, prov);
  }
}

}  // namespace

// Byte for byte what {"benchmarks": [...], "context": {...}}.dump(2) gives (keys in order),
// written entry by entry: a run of 100000 samples a provider took about 160 times its run.log in
// memory as one document.
void write_export_gbench(std::ostream& out, const std::vector<RunData>& runs) {
  out << "{\n  \"benchmarks\": ";
  GbenchEntries benchmarks(out);
  for (const auto& run : runs)
    for (const auto& row : run.log.cases) gbench_case(benchmarks, row);
  out << (benchmarks.empty() ? "[]" : "\n  ]");
  out << ",\n  \"context\": " << dump_at(gbench_context(runs), 1) << "\n}\n";
}

json render_export_gbench(const std::vector<RunData>& runs) {
  std::ostringstream text;
  write_export_gbench(text, runs);
  return json::parse(text.str());
}

ExportResult export_dirs(const std::vector<std::filesystem::path>& dirs, ExportFormat format) {
  auto loaded = std::make_shared<const std::vector<RunData>>(load_runs(dirs));
  const auto& runs = *loaded;
  check_named_runs(dirs, runs);
  if (runs.empty()) throw std::runtime_error("no run directory under the given paths");
  if (format == ExportFormat::flaggems_log) return render_export_flaggems_log(runs);
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
    case ExportFormat::gbench:  // written by r.write, as it goes
      r.stream = [loaded](std::ostream& out) { write_export_gbench(out, *loaded); };
      break;
    case ExportFormat::flaggems_log:  // rendered from the runs above
      break;
  }
  return r;
}

}  // namespace caliber::report
