#include "run/case_runner.hpp"

#include "core/format.hpp"
#include "core/knobs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

namespace caliber::run {

using nlohmann::json;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void add_markers(json& row, const std::vector<std::string>& ms) {
  if (!row.contains("markers")) row["markers"] = json::array();
  for (const auto& m : ms)
    if (std::find(row["markers"].begin(), row["markers"].end(), m) == row["markers"].end())
      row["markers"].push_back(m);
}

// Raised out of a sweep when a measurement left the device context unusable.
struct DeviceBroken : std::runtime_error {
  DeviceBroken(const std::string& what, backends::Failure f)
      : std::runtime_error(what), failure(f) {}
  backends::Failure failure;
};

const char* role_name(Role r) {
  return r == Role::baseline ? "baseline" : "candidate";
}

// A provider's timing fields on its run.log object (docs/run-log.md lists them).
void write_timing(json& prow, const timing::Measurement& m, double flops, double bytes) {
  prow["timer"] = m.timer;
  // Markers the tuner set on this provider (compile_tune_no_evict) stay; a re-timing replaces the
  // timing ones.
  std::vector<std::string> markers;
  if (prow.contains("tune_markers")) markers = prow["tune_markers"].get<std::vector<std::string>>();
  markers.insert(markers.end(), m.markers.begin(), m.markers.end());
  prow["markers"] = markers;
  prow["noise"] = m.noise;
  prow["stop_reason"] = m.stop_reason;
  prow["converged"] = m.converged;
  prow["throttled_discarded"] = m.throttled_discarded;
  if (m.power_capped > 0) prow["power_capped_samples"] = m.power_capped;
  prow["repeat"] = m.repeat;
  prow["launches_per_sample"] = m.launches_per_sample;
  prow["l2_method"] = m.l2_method;
  prow["sample_method"] = m.sample_method;
  prow["timer_resolution_us"] = m.timer_resolution_us;
  prow["regime"] = m.regime;
  if (m.regime_discarded > 0) prow["regime_discarded"] = m.regime_discarded;
  if (m.settle_s > 0) prow["settle_s"] = m.settle_s;
  if (!m.settled) prow["settled"] = false;
  prow["clock_known"] = m.clock.known;
  if (m.clock.known) {
    prow["sm_clock_mean_mhz"] = m.clock.sm_mean_mhz;
    prow["sm_clock_min_mhz"] = m.clock.sm_min_mhz;
    prow["sm_clock_max_mhz"] = m.clock.sm_max_mhz;
    if (m.clock.power_mean_w > 0) prow["power_w"] = m.clock.power_mean_w;
    if (m.clock.power_limit_w > 0) prow["power_limit_w"] = m.clock.power_limit_w;
    prow["clock_reasons"] = m.clock.reasons;
  }
  prow["wall_s"] = m.wall_s;
  if (!m.note.empty()) prow["note"] = m.note;
  if (m.ok && m.latency_ms > 0) {
    prow["latency_ms"] = m.latency_ms;
    prow["samples_ms"] = m.samples_ms;
    prow.erase("error");
    prow.erase("failure");
    if (!m.quantile_ms.empty()) prow["quantiles_ms"] = m.quantile_ms;
    const double s = m.latency_ms * 1e-3;
    if (flops > 0) prow["tflops"] = flops / s / 1e12;
    if (bytes > 0) prow["gbps"] = bytes / s / 1e9;
  } else {
    prow.erase("latency_ms");
    prow.erase("samples_ms");
    prow["error"] = m.error;
    prow["failure"] = backends::to_string(m.failure);
  }
}

}  // namespace

CaseRunner::CaseRunner(const backends::Backend& backend, int device_index, std::uint64_t seed,
                       const core::Knobs& knobs, std::string timer,
                       const tune::Settings& tune_settings)
    : backend_(backend), knobs_(knobs), timer_(std::move(timer)) {
  device_ = backend_.open(device_index, seed);
  deny_ = backend_.capture_deny_ops();
  deny_.insert(deny_.end(), knobs_.capture_deny.begin(), knobs_.capture_deny.end());
  tuner_ = std::make_unique<tune::Tuner>(tune_settings);
}

