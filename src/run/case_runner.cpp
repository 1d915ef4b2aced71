#include "run/case_runner.hpp"

#include "run/placement.hpp"

#include "backends/registry.hpp"
#include "core/format.hpp"
#include "core/knobs.hpp"
#include "core/runlog.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <tuple>

namespace caliber::run {

using core::CaseRow;
using core::ProviderRow;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void add_markers(CaseRow& row, const std::vector<std::string>& ms) {
  if (!row.markers) row.markers.emplace();
  core::add_markers(*row.markers, ms);
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
void write_timing(ProviderRow& prow, const timing::Measurement& m, double flops, double bytes) {
  prow.timer = m.timer;
  // Markers the tuner set on this provider (compile_tune_no_evict) stay; a re-timing replaces the
  // timing ones.
  std::vector<std::string> markers = prow.tune_markers.value_or(std::vector<std::string>{});
  markers.insert(markers.end(), m.markers.begin(), m.markers.end());
  prow.markers = markers;
  prow.noise = m.noise;
  prow.stop_reason = m.stop_reason;
  prow.converged = m.converged;
  prow.throttled_discarded = m.throttled_discarded;
  if (m.power_capped > 0) prow.power_capped_samples = m.power_capped;
  prow.repeat = m.repeat;
  prow.launches_per_sample = m.launches_per_sample;
  prow.l2_method = m.l2_method;
  prow.sample_method = m.sample_method;
  prow.timer_resolution_us = m.timer_resolution_us;
  prow.regime = m.regime;
  if (m.regime_discarded > 0) prow.regime_discarded = m.regime_discarded;
  if (m.settle_s > 0) prow.settle_s = m.settle_s;
  if (!m.settled) prow.settled = false;
  if (!m.settle.empty()) prow.settle = m.settle;
  prow.clock_known = m.clock.known;
  if (m.clock.known) {
    prow.sm_clock_mean_mhz = m.clock.sm_mean_mhz;
    prow.sm_clock_min_mhz = m.clock.sm_min_mhz;
    prow.sm_clock_max_mhz = m.clock.sm_max_mhz;
    if (m.clock.power_mean_w > 0) prow.power_w = m.clock.power_mean_w;
    if (m.clock.power_limit_w > 0) prow.power_limit_w = m.clock.power_limit_w;
    prow.clock_reasons = m.clock.reasons;
  }
  prow.wall_s = m.wall_s;
  if (!m.note.empty()) prow.note = m.note;
  if (m.ok && m.latency_ms > 0) {
    prow.latency_ms = m.latency_ms;
    prow.samples_ms = m.samples_ms;
    prow.error.reset();
    prow.failure.reset();
    if (!m.quantile_ms.empty()) prow.quantiles_ms = m.quantile_ms;
    const double s = m.latency_ms * 1e-3;
    if (flops > 0) prow.tflops = flops / s / 1e12;
    if (bytes > 0) prow.gbps = bytes / s / 1e9;
  } else {
    prow.latency_ms.reset();
    prow.samples_ms.reset();
    prow.error = m.error;
    prow.failure = backends::to_string(m.failure);
  }
}

// The fields every case row starts with: the case's identity (docs/run-log.md).
CaseRow case_row_head(const OpInfo& info, const Case& c) {
  CaseRow row;
  row.op = c.op;
  row.dtype = std::string(to_string(c.dtype));
  row.shape = c.size_detail();
  row.dims = c.shape;
  row.node = c.node_id();
  row.family = info.family;
  row.markers.emplace();
  if (!c.params.empty()) row.params = c.params;
  return row;
}

// A provider's row before it is prepared: its name, role and label.
ProviderRow provider_head(const ProviderInfo& pi) {
  ProviderRow prow;
  prow.name = pi.name;
  prow.role = role_name(pi.role);
  if (!pi.label.empty()) prow.label = pi.label;
  return prow;
}

// The row-level latency fields: those of the first candidate (the first baseline when there is
// none), and the first baseline's latency.
void copy_main_latency(CaseRow& row, const ProviderRow* base, const ProviderRow* cand) {
  const ProviderRow* main = cand != nullptr ? cand : base;
  if (base != nullptr && base->latency_ms) row.latency_base_ms = base->latency_ms;
  if (main != nullptr && main->latency_ms) {
    row.latency_ms = main->latency_ms;
    if (main->tflops) row.tflops = main->tflops;
    if (main->gbps) row.gbps = main->gbps;
    if (main->noise) row.noise = main->noise;
  }
}

// The last phase of a case: the row-level fields from the first baseline and the first candidate,
// the speedup, and the status.
void summarize_row(CaseRow& row, const std::vector<ProviderRow>& prows, bool any_fail,
                   const std::string& first_error) {
  const ProviderRow* base = nullptr;
  const ProviderRow* cand = nullptr;
  for (const auto& prow : prows) {
    if (prow.role == core::role::baseline && base == nullptr) base = &prow;
    if (prow.role == core::role::candidate && cand == nullptr) cand = &prow;
  }
  copy_main_latency(row, base, cand);
  row.accuracy.emplace(cand != nullptr ? cand->accuracy : std::nullopt);
  const bool accurate = cand == nullptr || !cand->accuracy || *cand->accuracy;
  if (cand != nullptr && base != nullptr && accurate && cand->latency_ms && base->latency_ms)
    row.speedup.emplace(*base->latency_ms / *cand->latency_ms);
  else
    row.speedup.emplace(std::nullopt);
  if (!accurate) {
    row.status = core::status::failed;
    row.error = "accuracy check failed: " + cand->accuracy_detail.value_or("");
  } else if (any_fail) {
    row.status = core::status::failed;
    row.error = first_error;
  } else {
    row.status = core::status::ok;
  }
}

// A row that ends with a status and why: failed with `error`, skipped with `reason`.
void end_failed(CaseRow& row, std::vector<ProviderRow> prows, const std::string& error) {
  row.providers = std::move(prows);
  row.status = core::status::failed;
  row.error = error;
}
void end_skipped(CaseRow& row, const std::string& reason) {
  row.status = core::status::skipped;
  row.reason = reason;
}

// Laps of a steady clock: a case's phases.
class PhaseClock {
 public:
  double lap() {
    const auto t = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t - last_).count();
    last_ = t;
    return s;
  }
  [[nodiscard]] double total() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

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
  if (knobs_.settle_carry) o.carry = carry_.get();
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
                                 const ProviderInfo& pi, ProviderRow& prow) {
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
  // A provider that sweeps its own configs (a Python suite's Triton autotuner) is asked to, under
  // the same cache rules; the others are timed config by config here.
  auto* self = dynamic_cast<tune::SelfTuning*>(&w);
  tune::Selection s = self != nullptr && self->sweeps_itself(p)
                          ? active_tuner().select_external(
                                key, pi.space, [&] { return self->prepare_and_sweep(p); })
                          : active_tuner().select(key, pi.space, time_config);
  if (broken) throw DeviceBroken(broken->error, broken->failure);
  prow.config = s.config.str();
  core::TuneChoice& tune = prow.tune.emplace();
  tune.source = s.source;
  tune.tried = s.tried;
  tune.rejected = s.rejected;
  tune.sweep_s = s.sweep_s;
  tune.key = key.key;
  if (!s.swept_by.empty()) tune.swept_by = s.swept_by;
  if (!s.note.empty()) tune.note = s.note;
  if (!s.markers.empty()) {
    prow.markers = s.markers;
    prow.tune_markers = s.markers;
  }
  for (auto& wmsg : active_tuner().take_warnings()) warnings_.push_back(wmsg);
  // Prepare the winner (a failure here is a config that failed at launch: evict and retune).
  try {
    w.prepare(p, s.config);
  } catch (const ConfigRejected& e) {
    tune::Selection r =
        active_tuner().on_launch_failure(key, pi.space, s.config, "tune", time_config);
    prow.config = r.config.str();
    tune.evicted = s.config.str();
    tune.source = r.source;
    if (!r.note.empty()) tune.note = r.note;
    if (!r.markers.empty()) {
      prow.markers = r.markers;
      prow.tune_markers = r.markers;
      warnings_.push_back(r.note);
    }
    w.prepare(p, r.config);
    return r.config;
  }
  return s.config;
}

// A profile run's preparation: every provider prepared as a run would (the same configs).
void CaseRunner::profile_prepare(const OpInfo& info, const Case& c, Workload& w,
                                 const std::vector<ProviderInfo>& providers,
                                 std::vector<ProviderRow>& prows) {
  for (std::size_t p = 0; p < providers.size(); ++p) {
    const auto& pi = providers[p];
    ProviderRow prow;
    prow.name = pi.name;
    prow.role = role_name(pi.role);
    if (pi.role == Role::candidate && pi.space.tunable()) {
      (void)choose_config(info, c, w, p, pi, prow);
    } else {
      w.prepare(p, pi.space.default_config);
      if (!pi.space.default_config.empty()) prow.config = pi.space.default_config.str();
    }
    prows.push_back(std::move(prow));
  }
}

// A profile run's launches: each provider `launches` times inside a range named
// <node>/<provider>, then a synchronize.
void CaseRunner::profile_launch(const Case& c, Workload& w,
                                const std::vector<ProviderInfo>& providers, int launches,
                                std::vector<ProviderRow>& prows) {
  device_->synchronize();
  for (std::size_t p = 0; p < providers.size(); ++p) {
    const std::string range = c.node_id() + "/" + providers[p].name;
    device_->range_push(range);
    try {
      for (int i = 0; i < launches; ++i) w.launch(p);
      device_->synchronize();
    } catch (...) {
      device_->range_pop();
      throw;
    }
    device_->range_pop();
    prows[p].range = range;
    prows[p].launches = launches;
  }
}

CaseRow CaseRunner::profile_case(const Op& op, const Case& c, int launches) {
  const OpInfo info = op.info();
  CaseRow row = case_row_head(info, c);
  row.profile = true;
  if (!fatal_.empty()) {
    end_skipped(row, "not run: the device context is unusable after " + fatal_);
    return row;
  }
  if (auto reason = op.skip_reason(c, *device_)) {
    end_skipped(row, *reason);
    return row;
  }
  std::vector<ProviderRow> prows;
  try {
    auto w = op.setup(*device_, c);
    const auto providers = w->providers();
    profile_prepare(info, c, *w, providers, prows);
    profile_launch(c, *w, providers, launches, prows);
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (backends::leaves_process_unusable(f)) fatal_ = c.node_id();
    end_failed(row, std::move(prows), std::string(e.what()) + " [" + backends::to_string(f) + "]");
    return row;
  } catch (const CaseSkipped& e) {
    end_skipped(row, e.what());
    return row;
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    end_failed(row, std::move(prows),
               std::string(e.what()) + " [" + backends::to_string(e.failure) + "]");
    return row;
  } catch (const std::exception& e) {
    end_failed(row, std::move(prows), e.what());
    return row;
  }
  row.providers = std::move(prows);
  row.status = core::status::ok;
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
      ProviderRow scratch;
      (void)choose_config(info, c, *w, p, providers[p], scratch);
    }
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (backends::leaves_process_unusable(f)) fatal_ = c.node_id();
    warnings_.push_back("tuning " + c.node_id() + " failed: " + e.what());
  } catch (const std::exception& e) {
    warnings_.push_back("tuning " + c.node_id() + " failed: " + e.what());
  }
}

