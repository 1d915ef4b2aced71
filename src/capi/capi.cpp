// The C ABI of caliber_c.h: devices and measurements for caliber.bench, op registration and the
// CLI for Python suites (docs/python.md).
#include "capi/caliber_c.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "backends/describe.hpp"
#include "backends/registry.hpp"
#include "caliber/op.hpp"
#include "capi/host_device.hpp"
#include "capi/host_op.hpp"
#include "cli/commands.hpp"
#include "core/torch_dtypes.hpp"
#include "proc/process.hpp"
#include "records/identity.hpp"
#include "records/markers.hpp"
#include "run/case_runner.hpp"
#include "run/cases.hpp"
#include "run/fed_run.hpp"
#include "settings/knobs.hpp"
#include "timing/timer.hpp"

#define CALIBER_C_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using nlohmann::json;
using namespace caliber;

void put(char* out, std::int64_t cap, const std::string& s) {
  if (out == nullptr || cap <= 0) return;
  const std::size_t n = std::min<std::size_t>(s.size(), static_cast<std::size_t>(cap - 1));
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

caliber_c_capture_fn& capture_hooks() {
  static caliber_c_capture_fn hooks = nullptr;
  return hooks;
}

struct OpenDevice {
  const backends::Backend* backend = nullptr;
  std::unique_ptr<backends::Device> device;
};
std::map<std::int64_t, OpenDevice>& devices() {
  static std::map<std::int64_t, OpenDevice> d;
  return d;
}
std::map<std::pair<std::string, int>, std::int64_t>& device_ids() {
  static std::map<std::pair<std::string, int>, std::int64_t> d;
  return d;
}

json device_json(const backends::Backend& b, backends::Device& d) {
  const auto caps = d.capabilities();
  json j = backends::describe_device(d.desc());
  j["backend"] = b.name();
  j["stream"] = reinterpret_cast<std::uintptr_t>(d.stream());
  j["host"] = d.props().host;
  j["capabilities"] = {
      {"graph_capture", caps.graph_capture}, {"graph_event_nodes", caps.graph_event_nodes},
      {"stream_hold", caps.stream_hold},     {"kernel_trace", caps.kernel_trace},
      {"default_rng", caps.default_rng},     {"host", caps.host}};
  return j;
}

// A word option of one measurement: its value parsed by the settings' one list of words
// (settings/settings.hpp), `fallback` (the knob table's default) when absent.
template <class E>
E word_option(const json& o, const char* key, E fallback) {
  const std::string given = o.value(key, std::string(core::to_string(fallback)));
  if (const auto e = core::parse_word<E>(given)) return *e;
  throw std::invalid_argument(std::string(key) + ": '" + given +
                              "'; allowed: " + core::allowed_words<E>());
}

// A caliber.measure option that is a CLI knob too, checked by that knob's own rule
// (settings/knobs.cpp), so both refuse the same values: min_samples=10**12 is refused, never cut
// to an int or capped in silence. Absent or null: `k` keeps its value.
void knob_option(const json& o, const char* key, const char* knob, core::Knobs& k) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  const core::KnobSpec* spec = core::find_knob(knob);
  if (spec == nullptr) throw std::logic_error(std::string("no knob ") + knob);
  const std::string shown = it->dump().substr(0, 200);
  try {
    if (!it->is_number()) throw std::invalid_argument("not a number");
    spec->apply(k, shown);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(std::string(key) + ": " + shown + " is not allowed (" +
                                spec->allowed + ")");
  }
}