CaseRunner::~CaseRunner() = default;

timing::TimingOptions CaseRunner::timing_options(const OpInfo& info, bool short_budget) const {
  timing::TimingOptions o;
  o.timer = core::parse_timer_kind(timer_).value_or(core::TimerKind::automatic);
  o.repeat = knobs_.repeat;
  o.return_mode = knobs_.return_mode;
  o.quantiles = knobs_.quantiles;
  o.l2 = knobs_.l2;
  o.stop.min_samples = knobs_.min_samples;
  o.stop.min_time_s = knobs_.min_time_s;
  o.stop.max_noise = timing::resolved_max_noise(knobs_.max_noise, backend_.capabilities());
  o.regime.regime = knobs_.clock;
  o.stop.timeout_s = knobs_.timeout_s;
  o.stop.warmup_s = knobs_.warmup_s;
  o.throttle_fraction = knobs_.throttle_fraction;
  o.capture_denied = contains(deny_, info.name);
  o.rng = info.rng;
  o.op = info.name;
  if (short_budget) {
    // The sweep uses the measurement's timer with a shorter budget (issue 6): enough to rank
    // configs.
    o.repeat = 1;
    o.quantiles.clear();
    o.return_mode = core::ReturnMode::median;
    o.stop.min_samples = std::min(o.stop.min_samples, 5);
    o.stop.min_time_s = std::min(o.stop.min_time_s, 0.002);
    o.stop.max_noise = std::max(o.stop.max_noise, 0.02);
    o.stop.timeout_s = std::min(o.stop.timeout_s, 0.25);
    o.stop.warmup_s = std::min(o.stop.warmup_s, 0.005);
  }
  return o;
}

Config CaseRunner::choose_config(const OpInfo& info, const Case& c, Workload& w, std::size_t p,
                                 const ProviderInfo& pi, json& prow) {
  if (!pi.space.tunable()) return pi.space.default_config;
  tune::CacheKey key{info.name,
                     pi.name,
                     pi.version,
                     backend_.name(),
                     device_->desc().name,
                     std::string(to_string(c.dtype)),
                     tune_key(pi.space.key)};
  std::optional<timing::Measurement> broken;
  auto time_config = [&](const Config& cfg) -> double {
    if (broken) throw ConfigRejected("device context unusable");
    w.prepare(p, cfg);
    auto m = timing::measure(
        *device_, backend_, [&] { w.launch(p); }, timing_options(info, true));
    // A broken context is not a bad config: remember it, so the case fails and the run stops
    // timing.
    if (timing::process_unusable(m)) {
      broken = m;
      throw ConfigRejected(m.error);
    }
    if (!m.ok) throw ConfigRejected(m.error.empty() ? "measurement failed" : m.error);
    return m.latency_ms;
  };
  tune::Selection s = tuner_->select(key, pi.space, time_config);
  if (broken) throw DeviceBroken(broken->error, broken->failure);
  prow["config"] = s.config.str();
  prow["tune"] = {{"source", s.source},
                  {"tried", s.tried},
                  {"rejected", s.rejected},
                  {"sweep_s", s.sweep_s},
                  {"key", key.key}};
  if (!s.note.empty()) prow["tune"]["note"] = s.note;
  if (!s.markers.empty()) {
    prow["markers"] = s.markers;
    prow["tune_markers"] = s.markers;
  }
  for (auto& wmsg : tuner_->take_warnings()) warnings_.push_back(wmsg);
  // Prepare the winner (a failure here is a config that failed at launch: evict and retune).
  try {
    w.prepare(p, s.config);
  } catch (const ConfigRejected& e) {
    tune::Selection r = tuner_->on_launch_failure(key, pi.space, s.config, "tune", time_config);
    prow["config"] = r.config.str();
    prow["tune"]["evicted"] = s.config.str();
    prow["tune"]["source"] = r.source;
    if (!r.note.empty()) prow["tune"]["note"] = r.note;
    if (!r.markers.empty()) {
      prow["markers"] = r.markers;
      prow["tune_markers"] = r.markers;
      warnings_.push_back(r.note);
    }
    w.prepare(p, r.config);
    return r.config;
  }
  return s.config;
}

