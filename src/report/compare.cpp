#include "report/compare.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "records/runlog.hpp"
#include "settings/knobs.hpp"

namespace caliber::report {

const char* to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::faster:
      return "FASTER";
    case Verdict::slower:
      return "SLOWER";
    case Verdict::same:
      return "SAME";
    case Verdict::unsure:
      return "UNSURE";
  }
  return "UNSURE";
}

void parse_run_noise(const std::string& spec, NoiseModel& opt) {
  const NoiseTerms t = parse_noise_terms(spec, "--run-noise");
  if (t.pct_given) opt.run_noise = t.pct;
  opt.run_noise_class = t.classes;
  opt.run_noise_floor_us = t.floor_us;
  opt.run_noise_given = true;
  opt.run_noise_pct_given = opt.run_noise_pct_given || t.pct_given;
}

void parse_paired_noise(const std::string& spec, NoiseModel& opt) {
  const NoiseTerms t = parse_noise_terms(spec, "--paired-noise");
  if (t.pct_given) opt.paired_noise = t.pct;
  opt.paired_noise_class = t.classes;
  opt.paired_noise_floor_us = t.floor_us;
  opt.paired_one_phase = opt.paired_noise;
  opt.paired_one_phase_class = opt.paired_noise_class;
  opt.paired_one_phase_floor_us = opt.paired_noise_floor_us;
  opt.paired_noise_given = true;
  opt.paired_noise_pct_given = opt.paired_noise_pct_given || t.pct_given;
}

namespace {
// The devices of a side's runs as their identities name them.
void device_keys(const std::vector<RunData>& runs, std::vector<DeviceKey>& out) {
  for (const auto& r : runs) {
    DeviceKey k;
    if (r.identity.is_object()) {
      if (const nlohmann::json& b = json_member(r.identity, "backend"); b.is_string())
        k.backend = b.get<std::string>();
      if (const auto d = r.identity.find("device"); d != r.identity.end() && d->is_object())
        if (const auto n = d->find("name"); n != d->end() && n->is_string())
          k.model = n->get<std::string>();
    }
    out.push_back(std::move(k));
  }
}
}  // namespace

void calibrate(NoiseModel& noise, const std::vector<RunData>& a, const std::vector<RunData>& b) {
  if (noise.run_noise_given && noise.run_noise_pct_given && noise.paired_noise_given &&
      noise.paired_noise_pct_given)
    return;  // every term is the user's: no file is read
  std::vector<DeviceKey> devices;
  device_keys(a, devices);
  device_keys(b, devices);
  const CalibrationChoice ch = choose_calibration(devices);
  if (!noise.run_noise_given) {
    noise.run_noise_class = ch.run_noise.terms.classes;
    noise.run_noise_floor_us = ch.run_noise.terms.floor_us;
  }
  if (!noise.run_noise_pct_given) {
    noise.run_noise = ch.run_noise.terms.pct;
    noise.run_noise_from = ch.run_noise.from;
  }
  if (!noise.paired_noise_given) {
    noise.paired_noise_class = ch.paired.terms.classes;
    noise.paired_noise_floor_us = ch.paired.terms.floor_us;
    noise.paired_one_phase = ch.paired_one_phase.terms.pct;
    noise.paired_one_phase_class = ch.paired_one_phase.terms.classes;
    noise.paired_one_phase_floor_us = ch.paired_one_phase.terms.floor_us;
    noise.paired_one_phase_from = ch.paired_one_phase.from;
  }
  if (!noise.paired_noise_pct_given) {
    noise.paired_noise = ch.paired.terms.pct;
    noise.paired_from = ch.paired.from;
    if (noise.paired_noise_given) noise.paired_one_phase = noise.paired_noise;
  }
  noise.calibration_notes = ch.notes;
}

bool CompareResult::any_difference() const noexcept {
  return std::any_of(pairs.begin(), pairs.end(), [](const PairResult& p) {
    return p.verdict == Verdict::faster || p.verdict == Verdict::slower;
  });
}

