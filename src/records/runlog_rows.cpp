#include "records/runlog_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "records/runlog.hpp"

namespace caliber::core {

using nlohmann::json;

namespace {

// --- reading one value as a type; false when the JSON value is not of that type

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

template <class T>
const char* expected_name() {
  if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_integral_v<T>)
    return "an integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (is_vector<T>::value)
    return "a list";
  else
    return "an object";
}

template <class I>
bool read_integer(const json& v, I& out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<I>::max())) return false;
    out = static_cast<I>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const auto s = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<I>) {
      if (s < 0) return false;
    } else {
      if (s < std::numeric_limits<I>::min() || s > std::numeric_limits<I>::max()) return false;
    }
    out = static_cast<I>(s);
    return true;
  }
  if (v.is_number_float()) {  // 3.0 written by a tool that knows only doubles
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d ||
        d < static_cast<double>(std::numeric_limits<I>::min()) ||
        d > static_cast<double>(std::numeric_limits<I>::max()))
      return false;
    out = static_cast<I>(d);
    return true;
  }
  return false;
}

ProviderRow provider_from(const json& j, const std::string& what);
TuneChoice tune_from(const json& j, const std::string& what);
FooterTune footer_tune_from(const json& j, const std::string& what);

// Reads `v` into `out`; throws RowError naming `what` (the row and key) when `v` has another type.
template <class T>
void read_value(const json& v, T& out, const std::string& what) {
  bool ok = true;
  if constexpr (std::is_same_v<T, std::string>) {
    ok = v.is_string();
    if (ok) out = v.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = v.is_boolean();
    if (ok) out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    ok = read_integer(v, out);
  } else if constexpr (std::is_floating_point_v<T>) {
    ok = v.is_number();
    if (ok) out = v.get<double>();
  } else if constexpr (is_vector<T>::value) {
    ok = v.is_array();
    if (ok) {
      out.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        typename T::value_type x{};
        read_value(v[i], x, what + "[" + std::to_string(i) + "]");
        out.push_back(std::move(x));
      }
    }
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    ok = v.is_object();
    if (ok)
      for (const auto& [k, x] : v.items()) read_value(x, out[k], what + "." + k);
  } else if constexpr (std::is_same_v<T, ProviderRow>) {
    out = provider_from(v, what);
  } else if constexpr (std::is_same_v<T, TuneChoice>) {
    out = tune_from(v, what);
  } else if constexpr (std::is_same_v<T, FooterTune>) {
    out = footer_tune_from(v, what);
  } else if constexpr (std::is_same_v<T, json>) {
    out = v;
  }
  if (!ok)
    throw RowError(what + " is " + std::string(v.type_name()) + ", expected " + expected_name<T>() +
                   " (docs/run-log.md)");
}

// The keys of one JSON object, taken one by one into typed fields; what is left is the extra.
class Fields {
 public:
  Fields(const json& j, std::string what) : what_(std::move(what)) {
    if (!j.is_object())
      throw RowError(what_ + " is " + std::string(j.type_name()) +
                     ", expected an object (docs/run-log.md)");
    rest_ = j;
  }
  // A required key: absent or null is an error.
  template <class T>
  void required(const char* key, T& out) {
    const auto it = rest_.find(key);
    if (it == rest_.end() || it->is_null())
      throw RowError(what_ + " has no '" + key + "' (docs/run-log.md)");
    read_value(*it, out, where(key));
    rest_.erase(it);
  }
  // An optional key. A null stays in the extra (so it is written back as null) and the field
  // stays absent: a repaired NaN keeps its row.
  template <class T>
  void optional(const char* key, std::optional<T>& out) {
    const auto it = rest_.find(key);
    if (it == rest_.end() || it->is_null()) return;
    T v{};
    read_value(*it, v, where(key));
    out = std::move(v);
    rest_.erase(it);
  }
  // A key whose null is a value of its own.
  template <class T>
  void nullable(const char* key, Nullable<T>& out) {
    const auto it = rest_.find(key);
    if (it == rest_.end()) return;
    if (it->is_null()) {
      out = std::optional<T>();
    } else {
      T v{};
      read_value(*it, v, where(key));
      out = std::optional<T>(std::move(v));
    }
    rest_.erase(it);
  }
  void drop(const char* key) { rest_.erase(key); }
  [[nodiscard]] json rest() const { return rest_; }
  [[nodiscard]] const std::string& what() const { return what_; }

 private:
  std::string where(const char* key) const { return what_ + ": field '" + key + "'"; }
  std::string what_;
  json rest_;
};