json CaseRunner::profile_case(const Op& op, const Case& c, int launches) {
  const OpInfo info = op.info();
  json row = {
      {"type", "case"},           {"op", c.op},      {"dtype", std::string(to_string(c.dtype))},
      {"shape", c.size_detail()}, {"dims", c.shape}, {"node", c.node_id()},
      {"family", info.family},    {"profile", true}, {"markers", json::array()}};
  if (!c.params.empty()) row["params"] = c.params;
  if (!fatal_.empty()) {
    row["status"] = "skipped";
    row["reason"] = "not run: the device context is unusable after " + fatal_;
    return row;
  }
  if (auto reason = op.skip_reason(c, *device_)) {
    row["status"] = "skipped";
    row["reason"] = *reason;
    return row;
  }
  json prows = json::array();
  try {
    auto w = op.setup(*device_, c);
    const auto providers = w->providers();
    for (std::size_t p = 0; p < providers.size(); ++p) {
      const auto& pi = providers[p];
      json prow = {{"name", pi.name}, {"role", role_name(pi.role)}};
      if (pi.role == Role::candidate && pi.space.tunable()) {
        (void)choose_config(info, c, *w, p, pi, prow);
      } else {
        w->prepare(p, pi.space.default_config);
        if (!pi.space.default_config.empty()) prow["config"] = pi.space.default_config.str();
      }
      prows.push_back(std::move(prow));
    }
    device_->synchronize();
    for (std::size_t p = 0; p < providers.size(); ++p) {
      const std::string range = c.node_id() + "/" + providers[p].name;
      device_->range_push(range);
      try {
        for (int i = 0; i < launches; ++i) w->launch(p);
        device_->synchronize();
      } catch (...) {
        device_->range_pop();
        throw;
      }
      device_->range_pop();
      prows[p]["range"] = range;
      prows[p]["launches"] = launches;
    }
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (f == backends::Failure::fatal_on_device || f == backends::Failure::capture_poisoned)
      fatal_ = c.node_id();
    row["providers"] = prows;
    row["status"] = "failed";
    row["error"] = std::string(e.what()) + " [" + backends::to_string(f) + "]";
    return row;
  } catch (const CaseSkipped& e) {
    row["status"] = "skipped";
    row["reason"] = e.what();
    return row;
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    row["providers"] = prows;
    row["status"] = "failed";
    row["error"] = std::string(e.what()) + " [" + backends::to_string(e.failure) + "]";
    return row;
  } catch (const std::exception& e) {
    row["providers"] = prows;
    row["status"] = "failed";
    row["error"] = e.what();
    return row;
  }
  row["providers"] = prows;
  row["status"] = "ok";
  return row;
}

void CaseRunner::tune_case(const Op& op, const Case& c) {
  const OpInfo info = op.info();
  if (!fatal_.empty()) return;
  try {
    (void)count_of(c.shape);
    if (op.bytes_needed(c) > device_->free_bytes()) return;
    auto w = op.setup(*device_, c);
    auto providers = w->providers();
    for (std::size_t p = 0; p < providers.size(); ++p) {
      if (providers[p].role != Role::candidate || !providers[p].space.tunable()) continue;
      json scratch;
      (void)choose_config(info, c, *w, p, providers[p], scratch);
    }
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (f == backends::Failure::fatal_on_device || f == backends::Failure::capture_poisoned)
      fatal_ = c.node_id();
    warnings_.push_back("tuning " + c.node_id() + " failed: " + e.what());
  } catch (const std::exception& e) {
    warnings_.push_back("tuning " + c.node_id() + " failed: " + e.what());
  }
}