namespace {

struct SideCase {
  std::string op, dtype, shape, family;
  std::vector<const core::CaseRow*> rows;
};

// A side's cases by key (a hash: pairing two sides is linear in their cases), in first-seen order.
struct Side {
  std::vector<std::string> order;
  std::unordered_map<std::string, SideCase> cases;
};

Side collect(const std::vector<RunData>& runs) {
  Side s;
  std::size_t rows = 0;
  for (const auto& run : runs) rows += run.log.cases.size();
  s.cases.reserve(rows);
  for (const auto& run : runs)
    for (const auto& row : run.log.cases) {
      const std::string key = row_key(row);
      auto [it, inserted] = s.cases.try_emplace(key);
      if (inserted) {
        s.order.push_back(key);
        it->second.op = row.op;
        it->second.dtype = row.dtype.value_or("");
        it->second.shape = row.shape.value_or("");
        it->second.family = row.family.value_or("");
      }
      it->second.rows.push_back(&row);
    }
  return s;
}

// The role whose latency decides whether a row counts: the candidate, or the baseline of a
// baseline-only op.
std::string primary_role(const std::vector<ProviderSamples>& provs) {
  for (const auto& p : provs)
    if (p.role == core::role::candidate) return core::role::candidate;
  return core::role::baseline;
}

// Why a side's case cannot be compared, or nullopt when every row of it is usable.
std::optional<std::string> exclusion(const SideCase& c) {
  for (const auto* row : c.rows) {
    const std::string st = row_status(*row);
    if (st == core::status::failed) return core::status::failed;
    if (st == core::status::skipped) return core::status::skipped;
  }
  for (const auto* row : c.rows) {
    const auto provs = row_providers(*row);
    const std::string role = primary_role(provs);
    const bool positive = std::any_of(provs.begin(), provs.end(), [&](const ProviderSamples& p) {
      return p.role == role && p.latency_ms > 0 && !p.samples_ms.empty();
    });
    if (!positive) return "no_latency";
  }
  return std::nullopt;
}

void count(ExclusionCounts& c, const std::string& why) {
  if (why == core::status::failed)
    ++c.failed;
  else if (why == core::status::skipped)
    ++c.skipped;
  else
    ++c.no_latency;
}

struct Pooled {
  std::string role, name;
  std::vector<double> samples;              // all rows' samples together
  std::vector<std::vector<double>> groups;  // one per row (run or round) that has samples
  std::vector<double> figures;              // those rows' own latency_ms, one per group
};

// Samples per (role, provider) over all rows of a case, in first-seen order.
std::vector<Pooled> pool(const SideCase& c) {
  std::vector<Pooled> out;
  for (const auto* row : c.rows)
    for (auto& p : row_providers(*row)) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const Pooled& x) { return x.role == p.role && x.name == p.name; });
      if (it == out.end()) {
        out.push_back({p.role, p.name, {}, {}, {}});
        it = out.end() - 1;
      }
      it->samples.insert(it->samples.end(), p.samples_ms.begin(), p.samples_ms.end());
      if (!p.samples_ms.empty()) {
        it->groups.push_back(p.samples_ms);
        if (p.latency_ms > 0) it->figures.push_back(p.latency_ms);
      }
    }
  return out;
}

// A side's figure of a provider (figure_of_runs; rows without a latency: their samples').
double side_figure(const Pooled& p) {
  return p.figures.empty() ? core::median(p.samples) : figure_of_runs(p.figures);
}

bool case_has_fallback(const SideCase& c) {
  return std::any_of(c.rows.begin(), c.rows.end(),
                     [](const core::CaseRow* r) { return row_has_marker(*r, kFallbackMarker); });
}

std::string fmt(double v, int prec = 4) {
  std::ostringstream o;
  o.precision(prec);
  o << v;
  return o.str();
}

