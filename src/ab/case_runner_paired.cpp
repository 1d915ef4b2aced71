// The paired A/B half of the case runner (docs/ab.md): a case's providers on both sides timed
// pair by pair, in blocks or interleaved in one graph, in one or two placement phases. Member
// functions of run::CaseRunner (run/case_runner.hpp), kept in the ab room so the one-case path
// knows nothing of pairing.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ab/placement.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"
#include "run/case_runner.hpp"
#include "run/case_runner_parts.hpp"

namespace caliber::run {

using core::CaseRow;
using core::ProviderRow;
using namespace case_parts;

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
  return measure_provider(*s.work.w, p, o);
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
  } catch (...) {
    const CaseFailure f = failure_of(c, std::current_exception());
    warnings_.push_back(c.node_id() + ": paired A/B, the second placement phase: " + f.what);
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
    r->timer = core::to_string(timer_);
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
