// A run whose cases an embedding feeds (run/fed_run.hpp, docs/flaggems.md): the run driver's
// phases (run/driver_parts.hpp) around a loop that is not caliber's.
#include "run/fed_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "backends/describe.hpp"
#include "records/rundir.hpp"
#include "run/case_runner.hpp"
#include "run/case_runner_parts.hpp"
#include "run/driver_parts.hpp"
#include "tune/warmup_settings.hpp"

namespace caliber::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

CaseFeeder& the_feeder() {
  static CaseFeeder f;
  return f;
}

// What the embedding needs of the knobs (the knob table resolved them; it parses nothing).
json knobs_json(const core::Knobs& k, const driver_parts::Setup& s, const RunRequest& req) {
  return {{"flaggems", k.flaggems},
          {"devices", k.devices},
          {"tune_shard", req.tune_shard},
          {"shard_cache", req.shard_cache.string()},
          {"backend", s.backend->name()},
          {"host", s.caps.host},
          {"ops", k.ops},
          {"op_file", k.op_file},
          {"node", k.node},
          {"level", core::to_string(k.level)},
          {"shape_mode", core::to_string(k.shape_mode)},
          {"shapes_file", k.shapes_file},
          {"dtypes", k.dtypes},
          {"repeat", k.repeat},
          {"mode", core::to_string(k.mode)},
          {"l2", core::to_string(k.l2)},
          {"per_launch", k.per_launch},
          {"timer", core::to_string(s.timer)},
          {"tune", core::to_string(k.tune)},
          {"replay_from", k.replay_from},
          {"parallel_warmup", k.parallel_warmup},
          {"tune_compile_threads", k.tune_compile_threads},
          {"out", k.out},
          {"name", k.name},
          {"dry_run", req.dry_run}};
}

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto& x : j) out.push_back(x.is_string() ? x.get<std::string>() : x.dump());
  return out;
}

// A JSON value as YAML (shapes.yaml of a fed run).
void emit(YAML::Emitter& e, const json& j) {
  if (j.is_object()) {
    e << YAML::BeginMap;
    for (const auto& [key, v] : j.items()) {
      e << YAML::Key << key << YAML::Value;
      emit(e, v);
    }
    e << YAML::EndMap;
  } else if (j.is_array()) {
    const bool flat = std::all_of(j.begin(), j.end(), [](const json& x) { return !x.is_object(); });
    if (flat) e << YAML::Flow;
    e << YAML::BeginSeq;
    for (const auto& x : j) emit(e, x);
    e << YAML::EndSeq;
  } else if (j.is_string()) {
    e << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_number_integer()) {
    e << j.get<long long>();
  } else if (j.is_number()) {
    e << j.get<double>();
  } else if (j.is_boolean()) {
    e << j.get<bool>();
  } else {
    e << YAML::Null;
  }
}

class Fed final : public FedRun {
  // One provider's measurement, with what can time it again (until its case is written).
  struct Timed {
    timing::Measurement m;
    std::function<void()> launch;
    timing::TimingOptions opts;
  };

 public:
  Fed(const RunRequest& req, const driver_parts::Setup& s, std::ostream& out, std::ostream& err)
      : k_(req.knobs), s_(s), out_(out), err_(err), dry_run_(req.dry_run) {}

  json call(const json& r, const std::function<void()>& launch) override {
    const std::string what = r.value("call", std::string());
    if (what == "plan") return plan(r);
    if (dry_run_) throw std::invalid_argument("fed run: '" + what + "' in a dry run");
    if (what == "open") return open(r);
    if (!files_.log) throw std::invalid_argument("fed run: '" + what + "' before 'open'");
    if (what == "time") return time(r, launch);
    if (what == "case") return add_case(r);
    if (what == "shapes") return shapes(r);
    if (what == "tune") return tune_totals(r);
    if (what == "startup") return startup(r);
    throw std::invalid_argument("fed run: unknown call '" + what + "'");
  }

  [[nodiscard]] bool opened() const { return files_.log != nullptr; }
  [[nodiscard]] bool planned() const { return planned_; }
  [[nodiscard]] DeviceContext* device() override { return runner_ ? &runner_->device() : nullptr; }

