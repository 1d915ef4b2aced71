#include "run/case_runner.hpp"

#include "backends/registry.hpp"
#include "core/format.hpp"
#include "core/knobs.hpp"
#include "core/runlog.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

namespace caliber::run {

using nlohmann::json;
namespace field = core::field;
namespace tune_field = core::tune_field;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void add_markers(json& row, const std::vector<std::string>& ms) {
  if (!row.contains(field::markers)) row[field::markers] = json::array();
  for (const auto& m : ms)
    if (std::find(row[field::markers].begin(), row[field::markers].end(), m) ==
        row[field::markers].end())
      row[field::markers].push_back(m);
}

// Raised out of a sweep when a measurement left the device context unusable.
struct DeviceBroken : std::runtime_error {
  DeviceBroken(const std::string& what, backends::Failure f)
      : std::runtime_error(what), failure(f) {}
  backends::Failure failure;
};

const char* role_name(Role r) {
  return r == Role::baseline ? core::role::baseline : core::role::candidate;
}

// A provider's timing fields on its run.log object (docs/run-log.md lists them).
void write_timing(json& prow, const timing::Measurement& m, double flops, double bytes) {
  prow[field::timer] = m.timer;
  // Markers the tuner set on this provider (compile_tune_no_evict) stay; a re-timing replaces the
  // timing ones.
  std::vector<std::string> markers;
  if (prow.contains(field::tune_markers))
    markers = prow[field::tune_markers].get<std::vector<std::string>>();
  markers.insert(markers.end(), m.markers.begin(), m.markers.end());
  prow[field::markers] = markers;
  prow[field::noise] = m.noise;
  prow[field::stop_reason] = m.stop_reason;
  prow[field::converged] = m.converged;
  prow[field::throttled_discarded] = m.throttled_discarded;
  if (m.power_capped > 0) prow[field::power_capped_samples] = m.power_capped;
  prow[field::repeat] = m.repeat;
  prow[field::launches_per_sample] = m.launches_per_sample;
  prow[field::l2_method] = m.l2_method;
  prow[field::sample_method] = m.sample_method;
  prow[field::timer_resolution_us] = m.timer_resolution_us;
  prow[field::regime] = m.regime;
  if (m.regime_discarded > 0) prow[field::regime_discarded] = m.regime_discarded;
  if (m.settle_s > 0) prow[field::settle_s] = m.settle_s;
  if (!m.settled) prow[field::settled] = false;
  prow[field::clock_known] = m.clock.known;
  if (m.clock.known) {
    prow[field::sm_clock_mean_mhz] = m.clock.sm_mean_mhz;
    prow[field::sm_clock_min_mhz] = m.clock.sm_min_mhz;
    prow[field::sm_clock_max_mhz] = m.clock.sm_max_mhz;
    if (m.clock.power_mean_w > 0) prow[field::power_w] = m.clock.power_mean_w;
    if (m.clock.power_limit_w > 0) prow[field::power_limit_w] = m.clock.power_limit_w;
    prow[field::clock_reasons] = m.clock.reasons;
  }
  prow[field::wall_s] = m.wall_s;
  if (!m.note.empty()) prow[field::note] = m.note;
  if (m.ok && m.latency_ms > 0) {
    prow[field::latency_ms] = m.latency_ms;
    prow[field::samples_ms] = m.samples_ms;
    prow.erase(field::error);
    prow.erase(field::failure);
    if (!m.quantile_ms.empty()) prow[field::quantiles_ms] = m.quantile_ms;
    const double s = m.latency_ms * 1e-3;
    if (flops > 0) prow[field::tflops] = flops / s / 1e12;
    if (bytes > 0) prow[field::gbps] = bytes / s / 1e9;
  } else {
    prow.erase(field::latency_ms);
    prow.erase(field::samples_ms);
    prow[field::error] = m.error;
    prow[field::failure] = backends::to_string(m.failure);
  }
}

// The fields every case row starts with: the case's identity (docs/run-log.md).
json case_row_head(const OpInfo& info, const Case& c) {
  json row = {{field::type, core::row_type::case_row},
              {field::op, c.op},
              {field::dtype, std::string(to_string(c.dtype))},
              {field::shape, c.size_detail()},
              {field::dims, c.shape},
              {field::node, c.node_id()},
              {field::family, info.family},
              {field::markers, json::array()}};
  if (!c.params.empty()) row[field::params] = c.params;
  return row;
}

// The last phase of a case: the row-level fields from the first baseline and the first candidate,
// the speedup, and the status.
void summarize_row(json& row, const json& prows, bool any_fail, const std::string& first_error) {
  const json* base = nullptr;
  const json* cand = nullptr;
  for (const auto& prow : prows) {
    if (prow[field::role] == core::role::baseline && base == nullptr) base = &prow;
    if (prow[field::role] == core::role::candidate && cand == nullptr) cand = &prow;
  }
  const json* main = cand != nullptr ? cand : base;
  if (base != nullptr && base->contains(field::latency_ms))
    row[field::latency_base_ms] = (*base)[field::latency_ms];
  if (main != nullptr && main->contains(field::latency_ms)) {
    row[field::latency_ms] = (*main)[field::latency_ms];
    if (main->contains(field::tflops)) row[field::tflops] = (*main)[field::tflops];
    if (main->contains(field::gbps)) row[field::gbps] = (*main)[field::gbps];
    if (main->contains(field::noise)) row[field::noise] = (*main)[field::noise];
  }
  row[field::accuracy] =
      cand != nullptr && cand->contains(field::accuracy) ? (*cand)[field::accuracy] : json(nullptr);
  const bool accurate =
      cand == nullptr || !cand->contains(field::accuracy) || (*cand)[field::accuracy].get<bool>();
  if (cand != nullptr && base != nullptr && accurate && cand->contains(field::latency_ms) &&
      base->contains(field::latency_ms))
    row[field::speedup] =
        (*base)[field::latency_ms].get<double>() / (*cand)[field::latency_ms].get<double>();
  else
    row[field::speedup] = nullptr;
  if (!accurate) {
    row[field::status] = core::status::failed;
    row[field::error] =
        "accuracy check failed: " + (*cand)[field::accuracy_detail].get<std::string>();
  } else if (any_fail) {
    row[field::status] = core::status::failed;
    row[field::error] = first_error;
  } else {
    row[field::status] = core::status::ok;
  }
}

}  // namespace

