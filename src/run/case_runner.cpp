#include "run/case_runner.hpp"
#include "run/case_runner_parts.hpp"

#include "backends/registry.hpp"
#include "core/format.hpp"
#include "records/runlog.hpp"
#include "settings/knobs.hpp"
#include "tune/prune.hpp"
#include "tune/sweep_options.hpp"

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

namespace case_parts {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void add_markers(CaseRow& row, const std::vector<std::string>& ms) {
  if (!row.markers) row.markers.emplace();
  core::add_markers(*row.markers, ms);
}

const char* role_name(Role r) {
  return r == Role::baseline ? core::role::baseline : core::role::candidate;
}

// A provider's timing fields on its run.log object (docs/run-log.md lists them).
void write_timing(ProviderRow& prow, const timing::Measurement& m, double flops, double bytes) {
  prow.timer = core::spelled(m.timer);
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
  prow.l2_method = core::spelled(m.l2_method);
  prow.sample_method = core::spelled(m.sample_method);
  prow.timer_resolution_us = m.timer_resolution_us;
  if (m.sample_method == core::SampleDelimiter::kernel_trace) {
    prow.event_latency_ms = m.event_latency_ms;
    prow.kernel_count = m.kernel_count;
    prow.kernel_sum_ms = m.kernel_sum_ms;
    prow.record_resolution_us = m.record_resolution_us;
    prow.trace_host_us = m.trace_host_us;
  }
  prow.regime = core::spelled(m.regime);
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
  if (m.clock.other_processes >= 0) prow.other_processes = m.clock.other_processes;
  prow.wall_s = m.wall_s;
  if (!m.note.empty()) prow.note = m.note;
  if (m.ok && m.latency_ms > 0) {
    prow.latency_ms = m.latency_ms;
    prow.samples_ms = m.samples_ms;
    if (m.total_samples > 0) prow.samples_total = m.total_samples;
    prow.error.reset();
    prow.failure.reset();
    if (!m.quantile_ms.empty()) prow.quantiles_ms = m.quantile_ms;
    const double s = m.latency_ms * 1e-3;
    if (flops > 0) prow.tflops = flops / s / 1e12;
    if (bytes > 0) prow.gbps = bytes / s / 1e9;
  } else {
    prow.latency_ms.reset();
    prow.samples_ms.reset();
    prow.samples_total.reset();
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
// A row that a failure outside the timers ended: skipped (the op said so) or failed with it.
void end_case(CaseRow& row, std::vector<ProviderRow> prows, const CaseRunner::CaseFailure& f) {
  if (f.skipped)
    end_skipped(row, f.what);
  else
    end_failed(row, std::move(prows), f.text());
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

}  // namespace case_parts
using namespace case_parts;

CaseRunner::CaseRunner(const backends::Backend& backend, int device_index, std::uint64_t seed,
                       const core::Knobs& knobs, core::TimerKind timer,
                       const tune::Settings& tune_settings)
    : backend_(backend), knobs_(knobs), timer_(timer) {
  device_ = backends::open_device(backend_, device_index, seed);
  deny_ = backend_.capture_deny_ops();
  deny_.insert(deny_.end(), knobs_.capture_deny.begin(), knobs_.capture_deny.end());
  tuner_ = std::make_unique<tune::Tuner>(tune_settings);
}

CaseRunner::~CaseRunner() = default;

timing::TimingOptions timing_options_of(const core::Knobs& k, const backends::Capabilities& caps) {
  timing::TimingOptions o;
  o.timer = k.timer;
  o.repeat = k.repeat;
  o.return_mode = k.return_mode;
  o.quantiles = k.quantiles;
  o.l2 = k.l2;
  o.sample_method = k.sample_method;
  o.stop.min_samples = k.min_samples;
  o.stop.min_time_s = k.min_time_s;
  o.stop.max_noise = timing::resolved_max_noise(k.max_noise, caps);
  o.regime.regime = k.clock;
  o.stop.timeout_s = k.timeout_s;
  o.stop.warmup_s = k.warmup_s;
  o.throttle_fraction = k.throttle_fraction;
  return o;
}

timing::TimingOptions CaseRunner::timing_options(const OpInfo& info, bool short_budget) const {
  timing::TimingOptions o = timing_options_of(knobs_, backend_.capabilities());
  o.timer = timer_;
  o.capture_denied = contains(deny_, info.name);
  o.rng = info.rng;
  o.op = info.name;
  if (knobs_.settle_carry) o.carry = carry_.get();
  if (short_budget) o = tune::sweep_options(o);
  return o;
}

std::vector<ProviderInfo> CaseRunner::launchable(std::vector<ProviderInfo> providers) const {
  const backends::Capabilities caps = backend_.capabilities();
  for (auto& pi : providers)
    pi.space = tune::prune_for_clusters(pi.space, caps.clusters, caps.max_cluster);
  return providers;
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
  const timing::TimingOptions sweep_opt = timing_options(info, true);
  auto timed_by = [this, &w, p, &broken](timing::TimingOptions opt) {
    return [this, &w, p, &broken, opt = std::move(opt)](const Config& cfg) -> double {
      if (broken) throw ConfigRejected("device context unusable");
      w.prepare(p, cfg);
      auto m = timing::measure(
          *device_, backend_, [&] { w.launch(p); }, opt);
      // A broken context is not a bad config: remember it, so the case fails and the run stops
      // timing.
      if (timing::process_unusable(m)) {
        broken = m;
        throw ConfigRejected(m.error);
      }
      if (!m.ok) throw ConfigRejected(m.error.empty() ? "measurement failed" : m.error);
      return m.latency_ms;
    };
  };
  const tune::TimeConfig time_config = timed_by(sweep_opt);
  tune::Screen screen;
  if (knobs_.tune_screen) screen.time = timed_by(tune::screen_options(timing_options(info, false)));
  // A provider that sweeps its own configs (a Python suite's Triton autotuner) is asked to, under
  // the same cache rules; the others are timed config by config here.
  auto* self = dynamic_cast<tune::SelfTuning*>(&w);
  tune::Selection s = self != nullptr && self->sweeps_itself(p)
                          ? active_tuner().select_external(
                                key, pi.space, [&] { return self->prepare_and_sweep(p); })
                          : active_tuner().select(key, pi.space, time_config, screen);
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
    const auto providers = launchable(w->providers());
    profile_prepare(info, c, *w, providers, prows);
    profile_launch(c, *w, providers, launches, prows);
  } catch (...) {
    end_case(row, std::move(prows), failure_of(c, std::current_exception()));
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
    auto providers = launchable(w->providers());
    for (std::size_t p = 0; p < providers.size(); ++p) {
      if (providers[p].role != Role::candidate || !providers[p].space.tunable()) continue;
      ProviderRow scratch;
      (void)choose_config(info, c, *w, p, providers[p], scratch);
    }
  } catch (...) {
    const CaseFailure f = failure_of(c, std::current_exception());
    warnings_.push_back("tuning " + c.node_id() + " failed: " + f.what);
  }
}

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
    if (!backends::compat_lifts(backend_, c.op, *reason)) return skip(*reason);
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
    work.providers = launchable(work.w->providers());
    prepare_providers(info, c, work, row);
    work.prepare_s = clock.lap();
    check_candidates(work);
    work.check_s = clock.lap();
  } catch (...) {
    end_case(row, work.prows, failure_of(c, std::current_exception()));
    return false;
  }
  return true;
}

