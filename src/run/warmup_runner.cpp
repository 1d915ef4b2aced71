// Parallel warmup (README.md, Autotune): the parent shards the autotune sweep over N devices in
// child processes (`caliber run ... --tune-shard i/N --shard-cache FILE`), each pinned to the
// physical device behind the caller's index, merges their winners and counts the keys whose
// winner differs between shards. Measurement stays serial on one device, in the caller.
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "proc/exit_record.hpp"
#include "proc/process.hpp"
#include "records/identity.hpp"
#include "records/rundir.hpp"
#include "run/case_runner.hpp"
#include "run/warmup_runner.hpp"

namespace caliber::run {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The flag of a knob as the knob table spells it, so the child's command line cannot drift from
// the table when a flag is renamed.
std::string flag_of(const std::string& knob) {
  const core::KnobSpec* spec = core::find_knob(knob);
  if (spec == nullptr) throw std::logic_error("knobs_to_args: no knob '" + knob + "'");
  return spec->flag;
}

// Shortest text that parses back to the same double: the child must time with the same budget.
std::string exact(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return std::to_string(v);
  return std::string(buf, p);
}

template <class T, class F>
std::string joined(const std::vector<T>& items, F&& text) {
  std::string s;
  for (const auto& it : items) {
    if (!s.empty()) s += ',';
    s += text(it);
  }
  return s;
}

std::string fixed1(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v;
  return os.str();
}

std::string last_line_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

std::vector<double> case_costs(const Selection& sel) {
  std::vector<double> costs(sel.cases.size(), 1.0);
  for (std::size_t i = 0; i < sel.cases.size(); ++i) {
    // The bytes a case needs grow with its work; a failing estimate only costs balance.
    try {
      costs[i] = std::max(1.0, static_cast<double>(sel.case_op[i]->bytes_needed(sel.cases[i])));
    } catch (const std::exception&) {
      costs[i] = 1.0;
    }
  }
  return costs;
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  int i = -1, n = 0;
  bool ok = slash != std::string::npos;
  if (ok) {
    const char* b = text.data();
    auto r1 = std::from_chars(b, b + slash, i);
    auto r2 = std::from_chars(b + slash + 1, b + text.size(), n);
    ok = r1.ec == std::errc() && r1.ptr == b + slash && r2.ec == std::errc() &&
         r2.ptr == b + text.size() && n >= 1 && i >= 0 && i < n;
  }
  if (!ok) throw UsageError("--tune-shard: '" + text + "' is not a shard i/N with 0 <= i < N");
  return {i, n};
}

// The same choice as the driver's (the one timer rule): a shard tunes with the timer its parent
// measures with.
core::TimerKind resolve_timer(const core::Knobs& k, const backends::Capabilities& caps) {
  return timing::choose_timer(caps, k.timer).kind;
}

}  // namespace

std::vector<std::string> knobs_to_args(const core::Knobs& k) {
  std::vector<std::string> a;
  // Positional ops first: they are the subcommand's positional arguments.
  a.insert(a.end(), k.ops.begin(), k.ops.end());
  auto add = [&](const std::string& knob, const std::string& value) {
    a.push_back(flag_of(knob));
    a.push_back(value);
  };
  auto add_nonempty = [&](const std::string& knob, const std::string& value) {
    if (!value.empty()) add(knob, value);
  };
  auto same = [](const std::string& s) { return s; };
  add("backend", k.backend);
  add_nonempty("op_file", k.op_file);
  add_nonempty("node", k.node);
  add_nonempty("dtypes", joined(k.dtypes, same));
  add("level", std::string(core::to_string(k.level)));
  add("shape_mode", std::string(core::to_string(k.shape_mode)));
  add_nonempty("shapes_file", k.shapes_file);
  add_nonempty("ops_lib", joined(k.ops_lib, [](const fs::path& p) { return p.string(); }));
  add_nonempty("py_ops", k.py_ops);
  add("timer", core::to_string(k.timer));
  add("repeat", std::to_string(k.repeat));
  add_nonempty("quantiles", joined(k.quantiles, exact));
  add("return_mode", std::string(core::to_string(k.return_mode)));
  add("l2", core::to_string(k.l2));
  add("min_samples", std::to_string(k.min_samples));
  add("min_time", exact(k.min_time_s));
  add("max_noise", k.max_noise > 0 ? exact(k.max_noise) : std::string("auto"));
  add("clock", core::to_string(k.clock));
  add("timeout", exact(k.timeout_s));
  add("warmup", exact(k.warmup_s));
  add("throttle_fraction", exact(k.throttle_fraction));
  add_nonempty("capture_deny", joined(k.capture_deny, same));
  add("tune", core::to_string(k.tune));
  add_nonempty("replay_from", k.replay_from);
  add_nonempty("tune_cache", k.tune_cache);
  if (k.seed != 0) add("seed", std::to_string(k.seed));
  return a;
}

