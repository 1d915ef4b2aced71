// The A/B verdict of `caliber ab`: the compare of all A rounds against all B rounds, and the
// warning the old A/B scripts never gave: when nothing differs beyond noise anywhere, the switch
// under test may not be read by anything at all. Also what a directory `caliber ab` wrote says
// about its sides (ab.json), for `caliber compare AB_DIR` and the A/B page.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "report/compare.hpp"

namespace caliber::report {

struct AbDir;

// True when pairs were compared and none is FASTER or SLOWER.
[[nodiscard]] bool switch_may_be_dead(const CompareResult& r) noexcept;
// Adds the ab-specific lines to a compare report: the sides, and the dead-switch warning.
// `rounds` > 0: the sides are rounds `caliber ab` ran; 0: runs named by hand (N runs a side).
void add_ab_notes(Report& rep, const CompareResult& r, const std::string& a_desc,
                  const std::string& b_desc, int rounds);
// The ab directory that holds every run of `runs` on side `side` (its ab.json), if any.
[[nodiscard]] std::optional<AbDir> ab_dir_of(const std::vector<std::filesystem::path>& runs,
                                             char side);

// A directory `caliber ab` wrote: its rounds' run directories per side and what each side was
// (ab.json's "switch": the --env values, the flags or the op library as given).
struct AbDir {
  std::vector<std::filesystem::path> a, b;
  std::string a_desc = "(not recorded)", b_desc = "(not recorded)";
  int rounds = 0;  // the rounds that left a run directory on side A
};
// nullopt when `dir` holds no ab.json; throws std::invalid_argument when it holds no runs of a
// side. A malformed ab.json leaves the descriptions "(not recorded)".
[[nodiscard]] std::optional<AbDir> read_ab_dir(const std::filesystem::path& dir);
// What a side of runs was, for a title: the ab.json switch of the ab directory that holds them
// all (as side `side`), else the op libraries their identities name, else their directory names.
[[nodiscard]] std::string describe_side(const std::vector<std::filesystem::path>& runs, char side);

}  // namespace caliber::report