// Options of one measurement (docs/python.md); a bad one throws std::invalid_argument naming it.
// They fill a core::Knobs (its defaults are `caliber run`'s), which becomes timing options by the
// one mapping a run uses (run::timing_options_of); the rest are the C ABI's own.
timing::TimingOptions parse_options(const json& o, const backends::Capabilities& caps) {
  core::Knobs k;
  k.timer = word_option(o, "timer", k.timer);
  k.l2 = word_option(o, "l2", k.l2);
  k.sample_method = word_option(o, "sample_method", k.sample_method);
  k.clock = word_option(o, "clock", k.clock);
  // sustained: the device time of one settling window (docs/timing.md, "Clock regimes").
  const double settle_window_s = o.value("settle_window_s", timing::RegimeRule{}.settle_window_s);
  if (!(settle_window_s > 0 && settle_window_s <= 1))
    throw std::invalid_argument("settle_window_s: must be above 0 and at most 1");
  k.return_mode = word_option(o, "return_mode", k.return_mode);
  if (o.contains("quantiles") && !o["quantiles"].is_null()) {
    for (const auto& q : o["quantiles"]) {
      const double v = q.get<double>();
      if (!(v >= 0 && v <= 1))
        throw std::invalid_argument("quantiles: " + q.dump() + " is not in [0, 1]");
      k.quantiles.push_back(v);
    }
  }
  // The stopping rule's options, the repeat and the throttle fraction, each by its knob's rule.
  knob_option(o, "repeat", "repeat", k);
  knob_option(o, "min_samples", "min_samples", k);
  knob_option(o, "min_time_s", "min_time", k);
  knob_option(o, "timeout_s", "timeout", k);
  knob_option(o, "warmup_s", "warmup", k);
  knob_option(o, "throttle_fraction", "throttle_fraction", k);
  try {  // the CLI's rule for the pair, in the keywords' names
    core::check_min_time_fits(k, "min_time_s", "timeout_s");
  } catch (const core::KnobError& e) {
    throw std::invalid_argument(e.what());
  }
  const auto noise = o.find("max_noise");  // 0: auto, the knob's "auto"
  if (noise != o.end() && !(noise->is_number() && noise->get<double>() == 0))
    knob_option(o, "max_noise", "max_noise", k);
  timing::TimingOptions t = run::timing_options_of(k, caps);
  t.regime.settle_window_s = settle_window_s;
  t.max_kept_samples = o.value("max_kept_samples", t.max_kept_samples);
  // false: the graph timer times a replay of K back-to-back launches and divides by K
  // (events-per-replay, as do_bench_cudagraph does) instead of each launch between event nodes.
  t.graph_per_launch = o.value("graph_per_launch", true);
  t.capture_denied = o.value("capture_denied", false);
  t.rng = o.value("rng", false);
  t.op = o.value("op", std::string());
  return t;
}

json measurement_json(const timing::Measurement& m) {
  json j = {{"ok", m.ok},
            {"timer", core::spelled(m.timer)},
            {"latency_ms", m.latency_ms},
            {"quantiles_ms", m.quantile_ms},
            {"samples_ms", m.samples_ms},
            {"total_samples", m.total_samples},
            {"markers", m.markers},
            {"repeat", m.repeat},
            {"repeat_skipped", m.repeat_skipped},
            {"noise", m.noise},
            {"stop_reason", m.stop_reason},
            {"converged", m.converged},
            {"regime", core::spelled(m.regime)},
            {"throttled_discarded", m.throttled_discarded},
            {"power_capped_samples", m.power_capped},
            {"launches_per_sample", m.launches_per_sample},
            {"l2_method", core::spelled(m.l2_method)},
            {"sample_method", core::spelled(m.sample_method)},
            {"timer_resolution_us", m.timer_resolution_us},
            {"event_latency_ms", m.event_latency_ms},
            {"kernel_count", m.kernel_count},
            {"kernel_sum_ms", m.kernel_sum_ms},
            {"record_resolution_us", m.record_resolution_us},
            {"trace_host_us", m.trace_host_us},
            {"settle_s", m.settle_s},
            {"settled", m.settled},
            {"failure", backends::to_string(m.failure)},
            {"error", m.error},
            {"wall_s", m.wall_s},
            {"note", m.note},
            {"estimate_ms", m.estimate_ms},
            {"call_medians_ms", m.call_medians_ms}};
  if (m.clock.known)
    j["clock"] = {{"sm_mean_mhz", m.clock.sm_mean_mhz},     {"sm_min_mhz", m.clock.sm_min_mhz},
                  {"sm_max_mhz", m.clock.sm_max_mhz},       {"power_w", m.clock.power_mean_w},
                  {"power_limit_w", m.clock.power_limit_w}, {"reasons", m.clock.reasons}};
  return j;
}

}  // namespace

CALIBER_C_EXPORT int caliber_c_abi_version(void) {
  return CALIBER_C_ABI_VERSION;
}

CALIBER_C_EXPORT int caliber_c_cli(int argc, char** argv) {
  try {
    // This process is python: the runs that batch, ab and a parallel warmup start are the
    // caliber executable the package found (python/caliber/__main__.py sets CALIBER_EXE).
    if (const char* exe = std::getenv("CALIBER_EXE"); exe != nullptr && *exe != '\0')
      run::set_caliber_executable(exe);
    return caliber_cli_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "caliber: %s\n", e.what());
    return 1;
  }
}