  // The footer and the closing table; `stop` is why the embedding's loop ended early ("" none).
  RunOutcome finish(const std::string& stop) {
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
    if (!stop.empty()) {
      err_ << "caliber: " << stop << "\n";
      ++outcome_.failed;
    }
    driver_parts::finish_run(k_, *runner_, warmup_, rows_, wall_s, *files_.log, outcome_, out_,
                             err_, nullptr, tune_footer_ ? &*tune_footer_ : nullptr,
                             startup_.empty() ? nullptr : &startup_);
    outcome_.exit_code = outcome_.failed > 0 ? 1 : 0;
    return outcome_;
  }

 private:
  // --dry-run: what the selection holds, printed; nothing is claimed, measured or written. The
  // cases themselves are only known as FlagGems' loop makes its inputs, so the plan counts
  // benchmarks (pytest items) per op.
  json plan(const json& r) {
    if (!dry_run_) throw std::invalid_argument("fed run: 'plan' outside a dry run");
    if (planned_) throw std::invalid_argument("fed run: 'plan' twice");
    planned_ = true;
    const json ops = r.value("ops", json::array());
    std::size_t total = 0;
    for (const auto& o : ops) total += o.value("benchmarks", std::size_t{0});
    out_ << "caliber run --dry-run: FlagGems at " << k_.flaggems << ", backend "
         << s_.backend->name() << ", device " << s_.dev_index << " (" << s_.device.name
         << "), level " << core::to_string(k_.level) << ", shape mode "
         << core::to_string(k_.shape_mode) << ", mode " << core::to_string(k_.mode)
         << "; nothing is run or written\n";
    out_ << "  " << total << (total == 1 ? " benchmark" : " benchmarks") << " of " << ops.size()
         << (ops.size() == 1 ? " op" : " ops")
         << " (the cases come as FlagGems' loop makes its inputs: a dtype and shape each)\n";
    for (const auto& o : ops) {
      out_ << "  " << o.value("op", std::string("?")) << ": "
           << o.value("benchmarks", std::size_t{0}) << " in";
      const char* sep = " ";
      for (const auto& f : string_list(o.value("files", json::array()))) {
        out_ << sep << f;
        sep = ", ";
      }
      out_ << "\n";
    }
    return json::object();
  }

  json open(const json& r) {
    if (opened()) throw std::invalid_argument("fed run: 'open' twice");
    seed_ = k_.seed != 0 ? k_.seed : driver_parts::fresh_seed();
    json extra = r.value("identity", json::object());
    if (!extra.is_object()) extra = json::object();
    extra["ops"] = string_list(r.value("ops", json::array()));
    files_ = driver_parts::claim_run(k_, s_, seed_, wall_start_, extra);
    outcome_.run_dir = files_.dir;
    driver_parts::print_banner(out_, k_, s_, files_.dir, seed_);
    runner_ = std::make_unique<CaseRunner>(*s_.backend, s_.dev_index, seed_, k_, s_.timer,
                                           tune_settings(k_, files_.dir));
    peaks_ =
        driver_parts::run_peaks(k_, *s_.backend, s_.device, s_.timer, *runner_, files_, out_, err_);
    backends::Device& dev = runner_->device();
    json device = {{"backend", s_.backend->name()},
                   {"name", s_.device.name},
                   {"index", s_.dev_index},
                   {"stream", reinterpret_cast<std::uintptr_t>(dev.stream())},
                   {"host", dev.props().host}};
    return {{"run_dir", files_.dir.string()}, {"device", device}, {"seed", seed_}};
  }

  timing::TimingOptions options(const json& r) const {
    timing::TimingOptions o = runner_->timing_options_for_probe();
    o.op = r.value("op", std::string("op"));
    o.rng = r.value("rng", false);
    o.graph_per_launch = k_.per_launch;
    o.capture_denied =
        std::find(k_.capture_deny.begin(), k_.capture_deny.end(), o.op) != k_.capture_deny.end();
    if (core::parse_word<core::TimerKind>(r.value("timer", std::string())) ==
        core::TimerKind::direct)
      o.timer = timing::TimerKind::direct;
    return o;
  }

