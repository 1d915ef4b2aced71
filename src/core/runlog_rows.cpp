#include "core/runlog_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/runlog.hpp"

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

}  // namespace

json to_json(const FooterTune& t) {
  json j = json::object();
  put(j, "mode", t.mode);
  put(j, "keys_tuned", t.keys_tuned);
  put(j, "sweep_s", t.sweep_s);
  put(j, "cache", t.cache);
  put_extra(j, t.extra);
  return j;
}

namespace {

TuneChoice tune_from(const json& j, const std::string& what) {
  Fields f(j, what);
  TuneChoice t;
  f.optional(tune_field::source, t.source);
  f.optional(tune_field::tried, t.tried);
  f.optional(tune_field::rejected, t.rejected);
  f.optional(tune_field::sweep_s, t.sweep_s);
  f.optional(tune_field::key, t.key);
  f.optional(field::note, t.note);
  f.optional(tune_field::evicted, t.evicted);
  t.extra = f.rest();
  return t;
}

FooterTune footer_tune_from(const json& j, const std::string& what) {
  Fields f(j, what);
  FooterTune t;
  f.optional("mode", t.mode);
  f.optional("keys_tuned", t.keys_tuned);
  f.optional("sweep_s", t.sweep_s);
  f.optional("cache", t.cache);
  t.extra = f.rest();
  return t;
}

ProviderRow provider_from(const json& j, const std::string& what) {
  Fields f(j, what);
  ProviderRow p;
  namespace k = field;
  f.required(k::name, p.name);
  f.optional(k::role, p.role);
  f.optional(k::label, p.label);
  f.optional(k::config, p.config);
  f.optional(k::tune, p.tune);
  f.optional(k::tune_markers, p.tune_markers);
  f.optional(k::accuracy, p.accuracy);
  f.optional(k::accuracy_detail, p.accuracy_detail);
  f.optional(k::rel_err, p.rel_err);
  f.optional(k::max_abs_err, p.max_abs_err);
  f.optional(k::timer, p.timer);
  f.optional(k::markers, p.markers);
  f.optional(k::noise, p.noise);
  f.optional(k::stop_reason, p.stop_reason);
  f.optional(k::converged, p.converged);
  f.optional(k::throttled_discarded, p.throttled_discarded);
  f.optional(k::power_capped_samples, p.power_capped_samples);
  f.optional(k::repeat, p.repeat);
  f.optional(k::launches_per_sample, p.launches_per_sample);
  f.optional(k::l2_method, p.l2_method);
  f.optional(k::sample_method, p.sample_method);
  f.optional(k::timer_resolution_us, p.timer_resolution_us);
  f.optional(k::regime, p.regime);
  f.optional(k::regime_discarded, p.regime_discarded);
  f.optional(k::settle_s, p.settle_s);
  f.optional(k::settled, p.settled);
  f.optional(k::clock_known, p.clock_known);
  f.optional(k::sm_clock_mean_mhz, p.sm_clock_mean_mhz);
  f.optional(k::sm_clock_min_mhz, p.sm_clock_min_mhz);
  f.optional(k::sm_clock_max_mhz, p.sm_clock_max_mhz);
  f.optional(k::power_w, p.power_w);
  f.optional(k::power_limit_w, p.power_limit_w);
  f.optional(k::clock_reasons, p.clock_reasons);
  f.optional(k::wall_s, p.wall_s);
  f.optional(k::note, p.note);
  f.optional(k::latency_ms, p.latency_ms);
  f.optional(k::samples_ms, p.samples_ms);
  f.optional(k::quantiles_ms, p.quantiles_ms);
  f.optional(k::tflops, p.tflops);
  f.optional(k::gbps, p.gbps);
  f.optional(k::pct_peak_bw, p.pct_peak_bw);
  f.optional(k::pct_peak_flops, p.pct_peak_flops);
  f.optional(k::error, p.error);
  f.optional(k::failure, p.failure);
  f.nullable(k::graph_latency_ms, p.graph_latency_ms);
  f.optional(k::graph_launches_per_sample, p.graph_launches_per_sample);
  f.optional(k::range, p.range);
  f.optional(k::launches, p.launches);
  p.extra = f.rest();
  return p;
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

json to_json(const TuneChoice& t) {
  json j = json::object();
  put(j, tune_field::source, t.source);
  put(j, tune_field::tried, t.tried);
  put(j, tune_field::rejected, t.rejected);
  put(j, tune_field::sweep_s, t.sweep_s);
  put(j, tune_field::key, t.key);
  put(j, field::note, t.note);
  put(j, tune_field::evicted, t.evicted);
  put_extra(j, t.extra);
  return j;
}

json to_json(const ProviderRow& p) {
  json j = json::object();
  namespace k = field;
  j[k::name] = p.name;
  put(j, k::role, p.role);
  put(j, k::label, p.label);
  put(j, k::config, p.config);
  put(j, k::tune, p.tune);
  put(j, k::tune_markers, p.tune_markers);
  put(j, k::accuracy, p.accuracy);
  put(j, k::accuracy_detail, p.accuracy_detail);
  put(j, k::rel_err, p.rel_err);
  put(j, k::max_abs_err, p.max_abs_err);
  put(j, k::timer, p.timer);
  put(j, k::markers, p.markers);
  put(j, k::noise, p.noise);
  put(j, k::stop_reason, p.stop_reason);
  put(j, k::converged, p.converged);
  put(j, k::throttled_discarded, p.throttled_discarded);
  put(j, k::power_capped_samples, p.power_capped_samples);
  put(j, k::repeat, p.repeat);
  put(j, k::launches_per_sample, p.launches_per_sample);
  put(j, k::l2_method, p.l2_method);
  put(j, k::sample_method, p.sample_method);
  put(j, k::timer_resolution_us, p.timer_resolution_us);
  put(j, k::regime, p.regime);
  put(j, k::regime_discarded, p.regime_discarded);
  put(j, k::settle_s, p.settle_s);
  put(j, k::settled, p.settled);
  put(j, k::clock_known, p.clock_known);
  put(j, k::sm_clock_mean_mhz, p.sm_clock_mean_mhz);
  put(j, k::sm_clock_min_mhz, p.sm_clock_min_mhz);
  put(j, k::sm_clock_max_mhz, p.sm_clock_max_mhz);
  put(j, k::power_w, p.power_w);
  put(j, k::power_limit_w, p.power_limit_w);
  put(j, k::clock_reasons, p.clock_reasons);
  put(j, k::wall_s, p.wall_s);
  put(j, k::note, p.note);
  put(j, k::latency_ms, p.latency_ms);
  put(j, k::samples_ms, p.samples_ms);
  put(j, k::quantiles_ms, p.quantiles_ms);
  put(j, k::tflops, p.tflops);
  put(j, k::gbps, p.gbps);
  put(j, k::pct_peak_bw, p.pct_peak_bw);
  put(j, k::pct_peak_flops, p.pct_peak_flops);
  put(j, k::error, p.error);
  put(j, k::failure, p.failure);
  put_nullable(j, k::graph_latency_ms, p.graph_latency_ms);
  put(j, k::graph_launches_per_sample, p.graph_launches_per_sample);
  put(j, k::range, p.range);
  put(j, k::launches, p.launches);
  put_extra(j, p.extra);
  return j;
}

json to_json(const CaseRow& r) {
  json j = json::object();
  namespace k = field;
  j[k::type] = row_type::case_row;
  j[k::op] = r.op;
  put(j, k::dtype, r.dtype);
  put(j, k::shape, r.shape);
  put(j, k::dims, r.dims);
  put(j, k::node, r.node);
  put(j, k::params, r.params);
  put(j, k::family, r.family);
  put(j, k::profile, r.profile);
  put(j, k::status, r.status);
  put(j, k::timer, r.timer);
  put(j, k::markers, r.markers);
  put(j, k::repeat, r.repeat);
  put(j, k::latency_ms, r.latency_ms);
  put(j, k::latency_base_ms, r.latency_base_ms);
  put_nullable(j, k::speedup, r.speedup);
  put(j, k::tflops, r.tflops);
  put(j, k::gbps, r.gbps);
  put(j, k::noise, r.noise);
  put(j, k::pct_peak_bw, r.pct_peak_bw);
  put(j, k::pct_peak_flops, r.pct_peak_flops);
  put_nullable(j, k::accuracy, r.accuracy);
  put(j, k::error, r.error);
  put(j, k::reason, r.reason);
  put(j, k::providers, r.providers);
  put_extra(j, r.extra);
  return j;
}

CaseRow case_row_from_json(const json& j) {
  Fields f(j, case_name(j));
  CaseRow r;
  namespace k = field;
  std::string type;
  f.required(k::type, type);
  if (type != row_type::case_row)
    throw RowError(f.what() + ": type '" + type + "' is not '" + row_type::case_row + "'");
  f.required(k::op, r.op);
  f.optional(k::dtype, r.dtype);
  f.optional(k::shape, r.shape);
  f.optional(k::dims, r.dims);
  f.optional(k::node, r.node);
  f.optional(k::params, r.params);
  f.optional(k::family, r.family);
  f.optional(k::profile, r.profile);
  f.optional(k::status, r.status);
  f.optional(k::timer, r.timer);
  f.optional(k::markers, r.markers);
  f.optional(k::repeat, r.repeat);
  f.optional(k::latency_ms, r.latency_ms);
  f.optional(k::latency_base_ms, r.latency_base_ms);
  f.nullable(k::speedup, r.speedup);
  f.optional(k::tflops, r.tflops);
  f.optional(k::gbps, r.gbps);
  f.optional(k::noise, r.noise);
  f.optional(k::pct_peak_bw, r.pct_peak_bw);
  f.optional(k::pct_peak_flops, r.pct_peak_flops);
  f.nullable(k::accuracy, r.accuracy);
  f.optional(k::error, r.error);
  f.optional(k::reason, r.reason);
  f.optional(k::providers, r.providers);
  r.extra = f.rest();
  return r;
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
  json j = json::object();
  j[field::type] = row_type::footer;
  put(j, "ok", ft.ok);
  put(j, "failed", ft.failed);
  put(j, "skipped", ft.skipped);
  put(j, "cases", ft.cases);
  put(j, field::wall_s, ft.wall_s);
  put(j, "end_time", ft.end_time);
  put(j, "warnings", ft.warnings);
  put(j, field::tune, ft.tune);
  if (ft.parallel_warmup) j["parallel_warmup"] = *ft.parallel_warmup;
  put_extra(j, ft.extra);
  return j;
}

RunLogFooter footer_from_json(const json& j) {
  Fields f(j, "the run.log footer");
  RunLogFooter ft;
  f.drop(field::type);
  f.optional("ok", ft.ok);
  f.optional("failed", ft.failed);
  f.optional("skipped", ft.skipped);
  f.optional("cases", ft.cases);
  f.optional(field::wall_s, ft.wall_s);
  f.optional("end_time", ft.end_time);
  f.optional("warnings", ft.warnings);
  f.optional(field::tune, ft.tune);
  // Null is its value when there was no parallel warmup.
  if (j.contains("parallel_warmup")) ft.parallel_warmup = j["parallel_warmup"];
  f.drop("parallel_warmup");
  ft.extra = f.rest();
  return ft;
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