// Paired A/B rounds (docs/ab.md): A run and B run whose identities carry the same "paired" id,
// sides A and B. Every run of both sides must be in such a pair; else none is used.
struct PairedRound {
  std::map<std::string, const core::CaseRow*> a, b;  // row_key -> row
};
std::vector<PairedRound> paired_rounds(const std::vector<RunData>& a,
                                       const std::vector<RunData>& b) {
  auto pid = [](const RunData& r, const char* side) -> std::string {
    if (!r.identity.is_object()) return "";
    const auto it = r.identity.find("paired");
    if (it == r.identity.end() || !it->is_object()) return "";
    if (it->value("side", std::string()) != side) return "";
    return it->value("id", std::string());
  };
  std::vector<PairedRound> out;
  if (a.size() != b.size()) return {};
  std::vector<bool> used(b.size(), false);
  for (const auto& ra : a) {
    const std::string id = pid(ra, "A");
    if (id.empty()) return {};
    std::size_t j = 0;
    while (j < b.size() && (used[j] || pid(b[j], "B") != id)) ++j;
    if (j == b.size()) return {};
    used[j] = true;
    PairedRound pr;
    for (const auto& row : ra.log.cases) pr.a.emplace(row_key(row), &row);
    for (const auto& row : b[j].log.cases) pr.b.emplace(row_key(row), &row);
    out.push_back(std::move(pr));
  }
  return out;
}

// A provider's block medians in a row and the placement phases they split into; no medians when
// it has none.
struct Blocks {
  std::vector<double> medians;
  int phases = 1;
};
Blocks block_medians(const std::map<std::string, const core::CaseRow*>& rows,
                     const std::string& key, const std::string& role, const std::string& name) {
  const auto it = rows.find(key);
  if (it == rows.end() || !it->second->providers) return {};
  for (const auto& p : *it->second->providers) {
    if (p.role.value_or("") != role || p.name != name) continue;
    if (!p.block_medians_ms) return {};
    for (double x : *p.block_medians_ms)
      if (!(x > 0)) return {};
    return Blocks{*p.block_medians_ms, p.paired_phases.value_or(1)};
  }
  return {};
}

// Per round, ln(b_k / a_k) of a provider's blocks; none unless every round has them, alike. The
// phases: 2 when every round on both sides was timed in the two placement phases, else 1.
struct PairedRatios {
  std::vector<std::vector<double>> d;
  int phases = 1;
};
PairedRatios paired_log_ratios(const std::vector<PairedRound>& rounds, const std::string& key,
                               const std::string& role, const std::string& name) {
  PairedRatios out;
  bool crossed = true;
  for (const auto& r : rounds) {
    const Blocks ba = block_medians(r.a, key, role, name);
    const Blocks bb = block_medians(r.b, key, role, name);
    if (ba.medians.size() < 2 || ba.medians.size() != bb.medians.size()) return {};
    crossed = crossed && ba.phases == 2 && bb.phases == 2;
    std::vector<double> d;
    for (std::size_t k = 0; k < ba.medians.size(); ++k)
      d.push_back(std::log(bb.medians[k] / ba.medians[k]));
    out.d.push_back(std::move(d));
  }
  out.phases = crossed ? 2 : 1;
  return out;
}

}  // namespace

void check_identities(const std::vector<RunData>& a, const std::vector<RunData>& b,
                      CompareResult& out) {
  auto missing = [&](const std::vector<RunData>& side, const char* name) {
    for (const auto& r : side)
      if (r.identity.is_null())
        out.identity_problems.push_back(std::string(name) + ": " + r.dir.string() +
                                        " has no readable run_identity.json, so its caliber is "
                                        "unknown");
  };
  missing(a, "A");
  missing(b, "B");
  auto within = [&](const std::vector<RunData>& side, const char* name) {
    for (std::size_t i = 1; i < side.size(); ++i) {
      if (side[i].identity.is_null() || side[0].identity.is_null()) continue;
      for (const auto& d : core::diff_identity(side[0].identity, side[i].identity))
        out.identity_problems.push_back(
            std::string("within ") + name + ": " + d.key + ": " + (d.a.empty() ? "(none)" : d.a) +
            " (" + side[0].dir.filename().string() + ") vs " + (d.b.empty() ? "(none)" : d.b) +
            " (" + side[i].dir.filename().string() + ")");
    }
  };
  within(a, "A");
  within(b, "B");
  if (!a.empty() && !b.empty() && !a[0].identity.is_null() && !b[0].identity.is_null())
    out.mismatches = core::diff_identity(a[0].identity, b[0].identity);
}