  timing::Measurement measure(const std::function<void()>& launch, const timing::TimingOptions& o) {
    timing::Measurement m;
    try {
      m = timing::measure(runner_->device(), *s_.backend, launch, o);
    } catch (const std::exception& e) {
      m.ok = false;
      m.error = e.what();
    }
    return m;
  }

  json time(const json& r, const std::function<void()>& launch) {
    if (!fatal_.empty())
      return {{"skipped", "not run: the device context is unusable after " + fatal_}};
    const timing::TimingOptions o = options(r);
    Timed t{measure(launch, o), launch, o};
    measured_.count(t.m);
    if (timing::process_unusable(t.m)) fatal_ = r.value("node", r.value("op", std::string()));
    const long long id = next_id_++;
    json reply = {{"id", id},
                  {"ok", t.m.ok && t.m.latency_ms > 0},
                  {"latency_ms", t.m.latency_ms},
                  {"host_ms", t.m.host_ms},
                  {"timer", core::spelled(t.m.timer)},
                  {"markers", t.m.markers},
                  {"error", t.m.error},
                  {"failure", backends::to_string(t.m.failure)},
                  {"note", t.m.note}};
    // The process can time nothing more: the embedding stops calling its ops (the rule's words).
    if (!fatal_.empty())
      reply["unusable"] = "not run: the device context is unusable after " + fatal_;
    timed_.emplace(id, std::move(t));
    return reply;
  }

  // One regime per row (docs/timing.md): where a provider fell back to the direct timer, the
  // providers the graph timer timed are timed again by the direct timer; their graph figures stay.
  void one_regime(std::vector<core::ProviderRow>& prows, std::vector<Timed*>& timed,
                  core::CaseRow& row, double flops, double bytes) {
    if (s_.timer != core::TimerKind::graph || !fatal_.empty()) return;
    const bool fell_back = std::any_of(timed.begin(), timed.end(), [](const Timed* t) {
      return t != nullptr && t->m.ok && t->m.timer == core::TimerKind::direct;
    });
    if (!fell_back) return;
    row.timer = core::to_string(core::TimerKind::direct);
    for (std::size_t p = 0; p < prows.size(); ++p) {
      Timed* t = timed[p];
      if (t == nullptr || !t->m.ok || t->m.timer != core::TimerKind::graph) continue;
      const std::optional<double> graph_latency = prows[p].latency_ms;
      timing::TimingOptions direct = t->opts;
      direct.timer = timing::TimerKind::direct;
      t->m = measure(t->launch, direct);
      measured_.count(t->m);
      case_parts::write_timing(prows[p], t->m, flops, bytes);
      prows[p].graph_latency_ms.emplace(graph_latency);
      prows[p].note =
          "timed by the direct timer too, since another provider of this case could not be "
          "captured (one regime per row); its graph figure is graph_latency_ms";
      if (timing::process_unusable(t->m)) fatal_ = row.node.value_or(row.op);
    }
  }

  static core::CaseRow row_head(const json& r) {
    core::CaseRow row;
    row.op = r.value("op", std::string());
    if (row.op.empty()) throw std::invalid_argument("fed run: a case without 'op'");
    if (r.contains("dtype") && r["dtype"].is_string()) row.dtype = r["dtype"].get<std::string>();
    if (r.contains("shape") && r["shape"].is_string()) row.shape = r["shape"].get<std::string>();
    if (r.contains("dims") && r["dims"].is_array())
      row.dims = r["dims"].get<std::vector<std::int64_t>>();
    row.node = r.value("node", row.op);
    row.family = r.value("family", std::string("flaggems"));
    if (r.contains("params") && r["params"].is_object()) {
      std::map<std::string, std::string> params;
      for (const auto& [key, v] : r["params"].items())
        params[key] = v.is_string() ? v.get<std::string>() : v.dump();
      row.params = params;
    }
    // FlagGems' own spelling of the case (its dtype text, its shape detail as JSON), kept on the
    // row for `export --format flaggems-log` (docs/run-log.md).
    if (r.contains("flaggems") && r["flaggems"].is_object()) row.extra["flaggems"] = r["flaggems"];
    row.markers.emplace();
    return row;
  }

