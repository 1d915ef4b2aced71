// The tables of a comparison (pairs, per-op ranges, pairing) and their notes: every number in a
// column says what it is, and each note is one line that names the page explaining it
// (docs/ab.md, "Reading the pairs table"). The derivations stay in the calibration files and docs.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "report/compare.hpp"

namespace caliber::report {

namespace {

std::string fmt(double v, int prec = 4) {
  std::ostringstream o;
  o.precision(prec);
  o << v;
  return o.str();
}

// A percentage to `prec` significant digits; below 0.0005% it reads 0% (a rounding residue such
// as 2e-15% says nothing).
std::string pct(double fraction, int prec = 3) {
  const double v = fraction * 100;
  return (std::fabs(v) < 5e-4 ? std::string("0") : fmt(v, prec)) + "%";
}

// "to settle it: about 5 runs a side, or --min-time x3" for an UNSURE pair; a paired pair's runs
// are rounds (caliber ab --rounds N).
std::string resolution_text(const core::Resolution& res, bool paired) {
  if (!res.possible)
    return "an effect between --noise-band and --min-effect (or on an edge): neither SAME nor "
           "FASTER/SLOWER can come of it";
  std::string t = res.toward_same ? "below --min-effect; SAME needs " : "to settle it: ";
  if (res.rounds == 0 && res.min_time_factor == 0) return t + "a rerun";
  if (res.rounds > 0)
    t += "about " + std::to_string(res.rounds) + (paired ? " rounds" : " runs a side");
  if (res.min_time_factor > 0) {
    if (res.rounds > 0) t += ", or ";
    const double f = std::max(1.5, std::ceil(res.min_time_factor * 2) / 2);
    t += f > 100 ? std::string("a far longer --min-time") : "--min-time x" + fmt(f, 3);
  }
  return t;
}

// The calibration file a set of terms came from ("cpu.yaml"), or "as given" (--run-noise).
std::string terms_source(const std::string& from) {
  return from.empty() ? std::string("as given") : from;
}

// "26.2% (blas 30%), + 1.49 us / median": a set of noise terms in one phrase.
std::string terms_text(double p, const std::map<std::string, double>& classes, double floor_us) {
  std::string s = pct(p);
  std::string fams;
  for (const auto& [f, v] : classes) fams += (fams.empty() ? "" : ", ") + f + " " + pct(v);
  if (!fams.empty()) s += " (" + fams + ")";
  if (floor_us > 0) s += " + " + fmt(floor_us, 3) + " us / median";
  return s;
}

// What the ratio column of a pair is: the medians' ratio or the paired blocks' mean log ratio.
const char* ratio_of(const PairResult& p) {
  return p.paired ? "blocks" : "medians";
}

}  // namespace

std::vector<std::string> mismatch_lines(const CompareResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.mismatches)
    out.push_back("CALIBER MISMATCH: " + d.key + ": " + (d.a.empty() ? "(none)" : d.a) + " vs " +
                  (d.b.empty() ? "(none)" : d.b));
  for (const auto& p : r.identity_problems) out.push_back("CALIBER MISMATCH: " + p);
  return out;
}

// The paired pairs timed in two placement phases: how many, and the placement effect the
// crossover took out of their ratios (median, largest and its row); empty when none was.
std::string crossover_summary(const CompareResult& r) {
  std::vector<double> place;
  const PairResult* top = nullptr;
  for (const auto& p : r.pairs) {
    if (!p.paired || p.phases != 2) continue;
    place.push_back(p.placement);
    if (top == nullptr || p.placement > top->placement) top = &p;
  }
  if (top == nullptr) return "";
  return "placement crossover: " + std::to_string(place.size()) +
         " pair(s) timed in two phases; the placement effect it cancelled: median " +
         pct(core::median(place), 2) + ", largest " + pct(top->placement) + " (" + top->op + " " +
         top->dtype + " " + top->shape + " " + top->provider +
         ") (docs/ab.md#reading-the-pairs-table)";
}

