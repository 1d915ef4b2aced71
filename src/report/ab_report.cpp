#include "report/ab_report.hpp"

namespace caliber::report {

bool switch_may_be_dead(const CompareResult& r) noexcept {
  return r.paired > 0 && !r.any_difference();
}

void add_ab_notes(Report& rep, const CompareResult& r, const std::string& a_desc,
                  const std::string& b_desc, int rounds) {
  if (!rep.tables.empty())
    rep.tables.front().notes.insert(
        rep.tables.front().notes.begin(),
        "A = " + a_desc + ", B = " + b_desc + "; " + std::to_string(rounds) +
            (r.paired_rounds > 0 ? " round(s), each one process timing A and B "
                                   "alternately block by block (paired)"
                                 : " interleaved round(s) per side, samples pooled "
                                   "per row"));
  if (switch_may_be_dead(r))
    rep.warnings.push_back("A (" + a_desc + ") and B (" + b_desc +
                           ") give the same numbers within "
                           "noise on every one of " +
                           std::to_string(r.paired) +
                           " paired case(s): no row is FASTER or SLOWER. The switch may not be "
                           "live (nothing reads it?); confirm the axis is live before trusting "
                           "this as 'no difference'.");
}

}  // namespace caliber::report