  // The providers' objects of a case, from their measurements; true when one failed.
  bool provider_rows(const json& r, core::CaseRow& row, std::vector<core::ProviderRow>& prows,
                     std::vector<Timed*>& timed, std::string& first_error) {
    const double flops = r.value("flops", 0.0), bytes = r.value("bytes", 0.0);
    bool any_fail = false;
    for (const auto& p : r.value("providers", json::array())) {
      core::ProviderRow prow;
      prow.name = p.value("name", std::string("provider"));
      prow.role = p.value("role", std::string(core::role::candidate));
      if (prow.role == core::role::candidate)
        prow.accuracy_detail = "not checked: FlagGems' benchmark checks no accuracy";
      Timed* t = nullptr;
      if (p.contains("measurement") && p["measurement"].is_number_integer()) {
        auto it = timed_.find(p["measurement"].get<long long>());
        if (it != timed_.end()) t = &it->second;
      }
      if (t != nullptr) {
        case_parts::write_timing(prow, t->m, flops, bytes);
        core::add_markers(*row.markers, t->m.markers);
        if (!(t->m.ok && t->m.latency_ms > 0)) {
          any_fail = true;
          if (first_error.empty()) first_error = prow.name + ": " + t->m.error;
        }
      }
      if (p.contains("error") && p["error"].is_string()) {
        prow.error = p["error"].get<std::string>();
        any_fail = true;
        if (first_error.empty()) first_error = prow.name + ": " + *prow.error;
      }
      if (p.contains("host_ms") && p["host_ms"].is_number())
        prow.host_ms = p["host_ms"].get<double>();
      // How the provider's launch config was chosen (FlagGems' LibTuner), as the embedding saw it.
      if (p.contains("tune") && p["tune"].is_object())
        prow.tune = core::tune_choice_from_json(p["tune"]);
      if (p.contains("config") && p["config"].is_string())
        prow.config = p["config"].get<std::string>();
      if (const auto tm = string_list(p.value("tune_markers", json::array())); !tm.empty()) {
        // The tuner's markers (compile_tune_no_evict) lead the provider's, as in a native row.
        std::vector<std::string> m = tm;
        for (const auto& x : prow.markers.value_or(std::vector<std::string>{}))
          if (std::find(m.begin(), m.end(), x) == m.end()) m.push_back(x);
        prow.markers = m;
        prow.tune_markers = tm;
        core::add_markers(*row.markers, tm);
      }
      prows.push_back(std::move(prow));
      timed.push_back(t);
    }
    return any_fail;
  }

  // Where the case's wall time went: the embedding's own phases (FlagGems' loop before the case,
  // the providers' first calls, the host cost runs, the case's wall time) with this side's
  // settling and timing; the rest is other_s.
  void write_phases(core::CaseRow& row, const json& r) {
    const json ph = r.value("phases", json::object());
    auto get = [&](const char* key) {
      return ph.is_object() && ph.contains(key) && ph[key].is_number() ? ph[key].get<double>()
                                                                       : 0.0;
    };
    core::Phases& p = row.phases;
    p.inputs_s = get("inputs_s");
    p.prepare_s = get("prepare_s");
    p.check_s = 0.0;
    p.settle_s = measured_.settle_s;
    p.timing_s = measured_.timed_s;
    const double host_s = get("host_s");
    if (host_s > 0) p.host_s = host_s;  // separate host cost runs, where the timer gave none
    const double known =
        *p.inputs_s + *p.prepare_s + measured_.settle_s + measured_.timed_s + host_s;
    p.wall_s = std::max(get("wall_s"), known);
    p.other_s = *p.wall_s - known;
    measured_ = {};
  }