namespace {

// Whether the sides ran on different devices: the GPUs' uuids differ, or the runs ran on
// different nodes (the Slurm node, else the host: a cluster's nodes hold different chips even
// where a uuid is missing).
void detect_cross_device(const std::vector<RunData>& a, const std::vector<RunData>& b,
                         CompareResult& out) {
  auto where = [](const std::vector<RunData>& side) {
    std::vector<std::pair<std::string, std::string>> u;  // uuid, node
    for (const auto& r : side) {
      std::string uuid;
      if (const nlohmann::json& u = json_member(json_member(r.identity, "device"), "uuid");
          u.is_string())
        uuid = u.get<std::string>();
      u.emplace_back(uuid, core::node_of(r.identity));
    }
    return u;
  };
  for (const auto& [ua, na] : where(a))
    for (const auto& [ub, nb] : where(b)) {
      if (!ua.empty() && !ub.empty() && ua != ub) out.cross_device = true;
      if (!na.empty() && !nb.empty() && na != nb) {
        out.cross_device = true;
        if (out.cross_nodes.empty()) out.cross_nodes = na + " vs " + nb;
      }
    }
}

// The interval and verdict of one pair with enough samples a side: the bootstrap CI of the
// median ratio, widened by the run-to-run terms (docs/ab.md), then the verdict rule.
// The run-to-run term of a pair before division by its runs: the class term (--run-noise, or
// --paired-noise for a paired pair) in quadrature with the timer floor's jitter over the median.
double noise_term(const PairResult& pr, const std::string& family, bool fallback,
                  const CompareOptions& opt) {
  // Paired: crossed pairs take the residual fitted on crossed data, one-phase pairs the larger
  // one that still holds where their buffers landed (docs/ab.md).
  struct Terms {
    double pct;
    const std::map<std::string, double>& classes;
    double floor_us;
  };
  const Terms t =
      !pr.paired ? Terms{opt.run_noise, opt.run_noise_class, opt.run_noise_floor_us}
      : pr.phases == 2
          ? Terms{opt.paired_noise, opt.paired_noise_class, opt.paired_noise_floor_us}
          : Terms{opt.paired_one_phase, opt.paired_one_phase_class, opt.paired_one_phase_floor_us};
  double rn = t.pct;
  auto take = [&](const std::string& cls) {
    const auto it = t.classes.find(cls);
    if (it != t.classes.end()) rn = std::max(rn, it->second);
  };
  take(family);
  take(pr.provider);  // a provider whose speed depends on its allocation (docs/ab.md)
  if (fallback) take("fallback");
  // The timer floor's own jitter is an absolute time: it dominates short kernels.
  const double t_us = std::min(pr.median_a, pr.median_b) * 1e3;
  return std::hypot(rn, t.floor_us / t_us);
}

// The interval and verdict of one pair with enough samples a side (docs/ab.md). Paired rounds
// (`paired_d`: per round, the blocks' log ratios): the t interval of the blocks, widened by the
// paired residual. Otherwise the bootstrap CI of the median ratio, widened by the run-to-run
// terms. Then the verdict rule.
void estimate_pair(PairResult& pr, const Pooled& x, const Pooled& y, const std::string& family,
                   bool fallback, const PairedRatios& paired_d, const CompareOptions& opt,
                   CompareResult& out) {
  const core::PairedEstimate pe =
      core::paired_log_ratio(paired_d.d, opt.confidence, paired_d.phases);
  pr.paired = pe.blocks >= 2;
  // Several runs a side (ab rounds, repeated batches): resample runs, then samples, so
  // drift between runs is in the interval. One run a side: its samples are all there is.
  pr.grouped = !pr.paired && x.groups.size() >= 2 && y.groups.size() >= 2;
  if (pr.paired) {
    pr.blocks = pe.blocks;
    pr.phases = pe.phases;
    pr.placement = std::expm1(pe.placement);
    pr.ratio = std::exp(pe.log_ratio);
    pr.ci = {std::exp(pe.log_ratio - pe.half_width), std::exp(pe.log_ratio + pe.half_width)};
  } else {
    pr.ci = pr.grouped ? core::bootstrap_median_ratio_ci_grouped(x.groups, y.groups, opt.confidence,
                                                                 opt.resamples, opt.seed)
                       : core::bootstrap_median_ratio_ci(x.samples, y.samples, opt.confidence,
                                                         opt.resamples, opt.seed);
    // The kept samples' own ratio can differ from the figures' (a provider keeps at most 200
    // of its samples): the interval stands around the ratio this pair reports.
    pr.ci = core::moved_onto(pr.ci, core::median(y.samples) / core::median(x.samples), pr.ratio);
  }
  // One run's samples cannot show the run-to-run noise: add it (paired: the residual).
  const double rn = noise_term(pr, family, fallback, opt);
  // A side of R runs keeps rn / sqrt(R): the run-to-run spread of a mean of R runs. The
  // grouped bootstrap measures the spread it drew, but over three runs it cannot see one it
  // did not happen to draw (a 4.7 us copy read 4.3% apart, the same sign three times).
  // Paired: the residual is per pair (both sides in one term), over sqrt(rounds).
  double sd_a = 0, sd_b = 0;
  if (pr.paired) {
    sd_a = rn / std::sqrt(static_cast<double>(pe.rounds));
  } else {
    sd_a = rn / std::sqrt(static_cast<double>(std::max<std::size_t>(1, x.groups.size())));
    sd_b = rn / std::sqrt(static_cast<double>(std::max<std::size_t>(1, y.groups.size())));
  }
  const double lr = std::log(pr.ratio);
  pr.sample_hw = lr >= 0 ? lr - std::log(pr.ci.lo) : std::log(pr.ci.hi) - lr;
  pr.runs = pr.paired ? pe.rounds : static_cast<int>(std::min(x.groups.size(), y.groups.size()));
  // Across two devices, no-change is the device band: chip-to-chip differences are in no CI.
  const double zone = out.cross_device ? out.band_used : 0.0;
  const Verdict samples_only =
      core::ab_verdict(pr.ci, pr.ratio, opt.min_effect, out.band_used, zone);
  double noise_hw = 0;
  if (sd_a > 0 || sd_b > 0) {
    pr.ci = core::widen_for_run_noise(pr.ci, pr.ratio, sd_a, sd_b, opt.confidence);
    pr.run_noise = std::hypot(sd_a, sd_b);
    noise_hw = core::normal_quantile(0.5 + 0.5 * opt.confidence) * pr.run_noise;
  }
  pr.verdict = core::ab_verdict(pr.ci, pr.ratio, opt.min_effect, out.band_used, zone);
  if (pr.verdict == Verdict::unsure) {
    if (samples_only != Verdict::unsure) ++out.unsure_by_run_noise;
    pr.resolution = core::resolve_unsure(pr.ratio, pr.sample_hw, noise_hw, pr.runs, opt.min_effect,
                                         out.band_used);
  }
}

// The per-op ranges of the primary role's pairs, in first-seen op order.
struct OpRanges {
  std::map<std::string, OpRange> ranges;
  std::vector<std::string> order;
};

// A primary pair into its op's range, and into the regressions when --fail-on-regression
// applies.
void add_to_op_range(OpRanges& ops, const PairResult& pr, bool fallback, const CompareOptions& opt,
                     CompareResult& out) {
  auto [it, inserted] = ops.ranges.try_emplace(pr.op);
  OpRange& r = it->second;
  if (inserted) {
    ops.order.push_back(pr.op);
    r.op = pr.op;
    r.min = r.max = pr.ratio;
  }
  ++r.pairs;
  r.min = std::min(r.min, pr.ratio);
  r.max = std::max(r.max, pr.ratio);
  r.fallback = r.fallback || fallback;
  switch (pr.verdict) {
    case Verdict::faster:
      ++r.faster;
      break;
    case Verdict::slower:
      ++r.slower;
      break;
    case Verdict::same:
      ++r.same;
      break;
    case Verdict::unsure:
      ++r.unsure;
      break;
  }
  if (opt.fail_on_regression_pct && pr.verdict == Verdict::slower &&
      pr.ratio > 1.0 + *opt.fail_on_regression_pct / 100.0)
    out.regressions.push_back(pr.op + " " + pr.dtype + " " + pr.shape + " (" + pr.provider +
                              "): ratio " + fmt(pr.ratio) + ", SLOWER by more than " +
                              fmt(*opt.fail_on_regression_pct) + "%");
}

// One case present on both sides: excluded (failed, skipped, no latency), or one pair per
// provider both sides timed.
void compare_case(const std::string& key, const SideCase& ca, const SideCase& cb,
                  const std::vector<PairedRound>& rounds, const CompareOptions& opt,
                  CompareResult& out, OpRanges& ops) {
  const auto why_a = exclusion(ca);
  const auto why_b = exclusion(cb);
  if (why_a || why_b) {
    ++out.excluded;
    if (why_a) count(out.excluded_a, *why_a);
    if (why_b) count(out.excluded_b, *why_b);
    if (!why_a && why_b == core::status::failed)
      out.broken.push_back(ca.op + " " + ca.dtype + " " + ca.shape);
    return;
  }
  ++out.paired;
  const bool fallback = case_has_fallback(ca) || case_has_fallback(cb);
  const auto pa = pool(ca);
  const auto pb = pool(cb);
  std::vector<ProviderSamples> roles_seen;
  for (const auto& p : pa) roles_seen.push_back({p.name, p.role, 1, {}, false});
  const std::string primary = primary_role(roles_seen);
  for (const auto& x : pa) {
    const auto y = std::find_if(pb.begin(), pb.end(), [&](const Pooled& p) {
      return p.role == x.role && p.name == x.name;
    });
    if (y == pb.end() || x.samples.empty() || y->samples.empty()) continue;
    PairResult pr;
    pr.op = ca.op;
    pr.dtype = ca.dtype;
    pr.shape = ca.shape;
    pr.role = x.role;
    pr.provider = x.name;
    pr.primary = x.role == primary;
    pr.n_a = x.samples.size();
    pr.n_b = y->samples.size();
    pr.median_a = side_figure(x);
    pr.median_b = side_figure(*y);
    pr.ratio = pr.median_b / pr.median_a;
    pr.fallback = fallback;
    if (static_cast<int>(pr.n_a) >= opt.min_samples &&
        static_cast<int>(pr.n_b) >= opt.min_samples) {
      // Paired rounds (one process each, A and B alternately block by block): the blocks' log
      // ratios give the interval.
      const PairedRatios d =
          rounds.empty() ? PairedRatios{} : paired_log_ratios(rounds, key, x.role, x.name);
      estimate_pair(pr, x, *y, ca.family, fallback, d, opt, out);
    } else {
      // One number per side says nothing about noise: no verdict can be honest.
      pr.ci = {pr.ratio, pr.ratio};
      pr.verdict = Verdict::unsure;
    }
    if (pr.primary) add_to_op_range(ops, pr, fallback, opt, out);
    out.pairs.push_back(std::move(pr));
  }
}

}  // namespace