std::vector<std::vector<std::size_t>> plan_warmup_shards(const std::vector<Case>& cases,
                                                         const std::vector<double>& costs,
                                                         int n_shards) {
  if (costs.size() != cases.size())
    throw std::invalid_argument("plan_warmup_shards: " + std::to_string(costs.size()) +
                                " costs for " + std::to_string(cases.size()) + " cases");
  // Variants of one shape (e.g. a column-major B) map to the same tune key: tuning them on two
  // shards would sweep the key twice and could report a disagreement that is only noise.
  using GroupKey = std::tuple<std::string, std::string, std::vector<std::int64_t>>;
  std::map<GroupKey, std::size_t> group_of;
  std::vector<std::vector<std::size_t>> groups;
  std::vector<double> group_cost;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    GroupKey key{cases[i].op, std::string(to_string(cases[i].dtype)), cases[i].shape};
    auto [it, inserted] = group_of.try_emplace(key, groups.size());
    if (inserted) {
      groups.emplace_back();
      group_cost.push_back(0);
    }
    groups[it->second].push_back(i);
    group_cost[it->second] += std::max(costs[i], 0.0);
  }
  const auto plan = tune::plan_shards_by_cost(group_cost, n_shards);
  std::vector<std::vector<std::size_t>> shards(plan.size());
  for (std::size_t s = 0; s < plan.size(); ++s) {
    for (std::size_t g : plan[s])
      shards[s].insert(shards[s].end(), groups[g].begin(), groups[g].end());
    std::sort(shards[s].begin(), shards[s].end());
  }
  return shards;
}

namespace {

// Every shard's pin before any child starts: a bad index is refused, not half a sweep.
std::vector<std::map<std::string, std::string>> shard_pins(const backends::Backend& backend,
                                                           const std::vector<int>& devices, int n) {
  std::vector<std::map<std::string, std::string>> pins;
  for (int s = 0; s < n; ++s) {
    try {
      pins.push_back(backend.child_env(devices[static_cast<std::size_t>(s)]));
    } catch (const std::exception& e) {
      throw UsageError(std::string("--devices: ") + e.what());
    }
  }
  return pins;
}

// The children use the parent's seed, so that they tune on the inputs it will measure.
std::uint64_t shard_seed(std::uint64_t seed, const fs::path& run_dir) {
  if (seed != 0) return seed;
  try {
    seed = core::read_identity(run_dir).value("seed", std::uint64_t{0});
  } catch (const std::exception&) {
    return 0;
  }
  // A seed the --seed knob cannot take is left out: the children then draw their own.
  return seed > (std::uint64_t{1} << 62) ? 0 : seed;
}

std::string pin_text(const std::map<std::string, std::string>& pin) {
  std::string text;
  for (const auto& [var, value] : pin) {
    if (!text.empty()) text += ' ';
    text += var + '=' + value;
  }
  return text.empty() ? "no visibility variable" : text;
}

// The child of shard s of n: `caliber run <the run's knobs> --tune-shard s/n --shard-cache DB`.
SpawnSpec shard_spec(const fs::path& self, const std::vector<std::string>& base_args,
                     const std::map<std::string, std::string>& pin, int device, int s, int n,
                     const fs::path& db, const fs::path& log) {
  SpawnSpec spec;
  spec.argv = {self.string(), "run"};
  spec.argv.insert(spec.argv.end(), base_args.begin(), base_args.end());
  const auto tail = shard_args(pin.empty() ? device : 0, s, n, db);
  spec.argv.insert(spec.argv.end(), tail.begin(), tail.end());
  for (const auto& [var, value] : pin) spec.env[var] = value;
  for (const char* var : kShardUnsetEnv) spec.env[var] = std::nullopt;
  spec.log_file = log;
  return spec;
}

// The local shards of one parallel warmup: one slot per shard in a ChildPool.
class LocalWarmup {
 public:
  LocalWarmup(const std::vector<int>& devices,
              const std::vector<std::map<std::string, std::string>>& pins,
              const std::vector<std::vector<std::size_t>>& plan, std::vector<std::string> base_args,
              const fs::path& dir, std::ostream& out)
      : devices_(devices),
        pins_(pins),
        plan_(plan),
        base_args_(std::move(base_args)),
        dir_(dir),
        out_(out),
        n_(static_cast<int>(plan.size())),
        ends_(plan.size()),
        pool_(plan.size()) {
    for (int s = 0; s < n_; ++s) {
      ShardEnd& e = ends_[static_cast<std::size_t>(s)];
      e.index = s;
      e.where = "device " + std::to_string(devices_[static_cast<std::size_t>(s)]);
      e.db = dir_ / ("shard-" + std::to_string(s) + ".db");
      e.log = dir_ / ("shard-" + std::to_string(s) + ".log");
    }
  }