  json add_case(const json& r) {
    core::CaseRow row = row_head(r);
    row.timer = core::to_string(s_.timer);
    row.repeat = k_.repeat;
    std::vector<core::ProviderRow> prows;
    std::vector<Timed*> timed;
    std::string first_error;
    const std::string status = r.value("status", std::string());
    if (status == core::status::skipped) {
      row.status = core::status::skipped;
      row.reason = r.value("reason", std::string("skipped"));
    } else {
      bool any_fail = provider_rows(r, row, prows, timed, first_error);
      one_regime(prows, timed, row, r.value("flops", 0.0), r.value("bytes", 0.0));
      for (std::size_t p = 0; p < prows.size(); ++p)
        if (timed[p] != nullptr && timed[p]->m.ok)
          core::add_markers(*row.markers, timed[p]->m.markers);
      if (r.contains("error") && r["error"].is_string()) {
        any_fail = true;
        first_error = r["error"].get<std::string>();
      }
      case_parts::summarize_row(row, prows, any_fail, first_error);
      for (const auto& prow : prows) {
        if (!prow.host_ms) continue;
        if (prow.role == core::role::baseline && !row.host_base_ms) row.host_base_ms = prow.host_ms;
        if (prow.role == core::role::candidate && !row.host_ms) row.host_ms = prow.host_ms;
      }
      row.providers = std::move(prows);
    }
    for (const auto& p : r.value("providers", json::array()))
      if (p.contains("measurement") && p["measurement"].is_number_integer())
        timed_.erase(p["measurement"].get<long long>());
    write_phases(row, r);
    annotate_with_peaks(row, peaks_);
    files_.log->append_case(row);
    const std::string st = driver_parts::tally(outcome_, row);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
    driver_parts::print_progress(out_, k_, row.node.value_or(row.op), row, st, rows_.size(), 0,
                                 elapsed);
    json reply = {{"status", st}};
    if (row.latency_ms) reply["latency_ms"] = *row.latency_ms;
    if (row.latency_base_ms) reply["latency_base_ms"] = *row.latency_base_ms;
    rows_.push_back(std::move(row));
    return reply;
  }

  // The embedding's tuning totals for the footer (FlagGems' LibTuner, not caliber's tuner):
  // {"mode", "keys_tuned", "sweep_s", "cache", "warmup": {...}, more keys kept as they are}.
  json tune_totals(const json& r) {
    core::FooterTune t;
    t.mode = r.value("mode", core::to_string(k_.tune));
    if (r.contains("keys_tuned") && r["keys_tuned"].is_number_integer())
      t.keys_tuned = r["keys_tuned"].get<long long>();
    if (r.contains("sweep_s") && r["sweep_s"].is_number()) t.sweep_s = r["sweep_s"].get<double>();
    if (r.contains("cache") && r["cache"].is_string()) t.cache = r["cache"].get<std::string>();
    for (const auto& [key, v] : r.items())
      if (key != "call" && key != "mode" && key != "keys_tuned" && key != "sweep_s" &&
          key != "cache" && key != "warmup")
        t.extra[key] = v;
    tune_footer_ = std::move(t);
    if (r.contains("warmup") && r["warmup"].is_object()) warmup_ = r["warmup"];
    return {{"status", "ok"}};
  }

  // The embedding's start-up before its first case, for the footer: {"phases": {name: seconds}},
  // each name a short word ending in _s, each value a finite number of seconds from 0 to a day.
  json startup(const json& r) {
    const json ph = r.value("phases", json::object());
    if (!ph.is_object()) throw std::invalid_argument("fed run: 'startup' phases: not an object");
    json kept = json::object();
    for (const auto& [name, v] : ph.items()) {
      const bool named = name.size() > 2 && name.size() <= 40 && name.ends_with("_s") &&
                         std::all_of(name.begin(), name.end(),
                                     [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
      if (!named)
        throw std::invalid_argument("fed run: 'startup': a phase named '" + name.substr(0, 40) +
                                    "' (allowed: a-z and _, "
                                    "ending in _s)");
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
          v.get<double>() > 86400)
        throw std::invalid_argument("fed run: 'startup': " + name +
                                    " is not a number of seconds from 0 to 86400");
      kept[name] = v.get<double>();
    }
    startup_ = std::move(kept);
    return {{"status", "ok"}};
  }

  json shapes(const json& r) {
    YAML::Emitter e;
    e << YAML::Comment("the shapes this run used, as FlagGems' benchmark classes held them");
    json doc = {{"level", core::to_string(k_.level)},
                {"shape_mode", core::to_string(k_.shape_mode)},
                {"source", r.value("source", std::string())},
                {"overlay", r.value("overlay", std::string())},
                {"ops", r.value("ops", json::object())}};
    emit(e, doc);
    core::write_file_atomic(files_.dir / "shapes.yaml", std::string(e.c_str()) + "\n");
    return {{"status", "ok"}};
  }

  const core::Knobs& k_;
  const driver_parts::Setup& s_;
  std::ostream& out_;
  std::ostream& err_;
  const std::chrono::steady_clock::time_point t_start_ = std::chrono::steady_clock::now();
  const std::chrono::system_clock::time_point wall_start_ = std::chrono::system_clock::now();
  std::uint64_t seed_ = 0;
  driver_parts::RunFiles files_;
  std::unique_ptr<CaseRunner> runner_;
  Peaks peaks_;
  json startup_ = json::object();
  RunOutcome outcome_;
  std::vector<core::CaseRow> rows_;
  std::map<long long, Timed> timed_;
  long long next_id_ = 1;
  MeasuredTime measured_;                        // the measurements since the last case row
  std::string fatal_;                            // node after which the device context is unusable
  std::optional<core::FooterTune> tune_footer_;  // from a "tune" call
  json warmup_ = nullptr;                        // the parallel warmup's result, from it too
  bool dry_run_ = false;                         // --dry-run: only 'plan' is answered
  bool planned_ = false;
};

}  // namespace