// The work of one case between run_case's phases.
struct CaseRunner::CaseWork {
  std::unique_ptr<Workload> w;
  std::vector<ProviderInfo> providers;
  std::vector<ProviderRow> prows;  // the provider objects, one per provider
  std::vector<Config> configs;     // the config each provider was prepared with
  std::vector<timing::Measurement> measured;
  bool any_fail = false;
  std::string first_error;  // "<provider>: <error>" of the first provider that failed
  // Seconds spent per phase (the row's inputs_s, prepare_s, ...).
  double inputs_s = 0, prepare_s = 0, check_s = 0, settle_s = 0, timed_s = 0;
  void count(const timing::Measurement& m) {
    settle_s += m.settle_s;
    timed_s += std::max(0.0, m.wall_s - m.settle_s);
  }
};

// Where the case's wall time went (docs/run-log.md): the phases CaseWork counted, the rest
// (admission, the row's own making) as other_s; wall_s is their sum.
void CaseRunner::write_phases(CaseRow& row, const CaseWork& work, double wall_s) {
  core::Phases& p = row.phases;
  p.inputs_s = work.inputs_s;
  p.prepare_s = work.prepare_s;
  p.check_s = work.check_s;
  p.settle_s = work.settle_s;
  p.timing_s = work.timed_s;
  const double known = work.inputs_s + work.prepare_s + work.check_s + work.settle_s + work.timed_s;
  p.other_s = std::max(0.0, wall_s - known);
  p.wall_s = std::max(wall_s, known);
}