  // Runs every shard to its end; returns the signal that interrupted it (0: none), after which
  // every shard still running has been terminated and reaped.
  int run() {
    const int sig = pool_.run({[this](std::size_t slot) { return start(slot); },
                               [this](const ChildPool::Ended& e) { ended(e); },
                               {}});
    if (sig != 0) {
      const auto stopped = pool_.stop_all(5.0);
      out_ << "parallel warmup: " << signal_name(sig) << " received: " << stopped.size()
           << " shard(s) terminated and reaped\n";
      out_.flush();
      throw std::runtime_error("parallel warmup interrupted by " + signal_name(sig) + " (" +
                               std::to_string(stopped.size()) + " shard(s) terminated and reaped)");
    }
    return sig;
  }

  [[nodiscard]] const std::vector<ShardEnd>& ends() const { return ends_; }

 private:
  // Each slot starts its own shard once.
  bool start(std::size_t slot) {
    if (started_.count(slot)) return false;
    started_.insert(slot);
    const int s = static_cast<int>(slot);
    const int device = devices_[slot];
    ShardEnd& e = ends_[slot];
    out_ << "parallel warmup: shard " << s << "/" << n_ << " on device " << device << " ("
         << pin_text(pins_[slot]) << "): " << plan_[slot].size() << " cases\n";
    out_.flush();
    if (plan_[slot].empty()) return true;  // fewer case groups than shards: nothing to tune
    try {
      pool_.start(slot, slot,
                  shard_spec(self_, base_args_, pins_[slot], device, s, n_, e.db, e.log));
    } catch (const std::exception& ex) {
      e.failure = std::string("could not start: ") + ex.what();
      e.log.clear();
    }
    return true;
  }

  void ended(const ChildPool::Ended& ev) {
    ShardEnd& e = ends_[ev.tag];
    if (!ev.status.ok()) e.failure = "failed: " + ev.status.describe();
    out_ << "parallel warmup: shard " << e.index << "/" << n_ << " (" << e.where << ") "
         << (ev.status.ok() ? "done" : "FAILED: " + ev.status.describe()) << " in "
         << fixed1(ev.status.duration_s) << " s\n";
    out_.flush();
  }

  const std::vector<int>& devices_;
  const std::vector<std::map<std::string, std::string>>& pins_;
  const std::vector<std::vector<std::size_t>>& plan_;
  const std::vector<std::string> base_args_;
  const fs::path dir_;
  std::ostream& out_;
  const int n_;
  const fs::path self_ = caliber_executable();
  std::vector<ShardEnd> ends_;
  std::set<std::size_t> started_;
  ChildPool pool_;
};

}  // namespace

std::vector<std::string> shard_args(int device, int s, int n, const fs::path& db) {
  // Pinned to one device, the child sees it as its device 0 (never the caller's bare index,
  // which it would re-read as an absolute id); with no visibility variable it keeps the index.
  return {"--devices",     std::to_string(device),
          "--tune-shard",  std::to_string(s) + "/" + std::to_string(n),
          "--shard-cache", db.string(),
          "--quiet"};
}