// --- writing

template <class T>
json value_json(const T& v) {
  if constexpr (std::is_same_v<T, std::vector<ProviderRow>>) {
    json a = json::array();
    for (const auto& p : v) a.push_back(to_json(p));
    return a;
  } else if constexpr (std::is_same_v<T, TuneChoice> || std::is_same_v<T, FooterTune>) {
    return to_json(v);
  } else {
    return json(v);
  }
}

template <class T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = value_json(*v);
}
template <class T>
void put_nullable(json& j, const char* key, const Nullable<T>& v) {
  if (!v) return;
  j[key] = *v ? json(**v) : json(nullptr);
}
// The extra keys, unless a typed field wrote the same key.
void put_extra(json& j, const json& extra) {
  if (!extra.is_object()) return;
  for (const auto& [k, v] : extra.items())
    if (!j.contains(k)) j[k] = v;
}

// --- the field lists: each struct's keys, spelled once and used by both conversions. A field
// that is std::string is required, std::optional<T> is optional, Nullable<T> may be null.

template <class V, class Row>
void tune_fields(V& v, Row& t) {
  v(tune_field::source, t.source);
  v(tune_field::tried, t.tried);
  v(tune_field::rejected, t.rejected);
  v(tune_field::sweep_s, t.sweep_s);
  v(tune_field::key, t.key);
  v(field::note, t.note);
  v(tune_field::evicted, t.evicted);
  v(tune_field::swept_by, t.swept_by);
}

template <class V, class Row>
void footer_tune_fields(V& v, Row& t) {
  v("mode", t.mode);
  v("keys_tuned", t.keys_tuned);
  v("sweep_s", t.sweep_s);
  v("cache", t.cache);
}

template <class V, class Row>
void provider_fields(V& v, Row& p) {
  namespace k = field;
  v(k::name, p.name);
  v(k::role, p.role);
  v(k::label, p.label);
  v(k::config, p.config);
  v(k::tune, p.tune);
  v(k::tune_markers, p.tune_markers);
  v(k::accuracy, p.accuracy);
  v(k::accuracy_detail, p.accuracy_detail);
  v(k::rel_err, p.rel_err);
  v(k::max_abs_err, p.max_abs_err);
  v(k::check_method, p.check_method);
  v(k::check_coverage, p.check_coverage);
  v(k::check_elements, p.check_elements);
  v(k::timer, p.timer);
  v(k::markers, p.markers);
  v(k::noise, p.noise);
  v(k::stop_reason, p.stop_reason);
  v(k::converged, p.converged);
  v(k::throttled_discarded, p.throttled_discarded);
  v(k::power_capped_samples, p.power_capped_samples);
  v(k::repeat, p.repeat);
  v(k::launches_per_sample, p.launches_per_sample);
  v(k::l2_method, p.l2_method);
  v(k::sample_method, p.sample_method);
  v(k::timer_resolution_us, p.timer_resolution_us);
  v(k::event_latency_ms, p.event_latency_ms);
  v(k::kernel_count, p.kernel_count);
  v(k::kernel_sum_ms, p.kernel_sum_ms);
  v(k::record_resolution_us, p.record_resolution_us);
  v(k::trace_host_us, p.trace_host_us);
  v(k::regime, p.regime);
  v(k::regime_discarded, p.regime_discarded);
  v(k::settle_s, p.settle_s);
  v(k::settled, p.settled);
  v(k::settle, p.settle);
  v(k::clock_known, p.clock_known);
  v(k::sm_clock_mean_mhz, p.sm_clock_mean_mhz);
  v(k::sm_clock_min_mhz, p.sm_clock_min_mhz);
  v(k::sm_clock_max_mhz, p.sm_clock_max_mhz);
  v(k::power_w, p.power_w);
  v(k::power_limit_w, p.power_limit_w);
  v(k::other_processes, p.other_processes);
  v(k::clock_reasons, p.clock_reasons);
  v(k::wall_s, p.wall_s);
  v(k::note, p.note);
  v(k::latency_ms, p.latency_ms);
  v(k::samples_ms, p.samples_ms);
  v(k::samples_total, p.samples_total);
  v(k::quantiles_ms, p.quantiles_ms);
  v(k::tflops, p.tflops);
  v(k::gbps, p.gbps);
  v(k::pct_peak_bw, p.pct_peak_bw);
  v(k::pct_peak_flops, p.pct_peak_flops);
  v(k::error, p.error);
  v(k::failure, p.failure);
  v(k::graph_latency_ms, p.graph_latency_ms);
  v(k::graph_launches_per_sample, p.graph_launches_per_sample);
  v(k::range, p.range);
  v(k::launches, p.launches);
  v(k::block_medians_ms, p.block_medians_ms);
  v(k::paired_blocks, p.paired_blocks);
  v(k::paired_method, p.paired_method);
  v(k::paired_phases, p.paired_phases);
  v(k::host_ms, p.host_ms);
}