CaseRunner::CaseRunner(const backends::Backend& backend, int device_index, std::uint64_t seed,
                       const core::Knobs& knobs, std::string timer,
                       const tune::Settings& tune_settings)
    : backend_(backend), knobs_(knobs), timer_(std::move(timer)) {
  device_ = backends::open_device(backend_, device_index, seed);
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
  tune::Selection s = active_tuner().select(key, pi.space, time_config);
  if (broken) throw DeviceBroken(broken->error, broken->failure);
  prow[field::config] = s.config.str();
  prow[field::tune] = {{tune_field::source, s.source},
                       {tune_field::tried, s.tried},
                       {tune_field::rejected, s.rejected},
                       {tune_field::sweep_s, s.sweep_s},
                       {tune_field::key, key.key}};
  if (!s.note.empty()) prow[field::tune][field::note] = s.note;
  if (!s.markers.empty()) {
    prow[field::markers] = s.markers;
    prow[field::tune_markers] = s.markers;
  }
  for (auto& wmsg : active_tuner().take_warnings()) warnings_.push_back(wmsg);
  // Prepare the winner (a failure here is a config that failed at launch: evict and retune).
  try {
    w.prepare(p, s.config);
  } catch (const ConfigRejected& e) {
    tune::Selection r =
        active_tuner().on_launch_failure(key, pi.space, s.config, "tune", time_config);
    prow[field::config] = r.config.str();
    prow[field::tune][tune_field::evicted] = s.config.str();
    prow[field::tune][tune_field::source] = r.source;
    if (!r.note.empty()) prow[field::tune][field::note] = r.note;
    if (!r.markers.empty()) {
      prow[field::markers] = r.markers;
      prow[field::tune_markers] = r.markers;
      warnings_.push_back(r.note);
    }
    w.prepare(p, r.config);
    return r.config;
  }
  return s.config;
}