namespace {

// The notes of the pairs' noise terms: the run-to-run term of unpaired pairs, the paired
// residual of paired ones (crossed, and one-phase where that differs), the crossover's summary.
void add_term_notes(const CompareResult& r, std::vector<std::string>& notes) {
  const NoiseModel& n = r.noise;
  const auto paired =
      std::count_if(r.pairs.begin(), r.pairs.end(), [](const PairResult& p) { return p.paired; });
  const auto one_phase = std::count_if(r.pairs.begin(), r.pairs.end(), [](const PairResult& p) {
    return p.paired && p.phases != 2;
  });
  if (static_cast<std::size_t>(paired) < r.pairs.size() || r.pairs.empty())
    notes.push_back("ratio_of medians: the CI is widened by the run-to-run term " +
                    terms_text(n.run_noise, n.run_noise_class, n.run_noise_floor_us) +
                    " per side / sqrt(runs), --run-noise, " + terms_source(n.run_noise_from) +
                    " (docs/ab.md#calibration-files)");
  if (paired == 0) return;
  const bool own = n.paired_one_phase != n.paired_noise ||
                   n.paired_one_phase_class != n.paired_noise_class ||
                   n.paired_one_phase_floor_us != n.paired_noise_floor_us;
  notes.push_back(std::string("ratio_of blocks: the CI is widened by the paired residual ") +
                  (own ? "of a pair timed in two placement phases " : "") +
                  terms_text(n.paired_noise, n.paired_noise_class, n.paired_noise_floor_us) +
                  " / sqrt(rounds), --paired-noise, " + terms_source(n.paired_from) +
                  " (docs/ab.md#calibration-files)");
  if (one_phase > 0 && own)
    notes.push_back(
        std::to_string(one_phase) +
        " paired pair(s) were timed in one placement phase and take the one-phase "
        "residual " +
        terms_text(n.paired_one_phase, n.paired_one_phase_class, n.paired_one_phase_floor_us) +
        ", " + terms_source(n.paired_one_phase_from) + " (docs/ab.md#reading-the-pairs-table)");
  if (const std::string x = crossover_summary(r); !x.empty()) notes.push_back(x);
}

// A pair's note cell: fallback, paired blocks and crossover, what would settle an UNSURE one.
std::string pair_note(const PairResult& p, const CompareOptions& opt) {
  std::string note = p.fallback ? "fallback row" : "";
  const auto add = [&](const std::string& s) { note += (note.empty() ? "" : "; ") + s; };
  if (p.paired)
    add(std::to_string(p.blocks) + " blocks" +
        (p.phases == 2 ? ", crossover (placement " + pct(p.placement) + ")" : ""));
  if (p.verdict == Verdict::unsure &&
      (static_cast<int>(p.n_a) < opt.min_samples || static_cast<int>(p.n_b) < opt.min_samples))
    add("too few samples");
  else if (p.verdict == Verdict::unsure)
    add(resolution_text(p.resolution, p.paired));
  return note;
}

// The per-pair table, with the verdict rule and the noise terms in its notes.
Table pairs_table(const CompareResult& r, const CompareOptions& opt) {
  Table pairs;
  pairs.id = "pairs";
  pairs.title = "Pairs: ratio = latency of B / latency of A, as ratio_of says (> 1: B slower)";
  pairs.columns = {"op",       "dtype",   "shape",       "role",        "provider",
                   "n_a",      "n_b",     "median_a_ms", "median_b_ms", "ratio",
                   "ratio_of", "ci95_lo", "ci95_hi",     "verdict",     "note"};
  bool paired = false, unpaired = false;
  for (const auto& p : r.pairs) {
    (p.paired ? paired : unpaired) = true;
    pairs.rows.push_back({text_cell(p.op), text_cell(p.dtype), text_cell(p.shape),
                          text_cell(p.role), text_cell(p.provider),
                          integer_cell(static_cast<long long>(p.n_a)),
                          integer_cell(static_cast<long long>(p.n_b)), number_cell(p.median_a),
                          number_cell(p.median_b), number_cell(p.ratio), text_cell(ratio_of(p)),
                          number_cell(p.ci.lo), number_cell(p.ci.hi),
                          text_cell(to_string(p.verdict)), text_cell(pair_note(p, opt))});
  }
  if (unpaired)
    pairs.notes.push_back(
        "ratio_of medians: ratio = median_b_ms / median_a_ms (a side's figure: the median of its "
        "runs' latency_ms), CI a bootstrap of the kept samples around it "
        "(docs/ab.md#reading-the-pairs-table)");
  if (paired)
    pairs.notes.push_back(
        "ratio_of blocks: ratio = exp(mean of ln(B/A) over the paired blocks), CI a t interval "
        "over the blocks, so it can differ from median_b_ms / median_a_ms "
        "(docs/ab.md#reading-the-pairs-table)");
  pairs.notes.push_back("verdict: FASTER/SLOWER when the " + fmt(opt.confidence * 100, 3) +
                        "% CI excludes 1 and the effect is at least " + pct(opt.min_effect) +
                        " (--min-effect), SAME when the CI lies inside +/-" +
                        pct(r.band_used > 0 ? r.band_used : opt.noise_band) +
                        " (--noise-band), else UNSURE (docs/ab.md#the-rule)");
  add_term_notes(r, pairs.notes);
  for (const auto& line : r.noise.calibration_notes) pairs.notes.push_back(line);
  if (r.unsure_by_run_noise > 0)
    pairs.notes.push_back(std::to_string(r.unsure_by_run_noise) +
                          " pair(s) are UNSURE only because of the noise terms; the note of each "
                          "says what would settle it (docs/ab.md#the-rule)");
  if (r.cross_device)
    pairs.notes.push_back("the sides ran on different devices (uuid" +
                          (r.cross_nodes.empty() ? std::string() : "; nodes " + r.cross_nodes) +
                          "): the band is +/-" + pct(opt.device_band) +
                          " (--device-band) (docs/ab.md#the-rule)");
  return pairs;
}

// The per-op ranges of ratios.
Table ops_table(const CompareResult& r) {
  Table ops;
  ops.id = "ops";
  ops.title = "Per op: range of the pairs' ratio (candidate, or baseline of a baseline-only op)";
  ops.columns = {"op",     "pairs", "ratio_min", "ratio_max", "faster",
                 "slower", "same",  "unsure",    "note"};
  for (const auto& o : r.ops)
    ops.rows.push_back({text_cell(o.op), integer_cell(o.pairs), number_cell(o.min),
                        number_cell(o.max), integer_cell(o.faster), integer_cell(o.slower),
                        integer_cell(o.same), integer_cell(o.unsure),
                        text_cell(o.fallback ? "(fallback rows)" : "")});
  if (std::any_of(r.ops.begin(), r.ops.end(), [](const OpRange& o) { return o.fallback; }))
    ops.notes.push_back(
        "(fallback rows): a row of that op carries BENCHMARK_DIRECT_NO_CUDAGRAPH on either side, "
        "timed under another regime (docs/timing.md)");
  return ops;
}

// How the cases paired: per side, paired, only on one side, excluded and why.
Table pairing_table(const CompareResult& r) {
  Table pairing;
  pairing.id = "pairing";
  pairing.title = "Pairing by (op, dtype, shape): cases per side";
  pairing.columns = {"side",
                     "runs",
                     "cases",
                     "paired",
                     "only_here",
                     "excluded_failed",
                     "excluded_skipped",
                     "excluded_no_latency"};
  pairing.rows.push_back({text_cell("A"), integer_cell(r.runs_a), integer_cell(r.cases_a),
                          integer_cell(r.paired), integer_cell(r.only_a),
                          integer_cell(r.excluded_a.failed), integer_cell(r.excluded_a.skipped),
                          integer_cell(r.excluded_a.no_latency)});
  pairing.rows.push_back({text_cell("B"), integer_cell(r.runs_b), integer_cell(r.cases_b),
                          integer_cell(r.paired), integer_cell(r.only_b),
                          integer_cell(r.excluded_b.failed), integer_cell(r.excluded_b.skipped),
                          integer_cell(r.excluded_b.no_latency)});
  pairing.notes.push_back(
      "paired " + std::to_string(r.paired) + " case(s); unpaired: " + std::to_string(r.only_a) +
      " only in A, " + std::to_string(r.only_b) + " only in B; excluded " +
      std::to_string(r.excluded) +
      " (not ok with a positive latency on both sides) (docs/ab.md#reading-the-pairs-table)");
  if (!r.duplicates_a.empty()) pairing.notes.push_back("side A: " + r.duplicates_a);
  if (!r.duplicates_b.empty()) pairing.notes.push_back("side B: " + r.duplicates_b);
  return pairing;
}

}  // namespace