template <class V, class Row>
void phase_fields(V& v, Row& p) {
  namespace k = field;
  v(k::inputs_s, p.inputs_s);
  v(k::prepare_s, p.prepare_s);
  v(k::check_s, p.check_s);
  v(k::settle_s, p.settle_s);
  v(k::timing_s, p.timing_s);
  v(k::host_s, p.host_s);
  v(k::other_s, p.other_s);
}

// The case row's fields after "type".
template <class V, class Row>
void case_fields(V& v, Row& r) {
  namespace k = field;
  v(k::op, r.op);
  v(k::dtype, r.dtype);
  v(k::shape, r.shape);
  v(k::dims, r.dims);
  v(k::node, r.node);
  v(k::params, r.params);
  v(k::family, r.family);
  v(k::profile, r.profile);
  v(k::status, r.status);
  v(k::timer, r.timer);
  v(k::markers, r.markers);
  v(k::repeat, r.repeat);
  v(k::latency_ms, r.latency_ms);
  v(k::latency_base_ms, r.latency_base_ms);
  v(k::speedup, r.speedup);
  v(k::tflops, r.tflops);
  v(k::gbps, r.gbps);
  v(k::noise, r.noise);
  v(k::pct_peak_bw, r.pct_peak_bw);
  v(k::pct_peak_flops, r.pct_peak_flops);
  v(k::accuracy, r.accuracy);
  v(k::error, r.error);
  v(k::reason, r.reason);
  v(k::providers, r.providers);
  phase_fields(v, r.phases);
  v(k::wall_s, r.phases.wall_s);
  v(k::host_ms, r.host_ms);
  v(k::host_base_ms, r.host_base_ms);
}

// The footer's fields after "type" ("parallel_warmup", null when there was none, apart).
template <class V, class Row>
void footer_fields(V& v, Row& f) {
  v("ok", f.ok);
  v("failed", f.failed);
  v("skipped", f.skipped);
  v("cases", f.cases);
  v(field::wall_s, f.wall_s);
  v("end_time", f.end_time);
  v("warnings", f.warnings);
  v(field::tune, f.tune);
  phase_fields(v, f.phases);
  v("cases_wall_s", f.cases_wall_s);
  v("settles", f.settles);
  v("carries", f.carries);
}

// Writes every field of a field list into a JSON object.
struct Writer {
  json& j;
  void operator()(const char* key, const std::string& v) { j[key] = v; }
  template <class T>
  void operator()(const char* key, const std::optional<T>& v) {
    put(j, key, v);
  }
  template <class T>
  void operator()(const char* key, const Nullable<T>& v) {
    put_nullable(j, key, v);
  }
};

// Takes every field of a field list out of a JSON object.
struct Reader {
  Fields& f;
  void operator()(const char* key, std::string& v) { f.required(key, v); }
  template <class T>
  void operator()(const char* key, std::optional<T>& v) {
    f.optional(key, v);
  }
  template <class T>
  void operator()(const char* key, Nullable<T>& v) {
    f.nullable(key, v);
  }
};

// A struct's object: its field list, then its extra.
template <class Row, class List>
json write_object(const Row& row, List list, json j = json::object()) {
  Writer w{j};
  list(w, row);
  put_extra(j, row.extra);
  return j;
}

template <class Row, class List>
Row read_object(Fields& f, List list) {
  Row row;
  Reader r{f};
  list(r, row);
  row.extra = f.rest();
  return row;
}

// Generic lambdas, so one field list serves the const row (writing) and the row (reading).
constexpr auto kTuneFields = [](auto& v, auto& row) { tune_fields(v, row); };
constexpr auto kFooterTuneFields = [](auto& v, auto& row) { footer_tune_fields(v, row); };
constexpr auto kProviderFields = [](auto& v, auto& row) { provider_fields(v, row); };
constexpr auto kCaseFields = [](auto& v, auto& row) { case_fields(v, row); };
constexpr auto kFooterFields = [](auto& v, auto& row) { footer_fields(v, row); };