void set_case_feeder(CaseFeeder feeder) {
  the_feeder() = std::move(feeder);
}

RunOutcome run_fed(const RunRequest& req, std::ostream& out, std::ostream& err) {
  const core::Knobs& k = req.knobs;
  const std::string who = "--flaggems: '" + k.flaggems + "' ";
  if (!the_feeder())
    throw UsageError(who +
                     "runs FlagGems' suite in a Python process; run it as `caliber run "
                     "--flaggems ROOT` or `python3 -m caliber run --flaggems ROOT`");
  if (k.profile > 0 || !k.py_ops.empty() || !k.ops_lib.empty())
    throw UsageError(who + "is not run with --profile, --py-ops or --ops-lib");
  // FlagGems' benchmarks make their own shapes (core_shapes.yaml, set_shapes): --shape would be
  // recorded and not used.
  if (!k.shapes.empty())
    throw UsageError(who +
                     "is not run with --shape: FlagGems' shapes are its benchmarks' own; "
                     "overlay an op's shapes with --shapes FILE (--shape-mode file)");
  // caliber's own tuner is not FlagGems': its LibTuner sweeps every config it has (and keeps its
  // cache by FLAGGEMS_DB_URL; --tune-cache, which CALIBER_TUNE_CACHE may set for every run of a
  // session, is left unused: docs/flaggems.md). A screening switched off would do nothing.
  if (!k.tune_screen)
    throw UsageError(who +
                     "is not run with --tune-screen off: FlagGems' LibTuner sweeps every "
                     "config of a key, unscreened, whatever caliber's switch says");
  const driver_parts::Setup s = driver_parts::resolve_setup(req);
  Fed run(req, s, out, err);
  std::string stop;
  if (!req.tune_shard.empty()) {
    // A parallel-warmup shard (python/caliber/flaggems_warmup.py): the feeder prepares its
    // share of the cases into its LibTuner database and opens no run. Its stop comes before any
    // run opens, as a refusal does in a run of its own: bad input, exit 2 there as here.
    stop = the_feeder()(knobs_json(k, s, req), run);
    if (!stop.empty()) throw UsageError("shard " + req.tune_shard + ": " + stop);
    return RunOutcome{};
  }
  try {
    stop = the_feeder()(knobs_json(k, s, req), run);
  } catch (const UsageError&) {
    if (!run.opened()) throw;
    stop = "the FlagGems session stopped";
  } catch (const std::exception& e) {
    if (!run.opened()) throw UsageError(who + e.what());
    stop = e.what();
  }
  if (req.dry_run) {
    if (!stop.empty()) throw UsageError(stop);
    if (!run.planned()) throw UsageError(who + "selected no benchmark");
    return RunOutcome{};
  }
  if (!run.opened()) throw UsageError(stop.empty() ? who + "selected no benchmark" : stop);
  return run.finish(stop);
}

}  // namespace caliber::run