// Phase 1: whether the case runs at all. Skips it after a fatal device error, for a shape whose
// sizes do not fit, on a skip guard no compat rule lifts, and when it needs more memory than the
// device has free.
bool CaseRunner::admit(const Op& op, const Case& c, CaseRow& row) {
  auto skip = [&](const std::string& reason) {
    end_skipped(row, reason);
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

// Phase 2a: every provider prepared (handles, plans, workspaces, tuned configs) outside any
// timing, its row started.
void CaseRunner::prepare_providers(const OpInfo& info, const Case& c, CaseWork& work,
                                   CaseRow& row) {
  Workload& w = *work.w;
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    const auto& pi = work.providers[p];
    ProviderRow prow = provider_head(pi);
    if (pi.role == Role::candidate && pi.space.tunable()) {
      try {
        work.configs.push_back(choose_config(info, c, w, p, pi, prow));
      } catch (const ConfigRejected&) {
        // A replayed config that can neither run nor be evicted: the failed row must carry
        // compile_tune_no_evict, not only an error that reads like a broken kernel.
        if (prow.markers) add_markers(row, *prow.markers);
        work.prows.push_back(std::move(prow));
        throw;
      }
    } else {
      w.prepare(p, pi.space.default_config);
      work.configs.push_back(pi.space.default_config);
      if (!pi.space.default_config.empty()) prow.config = pi.space.default_config.str();
    }
    work.prows.push_back(std::move(prow));
  }
}

// Phase 2b: the correctness gate, every candidate against the reference, before anything is
// timed.
void CaseRunner::check_candidates(CaseWork& work) {
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    if (work.providers[p].role != Role::candidate) continue;
    Accuracy a = work.w->check(p);
    ProviderRow& prow = work.prows[p];
    prow.accuracy = a.passed;
    prow.accuracy_detail = a.detail;
    prow.rel_err = a.rel_err;
    prow.max_abs_err = a.max_abs_err;
    if (!a.method.empty()) prow.check_method = a.method;
    if (a.total > 0) {
      prow.check_coverage =
          std::min(1.0, static_cast<double>(a.checked) / static_cast<double>(a.total));
      prow.check_elements = a.checked;
    }
    // The check may have re-prepared nothing, but it did launch: keep the tuned config prepared.
  }
}