TuneChoice tune_from(const json& j, const std::string& what) {
  Fields f(j, what);
  return read_object<TuneChoice>(f, kTuneFields);
}

FooterTune footer_tune_from(const json& j, const std::string& what) {
  Fields f(j, what);
  return read_object<FooterTune>(f, kFooterTuneFields);
}

ProviderRow provider_from(const json& j, const std::string& what) {
  Fields f(j, what);
  return read_object<ProviderRow>(f, kProviderFields);
}

// How a row is named in an error: its node, else its op.
std::string case_name(const json& j) {
  if (!j.is_object()) return "a case row";
  for (const char* key : {field::node, field::op}) {
    const auto it = j.find(key);
    if (it != j.end() && it->is_string()) {
      std::string s = it->get<std::string>();
      if (s.size() > 120) s = s.substr(0, 120) + "...";
      return "case row '" + s + "'";
    }
  }
  return "a case row";
}

}  // namespace

json to_json(const FooterTune& t) {
  return write_object(t, kFooterTuneFields);
}

json to_json(const TuneChoice& t) {
  return write_object(t, kTuneFields);
}

json to_json(const ProviderRow& p) {
  return write_object(p, kProviderFields);
}

json to_json(const CaseRow& r) {
  return write_object(r, kCaseFields, json{{field::type, row_type::case_row}});
}

CaseRow case_row_from_json(const json& j) {
  Fields f(j, case_name(j));
  std::string type;
  f.required(field::type, type);
  if (type != row_type::case_row)
    throw RowError(f.what() + ": type '" + type + "' is not '" + row_type::case_row + "'");
  return read_object<CaseRow>(f, kCaseFields);
}

ProviderRow provider_row_from_json(const json& j) {
  return provider_from(j, "a provider object");
}

TuneChoice tune_choice_from_json(const json& j) {
  return tune_from(j, "a provider's tune object");
}

json to_json(const RunLogHeader& h) {
  json j = h.identity.is_object() ? h.identity : json::object();
  j[field::type] = row_type::header;
  if (h.cases) j["cases"] = *h.cases;
  return j;
}

RunLogHeader header_from_json(const json& j) {
  Fields f(j, "the run.log header");
  RunLogHeader h;
  f.drop(field::type);
  f.optional("cases", h.cases);
  h.identity = f.rest();
  return h;
}

json to_json(const RunLogFooter& ft) {
  json j = write_object(ft, kFooterFields, json{{field::type, row_type::footer}});
  if (ft.parallel_warmup) j["parallel_warmup"] = *ft.parallel_warmup;
  if (ft.startup) j["startup"] = *ft.startup;
  return j;
}

RunLogFooter footer_from_json(const json& j) {
  Fields f(j, "the run.log footer");
  f.drop(field::type);
  // Null is its value when there was no parallel warmup.
  std::optional<json> warmup;
  if (j.is_object() && j.contains("parallel_warmup")) warmup = j["parallel_warmup"];
  f.drop("parallel_warmup");
  std::optional<json> startup;
  if (j.is_object() && j.contains("startup") && j["startup"].is_object()) startup = j["startup"];
  f.drop("startup");
  RunLogFooter ft = read_object<RunLogFooter>(f, kFooterFields);
  ft.parallel_warmup = std::move(warmup);
  ft.startup = std::move(startup);
  return ft;
}

void Phases::add(const Phases& o) {
  auto sum = [](std::optional<double>& a, const std::optional<double>& b) {
    if (b) a = a.value_or(0.0) + *b;
  };
  sum(inputs_s, o.inputs_s);
  sum(prepare_s, o.prepare_s);
  sum(check_s, o.check_s);
  sum(settle_s, o.settle_s);
  sum(timing_s, o.timing_s);
  sum(host_s, o.host_s);
  sum(other_s, o.other_s);
  sum(wall_s, o.wall_s);
}

std::string status_of(const CaseRow& row) {
  return row.status && !row.status->empty() ? *row.status : std::string(status::ok);
}

void add_markers(std::vector<std::string>& list, const std::vector<std::string>& more) {
  for (const auto& m : more)
    if (std::find(list.begin(), list.end(), m) == list.end()) list.push_back(m);
}

std::vector<std::string> all_markers(const CaseRow& row) {
  std::vector<std::string> out;
  if (row.markers) add_markers(out, *row.markers);
  if (row.providers)
    for (const auto& p : *row.providers)
      if (p.markers) add_markers(out, *p.markers);
  return out;
}

}  // namespace caliber::core