WarmupOutcome merge_warmup(const std::vector<ShardEnd>& shards, const fs::path& merge_into) {
  WarmupOutcome outcome;
  outcome.shards = static_cast<int>(shards.size());
  std::vector<fs::path> dbs;
  for (const auto& sh : shards) {
    std::error_code ec;
    // A failed shard's file still holds the keys it finished; only a missing one is skipped.
    if (!sh.db.empty() && fs::exists(sh.db, ec)) dbs.push_back(sh.db);
    if (sh.failure.empty()) continue;
    ++outcome.failed_shards;
    std::string note = "shard " + std::to_string(sh.index) + " (" + sh.where + ") " + sh.failure;
    const std::string last = sh.log.empty() ? std::string() : last_line_of(sh.log);
    if (!last.empty()) note += "; log: " + last;
    outcome.notes.push_back(note);
  }
  if (outcome.failed_shards > 0)
    outcome.notes.push_back(std::to_string(outcome.failed_shards) + " of " +
                            std::to_string(outcome.shards) +
                            " shard(s) failed: the keys they did not tune are tuned live during "
                            "measurement");
  outcome.merge = tune::merge_shard_caches(dbs, merge_into);
  for (const auto& w : outcome.merge.warnings) outcome.notes.push_back(w);
  if (outcome.merge.disagreements > 0) outcome.warning = tune::warmup_warning(outcome.merge);
  return outcome;
}

void print_warmup_summary(const WarmupOutcome& w, const fs::path& merge_into, std::ostream& out) {
  for (const auto& note : w.notes) out << "parallel warmup: note: " << note << "\n";
  out << "parallel warmup: " << w.shards << " shards, " << w.merge.keys << " keys, "
      << w.merge.disagreements << " disagreements, " << fixed1(w.wall_s) << " s"
      << (w.failed_shards > 0 ? ", " + std::to_string(w.failed_shards) + " failed" : "")
      << "; merged into " << merge_into.string() << "\n";
  out.flush();
}

nlohmann::json warmup_json(const WarmupOutcome& w) {
  return {{"shards", w.shards},
          {"failed_shards", w.failed_shards},
          {"wall_s", w.wall_s},
          {"keys", w.merge.keys},
          {"disagreements", w.merge.disagreements},
          {"disagreeing_keys", w.merge.disagreeing_keys},
          {"warning", w.warning},
          {"notes", w.notes}};
}

WarmupOutcome warmup_from_json(const nlohmann::json& j) {
  WarmupOutcome w;
  w.shards = j.value("shards", 0);
  w.failed_shards = j.value("failed_shards", 0);
  w.wall_s = j.value("wall_s", 0.0);
  w.merge.keys = j.value("keys", 0);
  w.merge.disagreements = j.value("disagreements", 0);
  w.merge.disagreeing_keys = j.value("disagreeing_keys", std::vector<std::string>{});
  w.warning = j.value("warning", std::string());
  w.notes = j.value("notes", std::vector<std::string>{});
  return w;
}

int run_warmup_merge(const core::Knobs& k, const fs::path& dir, int shards, std::ostream& out,
                     std::ostream& err) {
  if (k.tune != core::TuneMode::live)
    throw UsageError(
        "--merge-warmup: a parallel warmup across nodes merges into the shared tune "
        "cache (--tune live), not with --tune " +
        std::string(core::to_string(k.tune)));
  if (shards < 1) throw UsageError("--merge-shards: '" + std::to_string(shards) + "' is not >= 1");
  std::vector<ShardEnd> ends;
  for (int i = 0; i < shards; ++i) {
    const std::string stem = "shard-" + std::to_string(i);
    ShardEnd e;
    e.index = i;
    e.db = dir / (stem + ".db");
    e.log = dir / (stem + ".log");
    std::ifstream in(dir / (stem + ".exit"));
    std::stringstream text;
    text << in.rdbuf();
    const auto rec = slurm::parse_exit_record(text.str());
    e.where =
        "array task " + std::to_string(i) + (rec && !rec->node.empty() ? " on " + rec->node : "");
    if (!rec) {
      e.failure = "wrote no exit record (killed, past its time limit, or its node failed)";
    } else if (rec->rc != 0) {
      ExitStatus st;
      st.code = rec->rc;
      e.failure = "failed: " + st.describe();
    }
    ends.push_back(std::move(e));
  }
  const fs::path into = merge_target(k, dir);
  WarmupOutcome w = merge_warmup(ends, into);
  print_warmup_summary(w, into, out);
  if (!w.warning.empty()) err << w.warning << "\n";
  nlohmann::json result = warmup_json(w);
  result["merged_into"] = into.string();
  core::write_file_atomic(dir / kWarmupResultFile, result.dump(2) + "\n");
  return 0;
}

