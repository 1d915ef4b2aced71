// The A/B verdict of `caliber ab`: the compare of all A rounds against all B rounds, and the
// warning the old A/B scripts never gave: when nothing differs beyond noise anywhere, the switch
// under test may not be read by anything at all.
#pragma once

#include <string>

#include "report/compare.hpp"

namespace caliber::report {

// True when pairs were compared and none is FASTER or SLOWER.
[[nodiscard]] bool switch_may_be_dead(const CompareResult& r) noexcept;
// Adds the ab-specific lines to a compare report: the sides, and the dead-switch warning.
void add_ab_notes(Report& rep, const CompareResult& r, const std::string& a_desc,
                  const std::string& b_desc, int rounds);

}  // namespace caliber::report