namespace {
// "A 2 of 3 run(s) (a-...: end: load 17.04 on 2 cores)" for a side whose run_identity.json
// recorded a load average above its cores; "" when none did.
std::string loaded_side(const char* side, const std::vector<RunData>& runs) {
  int loaded = 0;
  std::string first;
  for (const auto& r : runs) {
    const auto readings = core::loaded_host_readings(r.identity);
    if (readings.empty()) continue;
    if (loaded++ == 0) {
      first = r.dir.filename().string() + ": " + readings.front();
      for (std::size_t i = 1; i < readings.size(); ++i) first += ", " + readings[i];
    }
  }
  if (loaded == 0) return "";
  return std::string(side) + " in " + std::to_string(loaded) + " of " +
         std::to_string(runs.size()) + " run(s) (" + first + ")";
}

// One line when either side's host was loaded.
std::string loaded_hosts(const std::vector<RunData>& a, const std::vector<RunData>& b) {
  const std::string la = loaded_side("A", a);
  const std::string lb = loaded_side("B", b);
  if (la.empty() && lb.empty()) return "";
  return "the host was loaded (load average above its cores) on side " + la +
         (la.empty() || lb.empty() ? "" : "; side ") + lb +
         ": other work's noise is in those timings, maybe beyond the calibrated terms "
         "(docs/ab.md#calibration-files)";
}
}  // namespace