CALIBER_C_EXPORT int64_t caliber_c_device_open(const char* backend, int index, char* reply,
                                               int64_t cap) {
  try {
    const backends::Backend& b = backends::resolve_backend(backend ? backend : "auto");
    const auto key = std::make_pair(b.name(), index);
    auto it = device_ids().find(key);
    if (it == device_ids().end()) {
      b.setup_guard();
      bool found = false;
      for (const auto& d : b.enumerate()) found = found || d.index == index;
      if (!found)
        throw std::invalid_argument("device " + std::to_string(index) + " is not a " + b.name() +
                                    " device");
      OpenDevice od;
      od.backend = &b;
      od.device = capi::wrap_device(b.open(index, 0), capture_hooks());
      const std::int64_t id = static_cast<std::int64_t>(devices().size()) + 1;
      devices().emplace(id, std::move(od));
      it = device_ids().emplace(key, id).first;
    }
    OpenDevice& od = devices().at(it->second);
    put(reply, cap, device_json(*od.backend, *od.device).dump());
    return it->second;
  } catch (const std::exception& e) {
    put(reply, cap, json{{"error", e.what()}}.dump());
    return 0;
  }
}

CALIBER_C_EXPORT int caliber_c_measure(int64_t device, const char* options,
                                       caliber_c_launch_fn launch, int64_t target, char* reply,
                                       int64_t cap) {
  auto it = devices().find(device);
  if (it == devices().end()) {
    put(reply, cap, json{{"error", "no such device handle"}}.dump());
    return 2;
  }
  OpenDevice& od = it->second;
  timing::TimingOptions opt;
  try {
    const json o = json::parse(options ? options : "{}");
    opt = parse_options(o, od.backend->capabilities());
  } catch (const std::exception& e) {
    put(reply, cap, json{{"error", e.what()}}.dump());
    return 2;
  }
  backends::Device& dev = *od.device;
  try {
    const timing::Measurement m = timing::measure(
        dev, *od.backend, [&] { capi::invoke_launch(launch, target, 0, dev); }, opt);
    put(reply, cap, measurement_json(m).dump());
    return 0;
  } catch (const std::exception& e) {
    // The launch raised outside any capture (or a refusal the fallback could not absorb): the
    // host re-raises its own exception.
    put(reply, cap, json{{"raised", true}, {"error", e.what()}}.dump());
    return 1;
  }
}

CALIBER_C_EXPORT void caliber_c_set_capture_hooks(caliber_c_capture_fn hooks) {
  capture_hooks() = hooks;
  if (hooks == nullptr) {
    backends::set_device_decorator(nullptr);
    return;
  }
  backends::set_device_decorator([hooks](std::unique_ptr<backends::Device> d) {
    return capi::wrap_device(std::move(d), hooks);
  });
}

CALIBER_C_EXPORT int caliber_c_register_op(const char* backend, const char* info,
                                           caliber_c_call_fn call, caliber_c_launch_fn launch,
                                           int64_t target, char* error, int64_t cap) {
  try {
    capi::register_host_op(backend ? backend : "", info ? info : "", call, launch, target);
    return 0;
  } catch (const std::exception& e) {
    put(error, cap, e.what());
    return 2;
  }
}

CALIBER_C_EXPORT int64_t caliber_c_ops_mark(void) {
  return static_cast<int64_t>(registered_ops().size());
}

CALIBER_C_EXPORT int caliber_c_ops_adopt(int64_t mark, const char* source, char* error,
                                         int64_t cap) {
  try {
    run::adopt_registered_ops(static_cast<std::size_t>(mark), source ? source : "host");
    return 0;
  } catch (const std::exception& e) {
    put(error, cap, e.what());
    return 2;
  }
}

CALIBER_C_EXPORT int caliber_c_identity_extra(const char* key, const char* value) {
  const json v = json::parse(value ? value : "null", nullptr, false);
  if (key == nullptr || v.is_discarded()) return 2;
  core::set_identity_extra(key, v);
  return 0;
}

CALIBER_C_EXPORT int caliber_c_child_env(const char* backend, int index, char* reply, int64_t cap) {
  try {
    const backends::Backend& b = backends::resolve_backend(backend ? backend : "auto");
    put(reply, cap, json(b.child_env(index)).dump());
    return 0;
  } catch (const std::exception& e) {
    put(reply, cap, json{{"error", e.what()}}.dump());
    return 2;
  }
}

CALIBER_C_EXPORT int caliber_c_compat_rules(const char* backend, char* reply, int64_t cap) {
  const backends::Backend* b = backends::find_backend(backend ? backend : "");
  if (b == nullptr) {
    put(reply, cap,
        json{{"error", "no backend '" + std::string(backend ? backend : "") + "'"}}.dump());
    return 2;
  }
  json rules = json::array();
  for (const backends::CompatRule& r : b->compat_rules())
    rules.push_back({{"op", r.op}, {"reason", r.reason}, {"why", r.why}});
  put(reply, cap, rules.dump());
  return 0;
}

