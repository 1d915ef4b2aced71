#include "capi/host_op.hpp"

#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "caliber/caliber.hpp"
#include "capi/host_device.hpp"
#include "run/cases.hpp"
#include "settings/shapes.hpp"
#include "tune/tuner.hpp"

namespace caliber::capi {

namespace {

using nlohmann::json;

struct Spec {
  OpInfo info;
  std::vector<ProviderInfo> providers;
  // Per provider: who sweeps its configs when it does so itself ("triton"), else empty.
  std::vector<std::string> swept_by;
  caliber_c_call_fn call = nullptr;
  caliber_c_launch_fn launch = nullptr;
  std::int64_t target = 0;
};

json case_json(const Case& c) {
  json j = {{"op", c.op},
            {"dtype", std::string(to_string(c.dtype))},
            {"shape", c.shape},
            {"dim_names", c.dim_names},
            {"node", c.node_id()}};
  j["params"] = c.params;
  return j;
}

// One request to the host; a reply that is not JSON is the host's bug, said as such.
json ask(const Spec& s, const json& request) {
  std::string reply(1 << 16, '\0');
  const std::string req = request.dump();
  (void)s.call(s.target, req.c_str(), reply.data(), static_cast<std::int64_t>(reply.size()));
  reply.resize(reply.find('\0'));
  json r = json::parse(reply, nullptr, false);
  if (r.is_discarded() || !r.is_object())
    throw std::runtime_error("op '" + s.info.name + "': the host answered '" +
                             request.value("call", "") + "' with something that is not JSON");
  return r;
}

// A reply with status "error": the runtime's error (classified by the backend) or the host's.
[[noreturn]] void raise(const Spec& s, const json& r, const std::string& call) {
  const std::string msg = r.value("message", std::string("failed"));
  const int code = r.value("native_code", 0);
  if (code != 0) throw NativeError(code, call, msg);
  if (r.value("status", "") == "skipped") throw CaseSkipped(msg);
  if (r.value("status", "") == "rejected") throw ConfigRejected(msg);
  throw HostRaised(s.info.name + ": " + call + ": " + msg);
}

// The key a case's configs are cached under: its shape, by dimension name (d0, d1, ... for an
// anonymous shape), so each shape keeps its own choice.
std::vector<KeyArg> shape_key(const Case& c) {
  std::vector<KeyArg> key;
  for (std::size_t i = 0; i < c.shape.size(); ++i)
    key.push_back({i < c.dim_names.size() ? c.dim_names[i] : "d" + std::to_string(i), c.shape[i],
                   KeyStrategy::exact});
  return key;
}

// A prepare reply's "tune" object: what the provider's own sweep tried and chose.
tune::ExternalSweep sweep_from(const Spec& s, std::size_t p, const json& t) {
  const std::string who = "op '" + s.info.name + "': provider '" + s.providers[p].name + "'";
  auto config = [&](const json& j) {
    const auto c = Config::parse(j.is_string() ? j.get<std::string>() : std::string("?"));
    if (!c)
      throw std::runtime_error(
          who + ": the host reported a config that is not name=value pairs: " + j.dump());
    return *c;
  };
  tune::ExternalSweep e;
  e.by = s.swept_by[p];
  if (t.contains("config") && !t["config"].is_null()) e.winner = config(t["config"]);
  for (const auto& j : t.value("trials", json::array())) {
    tune::Trial tr;
    tr.config = config(j.value("config", json()));
    tr.ms = j.value("ms", 0.0);
    tr.rejected = j.value("rejected", false);
    tr.error = j.value("error", std::string());
    e.trials.push_back(std::move(tr));
  }
  e.sweep_s = t.value("sweep_s", 0.0);
  e.detail = t.value("detail", std::string());
  return e;
}

class HostWorkload final : public Workload, public tune::SelfTuning {
 public:
  HostWorkload(std::shared_ptr<const Spec> s, DeviceContext& ctx, const Case& c, std::int64_t id,
               double flops, double bytes)
      : s_(std::move(s)), ctx_(ctx), key_(shape_key(c)), id_(id), flops_(flops), bytes_(bytes) {}
  ~HostWorkload() override {
    try {
      (void)ask(*s_, {{"call", "release"}, {"workload", id_}});
    } catch (...) {  // nothing to do about a failed release
    }
  }
  std::vector<ProviderInfo> providers() const override {
    auto ps = s_->providers;
    for (auto& pi : ps)
      if (!pi.space.configs.empty()) pi.space.key = key_;
    return ps;
  }
  // With a config: the host prepares that config (a Triton autotuner is seeded with it and does
  // not sweep). prepare_and_sweep: no config, the provider's own sweep runs and is reported.
  void prepare(std::size_t p, const Config& c) override {
    const json r =
        ask(*s_, {{"call", "prepare"}, {"workload", id_}, {"provider", p}, {"config", c.str()}});
    if (r.value("status", "") != "ok") raise(*s_, r, "prepare " + s_->providers[p].name);
  }
  bool sweeps_itself(std::size_t p) const override {
    return p < s_->swept_by.size() && !s_->swept_by[p].empty();
  }
  tune::ExternalSweep prepare_and_sweep(std::size_t p) override {
    const json r = ask(
        *s_,
        {{"call", "prepare"}, {"workload", id_}, {"provider", p}, {"config", ""}, {"sweep", true}});
    if (r.value("status", "") != "ok") raise(*s_, r, "prepare " + s_->providers[p].name);
    return sweep_from(*s_, p, r.value("tune", json::object()));
  }
  void launch(std::size_t p) override {
    invoke_launch(s_->launch, id_, static_cast<std::int64_t>(p), ctx_);
  }
  Accuracy check(std::size_t p) override {
    const json r = ask(*s_, {{"call", "check"}, {"workload", id_}, {"provider", p}});
    if (r.value("status", "") != "ok") raise(*s_, r, "check " + s_->providers[p].name);
    Accuracy a;
    a.passed = r.value("passed", false);
    // null: the check's error is no number (a NaN output); the check failed on it.
    auto error_of = [&](const char* key) {
      const auto it = r.find(key);
      if (it == r.end()) return 0.0;
      return it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
    };
    a.max_abs_err = error_of("max_abs_err");
    a.rel_err = error_of("rel_err");
    a.detail = r.value("detail", std::string());
    return a;
  }
  double flops() const override { return flops_; }
  double bytes() const override { return bytes_; }