json CaseRunner::profile_case(const Op& op, const Case& c, int launches) {
  const OpInfo info = op.info();
  json row = case_row_head(info, c);
  row[field::profile] = true;
  if (!fatal_.empty()) {
    row[field::status] = core::status::skipped;
    row[field::reason] = "not run: the device context is unusable after " + fatal_;
    return row;
  }
  if (auto reason = op.skip_reason(c, *device_)) {
    row[field::status] = core::status::skipped;
    row[field::reason] = *reason;
    return row;
  }
  json prows = json::array();
  try {
    auto w = op.setup(*device_, c);
    const auto providers = w->providers();
    for (std::size_t p = 0; p < providers.size(); ++p) {
      const auto& pi = providers[p];
      json prow = {{field::name, pi.name}, {field::role, role_name(pi.role)}};
      if (pi.role == Role::candidate && pi.space.tunable()) {
        (void)choose_config(info, c, *w, p, pi, prow);
      } else {
        w->prepare(p, pi.space.default_config);
        if (!pi.space.default_config.empty()) prow[field::config] = pi.space.default_config.str();
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
      prows[p][field::range] = range;
      prows[p][field::launches] = launches;
    }
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (f == backends::Failure::fatal_on_device || f == backends::Failure::capture_poisoned)
      fatal_ = c.node_id();
    row[field::providers] = prows;
    row[field::status] = core::status::failed;
    row[field::error] = std::string(e.what()) + " [" + backends::to_string(f) + "]";
    return row;
  } catch (const CaseSkipped& e) {
    row[field::status] = core::status::skipped;
    row[field::reason] = e.what();
    return row;
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    row[field::providers] = prows;
    row[field::status] = core::status::failed;
    row[field::error] = std::string(e.what()) + " [" + backends::to_string(e.failure) + "]";
    return row;
  } catch (const std::exception& e) {
    row[field::providers] = prows;
    row[field::status] = core::status::failed;
    row[field::error] = e.what();
    return row;
  }
  row[field::providers] = prows;
  row[field::status] = core::status::ok;
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

// The work of one case between run_case's phases.
struct CaseRunner::CaseWork {
  std::unique_ptr<Workload> w;
  std::vector<ProviderInfo> providers;
  json prows = json::array();  // the provider objects, one per provider
  std::vector<timing::Measurement> measured;
  bool any_fail = false;
  std::string first_error;  // "<provider>: <error>" of the first provider that failed
};

// Phase 1: whether the case runs at all. Skips it after a fatal device error, for a shape whose
// sizes do not fit, on a skip guard no compat rule lifts, and when it needs more memory than the
// device has free.
bool CaseRunner::admit(const Op& op, const Case& c, json& row) {
  auto skip = [&](const std::string& reason) {
    row[field::status] = core::status::skipped;
    row[field::reason] = reason;
    return false;
  };
  if (!fatal_.empty()) return skip("not run: the device context is unusable after " + fatal_);
  // A shape whose sizes do not fit (caliber/size.hpp) is skipped with its real size, before the
  // op's guards see a wrapped count.
  double need = 0;
  try {
    (void)count_of(c.shape);
    need = static_cast<double>(op.bytes_needed(c));
  } catch (const SizeOverflow& e) {
    return skip(std::string(c.op) + ": " + e.what());
  }
  // Skip guards, and the backend's compat rules that may lift exactly one (op, reason).
  if (auto reason = op.skip_reason(c, *device_)) {
    bool lifted = false;
    for (const auto& rule : backend_.compat_rules())
      if (rule.op == c.op && rule.reason == *reason) lifted = true;
    if (!lifted) return skip(*reason);
    add_markers(row, {core::markers::compat_lifted});
  }
  const double have = static_cast<double>(device_->free_bytes());
  if (need > 0.9 * have)
    return skip("needs " + core::gib(need, 2) + ", device has " + core::gib(have, 2) + " free");
  return true;
}

// Phase 2: set up the workload, prepare every provider (handles, plans, workspaces, tuned configs)
// outside any timing, then the correctness gate: every candidate against the reference, before
// anything is timed.
bool CaseRunner::prepare_and_check(const Op& op, const OpInfo& info, const Case& c, CaseWork& work,
                                   json& row) {
  auto fail = [&](const std::string& msg) {
    row[field::providers] = work.prows;
    row[field::status] = core::status::failed;
    row[field::error] = msg;
    return false;
  };
  try {
    work.w = op.setup(*device_, c);
    work.providers = work.w->providers();
    Workload& w = *work.w;
    for (std::size_t p = 0; p < work.providers.size(); ++p) {
      const auto& pi = work.providers[p];
      json prow = {{field::name, pi.name}, {field::role, role_name(pi.role)}};
      if (!pi.label.empty()) prow[field::label] = pi.label;
      if (pi.role == Role::candidate && pi.space.tunable()) {
        try {
          (void)choose_config(info, c, w, p, pi, prow);
        } catch (const ConfigRejected&) {
          // A replayed config that can neither run nor be evicted: the failed row must carry
          // compile_tune_no_evict, not only an error that reads like a broken kernel.
          if (prow.contains(field::markers))
            add_markers(row, prow[field::markers].get<std::vector<std::string>>());
          work.prows.push_back(std::move(prow));
          throw;
        }
      } else {
        w.prepare(p, pi.space.default_config);
        if (!pi.space.default_config.empty()) prow[field::config] = pi.space.default_config.str();
      }
      work.prows.push_back(std::move(prow));
    }
    for (std::size_t p = 0; p < work.providers.size(); ++p) {
      if (work.providers[p].role != Role::candidate) continue;
      Accuracy a = w.check(p);
      work.prows[p][field::accuracy] = a.passed;
      work.prows[p][field::accuracy_detail] = a.detail;
      work.prows[p][field::rel_err] = a.rel_err;
      work.prows[p][field::max_abs_err] = a.max_abs_err;
      // The check may have re-prepared nothing, but it did launch: keep the tuned config prepared.
    }
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    return fail(std::string(e.what()) + " [" + backends::to_string(e.failure) + "]");
  } catch (const CaseSkipped& e) {
    row[field::status] = core::status::skipped;
    row[field::reason] = e.what();
    return false;
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (f == backends::Failure::fatal_on_device || f == backends::Failure::capture_poisoned)
      fatal_ = c.node_id();
    return fail(std::string(e.what()) + " [" + backends::to_string(f) + "]");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return true;
}

// Phase 3: time every provider (a candidate that failed its gate is not timed); then, for one
// regime per row, re-time by the direct timer what the graph timer timed when another provider
// fell back to the direct timer.
void CaseRunner::time_providers(const OpInfo& info, const Case& c, CaseWork& work, json& row) {
  const double flops = work.w->flops();
  const double bytes = work.w->bytes();
  work.measured.assign(work.providers.size(), timing::Measurement{});
  auto time_provider = [&](std::size_t p, const timing::TimingOptions& opts) {
    timing::Measurement m;
    try {
      m = timing::measure(
          *device_, backend_, [&] { work.w->launch(p); }, opts);
    } catch (const std::exception& e) {
      m.ok = false;
      m.error = e.what();
    }
    write_timing(work.prows[p], m, flops, bytes);
    return m;
  };
  // Records a failed measurement; true when the process must time nothing more.
  auto failed = [&](std::size_t p, const timing::Measurement& m) {
    work.any_fail = true;
    if (work.first_error.empty()) work.first_error = work.providers[p].name + ": " + m.error;
    if (!timing::process_unusable(m)) return false;
    fatal_ = c.node_id();
    return true;
  };
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    json& prow = work.prows[p];
    if (prow.contains(field::accuracy) && !prow[field::accuracy].get<bool>()) continue;
    const timing::Measurement m = time_provider(p, timing_options(info, false));
    work.measured[p] = m;
    add_markers(row, m.markers);
    if (m.ok && m.latency_ms > 0) {
      if (m.timer == "direct" && timer_ == "graph") row[field::timer] = "direct";
    } else if (failed(p, m)) {
      break;  // time nothing more in this process
    }
  }
  // One regime per row (docs/timing.md): when a provider's capture was refused and it fell back to
  // the direct timer, the providers timed by the graph timer are timed again by the direct timer,
  // so that the speedup compares like with like. Their graph figures stay as extra fields.
  if (!fatal_.empty() || row[field::timer] != "direct" || timer_ != "graph") return;
  timing::TimingOptions direct = timing_options(info, false);
  direct.timer = timing::TimerKind::direct;
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    if (!work.measured[p].ok || work.measured[p].timer != "graph") continue;
    json& prow = work.prows[p];
    const json graph_latency = prow.value(field::latency_ms, json(nullptr));
    const timing::Measurement m = time_provider(p, direct);
    prow[field::graph_latency_ms] = graph_latency;
    prow[field::graph_launches_per_sample] = work.measured[p].launches_per_sample;
    prow[field::note] =
        "timed by the direct timer too, since another provider of this case could "
        "not be captured (one regime per row); its graph figure is graph_latency_ms";
    add_markers(row, m.markers);
    if (!(m.ok && m.latency_ms > 0) && failed(p, m)) break;
  }
}

json CaseRunner::run_case(const Op& op, const Case& c) {
  const OpInfo info = op.info();
  json row = case_row_head(info, c);
  row[field::timer] = timer_;
  row[field::repeat] = knobs_.repeat;
  if (!admit(op, c, row)) return row;
  CaseWork work;
  if (!prepare_and_check(op, info, c, work, row)) return row;
  time_providers(info, c, work, row);
  row[field::providers] = work.prows;
  summarize_row(row, work.prows, work.any_fail, work.first_error);
  return row;
}

// ---- Paired A/B (docs/ab.md) ----

namespace {

// The blocks of one side folded into one measurement: every block's samples, the latency per the
// return mode over all of them, the clocks and counters summed; the timer, methods and regime of
// the first block (every block of a provider uses the same options).
timing::Measurement merge_blocks(const std::vector<timing::Measurement>& ms,
                                 const timing::TimingOptions& opt) {
  timing::Measurement m = ms.front();
  std::vector<double> all;
  m.markers.clear();
  m.throttled_discarded = m.power_capped = m.regime_discarded = m.total_samples = 0;
  m.wall_s = m.settle_s = 0;
  m.converged = true;
  double clock_sum = 0;
  int readings = 0;
  for (const auto& b : ms) {
    all.insert(all.end(), b.samples_ms.begin(), b.samples_ms.end());
    for (const auto& mk : b.markers)
      if (std::find(m.markers.begin(), m.markers.end(), mk) == m.markers.end())
        m.markers.push_back(mk);
    m.throttled_discarded += b.throttled_discarded;
    m.power_capped += b.power_capped;
    m.regime_discarded += b.regime_discarded;
    m.total_samples += b.total_samples;
    m.wall_s += b.wall_s;
    m.settle_s += b.settle_s;
    if (!b.converged && m.converged) {
      m.converged = false;
      m.stop_reason = b.stop_reason;
    }
    if (b.clock.known) {
      m.clock.known = true;
      clock_sum += b.clock.sm_mean_mhz * b.clock.readings;
      readings += b.clock.readings;
      m.clock.sm_min_mhz = std::min(m.clock.sm_min_mhz, b.clock.sm_min_mhz);
      m.clock.sm_max_mhz = std::max(m.clock.sm_max_mhz, b.clock.sm_max_mhz);
      for (const auto& r : b.clock.reasons)
        if (std::find(m.clock.reasons.begin(), m.clock.reasons.end(), r) == m.clock.reasons.end())
          m.clock.reasons.push_back(r);
    }
  }
  if (readings > 0) {
    m.clock.sm_mean_mhz = clock_sum / readings;
    m.clock.readings = readings;
  }
  // Later blocks skip the settle (the other side's block just ran the same work): the first
  // block's settle says whether the provider settled.
  m.settled = ms.front().settled;
  const core::ReturnMode mode =
      opt.return_mode == core::ReturnMode::all ? core::ReturnMode::median : opt.return_mode;
  m.latency_ms = core::reduce(all, mode);
  m.noise = core::median_rel_std_error(all);
  if (!opt.quantiles.empty()) m.quantile_ms = core::quantiles(all, opt.quantiles);
  m.samples_ms = std::move(all);
  m.call_medians_ms.clear();
  if (m.converged) m.stop_reason = "converged";
  return m;
}

}  // namespace

bool CaseRunner::record_timing(CaseWork& work, json& row, std::size_t p, const Case& c,
                               const timing::Measurement& m, double flops, double bytes) {
  write_timing(work.prows[p], m, flops, bytes);
  work.measured[p] = m;
  add_markers(row, m.markers);
  if (m.ok && m.latency_ms > 0) {
    if (m.timer == "direct" && timer_ == "graph") row[field::timer] = "direct";
    return true;
  }
  work.any_fail = true;
  if (work.first_error.empty()) work.first_error = work.providers[p].name + ": " + m.error;
  if (!timing::process_unusable(m)) return true;
  fatal_ = c.node_id();
  return false;
}

void CaseRunner::time_paired(const OpInfo& ia, const OpInfo& ib, const Case& c, CaseWork& wa,
                             CaseWork& wb, json& ra, json& rb, int blocks) {
  wa.measured.assign(wa.providers.size(), timing::Measurement{});
  wb.measured.assign(wb.providers.size(), timing::Measurement{});
  const double fa = wa.w->flops(), ba = wa.w->bytes(), fb = wb.w->flops(), bb = wb.w->bytes();
  auto gated_out = [](const json& prow) {
    return prow.contains(field::accuracy) && !prow[field::accuracy].get<bool>();
  };
  auto measure_one = [&](CaseWork& w, std::size_t p, const timing::TimingOptions& o) {
    try {
      return timing::measure(
          *device_, backend_, [&] { w.w->launch(p); }, o);
    } catch (const std::exception& e) {
      timing::Measurement m;
      m.ok = false;
      m.error = e.what();
      return m;
    }
  };
  // The stop rule of one block: 1/blocks of the run's time and samples; the noise target such
  // that `blocks` blocks together reach the run's. Only the provider's first block (A's) settles
  // the clocks (sustained regime); later blocks run right after the other side's block of the
  // same work, so they skip the settle, and after a side's first block also the warmup.
  auto block_options = [&](const OpInfo& info, bool first_of_side, bool first_overall) {
    timing::TimingOptions o = timing_options(info, false);
    o.stop.min_samples = std::max(2, (o.stop.min_samples + blocks - 1) / blocks);
    o.stop.min_time_s /= blocks;
    o.stop.max_noise *= std::sqrt(static_cast<double>(blocks));
    o.stop.timeout_s /= blocks;
    if (!first_of_side) o.stop.warmup_s = std::min(o.stop.warmup_s, 0.001);
    if (!first_overall) {
      o.regime.settle_window_s = 0.001;
      o.regime.settle_timeout_s = 0.0;
    }
    return o;
  };
  // Times provider pa of A and pb of B alternately; false when the process must stop timing.
  auto paired = [&](std::size_t pa, std::size_t pb) {
    std::vector<timing::Measurement> ma, mb;
    for (int j = 0; j < blocks; ++j) {
      for (int k = 0; k < 2; ++k) {
        const bool side_a = (j % 2 == 0) == (k == 0);  // ABBA: A B, B A, A B, ...
        auto& out = side_a ? ma : mb;
        const OpInfo& info = side_a ? ia : ib;
        timing::Measurement m =
            measure_one(side_a ? wa : wb, side_a ? pa : pb,
                        block_options(info, out.empty(), ma.empty() && mb.empty()));
        if (!(m.ok && m.latency_ms > 0)) {
          // The failing side's row carries the failure; the other keeps the blocks it has.
          const bool go_on = record_timing(side_a ? wa : wb, side_a ? ra : rb, side_a ? pa : pb, c,
                                           m, side_a ? fa : fb, side_a ? ba : bb);
          auto& other = side_a ? mb : ma;
          if (!other.empty() && go_on) {
            CaseWork& ow = side_a ? wb : wa;
            const std::size_t op = side_a ? pb : pa;
            (void)record_timing(ow, side_a ? rb : ra, op, c,
                                merge_blocks(other, block_options(side_a ? ib : ia, true, true)),
                                side_a ? fb : fa, side_a ? bb : ba);
          }
          return go_on;
        }
        out.push_back(std::move(m));
      }
    }
    for (int s = 0; s < 2; ++s) {
      const bool side_a = s == 0;
      const auto& ms = side_a ? ma : mb;
      CaseWork& w = side_a ? wa : wb;
      const std::size_t p = side_a ? pa : pb;
      if (!record_timing(w, side_a ? ra : rb, p, c,
                         merge_blocks(ms, block_options(side_a ? ia : ib, true, true)),
                         side_a ? fa : fb, side_a ? ba : bb))
        return false;
      json medians = json::array();
      for (const auto& m : ms) medians.push_back(core::median(m.samples_ms));
      w.prows[p]["block_medians_ms"] = std::move(medians);
      w.prows[p]["paired_blocks"] = blocks;
    }
    return true;
  };
  auto alone = [&](CaseWork& w, json& row, std::size_t p, const OpInfo& info, double f, double b) {
    return record_timing(w, row, p, c, measure_one(w, p, timing_options(info, false)), f, b);
  };
  std::vector<bool> b_done(wb.providers.size(), false);
  for (std::size_t pa = 0; pa < wa.providers.size() && fatal_.empty(); ++pa) {
    std::size_t pb = 0;
    while (pb < wb.providers.size() &&
           (b_done[pb] || wb.providers[pb].name != wa.providers[pa].name ||
            wb.providers[pb].role != wa.providers[pa].role))
      ++pb;
    const bool a_ok = !gated_out(wa.prows[pa]);
    const bool b_ok = pb < wb.providers.size() && !gated_out(wb.prows[pb]);
    if (pb < wb.providers.size()) b_done[pb] = true;
    if (a_ok && b_ok) {
      if (!paired(pa, pb)) break;
    } else if (a_ok) {
      if (!alone(wa, ra, pa, ia, fa, ba)) break;
    } else if (b_ok) {
      if (!alone(wb, rb, pb, ib, fb, bb)) break;
    }
  }
  for (std::size_t pb = 0; pb < wb.providers.size() && fatal_.empty(); ++pb)
    if (!b_done[pb] && !gated_out(wb.prows[pb]) && !alone(wb, rb, pb, ib, fb, bb)) break;
  // A direct-timer fallback is not re-timed here (docs/ab.md): a paired row keeps each
  // provider's own timer, which both sides share.
}

std::pair<json, json> CaseRunner::run_case_paired(const Op& a, const Op& b, const Case& c,
                                                  int blocks, tune::Tuner& tuner_b) {
  const OpInfo ia = a.info();
  const OpInfo ib = b.info();
  json ra = case_row_head(ia, c);
  json rb = case_row_head(ib, c);
  for (json* r : {&ra, &rb}) {
    (*r)[field::timer] = timer_;
    (*r)[field::repeat] = knobs_.repeat;
  }
  const bool in_a = admit(a, c, ra);
  const bool in_b = admit(b, c, rb);
  if (!in_a || !in_b) {
    // A case runs on both sides or on neither: a lone side has nothing to be paired with.
    json& ran = in_a ? ra : rb;
    const json& why = in_a ? rb : ra;
    ran[field::status] = core::status::skipped;
    ran[field::reason] = "paired A/B: the other side skipped it (" +
                         why.value(field::reason, std::string("skipped")) + ")";
    return {ra, rb};
  }
  // Both sides' workloads are resident at once.
  const double need =
      static_cast<double>(a.bytes_needed(c)) + static_cast<double>(b.bytes_needed(c));
  const double have = static_cast<double>(device_->free_bytes());
  if (need > 0.9 * have) {
    for (json* r : {&ra, &rb}) {
      (*r)[field::status] = core::status::skipped;
      (*r)[field::reason] = "paired A/B needs both sides' inputs resident: " + core::gib(need, 2) +
                            ", device has " + core::gib(have, 2) +
                            " free (caliber ab --isolate times each side in its own process)";
    }
    return {ra, rb};
  }
  CaseWork wa, wb;
  const bool ok_a = prepare_and_check(a, ia, c, wa, ra);
  side_tuner_ = &tuner_b;  // side B's configs from side B's cache
  bool ok_b = false;
  try {
    ok_b = prepare_and_check(b, ib, c, wb, rb);
  } catch (...) {
    side_tuner_ = nullptr;
    throw;
  }
  side_tuner_ = nullptr;
  if (ok_a && ok_b) {
    time_paired(ia, ib, c, wa, wb, ra, rb, blocks);
  } else if (ok_a) {
    time_providers(ia, c, wa, ra);
  } else if (ok_b) {
    time_providers(ib, c, wb, rb);
  }
  if (ok_a) {
    ra[field::providers] = wa.prows;
    summarize_row(ra, wa.prows, wa.any_fail, wa.first_error);
  }
  if (ok_b) {
    rb[field::providers] = wb.prows;
    summarize_row(rb, wb.prows, wb.any_fail, wb.first_error);
  }
  return {ra, rb};
}

}  // namespace caliber::run