CALIBER_C_EXPORT int caliber_c_markers(char* reply, int64_t cap) {
  namespace mk = core::markers;
  put(reply, cap,
      json{{"direct_no_graph", mk::direct_no_graph},
           {"capture_poisoned", mk::capture_poisoned},
           {"timer_direct", mk::timer_direct},
           {"power_capped", mk::power_capped},
           {"stop_missed", mk::stop_missed},
           {"events_no_trace", mk::events_no_trace},
           {"device_shared", mk::device_shared}}
          .dump());
  return 0;
}

namespace {
template <class E>
json words_of() {
  json out = json::array();
  for (const auto& sp : core::spellings<E>()) out.push_back(sp.word);
  return out;
}
}  // namespace

CALIBER_C_EXPORT int caliber_c_settings(char* reply, int64_t cap) {
  const core::Knobs d;
  json j = {{"words",
             {{"timer", words_of<core::TimerKind>()},
              {"l2", words_of<core::L2Policy>()},
              {"clock", words_of<core::ClockRegime>()},
              {"sample_method", words_of<core::SampleMethod>()},
              {"return_mode", words_of<core::ReturnMode>()}}},
            {"defaults",
             {{"timer", core::to_string(d.timer)},
              {"l2", core::to_string(d.l2)},
              {"clock", core::to_string(d.clock)},
              {"sample_method", core::to_string(d.sample_method)},
              {"return_mode", core::to_string(d.return_mode)},
              {"repeat", d.repeat},
              {"min_samples", d.min_samples},
              {"min_time_s", d.min_time_s},
              {"timeout_s", d.timeout_s},
              {"warmup_s", d.warmup_s}}}};
  json& names = j["backends"] = json::object();  // every name and alias -> the backend's name
  for (const backends::Backend* b : backends::all_backends()) {
    names[b->name()] = b->name();
    for (const auto& alias : b->aliases()) names[alias] = b->name();
  }
  json& dtypes = j["torch_dtypes"] = json::object();  // caliber's dtype name -> torch's
  for (const auto& [ours, torch] : core::kTorchDtypes) dtypes[std::string(ours)] = torch;
  const std::string text = j.dump();
  if (static_cast<int64_t>(text.size()) >= cap) return 2;
  put(reply, cap, text);
  return 0;
}

namespace {
// The fed runs in progress, by handle (one at a time in practice: a run inside a run is refused).
std::map<std::int64_t, run::FedRun*>& fed_runs() {
  static std::map<std::int64_t, run::FedRun*> r;
  return r;
}
}  // namespace

CALIBER_C_EXPORT void caliber_c_set_feeder(caliber_c_feed_fn feed) {
  if (feed == nullptr) {
    run::set_case_feeder(nullptr);
    return;
  }
  run::set_case_feeder([feed](const json& knobs, run::FedRun& r) -> std::string {
    static std::int64_t next = 1;
    const std::int64_t id = next++;
    fed_runs()[id] = &r;
    char msg[16384] = {0};
    const int status = feed(id, knobs.dump().c_str(), msg, sizeof msg);
    fed_runs().erase(id);
    return status == 0 ? std::string() : std::string(msg[0] ? msg : "the feeder failed");
  });
}

CALIBER_C_EXPORT int caliber_c_run_call(int64_t run, const char* request,
                                        caliber_c_launch_fn launch, int64_t target, char* reply,
                                        int64_t cap) {
  auto it = fed_runs().find(run);
  if (it == fed_runs().end()) {
    put(reply, cap, json{{"error", "no such run handle"}}.dump());
    return 2;
  }
  try {
    const json r = json::parse(request ? request : "{}");
    std::function<void()> fn;
    if (launch != nullptr) {
      run::FedRun* fed = it->second;
      fn = [launch, target, fed] {
        DeviceContext* ctx = fed->device();
        if (ctx == nullptr) throw std::invalid_argument("fed run: a launch before 'open'");
        capi::invoke_launch(launch, target, 0, *ctx);
      };
    }
    put(reply, cap, it->second->call(r, fn).dump());
    return 0;
  } catch (const std::exception& e) {
    const bool usage = dynamic_cast<const run::UsageError*>(&e) != nullptr;
    put(reply, cap, json{{"error", e.what()}, {"usage", usage}}.dump());
    return 2;
  }
}