CompareResult compare_loaded(const std::vector<RunData>& a, const std::vector<RunData>& b,
                             const CompareOptions& given) {
  CompareOptions opt = given;
  calibrate(opt, a, b);
  CompareResult out;
  out.noise = static_cast<const NoiseModel&>(opt);
  out.loaded_host = loaded_hosts(a, b);
  out.runs_a = static_cast<int>(a.size());
  out.runs_b = static_cast<int>(b.size());
  out.duplicates_a = duplicate_rows_note(a);
  out.duplicates_b = duplicate_rows_note(b);
  check_identities(a, b, out);
  detect_cross_device(a, b, out);
  out.band_used = out.cross_device ? std::max(opt.noise_band, opt.device_band) : opt.noise_band;
  const Side sa = collect(a);
  const Side sb = collect(b);
  const std::vector<PairedRound> rounds = paired_rounds(a, b);
  out.paired_rounds = static_cast<int>(rounds.size());
  out.cases_a = static_cast<int>(sa.order.size());
  out.cases_b = static_cast<int>(sb.order.size());
  for (const auto& key : sb.order)
    if (!sa.cases.count(key)) ++out.only_b;
  OpRanges ops;
  std::size_t done = 0;
  for (const auto& key : sa.order) {
    if (opt.progress) opt.progress(done++, sa.order.size());
    const auto itb = sb.cases.find(key);
    if (itb == sb.cases.end()) {
      ++out.only_a;
      continue;
    }
    compare_case(key, sa.cases.at(key), itb->second, rounds, opt, out, ops);
  }
  if (opt.progress) opt.progress(sa.order.size(), sa.order.size());
  for (const auto& op : ops.order) out.ops.push_back(ops.ranges.at(op));
  return out;
}