Report compare_report(const CompareResult& r, const CompareOptions& opt) {
  Report rep;
  rep.banners = mismatch_lines(r);
  if (r.mismatch())
    rep.banners.push_back(opt.allow_mismatch
                              ? "The two sides differ in caliber (--allow-mismatch): the ratios "
                                "below mix a change of caliber with the change under test"
                              : "The two sides differ in caliber: not comparable (--allow-mismatch "
                                "to compare anyway)");

  rep.tables.push_back(pairs_table(r, opt));
  rep.tables.push_back(ops_table(r));
  rep.tables.push_back(pairing_table(r));
  if (!r.loaded_host.empty()) rep.warnings.push_back(r.loaded_host);
  for (const auto& reg : r.regressions) rep.warnings.push_back("REGRESSION: " + reg);
  for (const auto& c : r.broken)
    rep.warnings.push_back(std::string(opt.fail_on_regression_pct ? "REGRESSION: " : "") + c +
                           ": ok in A, failed in B");
  if (r.paired == 0)
    rep.warnings.push_back(
        opt.fail_on_regression_pct
            ? "no case could be paired: nothing was compared, so --fail-on-regression fails "
              "(a gate that judged nothing is no pass)"
            : "no case could be paired: nothing was compared");
  return rep;
}

int compare_exit_code(const CompareResult& r, const CompareOptions& opt) {
  if (r.mismatch() && !opt.allow_mismatch) return 2;
  if (opt.fail_on_regression_pct && (!r.regressions.empty() || !r.broken.empty() || r.paired == 0))
    return 1;
  return 0;
}

}  // namespace caliber::report