// The one case-error path (NativeError -> classify -> fatal, and DeviceBroken).
CaseRunner::CaseFailure CaseRunner::failure_of(const Case& c, const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const DeviceBroken& d) {
    fatal_ = c.node_id();
    return {d.what(), d.failure, false};
  } catch (const CaseSkipped& s) {
    return {s.what(), std::nullopt, true};
  } catch (const NativeError& n) {
    const backends::Failure f = backend_.classify(n.code());
    if (backends::leaves_process_unusable(f)) fatal_ = c.node_id();
    return {n.what(), f, false};
  } catch (const std::exception& x) {
    return {x.what(), std::nullopt, false};
  }
}

// Phase 3: time every provider (a candidate that failed its gate is not timed); then, for one
// regime per row, re-time by the direct timer what the graph timer timed when another provider
// fell back to the direct timer.
void CaseRunner::time_providers(const OpInfo& info, const Case& c, CaseWork& work, CaseRow& row) {
  const double flops = work.w->flops();
  const double bytes = work.w->bytes();
  work.measured.assign(work.providers.size(), timing::Measurement{});
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    const ProviderRow& prow = work.prows[p];
    if (prow.accuracy && !*prow.accuracy) continue;
    const timing::Measurement m = measure_provider(*work.w, p, timing_options(info, false));
    if (!record_timing(work, row, p, c, m, flops, bytes)) break;  // time nothing more
  }
  // One regime per row (docs/timing.md): when a provider's capture was refused and it fell back to
  // the direct timer, the providers timed by the graph timer are timed again by the direct timer,
  // so that the speedup compares like with like. Their graph figures stay as extra fields.
  if (!fatal_.empty() || !work.fell_back) return;
  timing::TimingOptions direct = timing_options(info, false);
  direct.timer = timing::TimerKind::direct;
  for (std::size_t p = 0; p < work.providers.size(); ++p) {
    if (!work.measured[p].ok || work.measured[p].timer != core::TimerKind::graph) continue;
    ProviderRow& prow = work.prows[p];
    const std::optional<double> graph_latency = prow.latency_ms;
    const int graph_launches = work.measured[p].launches_per_sample;
    const timing::Measurement m = measure_provider(*work.w, p, direct);
    const bool go_on = record_timing(work, row, p, c, m, flops, bytes);
    prow.graph_latency_ms.emplace(graph_latency);
    prow.graph_launches_per_sample = graph_launches;
    prow.note =
        "timed by the direct timer too, since another provider of this case could "
        "not be captured (one regime per row); its graph figure is graph_latency_ms";
    if (!go_on) break;
  }
}

timing::Measurement CaseRunner::measure_provider(Workload& w, std::size_t p,
                                                 const timing::TimingOptions& o) {
  try {
    return timing::measure(
        *device_, backend_, [&] { w.launch(p); }, o);
  } catch (const std::exception& e) {
    timing::Measurement m;
    m.ok = false;
    m.error = e.what();
    return m;
  }
}

bool CaseRunner::record_timing(CaseWork& work, CaseRow& row, std::size_t p, const Case& c,
                               const timing::Measurement& m, double flops, double bytes) {
  write_timing(work.prows[p], m, flops, bytes);
  work.count(m);
  work.measured[p] = m;
  add_markers(row, m.markers);
  if (m.ok && m.latency_ms > 0) {
    if (m.timer == core::TimerKind::direct && timer_ == core::TimerKind::graph) {
      work.fell_back = true;
      row.timer = core::to_string(core::TimerKind::direct);
    }
    return true;
  }
  work.any_fail = true;
  if (work.first_error.empty()) work.first_error = work.providers[p].name + ": " + m.error;
  if (!timing::process_unusable(m)) return true;
  fatal_ = c.node_id();
  return false;
}

CaseRow CaseRunner::run_case(const Op& op, const Case& c) {
  const PhaseClock clock;
  const OpInfo info = op.info();
  CaseRow row = case_row_head(info, c);
  row.timer = core::to_string(timer_);
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

}  // namespace caliber::run