// Phase 2: set up the workload, prepare every provider, then the correctness gate. A failure
// ends the row (failed, or skipped when the op says so).
bool CaseRunner::prepare_and_check(const Op& op, const OpInfo& info, const Case& c, CaseWork& work,
                                   CaseRow& row, DeviceContext* ctx) {
  try {
    PhaseClock clock;
    work.w = op.setup(ctx != nullptr ? *ctx : *device_, c);
    work.inputs_s = clock.lap();
    work.providers = work.w->providers();
    prepare_providers(info, c, work, row);
    work.prepare_s = clock.lap();
    check_candidates(work);
    work.check_s = clock.lap();
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    end_failed(row, work.prows,
               std::string(e.what()) + " [" + backends::to_string(e.failure) + "]");
    return false;
  } catch (const CaseSkipped& e) {
    end_skipped(row, e.what());
    return false;
  } catch (const NativeError& e) {
    auto f = backend_.classify(e.code());
    if (backends::leaves_process_unusable(f)) fatal_ = c.node_id();
    end_failed(row, work.prows, std::string(e.what()) + " [" + backends::to_string(f) + "]");
    return false;
  } catch (const std::exception& e) {
    end_failed(row, work.prows, e.what());
    return false;
  }
  return true;
}

// Phase 3: time every provider (a candidate that failed its gate is not timed); then, for one
// regime per row, re-time by the direct timer what the graph timer timed when another provider
// fell back to the direct timer.
void CaseRunner::time_providers(const OpInfo& info, const Case& c, CaseWork& work, CaseRow& row) {
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
    work.count(m);
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
    const ProviderRow& prow = work.prows[p];
    if (prow.accuracy && !*prow.accuracy) continue;
    const timing::Measurement m = time_provider(p, timing_options(info, false));
    work.measured[p] = m;
    add_markers(row, m.markers);
    if (m.ok && m.latency_ms > 0) {
      if (m.timer == "direct" && timer_ == "graph") row.timer = "direct";
    } else if (failed(p, m)) {
      break;  // time nothing more in this process
    }
  }
  // One regime per row (docs/timing.md): when a provider's capture was refused and it fell back to
  // the direct timer, the providers timed by the graph timer are timed again by the direct timer,
  // so that the speedup compares like with like. Their graph figures stay as extra fields.
  if (!fatal_.empty() || row.timer != "direct" || timer_ != "graph") return;
  timing::TimingOptions direct = timing_options(info, false);
  direct.timer = timing::TimerKind::direct;
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    if (!work.measured[p].ok || work.measured[p].timer != "graph") continue;
    ProviderRow& prow = work.prows[p];
    const std::optional<double> graph_latency = prow.latency_ms;
    const timing::Measurement m = time_provider(p, direct);
    prow.graph_latency_ms.emplace(graph_latency);
    prow.graph_launches_per_sample = work.measured[p].launches_per_sample;
    prow.note =
        "timed by the direct timer too, since another provider of this case could "
        "not be captured (one regime per row); its graph figure is graph_latency_ms";
    add_markers(row, m.markers);
    if (!(m.ok && m.latency_ms > 0) && failed(p, m)) break;
  }
}