json CaseRunner::run_case(const Op& op, const Case& c) {
  const OpInfo info = op.info();
  json row = {
      {"type", "case"},           {"op", c.op},      {"dtype", std::string(to_string(c.dtype))},
      {"shape", c.size_detail()}, {"dims", c.shape}, {"node", c.node_id()},
      {"family", info.family},    {"timer", timer_}, {"markers", json::array()},
      {"repeat", knobs_.repeat}};
  if (!c.params.empty()) row["params"] = c.params;
  auto fail = [&](const std::string& msg) {
    row["status"] = "failed";
    row["error"] = msg;
    return row;
  };
  if (!fatal_.empty()) {
    row["status"] = "skipped";
    row["reason"] = "not run: the device context is unusable after " + fatal_;
    return row;
  }
  // A shape whose sizes do not fit (caliber/size.hpp) is skipped with its real size, before the
  // op's guards see a wrapped count.
  double need = 0;
  try {
    (void)count_of(c.shape);
    need = static_cast<double>(op.bytes_needed(c));
  } catch (const SizeOverflow& e) {
    row["status"] = "skipped";
    row["reason"] = std::string(c.op) + ": " + e.what();
    return row;
  }
  // Skip guards, and the backend's compat rules that may lift exactly one (op, reason).
  if (auto reason = op.skip_reason(c, *device_)) {
    bool lifted = false;
    for (const auto& rule : backend_.compat_rules())
      if (rule.op == c.op && rule.reason == *reason) lifted = true;
    if (!lifted) {
      row["status"] = "skipped";
      row["reason"] = *reason;
      return row;
    }
    add_markers(row, {"compat_lifted"});
  }
  const double have = static_cast<double>(device_->free_bytes());
  if (need > 0.9 * have) {
    row["status"] = "skipped";
    row["reason"] = "needs " + core::gib(need, 2) + ", device has " + core::gib(have, 2) + " free";
    return row;
  }

  std::unique_ptr<Workload> w;
  std::vector<ProviderInfo> providers;
  json prows = json::array();
  try {
    w = op.setup(*device_, c);
    providers = w->providers();
    // Prepare every provider (handles, plans, workspaces, tuned configs) outside any timing.
    for (std::size_t p = 0; p < providers.size(); ++p) {
      const auto& pi = providers[p];
      json prow = {{"name", pi.name}, {"role", role_name(pi.role)}};
      if (!pi.label.empty()) prow["label"] = pi.label;
      if (pi.role == Role::candidate && pi.space.tunable()) {
        try {
          (void)choose_config(info, c, *w, p, pi, prow);
        } catch (const ConfigRejected&) {
          // A replayed config that can neither run nor be evicted: the failed row must carry
          // compile_tune_no_evict, not only an error that reads like a broken kernel.
          if (prow.contains("markers"))
            add_markers(row, prow["markers"].get<std::vector<std::string>>());
          prows.push_back(std::move(prow));
          throw;
        }
      } else {
        w->prepare(p, pi.space.default_config);
        if (!pi.space.default_config.empty()) prow["config"] = pi.space.default_config.str();
      }
      prows.push_back(std::move(prow));
    }
    // The correctness gate: every candidate against the reference, before anything is timed.
    for (std::size_t p = 0; p < providers.size(); ++p) {
      if (providers[p].role != Role::candidate) continue;
      Accuracy a = w->check(p);
      prows[p]["accuracy"] = a.passed;
      prows[p]["accuracy_detail"] = a.detail;
      prows[p]["rel_err"] = a.rel_err;
      prows[p]["max_abs_err"] = a.max_abs_err;
      // The check may have re-prepared nothing, but it did launch: keep the tuned config prepared.
    }
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    row["providers"] = prows;
    return fail(std::string(e.what()) + " [" + backends::to_string(e.failure) + "]");
  } catch (const CaseSkipped& e) {
    row["status"] = "skipped";
    row["reason"] = e.what();
    return row;
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (f == backends::Failure::fatal_on_device || f == backends::Failure::capture_poisoned)
      fatal_ = c.node_id();
    row["providers"] = prows;
    return fail(std::string(e.what()) + " [" + backends::to_string(f) + "]");
  } catch (const std::exception& e) {
    row["providers"] = prows;
    return fail(e.what());
  }

  // Time every provider (a candidate that failed its gate is not timed).
  const double flops = w->flops();
  const double bytes = w->bytes();
  bool any_fail = false;
  std::string first_error;
  std::vector<timing::Measurement> measured(providers.size());
  auto time_provider = [&](std::size_t p, const timing::TimingOptions& opts) {
    timing::Measurement m;
    try {
      m = timing::measure(
          *device_, backend_, [&] { w->launch(p); }, opts);
    } catch (const std::exception& e) {
      m.ok = false;
      m.error = e.what();
    }
    write_timing(prows[p], m, flops, bytes);
    return m;
  };
  for (std::size_t p = 0; p < providers.size(); ++p) {
    json& prow = prows[p];
    if (prow.contains("accuracy") && !prow["accuracy"].get<bool>()) continue;
    const timing::Measurement m = time_provider(p, timing_options(info, false));
    measured[p] = m;
    add_markers(row, m.markers);
    if (m.ok && m.latency_ms > 0) {
      if (m.timer == "direct" && timer_ == "graph") row["timer"] = "direct";
    } else {
      any_fail = true;
      if (first_error.empty()) first_error = providers[p].name + ": " + m.error;
      if (timing::process_unusable(m)) {
        fatal_ = c.node_id();
        break;  // time nothing more in this process
      }
    }
  }
  // One regime per row (docs/timing.md): when a provider's capture was refused and it fell back to
  // the direct timer, the providers timed by the graph timer are timed again by the direct timer,
  // so that the speedup compares like with like. Their graph figures stay as extra fields.
  if (fatal_.empty() && row["timer"] == "direct" && timer_ == "graph") {
    timing::TimingOptions direct = timing_options(info, false);
    direct.timer = timing::TimerKind::direct;
    for (std::size_t p = 0; p < providers.size(); ++p) {
      if (!measured[p].ok || measured[p].timer != "graph") continue;
      json& prow = prows[p];
      const json graph_latency = prow.value("latency_ms", json(nullptr));
      const timing::Measurement m = time_provider(p, direct);
      prow["graph_latency_ms"] = graph_latency;
      prow["graph_launches_per_sample"] = measured[p].launches_per_sample;
      prow["note"] =
          "timed by the direct timer too, since another provider of this case could "
          "not be captured (one regime per row); its graph figure is graph_latency_ms";
      add_markers(row, m.markers);
      if (!(m.ok && m.latency_ms > 0)) {
        any_fail = true;
        if (first_error.empty()) first_error = providers[p].name + ": " + m.error;
        if (timing::process_unusable(m)) {
          fatal_ = c.node_id();
          break;
        }
      }
    }
  }
  row["providers"] = prows;

  // Row-level fields: the first baseline and the first candidate.
  const json* base = nullptr;
  const json* cand = nullptr;
  for (const auto& prow : prows) {
    if (prow["role"] == "baseline" && base == nullptr) base = &prow;
    if (prow["role"] == "candidate" && cand == nullptr) cand = &prow;
  }
  const json* main = cand != nullptr ? cand : base;
  if (base != nullptr && base->contains("latency_ms"))
    row["latency_base_ms"] = (*base)["latency_ms"];
  if (main != nullptr && main->contains("latency_ms")) {
    row["latency_ms"] = (*main)["latency_ms"];
    if (main->contains("tflops")) row["tflops"] = (*main)["tflops"];
    if (main->contains("gbps")) row["gbps"] = (*main)["gbps"];
    if (main->contains("noise")) row["noise"] = (*main)["noise"];
  }
  row["accuracy"] =
      cand != nullptr && cand->contains("accuracy") ? (*cand)["accuracy"] : json(nullptr);
  const bool accurate =
      cand == nullptr || !cand->contains("accuracy") || (*cand)["accuracy"].get<bool>();
  if (cand != nullptr && base != nullptr && accurate && cand->contains("latency_ms") &&
      base->contains("latency_ms"))
    row["speedup"] = (*base)["latency_ms"].get<double>() / (*cand)["latency_ms"].get<double>();
  else
    row["speedup"] = nullptr;
  if (!accurate) {
    row["status"] = "failed";
    row["error"] = "accuracy check failed: " + (*cand)["accuracy_detail"].get<std::string>();
  } else if (any_fail) {
    row["status"] = "failed";
    row["error"] = first_error;
  } else {
    row["status"] = "ok";
  }
  return row;
}

}  // namespace caliber::run
