// caliber list: the corpus of a backend, with the case count of each op at a level.
#include <iomanip>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "backends/registry.hpp"
#include "batch/flaggems_tree.hpp"
#include "cli/commands.hpp"
#include "cli/knob_options.hpp"
#include "run/cases.hpp"
#include "run/driver.hpp"
#include "settings/shapes.hpp"

namespace caliber::cli {
namespace {

// A FlagGems checkout's benchmark files, one op each (what `batch --flaggems` runs, one child
// per op), or those of the ops given (each refused unless the tree has its file, as batch
// refuses it): their cases are FlagGems' to yield, so there are no counts here.
int list_flaggems(const std::string& root, const std::vector<std::string>& wanted, bool names,
                  bool as_json) {
  run::check_flaggems_root(run::kFlagGemsFlag, root);
  const auto all = run::flaggems_files(root);
  std::map<std::string, std::filesystem::path> files;
  for (const auto& name : wanted) {
    try {
      const std::string op = run::flaggems_op_of("op", root, name);
      files.emplace(op, all.at(op));
    } catch (const std::invalid_argument& e) {
      throw core::UsageError(e.what());
    }
  }
  if (wanted.empty()) files = all;
  const auto shown = [](const std::filesystem::path& f) {
    return (std::filesystem::path("benchmark") / f).generic_string();
  };
  if (as_json) {
    nlohmann::json j = {{"flaggems", root}, {"ops", nlohmann::json::array()}};
    for (const auto& [op, file] : files) j["ops"].push_back({{"op", op}, {"file", shown(file)}});
    std::cout << j.dump(2) << "\n";
  } else if (names) {
    for (const auto& [op, file] : files) std::cout << op << "\n";
  } else {
    std::cout << "FlagGems benchmark files of " << root << "\n\n";
    for (const auto& [op, file] : files)
      std::cout << std::left << std::setw(24) << op << shown(file) << "\n";
    std::cout << "\n" << files.size() << " ops; their cases are FlagGems', yielded as it runs\n";
  }
  return kExitOk;
}

// The listing itself: ops (or their node ids) of the backend's corpus, as text or JSON.
int list_ops(const KnobOptions& knobs, bool names, bool cases, bool as_json) {
  core::Knobs k = knobs.resolve();
  if (!k.flaggems.empty()) {
    if (cases)
      throw core::UsageError(
          "--cases: a FlagGems tree's cases are FlagGems' to yield as it runs; "
          "allowed with --flaggems: --names, --json");
    return list_flaggems(k.flaggems, k.ops, names, as_json);
  }
  const auto& backend = run::resolve_backend_knob(k);
  run::Selection sel = run::select_cases(k, backend.name(), backend.capabilities().host);
  std::map<std::string, int> counts;
  for (const auto& c : sel.cases) ++counts[c.op];
  if (names) {
    for (const auto& e : sel.ops) std::cout << e.info.name << "\n";
  } else if (cases && as_json) {
    nlohmann::json j = {{"backend", backend.name()}, {"level", core::to_string(k.level)}};
    j["cases"] = nlohmann::json::array();
    for (const auto& c : sel.cases) j["cases"].push_back(c.node_id());
    std::cout << j.dump(2) << "\n";
  } else if (cases) {
    for (const auto& c : sel.cases) std::cout << c.node_id() << "\n";
  } else if (as_json) {
    nlohmann::json j = {{"backend", backend.name()},
                        {"level", core::to_string(k.level)},
                        {"shapes_file", sel.shapes_file.string()}};
    for (const auto& e : sel.ops) {
      std::vector<std::string> dts;
      for (auto d : e.info.dtypes) dts.emplace_back(to_string(d));
      j["ops"].push_back({{"op", e.info.name},
                          {"family", e.info.family},
                          {"dtypes", dts},
                          {"cases", counts[e.info.name]},
                          {"rng", e.info.rng},
                          {"refuses_capture", e.info.refuses_capture},
                          {"description", e.info.description},
                          {"source", e.source}});
    }
    j["total_cases"] = sel.cases.size();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "backend " << backend.name() << ", level " << core::to_string(k.level)
              << ", shapes " << sel.shapes_file.string() << "\n\n"
              << std::left << std::setw(16) << "op" << std::setw(13) << "family" << std::setw(22)
              << "dtypes" << std::right << std::setw(7) << "cases"
              << "  source\n";
    for (const auto& e : sel.ops) {
      std::string dts;
      for (auto d : e.info.dtypes) dts += (dts.empty() ? "" : ",") + std::string(to_string(d));
      std::cout << std::left << std::setw(16) << e.info.name << std::setw(13) << e.info.family
                << std::setw(22) << dts << std::right << std::setw(7) << counts[e.info.name] << "  "
                << e.source << "\n";
    }
    std::cout << "\n" << sel.ops.size() << " ops, " << sel.cases.size() << " cases\n";
  }
  return kExitOk;
}

void add_list(CLI::App& root, int& exit_code) {
  auto* sub = root.add_subcommand(
      "list", "List the ops of a backend's corpus and their case counts at a level.");
  auto knobs = std::make_shared<KnobOptions>();
  knobs->add_to(*sub, {"devices",
                       "timer",
                       "repeat",
                       "quantiles",
                       "return_mode",
                       "l2",
                       "min_samples",
                       "min_time",
                       "max_noise",
                       "timeout",
                       "warmup",
                       "throttle_fraction",
                       "clock",
                       "capture_deny",
                       "tune",
                       "replay_from",
                       "parallel_warmup",
                       "tune_cache",
                       "out",
                       "name",
                       "seed",
                       "columns",
                       "profile",
                       "quiet"});
  auto names = std::make_shared<bool>(false);
  auto cases = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  auto* names_opt = sub->add_flag("--names", *names, "Only the op names, one per line");
  auto* cases_opt = sub->add_flag("--cases", *cases, "Every case's node id");
  auto* json_opt = sub->add_flag("--json", *as_json, "JSON output (with --cases: the node ids)");
  // --names is plain text: with --cases or --json one of them would be ignored.
  names_opt->excludes(cases_opt);
  names_opt->excludes(json_opt);
  sub->callback([=, &exit_code] {
    exit_code = run_command([&] { return list_ops(*knobs, *names, *cases, *as_json); },
                            /*invalid_argument_is_usage=*/true);
  });
}

CALIBER_COMMAND(30, add_list);

}  // namespace
}  // namespace caliber::cli