void refuse_profile_runs(const std::vector<RunData>& runs) {
  for (const auto& r : runs)
    if (const nlohmann::json& p = json_member(r.identity, "profile");
        p.is_boolean() && p.get<bool>())
      throw std::invalid_argument(r.dir.string() +
                                  " is a profile run (--profile): it launched each case under a "
                                  "profiler's ranges and timed nothing, so there is nothing to "
                                  "compare");
}

CompareResult compare_dirs(const std::vector<std::filesystem::path>& a,
                           const std::vector<std::filesystem::path>& b, const CompareOptions& opt) {
  auto runs_a = load_runs(a);
  auto runs_b = load_runs(b);
  // A side with no readable case row cannot be compared: bad input (exit 2), not "nothing
  // paired" with exit 0, which a CI gate would read as "no regression".
  auto check_side = [](const char* side, const std::vector<RunData>& runs,
                       const std::vector<std::filesystem::path>& dirs) {
    std::size_t cases = 0;
    int bad = 0;
    for (const auto& r : runs) {
      cases += r.log.cases.size();
      bad += r.log.bad_lines;
    }
    if (cases > 0) return;
    std::string msg = "side ";
    msg += side;
    msg += " ('";
    std::string names;
    for (const auto& d : dirs) {
      if (!names.empty()) names += ',';
      names += d.string();
    }
    msg += names.substr(0, 300);
    msg += "') holds no readable case row";
    if (bad > 0) {
      msg += " (";
      msg += std::to_string(bad);
      msg += " unreadable line(s))";
    }
    throw std::invalid_argument(msg);
  };
  check_side("A", runs_a, a);
  check_side("B", runs_b, b);
  refuse_profile_runs(runs_a);
  refuse_profile_runs(runs_b);
  return compare_loaded(runs_a, runs_b, opt);
}

}  // namespace caliber::report