 private:
  std::shared_ptr<const Spec> s_;
  DeviceContext& ctx_;
  std::vector<KeyArg> key_;
  std::int64_t id_;
  double flops_, bytes_;
};

class HostOp final : public Op {
 public:
  explicit HostOp(std::shared_ptr<const Spec> s) : s_(std::move(s)) {}
  OpInfo info() const override { return s_->info; }
  std::size_t bytes_needed(const Case& c) const override {
    const json r = ask(*s_, {{"call", "bytes_needed"}, {"case", case_json(c)}});
    return r.value("bytes", std::size_t{0});
  }
  std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    const json r = ask(*s_, {{"call", "setup"},
                             {"case", case_json(c)},
                             {"stream", reinterpret_cast<std::uintptr_t>(ctx.stream())},
                             {"host", ctx.props().host}});
    if (r.value("status", "") != "ok") raise(*s_, r, "setup");
    return std::make_unique<HostWorkload>(s_, ctx, c, r.value("workload", std::int64_t{0}),
                                          r.value("flops", 0.0), r.value("bytes", 0.0));
  }

 private:
  std::shared_ptr<const Spec> s_;
};

std::string need_string(const json& j, const char* key, const std::string& who) {
  if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
    throw std::invalid_argument(who + ": field '" + key + "' is missing or not a non-empty string");
  return j[key].get<std::string>();
}

}  // namespace

void register_host_op(const std::string& backend, const std::string& info_json,
                      caliber_c_call_fn call, caliber_c_launch_fn launch, std::int64_t target) {
  const json j = json::parse(info_json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::invalid_argument("op description is not a JSON object");
  auto s = std::make_shared<Spec>();
  s->info.name = need_string(j, "name", "op");
  const std::string who = "op '" + s->info.name + "'";
  s->info.family = need_string(j, "family", who);
  if (!j.contains("dtypes") || !j["dtypes"].is_array() || j["dtypes"].empty())
    throw std::invalid_argument(who + ": field 'dtypes' must be a non-empty list");
  for (const auto& d : j["dtypes"]) {
    const auto t = d.is_string() ? parse_dtype(d.get<std::string>()) : std::nullopt;
    if (!t)
      throw std::invalid_argument(who + ": field 'dtypes': '" +
                                  (d.is_string() ? d.get<std::string>() : d.dump()) +
                                  "' is not a dtype (f32, f16, bf16, f64, i32, i64, c64)");
    s->info.dtypes.push_back(*t);
  }
  if (j.contains("dim_names")) s->info.dim_names = j["dim_names"].get<std::vector<std::string>>();
  s->info.rng = j.value("rng", false);
  s->info.refuses_capture = j.value("refuses_capture", false);
  s->info.description = j.value("description", std::string());
  if (!j.contains("providers") || !j["providers"].is_array() || j["providers"].empty())
    throw std::invalid_argument(who + ": field 'providers' must be a non-empty list");
  for (const auto& p : j["providers"]) {
    ProviderInfo pi;
    pi.name = need_string(p, "name", who + " provider");
    const std::string role = p.value("role", std::string());
    if (role != "baseline" && role != "candidate")
      throw std::invalid_argument(who + ": provider '" + pi.name + "': field 'role' is '" + role +
                                  "'; allowed: baseline, candidate");
    pi.role = role == "baseline" ? Role::baseline : Role::candidate;
    pi.version = p.value("version", std::string("1"));
    pi.label = p.value("label", std::string());
    // A provider with configs (a Triton autotuner's, docs/python.md): the first is the default;
    // "swept_by" says it sweeps them itself when prepared without one.
    if (p.contains("configs")) {
      const std::string field = who + ": provider '" + pi.name + "': field 'configs'";
      if (!p["configs"].is_array() || p["configs"].empty())
        throw std::invalid_argument(field + " must be a non-empty list of name=value strings");
      for (const auto& c : p["configs"]) {
        const auto cfg = c.is_string() ? Config::parse(c.get<std::string>()) : std::nullopt;
        if (!cfg || cfg->empty())
          throw std::invalid_argument(field + ": " + c.dump() + " is not name=value pairs");
        pi.space.configs.push_back(*cfg);
      }
      pi.space.default_config = pi.space.configs.front();
    }
    s->swept_by.push_back(pi.space.configs.empty() ? std::string()
                                                   : p.value("swept_by", std::string()));
    s->providers.push_back(std::move(pi));
  }
  if (j.contains("shapes") && !j["shapes"].is_null()) {
    std::vector<core::Shape> shapes;
    for (const auto& sh : j["shapes"]) shapes.push_back(sh.get<core::Shape>());
    if (shapes.empty()) throw std::invalid_argument(who + ": field 'shapes' is an empty list");
    run::set_op_shapes(s->info.name, std::move(shapes));
  }
  s->call = call;
  s->launch = launch;
  s->target = target;
  std::shared_ptr<const Spec> spec = s;
  register_op(backend, [spec] { return std::make_unique<HostOp>(spec); });
}

}  // namespace caliber::capi
