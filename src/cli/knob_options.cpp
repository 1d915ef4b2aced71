#include "cli/knob_options.hpp"

#include <algorithm>

namespace caliber::cli {

void KnobOptions::add_to(CLI::App& app, const std::set<std::string>& skip, bool with_ops,
                         bool listed) {
  for (const auto& spec : core::knob_table()) {
    if (skip.count(spec.name) || spec.flag.empty()) continue;  // environment-only knobs too
    // CLI11 leaves an option of the empty group out of --help and still parses it.
    const std::string group = listed ? spec.group : std::string();
    // The help line, then one line of facts: environment spelling, default, what is allowed.
    std::vector<std::string> facts;
    if (!spec.env.empty()) facts.push_back("env " + spec.env);
    if (!spec.default_text.empty()) facts.push_back("default " + spec.default_text);
    if (!spec.allowed.empty()) facts.push_back("allowed: " + spec.allowed);
    std::string desc = spec.help;
    for (std::size_t i = 0; i < facts.size(); ++i) desc += (i == 0 ? "\n  " : "; ") + facts[i];
    if (spec.name == "ops") {
      if (with_ops) app.add_option("ops", positional_ops, desc)->group(spec.group);  // listed
      continue;
    }
    std::string names = spec.flag;
    if (spec.name == "devices") names += ",--gpus";
    CLI::Option* opt = nullptr;
    if (spec.repeatable) {
      opt = app.add_option(names, repeated[spec.name], desc)
                ->group(group)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                ->allow_extra_args(false);
    } else if (spec.name == "profile") {
      // --profile alone means 3 launches; --profile=N picks N.
      opt = app.add_flag(names + "{3}", values[spec.name], desc)
                ->group(group)
                ->multi_option_policy(CLI::MultiOptionPolicy::Throw);  // given twice: refused
    } else {
      opt = app.add_option(names, values[spec.name], desc)->group(group);
    }
    if (!spec.allowed.empty() && spec.allowed.find(',') != std::string::npos &&
        spec.allowed.find(' ') != std::string::npos)
      opt->type_name("VALUE");
    // --shape may be repeated: CLI11 joins the values, the knob splits them again.
    if (spec.name == "shape") opt->multi_option_policy(CLI::MultiOptionPolicy::Join);
    options[spec.name] = opt;
  }
  if (!skip.count("quiet"))
    options["quiet"] =
        app.add_flag("--quiet", quiet, "No tuning progress line")->group(listed ? "Output" : "");
}

std::string run_knobs_footer() {
  std::string out =
      "Run knobs: every flag of `caliber run` applies to each round, with its meaning there\n"
      "(caliber run --help):";
  std::size_t col = 100;
  for (const auto& spec : core::knob_table()) {
    if (spec.flag.empty() || spec.name == "ops") continue;  // ops: the positional OP...
    if (col + spec.flag.size() + 1 > 96) {
      out += "\n ";
      col = 1;
    }
    out += " " + spec.flag;
    col += spec.flag.size() + 1;
  }
  return out + " --quiet";
}

std::string env_knobs_footer() {
  // One line a variable, from the knob table: the old runner's spellings (FlagGems users know
  // them) next to the flag that takes the same value.
  std::string out =
      "Environment variables, each the value of its flag when that flag is not given\n"
      "(FlagGems' runner's spellings kept; docs/flaggems.md, \"Knobs\"):";
  std::size_t width = 0;
  for (const auto& spec : core::knob_table()) width = std::max(width, spec.env.size());
  for (const auto& spec : core::knob_table()) {
    if (spec.env.empty()) continue;
    out += "\n  " + spec.env + std::string(width + 2 - spec.env.size(), ' ');
    out += spec.flag.empty()    ? "(no flag; default " + spec.default_text + ")"
           : spec.name == "ops" ? std::string("OP... (the positional ops)")
                                : spec.flag;
  }
  return out;
}

std::map<std::string, std::string> KnobOptions::given() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, opt] : options) {
    if (opt->count() == 0 || name == "quiet") continue;
    auto rep = repeated.find(name);
    if (rep == repeated.end()) {
      std::string v = values.at(name);
      // CLI11 joins a repeated --shape with newlines; any other value keeps its newline, which
      // the knob table refuses (a path with a newline must not become two items).
      if (name == "shape" && opt->count() > 1) std::replace(v.begin(), v.end(), '\n', ',');
      out[name] = v;
      continue;
    }
    std::string joined;  // each occurrence kept whole; the knob splits the commas
    for (const auto& v : rep->second) joined += (joined.empty() ? "" : ",") + v;
    out[name] = joined;
  }
  if (!positional_ops.empty()) {
    std::string joined;
    bool blank = false;
    for (const auto& o : positional_ops) {
      joined += (joined.empty() ? "" : ",") + o;
      if (core::split_list(o).empty()) blank = true;
    }
    out["ops"] = blank ? std::string() : joined;  // an empty argument is refused by the knob
  }
  return out;
}

core::Knobs KnobOptions::resolve() const {
  return core::resolve_knobs(given(), core::process_env);
}

std::vector<std::string> KnobOptions::as_args(const std::set<std::string>& skip) const {
  std::vector<std::string> args;
  for (const auto& [name, value] : given()) {
    if (skip.count(name) || name == "ops") continue;
    const auto* spec = core::find_knob(name);
    args.push_back(spec->flag + "=" + value);
  }
  if (quiet && !skip.count("quiet")) args.push_back("--quiet");
  return args;
}

}  // namespace caliber::cli
