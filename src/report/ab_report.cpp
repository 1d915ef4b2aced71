#include "report/ab_report.hpp"

#include <fstream>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "records/identity.hpp"
#include "report/html.hpp"

namespace caliber::report {

namespace fs = std::filesystem;

bool switch_may_be_dead(const CompareResult& r) noexcept {
  return r.paired > 0 && !r.any_difference();
}

void add_ab_notes(Report& rep, const CompareResult& r, const std::string& a_desc,
                  const std::string& b_desc, int rounds) {
  const std::string how =
      rounds <= 0 ? std::to_string(r.runs_a) + " run(s) of A, " + std::to_string(r.runs_b) +
                        " of B, named by hand"
      : r.paired_rounds > 0
          ? std::to_string(rounds) + " round(s), each one process timing A and B block by block"
          : std::to_string(rounds) + " interleaved round(s), a process per side and round";
  if (!rep.tables.empty())
    rep.tables.front().notes.insert(
        rep.tables.front().notes.begin(),
        "A = " + a_desc + "; B = " + b_desc + "; " + how + " (docs/ab.md)");
  if (!switch_may_be_dead(r)) return;
  // All SAME says the two sides timed alike; UNSURE pairs say only that noise hid any
  // difference: the warning says which of the two it rests on.
  int same = 0, primary = 0;
  for (const auto& p : r.pairs)
    if (p.primary) {
      ++primary;
      same += p.verdict == Verdict::same ? 1 : 0;
    }
  if (same == primary)
    rep.warnings.push_back("A and B gave the same numbers within noise on all " +
                           std::to_string(r.paired) +
                           " paired case(s): the switch may not be live (does anything read "
                           "it?); confirm that before reading this as no difference");
  else
    rep.warnings.push_back(
        "no pair of A and B differs beyond noise (" + std::to_string(same) + " SAME, " +
        std::to_string(primary - same) + " UNSURE of " + std::to_string(primary) +
        " primary pairs): if a difference was expected, the switch may not be live (does "
        "anything read it?); the UNSURE pairs' notes say what would settle them");
}

std::optional<AbDir> read_ab_dir(const fs::path& dir) {
  auto sides = ab_sides(dir);
  if (!sides) return std::nullopt;
  AbDir d;
  d.a = std::move(sides->first);
  d.b = std::move(sides->second);
  d.rounds = static_cast<int>(d.a.size());
  try {
    std::ifstream in(dir / "ab.json");
    const auto j = nlohmann::json::parse(in);
    const auto desc = [&](const char* k, std::string& into) {
      const auto& s = j.at(k).at("switch");
      if (s.is_string() && !s.get<std::string>().empty()) into = s.get<std::string>();
    };
    desc("a", d.a_desc);
    desc("b", d.b_desc);
  } catch (const std::exception&) {
    // a malformed ab.json: the sides stay "(not recorded)", the rounds are still compared
  }
  return d;
}

namespace {
// The op libraries a run's identity names, joined; "" when none.
std::string ops_libs_of(const fs::path& run) {
  try {
    const auto id = core::read_identity(run);
    // A FlagGems run records its tree as "flaggems:ROOT" (docs/run-log.md): named by the flag
    // that gave it, since --ops-lib is refused with --flaggems.
    constexpr std::string_view kFlagGems = "flaggems:";
    std::string libs, trees;
    if (const auto it = id.find("ops_libs"); it != id.end() && it->is_array())
      for (const auto& l : *it)
        if (l.is_string()) {
          const std::string v = l.get<std::string>();
          std::string& into = v.rfind(kFlagGems, 0) == 0 ? trees : libs;
          if (!into.empty()) into += ',';
          into += &into == &trees ? v.substr(kFlagGems.size()) : v;
        }
    std::string out = trees.empty() ? "" : "--flaggems " + trees;
    if (!libs.empty()) {
      if (!out.empty()) out += ' ';
      out += "--ops-lib=";
      out += libs;
    }
    return out;
  } catch (const std::exception&) {
    return "";
  }
}
// Whether every run of `runs` is one of `mine` (the same directory, however spelt).
bool all_among(const std::vector<fs::path>& runs, const std::vector<fs::path>& mine) {
  for (const auto& r : runs) {
    bool in = false;
    std::error_code ec;
    for (const auto& m : mine) in = in || fs::equivalent(m, r, ec);
    if (!in) return false;
  }
  return true;
}

// "x/A-1/" is "x/A-1".
std::vector<fs::path> run_paths(const std::vector<fs::path>& given) {
  std::vector<fs::path> runs;
  for (auto r : given) {
    r = r.lexically_normal();
    runs.push_back(r.filename().empty() ? r.parent_path() : r);
  }
  return runs;
}

}  // namespace

std::optional<AbDir> ab_dir_of(const std::vector<fs::path>& given, char side) {
  const auto runs = run_paths(given);
  std::set<fs::path> parents;
  for (const auto& r : runs) parents.insert(r.parent_path());
  std::optional<AbDir> d;
  try {
    if (parents.size() == 1) d = read_ab_dir(*parents.begin());
  } catch (const std::exception&) {
    // an ab.json beside runs of one side only: not that directory's side
  }
  if (d && !runs.empty() && all_among(runs, side == 'A' ? d->a : d->b)) return d;
  return std::nullopt;
}

std::string describe_side(const std::vector<fs::path>& given, char side) {
  if (given.empty()) return "(no runs)";
  const auto runs = run_paths(given);
  if (const auto d = ab_dir_of(given, side)) {
    const std::string& desc = side == 'A' ? d->a_desc : d->b_desc;
    if (desc != AbDir{}.a_desc) return desc;
  }
  std::set<std::string> libs;
  for (const auto& r : runs) libs.insert(ops_libs_of(r));
  const std::string name =
      runs.front().filename().string() +
      (runs.size() > 1 ? " and " + std::to_string(runs.size() - 1) + " more" : std::string());
  if (libs.size() == 1 && !libs.begin()->empty()) return *libs.begin() + " (" + name + ")";
  return name;
}

}  // namespace caliber::report