CaseRow CaseRunner::run_case(const Op& op, const Case& c) {
  const PhaseClock clock;
  const OpInfo info = op.info();
  CaseRow row = case_row_head(info, c);
  row.timer = timer_;
  row.repeat = knobs_.repeat;
  CaseWork work;
  if (admit(op, c, row) && prepare_and_check(op, info, c, work, row)) {
    time_providers(info, c, work, row);
    row.providers = work.prows;
    summarize_row(row, work.prows, work.any_fail, work.first_error);
  }
  write_phases(row, work, clock.total());
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

bool CaseRunner::record_timing(CaseWork& work, CaseRow& row, std::size_t p, const Case& c,
                               const timing::Measurement& m, double flops, double bytes) {
  write_timing(work.prows[p], m, flops, bytes);
  work.count(m);
  work.measured[p] = m;
  add_markers(row, m.markers);
  if (m.ok && m.latency_ms > 0) {
    if (m.timer == "direct" && timer_ == "graph") row.timer = "direct";
    return true;
  }
  work.any_fail = true;
  if (work.first_error.empty()) work.first_error = work.providers[p].name + ": " + m.error;
  if (!timing::process_unusable(m)) return true;
  fatal_ = c.node_id();
  return false;
}

// One side of a paired case: its op's info, work and row, and the work's flops and bytes.
struct CaseRunner::PairSide {
  const OpInfo& info;
  CaseWork& work;
  CaseRow& row;
  double flops = 0, bytes = 0;
  bool record(CaseRunner& r, std::size_t p, const Case& c, const timing::Measurement& m) {
    return r.record_timing(work, row, p, c, m, flops, bytes);
  }
};

// One measurement of provider p of a side; an exception is a failed measurement.
timing::Measurement CaseRunner::measure_side(PairSide& s, std::size_t p,
                                             const timing::TimingOptions& o) {
  try {
    return timing::measure(
        *device_, backend_, [&] { s.work.w->launch(p); }, o);
  } catch (const std::exception& e) {
    timing::Measurement m;
    m.ok = false;
    m.error = e.what();
    return m;
  }
}

// The stop rule of one block: 1/blocks of the run's time and samples; the noise target such that
// `blocks` blocks together reach the run's. Only the provider's first block (A's) settles the
// clocks (sustained regime); later blocks run right after the other side's block of the same
// work, so they skip the settle, and after a side's first block also the warmup.
timing::TimingOptions CaseRunner::block_options(const OpInfo& info, int blocks, bool first_of_side,
                                                bool first_overall) const {
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
}

namespace {
// `blocks` medians of consecutive runs of xs (time order), for compare's block log ratios.
std::vector<double> chunk_medians(const std::vector<double>& xs, int blocks) {
  std::vector<double> out;
  const std::size_t n = xs.size();
  const auto nb = static_cast<std::size_t>(blocks);
  if (n < nb) return out;
  for (std::size_t j = 0; j < nb; ++j) {
    const std::vector<double> part(xs.begin() + static_cast<std::ptrdiff_t>(j * n / nb),
                                   xs.begin() + static_cast<std::ptrdiff_t>((j + 1) * n / nb));
    out.push_back(core::median(part));
  }
  return out;
}
}  // namespace

// One pair of providers timed in one placement phase: each side's measurement (a failed one
// where the side failed), its block medians when the pair was timed to the end, and how.
struct CaseRunner::PairTiming {
  timing::Measurement m[2];
  bool has[2] = {false, false};  // false: the side got no measurement (the other failed first)
  std::vector<double> medians[2];
  std::string method;  // interleaved (one graph) | blocks (ABBA)
  [[nodiscard]] bool ok() const {
    for (int s = 0; s < 2; ++s)
      if (!has[s] || !m[s].ok || !(m[s].latency_ms > 0)) return false;
    return true;
  }
  [[nodiscard]] bool unusable() const {
    for (int s = 0; s < 2; ++s)
      if (has[s] && timing::process_unusable(m[s])) return true;
    return false;
  }
};

// Both providers in one graph, their launches interleaved (timing::measure_interleaved): the
// pair's samples split into `blocks` consecutive blocks whose medians compare reads as it reads
// the ABBA blocks'. Each side gets one run's time budget over all `phases`; a later phase skips
// the settle (the first just ran the same work). nullopt when the pair cannot share a graph;
// then the caller times the sides in blocks.
std::optional<CaseRunner::PairTiming> CaseRunner::time_interleaved(PairSide& a, PairSide& b,
                                                                   std::size_t pa, std::size_t pb,
                                                                   int blocks, int phase,
                                                                   int phases) {
  timing::TimingOptions o = timing_options(a.info, false);
  const timing::TimingOptions ob = timing_options(b.info, false);
  o.rng = o.rng || ob.rng;
  o.capture_denied = o.capture_denied || ob.capture_denied;
  // Each phase holds 1/phases of the pair's samples: its share of the time and of the samples,
  // and a noise target such that the phases together reach the run's (as block_options does).
  o.stop.min_time_s *= 2.0 / phases;
  o.stop.timeout_s *= 2.0 / phases;
  o.stop.min_samples = std::max(2, (o.stop.min_samples + phases - 1) / phases);
  o.stop.max_noise *= std::sqrt(static_cast<double>(phases));
  if (phase > 0) {
    o.regime.settle_window_s = 0.001;
    o.regime.settle_timeout_s = 0.0;
  }
  const std::optional<timing::PairedMeasurement> m = timing::measure_interleaved(
      *device_, backend_, [&] { a.work.w->launch(pa); }, [&] { b.work.w->launch(pb); }, o,
      4 * blocks);
  if (!m) return std::nullopt;
  PairTiming t;
  t.m[0] = m->a;
  t.m[1] = m->b;
  t.has[0] = t.has[1] = true;
  t.medians[0] = chunk_medians(m->a.samples_ms, blocks);
  t.medians[1] = chunk_medians(m->b.samples_ms, blocks);
  t.method = "interleaved";
  return t;
}

// Times provider pa of A and pb of B for one phase: in one graph where both can be captured,
// else alternately, `blocks` blocks a side in ABBA order (A B, B A, A B, ...), each side's blocks
// merged into one measurement. A failed block ends the pair: the failing side carries the
// failure, the other the blocks it has.
CaseRunner::PairTiming CaseRunner::time_pair(PairSide& a, PairSide& b, std::size_t pa,
                                             std::size_t pb, int blocks, int phase, int phases) {
  if (auto t = time_interleaved(a, b, pa, pb, blocks, phase, phases)) return *t;
  PairTiming t;
  t.method = "blocks";
  std::vector<timing::Measurement> ms[2];
  const int all_blocks = blocks * phases;  // each block: 1/all_blocks of the run's budget
  for (int j = 0; j < blocks; ++j) {
    for (int k = 0; k < 2; ++k) {
      const int s = (j % 2 == 0) == (k == 0) ? 0 : 1;
      PairSide& side = s == 0 ? a : b;
      const bool first = phase == 0 && ms[0].empty() && ms[1].empty();
      timing::Measurement m = measure_side(
          side, s == 0 ? pa : pb, block_options(side.info, all_blocks, ms[s].empty(), first));
      if (!(m.ok && m.latency_ms > 0)) {
        t.m[s] = std::move(m);
        t.has[s] = true;
        if (!ms[1 - s].empty()) {
          PairSide& o = s == 0 ? b : a;
          t.m[1 - s] = merge_blocks(ms[1 - s], block_options(o.info, all_blocks, true, true));
          t.has[1 - s] = true;
        }
        return t;
      }
      ms[s].push_back(std::move(m));
    }
  }
  for (int s = 0; s < 2; ++s) {
    PairSide& side = s == 0 ? a : b;
    t.m[s] = merge_blocks(ms[s], block_options(side.info, all_blocks, true, true));
    t.has[s] = true;
    for (const auto& m : ms[s]) t.medians[s].push_back(core::median(m.samples_ms));
  }
  return t;
}

// Records a pair's phases into both sides' rows: the phases' samples and block medians joined
// when both phases timed both sides to the end; else the first phase's, or a later phase's
// failure. False when the process must time nothing more.
bool CaseRunner::record_pair(PairSide& a, PairSide& b, std::size_t pa, std::size_t pb,
                             const Case& c, const PairTiming& t1,
                             const std::optional<PairTiming>& t2, bool partial) {
  PairTiming t = t1;
  int phases = 1;
  if (t2 && t2->ok() && t1.ok()) {
    phases = 2;
    for (int s = 0; s < 2; ++s) {
      const PairSide& side = s == 0 ? a : b;
      t.m[s] = merge_blocks({t1.m[s], t2->m[s]}, timing_options(side.info, false));
      t.medians[s].insert(t.medians[s].end(), t2->medians[s].begin(), t2->medians[s].end());
    }
    if (t2->method != t1.method) t.method = t1.method + "," + t2->method;
  } else if (t2) {
    for (int s = 0; s < 2; ++s)
      if (t2->has[s] && !(t2->m[s].ok && t2->m[s].latency_ms > 0)) {
        t.m[s] = t2->m[s];  // a launch that failed in the second phase fails the provider
        t.medians[s].clear();
      }
  }
  bool go_on = true;
  for (int s = 0; s < 2 && go_on; ++s) {
    PairSide& side = s == 0 ? a : b;
    if (t.has[s]) go_on = side.record(*this, s == 0 ? pa : pb, c, t.m[s]);
  }
  if (!t.ok() || t.medians[0].empty() || t.medians[0].size() != t.medians[1].size()) return go_on;
  for (int s = 0; s < 2; ++s) {
    ProviderRow& prow = (s == 0 ? a : b).work.prows[s == 0 ? pa : pb];
    prow.block_medians_ms = t.medians[s];
    prow.paired_blocks = static_cast<int>(t.medians[s].size());
    prow.paired_method = t.method;
    if (phases > 1) prow.paired_phases = phases;
    if (phases > 1 && partial) {
      const std::string why =
          "the placement crossover was partial: a block of one side's set-up had no block of the "
          "same size on the other side, so part of where the buffers landed may remain in the "
          "ratio (docs/ab.md)";
      prow.note = prow.note ? *prow.note + "; " + why : why;
    }
  }
  return go_on;
}

// A provider only one side has (or only one side passed the check of): timed as a run would.
bool CaseRunner::time_alone(PairSide& s, std::size_t p, const Case& c) {
  return s.record(*this, p, c, measure_side(s, p, timing_options(s.info, false)));
}

// The placement crossover's second set-up: both workloads dropped (their memory stays in the
// pool) and set up again from the same seeds, each side in the other side's blocks, every
// provider prepared with the config the first set-up chose (no check, no tuning). False when a
// set-up failed: the case keeps its first phase.
bool CaseRunner::set_up_crossed(const Op& oa, const Op& ob, const Case& c, CaseWork& wa,
                                CaseWork& wb, PlacementPool& pool, std::uint64_t seeds) {
  pool.hold();
  wa.w.reset();
  wb.w.reset();
  pool.cross();
  try {
    for (int s = 0; s < 2; ++s) {
      CaseWork& work = s == 0 ? wa : wb;
      device_->rewind_seeds(seeds);
      work.w = (s == 0 ? oa : ob).setup(pool.side(s), c);
      if (work.w->providers().size() != work.providers.size() ||
          work.configs.size() != work.providers.size())
        throw std::runtime_error("the second set-up has other providers");
      for (std::size_t p = 0; p < work.providers.size(); ++p) work.w->prepare(p, work.configs[p]);
    }
  } catch (const DeviceBroken& e) {
    fatal_ = c.node_id();
    warnings_.push_back(c.node_id() + ": paired A/B, the second placement phase: " + e.what());
    return false;
  } catch (const NativeError& e) {
    const auto f = backend_.classify(e.code());
    if (backends::leaves_process_unusable(f)) fatal_ = c.node_id();
    warnings_.push_back(c.node_id() + ": paired A/B, the second placement phase: " + e.what());
    return false;
  } catch (const std::exception& e) {
    warnings_.push_back(c.node_id() + ": paired A/B, the second placement phase: " + e.what());
    return false;
  }
  return true;
}

namespace {
bool gated_out(const ProviderRow& prow) {
  return prow.accuracy && !*prow.accuracy;
}
}  // namespace

// Pairs each provider of A with B's of the same name and role and times the pairs, then the
// providers only one side has, alone. With a pool, and both sides' memory in it, the pairs are
// timed in two placement phases (set_up_crossed between them), `blocks`/2 blocks a side each. A
// direct-timer fallback is not re-timed here (docs/ab.md): a paired row keeps each provider's own
// timer, which both sides share.
void CaseRunner::time_paired(const Op& oa, const Op& ob, const Case& c, CaseWork& wa, CaseWork& wb,
                             CaseRow& ra, CaseRow& rb, int blocks, PlacementPool* pool,
                             std::uint64_t seeds) {
  const OpInfo ia = oa.info();
  const OpInfo ib = ob.info();
  wa.measured.assign(wa.providers.size(), timing::Measurement{});
  wb.measured.assign(wb.providers.size(), timing::Measurement{});
  PairSide a{ia, wa, ra, wa.w->flops(), wa.w->bytes()};
  PairSide b{ib, wb, rb, wb.w->flops(), wb.w->bytes()};
  struct Slot {
    std::size_t pa, pb;
    std::optional<PairTiming> t1, t2;
  };
  std::vector<Slot> pairs;
  std::vector<std::size_t> alone_a, alone_b;
  std::vector<bool> b_done(wb.providers.size(), false);
  for (std::size_t pa = 0; pa < wa.providers.size(); ++pa) {
    std::size_t pb = 0;
    while (pb < wb.providers.size() &&
           (b_done[pb] || wb.providers[pb].name != wa.providers[pa].name ||
            wb.providers[pb].role != wa.providers[pa].role))
      ++pb;
    const bool a_ok = !gated_out(wa.prows[pa]);
    const bool b_ok = pb < wb.providers.size() && !gated_out(wb.prows[pb]);
    if (pb < wb.providers.size()) b_done[pb] = true;
    if (a_ok && b_ok)
      pairs.push_back(Slot{pa, pb, std::nullopt, std::nullopt});
    else if (a_ok)
      alone_a.push_back(pa);
    else if (b_ok)
      alone_b.push_back(pb);
  }
  for (std::size_t pb = 0; pb < wb.providers.size(); ++pb)
    if (!b_done[pb] && !gated_out(wb.prows[pb])) alone_b.push_back(pb);

  const bool cross = pool != nullptr && blocks >= 4 && blocks % 2 == 0 && !pairs.empty() &&
                     pool->blocks(0) > 0 && pool->blocks(1) > 0;
  const int phases = cross ? 2 : 1;
  const int per_phase = blocks / phases;
  bool usable = fatal_.empty();
  for (Slot& s : pairs) {
    if (!usable) break;
    s.t1 = time_pair(a, b, s.pa, s.pb, per_phase, 0, phases);
    usable = !s.t1->unusable();
  }
  for (std::size_t pa : alone_a)
    if (usable) usable = time_alone(a, pa, c);
  for (std::size_t pb : alone_b)
    if (usable) usable = time_alone(b, pb, c);
  // The second phase for the pairs the first timed to the end (a pair that failed keeps its
  // failure and is not timed again).
  bool any_ok = false;
  for (const Slot& s : pairs) any_ok = any_ok || (s.t1 && s.t1->ok());
  if (usable && cross && any_ok && set_up_crossed(oa, ob, c, wa, wb, *pool, seeds)) {
    for (Slot& s : pairs) {
      if (!s.t1 || !s.t1->ok()) continue;
      s.t2 = time_pair(a, b, s.pa, s.pb, per_phase, 1, phases);
      if (s.t2->unusable()) break;
    }
  }
  const bool partial = pool != nullptr && !pool->crossed_all();
  for (const Slot& s : pairs)
    if (s.t1 && !record_pair(a, b, s.pa, s.pb, c, *s.t1, s.t2, partial)) break;
}

std::pair<CaseRow, CaseRow> CaseRunner::run_case_paired(const Op& a, const Op& b, const Case& c,
                                                        int blocks, bool crossover,
                                                        tune::Tuner& tuner_b) {
  const OpInfo ia = a.info();
  const OpInfo ib = b.info();
  CaseRow ra = case_row_head(ia, c);
  CaseRow rb = case_row_head(ib, c);
  for (CaseRow* r : {&ra, &rb}) {
    r->timer = timer_;
    r->repeat = knobs_.repeat;
  }
  const bool in_a = admit(a, c, ra);
  const bool in_b = admit(b, c, rb);
  if (!in_a || !in_b) {
    // A case runs on both sides or on neither: a lone side has nothing to be paired with.
    CaseRow& ran = in_a ? ra : rb;
    const CaseRow& why = in_a ? rb : ra;
    end_skipped(ran, "paired A/B: the other side skipped it (" +
                         why.reason.value_or(std::string("skipped")) + ")");
    return {ra, rb};
  }
  // Both sides' workloads are resident at once.
  const double need =
      static_cast<double>(a.bytes_needed(c)) + static_cast<double>(b.bytes_needed(c));
  const double have = static_cast<double>(device_->free_bytes());
  if (need > 0.9 * have) {
    for (CaseRow* r : {&ra, &rb}) {
      end_skipped(*r, "paired A/B needs both sides' inputs resident: " + core::gib(need, 2) +
                          ", device has " + core::gib(have, 2) +
                          " free (caliber ab --isolate times each side in its own process)");
    }
    return {ra, rb};
  }
  // The pool outlives both workloads (declared first, destroyed last): their memory is given
  // back to the device when the case ends.
  std::optional<PlacementPool> pool;
  if (crossover) pool.emplace(*device_);
  CaseWork wa, wb;
  // Both sides' inputs from the same seeds: the same data (a sort's or a nonzero's time depends
  // on it; docs/ab.md).
  const std::uint64_t seeds = device_->seeds_drawn();
  const bool ok_a = prepare_and_check(a, ia, c, wa, ra, pool ? &pool->side(0) : nullptr);
  device_->rewind_seeds(seeds);
  side_tuner_ = &tuner_b;  // side B's configs from side B's cache
  bool ok_b = false;
  try {
    ok_b = prepare_and_check(b, ib, c, wb, rb, pool ? &pool->side(1) : nullptr);
  } catch (...) {
    side_tuner_ = nullptr;
    throw;
  }
  side_tuner_ = nullptr;
  if (ok_a && ok_b) {
    time_paired(a, b, c, wa, wb, ra, rb, blocks, pool ? &*pool : nullptr, seeds);
  } else if (ok_a) {
    time_providers(ia, c, wa, ra);
  } else if (ok_b) {
    time_providers(ib, c, wb, rb);
  }
  if (ok_a) {
    ra.providers = wa.prows;
    summarize_row(ra, wa.prows, wa.any_fail, wa.first_error);
  }
  if (ok_b) {
    rb.providers = wb.prows;
    summarize_row(rb, wb.prows, wb.any_fail, wb.first_error);
  }
  // Each side's own phases (the case's shared time is not split: no other_s).
  write_phases(ra, wa, 0);
  write_phases(rb, wb, 0);
  return {ra, rb};
}

}  // namespace caliber::run