WarmupOutcome run_parallel_warmup(const RunRequest& req, const backends::Backend& backend,
                                  const Selection& sel, const fs::path& run_dir,
                                  const fs::path& merge_into, std::ostream& out) {
  const auto t0 = Clock::now();
  core::Knobs k = req.knobs;
  const int n = k.parallel_warmup;
  const std::vector<int> devices = k.devices.empty() ? std::vector<int>{0} : k.devices;
  // resolve_setup refused a count the devices cannot hold (tune::validate_parallel_warmup).
  if (n <= 0) return WarmupOutcome{};

  // 1. Plan: pins, seed, the shards' arguments and cases.
  const auto pins = shard_pins(backend, devices, n);
  k.seed = shard_seed(k.seed, run_dir);
  k.backend = backend.name();
  const auto plan = plan_warmup_shards(sel.cases, case_costs(sel), n);
  const fs::path dir = run_dir / "warmup";
  fs::create_directories(dir);
  out << "parallel warmup: " << n << " shards over devices";
  for (int s = 0; s < n; ++s) out << " " << devices[static_cast<std::size_t>(s)];
  out << ", " << sel.cases.size() << " cases; logs in " << dir.string() << "\n";
  out.flush();

  // 2. Shards, one child per device; installed before the first spawn, so that no signal can
  // arrive while a child is unregistered.
  SignalGuard guard;
  LocalWarmup shards(devices, pins, plan, knobs_to_args(k), dir, out);
  shards.run();

  // 3. Merge, count disagreements, report.
  WarmupOutcome outcome = merge_warmup(shards.ends(), merge_into);
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  print_warmup_summary(outcome, merge_into, out);
  return outcome;
}

int run_tune_shard(const RunRequest& req, const backends::Backend& backend, const Selection& sel,
                   std::uint64_t seed, std::ostream& out, std::ostream& err) {
  const core::Knobs& k = req.knobs;
  const auto [index, count] = parse_shard(req.tune_shard);
  const auto t0 = Clock::now();
  const auto plan = plan_warmup_shards(sel.cases, case_costs(sel), count);
  const auto& mine = plan[static_cast<std::size_t>(index)];
  const int dev_index = k.devices.empty() ? 0 : k.devices.front();

  const tune::Settings settings = shard_tune_settings(k, req.shard_cache);
  CaseRunner runner(backend, dev_index, seed, k, resolve_timer(k, backend.capabilities()),
                    settings);
  const auto& desc = runner.device().desc();
  // The pin is printed so that a log shows which physical device the shard really ran on.
  std::string pin_text;
  for (const auto& var : backend.visibility_vars()) {
    const char* v = std::getenv(var.c_str());
    pin_text += " " + var + "=" + (v != nullptr ? std::string(v) : std::string("(unset)"));
  }
  out << "tune shard " << index << "/" << count << ": " << mine.size() << " of " << sel.cases.size()
      << " cases on device " << dev_index << " (" << desc.name << ", physical " << desc.physical_id
      << ");" << (pin_text.empty() ? " no visibility variable" : pin_text) << "; cache "
      << req.shard_cache.string() << "\n";
  out.flush();

  int failed = 0;
  const std::size_t width = std::to_string(mine.size()).size();
  for (std::size_t j = 0; j < mine.size(); ++j) {
    const std::size_t i = mine[j];
    const Case& c = sel.cases[i];
    const std::size_t warnings_before = runner.warnings().size();
    const int tuned_before = runner.tuner().keys_tuned();
    const int hits_before = runner.tuner().cache_hits();
    const auto tc = Clock::now();
    runner.tune_case(*sel.case_op[i], c);
    const double secs = std::chrono::duration<double>(Clock::now() - tc).count();
    const bool ok = runner.warnings().size() == warnings_before;
    if (!ok) ++failed;
    out << "[" << std::setw(static_cast<int>(width)) << (j + 1) << "/" << mine.size() << "] "
        << c.node_id() << ": " << (ok ? "tuned" : "FAILED") << " ("
        << runner.tuner().keys_tuned() - tuned_before << " keys swept, "
        << runner.tuner().cache_hits() - hits_before << " cached, " << fixed1(secs) << " s)";
    if (!ok) out << " " << runner.warnings().back();
    out << "\n";
    out.flush();
  }
  for (const auto& w : runner.tuner().take_warnings()) err << "caliber: WARNING: " << w << "\n";
  out << "tune shard " << index << "/" << count << ": " << mine.size() << " cases, "
      << runner.tuner().keys_tuned() << " keys swept, " << runner.tuner().cache_hits()
      << " cached, " << failed << " failed, "
      << fixed1(std::chrono::duration<double>(Clock::now() - t0).count()) << " s\n";
  out.flush();
  return failed > 0 ? 1 : 0;
}

}  // namespace caliber::run
