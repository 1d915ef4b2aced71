#include "run/estimate.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/format.hpp"
#include "core/text_table.hpp"

namespace caliber::run {

CostModel cost_model(bool host, const core::Knobs& k) {
  CostModel m;
  const double warmup = std::min(2 * k.warmup_s, 2.0);
  if (host) {
    // The cpu backend, measured on this project's two-core machine (docs/measurements.md): a
    // provider's host timer rarely meets its noise target before the timeout under load.
    m.case_s = 0.01;
    m.per_gb_inputs_s = 0.5;
    m.per_gb_check_s = 4.0;
    m.check_cap_gb = 1.0;
    m.sample_s = warmup + std::max(k.min_time_s, 0.9 * k.timeout_s);
    return m;
  }
  // A device (from the H200 profile of issue 30 and docs/timing.md): sampling to a 0.5% noise
  // target takes ~0.08 s a provider; a sustained settle 0.1 s for cool work, 1.6 s for a GEMM at
  // its power limit, ~0.1 s carried; the gate samples at most 2^24 elements on the host.
  m.case_s = 0.02;
  m.per_gb_inputs_s = 0.005;
  m.per_gb_check_s = 1.0;
  m.check_cap_gb = 0.2;
  m.sample_s = warmup + std::max(0.08, 4 * k.min_time_s);
  if (k.clock == core::ClockRegime::sustained) {
    m.settle_cool_s = 0.1;
    m.settle_capped_s = 1.6;
    m.settle_carried_s = k.settle_carry ? 0.1 : 0.0;
  }
  m.peaks_s = 10;
  return m;
}

double estimate_case_s(const CostModel& m, const OpInfo& info, const Op& op, const Case& c,
                       const core::Knobs& k) {
  double gb = 0;
  try {
    gb = static_cast<double>(op.bytes_needed(c)) / 1e9;
  } catch (const std::exception&) {
    return m.case_s;  // a shape whose size does not fit is skipped at once
  }
  const bool capped = info.family == "blas";
  double settle = 0;
  for (int p = 0; p < m.providers; ++p) {
    const double full = capped ? m.settle_capped_s : m.settle_cool_s;
    // With --settle carry, the case's later providers carry the first one's state.
    settle += p > 0 && k.settle_carry && m.settle_carried_s > 0 ? std::min(full, m.settle_carried_s)
                                                                : full;
  }
  const double check = m.per_gb_check_s * std::min(gb, m.check_cap_gb);
  return m.case_s + m.per_gb_inputs_s * gb + check + settle + m.providers * m.sample_s;
}

std::vector<double> estimate_cases(const CostModel& m, const Selection& sel, const core::Knobs& k) {
  std::vector<double> out;
  out.reserve(sel.cases.size());
  for (std::size_t i = 0; i < sel.cases.size(); ++i) {
    const Op& op = *sel.case_op[i];
    out.push_back(estimate_case_s(m, op.info(), op, sel.cases[i], k));
  }
  return out;
}

void print_estimate(std::ostream& out, const CostModel& m, const Selection& sel,
                    const std::vector<double>& est, bool peaks_cached) {
  struct PerOp {
    int cases = 0;
    double gb = 0, s = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, PerOp> per;
  for (std::size_t i = 0; i < sel.cases.size(); ++i) {
    const std::string& name = sel.cases[i].op;
    if (per.find(name) == per.end()) order.push_back(name);
    PerOp& p = per[name];
    ++p.cases;
    try {
      p.gb += static_cast<double>(sel.case_op[i]->bytes_needed(sel.cases[i])) / 1e9;
    } catch (const std::exception&) {
    }
    p.s += est[i];
  }
  core::TextTable t({false, true, true, true});
  t.add_row({"op", "cases", "GB", "est s"});
  t.add_rule();
  double total = 0;
  for (const auto& name : order) {
    const PerOp& p = per[name];
    t.add_row({name, std::to_string(p.cases), core::fixed(p.gb, 2), core::fixed(p.s, 1)});
    total += p.s;
  }
  out << t.str();
  const double peaks = peaks_cached ? 0.0 : m.peaks_s;
  out << "estimate: " << sel.cases.size() << " cases, " << core::fixed(total, 1) << " s in cases + "
      << core::fixed(peaks, 1) << " s peaks" << (peaks_cached ? " (cached)" : "") << " = "
      << core::fixed(total + peaks, 1)
      << " s (tuning sweeps of keys missing from the tune cache not included)\n";
}

double eta_s(const std::vector<double>& est, std::size_t done, double elapsed_s) {
  const std::size_t n = std::min(done, est.size());
  const double done_est =
      std::accumulate(est.begin(), est.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
  const double left = std::accumulate(est.begin() + static_cast<std::ptrdiff_t>(n), est.end(), 0.0);
  // The finished cases' ratio, shrunk toward the model by a prior worth a quarter of the run's
  // estimate: the first cases (a run's cheapest, often) cannot scale the rest by 0.25 on their
  // own. The H200's main job of 2026-12-02 read 0.29x the true time left at its first case with
  // the raw ratio, 1.13x with the prior (docs/measurements.md).
  const double prior = kEtaPrior * (done_est + left);
  const double ratio = n > 0 && done_est + prior > 0
                           ? std::clamp((elapsed_s + prior) / (done_est + prior), 0.25, 4.0)
                           : 1.0;
  return left * ratio;
}

}  // namespace caliber::run
