#include "backends/describe.hpp"

#include "core/format.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>

#include "backends/registry.hpp"

namespace caliber::backends {

using nlohmann::json;

json describe_device(const DeviceDesc& d) {
  json j = {{"index", d.index},
            {"physical_id", d.physical_id},
            {"name", d.name},
            {"uuid", d.uuid},
            {"mem_total_bytes", d.mem_total},
            {"mem_used_bytes", d.mem_used},
            {"driver_version", d.driver_version},
            {"runtime_version", d.runtime_version},
            {"sm_count", d.sm_count},
            {"l2_bytes", d.l2_bytes},
            {"sm_clock_mhz", d.sm_clock_mhz},
            {"sm_clock_max_mhz", d.sm_clock_max_mhz},
            {"mem_clock_mhz", d.mem_clock_mhz},
            {"compute_capability", d.compute_capability}};
  j["extra"] = json::object();
  for (const auto& [k, v] : d.extra) j["extra"][k] = v;
  return j;
}

json describe_capabilities(const Capabilities& c) {
  return {{"graph_capture", c.graph_capture}, {"graph_timer_default", c.graph_timer_default},
          {"clusters", c.clusters},           {"default_rng", c.default_rng},
          {"l2_known", c.l2_known},           {"host", c.host}};
}

json describe_backend(const Backend& b) {
  const Availability a = b.availability();
  const auto devices = b.enumerate();
  json j;
  j["name"] = b.name();
  j["aliases"] = b.aliases();
  j["visibility"] = json::object();
  for (const std::string& var : b.visibility_vars()) {
    const char* v = std::getenv(var.c_str());
    j["visibility"][var] = v == nullptr ? json(nullptr) : json(v);
  }
  j["runtime_found"] = a.runtime_found;
  j["looked_for"] = a.looked_for;
  j["detail"] = a.detail;
  j["capabilities"] = describe_capabilities(b.capabilities());
  j["capture_deny_ops"] = b.capture_deny_ops();
  j["compat_rules"] = json::array();
  for (const CompatRule& r : b.compat_rules()) {
    j["compat_rules"].push_back({{"op", r.op}, {"reason", r.reason}, {"why", r.why}});
  }
  j["devices"] = json::array();
  for (const DeviceDesc& d : devices) {
    json dj = describe_device(d);
    // What pins a child process to this device (batch's rule), for a script that starts its own.
    try {
      dj["child_env"] = b.child_env(d.index);
    } catch (const std::exception&) {
      dj["child_env"] = nullptr;
    }
    j["devices"].push_back(std::move(dj));
  }
  if (devices.empty()) {
    std::string why;
    if (!a.runtime_found) {
      why = "looked for " + a.looked_for + ": " + (a.detail.empty() ? "not found" : a.detail);
    } else {
      why = "runtime found (" + a.detail + ") but no device is visible";
      for (const auto& [var, value] : j["visibility"].items()) {
        if (!value.is_null()) why += "; " + var + "='" + value.get<std::string>() + "'";
      }
    }
    j["why_none"] = why;
  }
  return j;
}

json describe_backends() {
  json j;
  j["backends"] = json::array();
  for (const Backend* b : all_backends()) j["backends"].push_back(describe_backend(*b));
  return j;
}

namespace {

std::string gib(std::uint64_t bytes) {
  return core::gib(static_cast<double>(bytes), 1);
}

std::string mib(std::uint64_t bytes) {
  return core::mib(static_cast<double>(bytes), 0);
}

}  // namespace

std::string format_backends(const json& described) {
  std::string out;
  for (const json& b : described.at("backends")) {
    out += b.at("name").get<std::string>();
    std::string aliases;
    for (const auto& a : b.at("aliases"))
      aliases += (aliases.empty() ? "" : ", ") + a.get<std::string>();
    if (!aliases.empty()) out += " (" + aliases + ")";
    const std::size_t n = b.at("devices").size();
    out += ": " + std::to_string(n) + (n == 1 ? " device" : " devices") + "\n";
    out += "  runtime: " + b.at("looked_for").get<std::string>() + ": " +
           (b.at("runtime_found").get<bool>() ? "found" : "missing");
    if (!b.at("detail").get<std::string>().empty())
      out += " (" + b.at("detail").get<std::string>() + ")";
    out += "\n  capabilities:";
    for (const auto& [k, v] : b.at("capabilities").items()) {
      if (v.get<bool>()) out += " " + k;
    }
    out += "\n";
    for (const auto& r : b.at("compat_rules")) {
      out += "  compat rule: " + r.at("op").get<std::string>() + ": \"" +
             r.at("reason").get<std::string>() + "\"\n";
    }
    for (const auto& [var, value] : b.at("visibility").items()) {
      out += "  " + var + "=" +
             (value.is_null() ? "(unset)" : "'" + value.get<std::string>() + "'") + "\n";
    }
    for (const json& d : b.at("devices")) {
      out += "  [" + std::to_string(d.at("index").get<int>()) + "] " +
             d.at("name").get<std::string>() + "  physical " +
             d.at("physical_id").get<std::string>() + "\n";
      if (!d.at("uuid").get<std::string>().empty())
        out += "      uuid " + d.at("uuid").get<std::string>() + "\n";
      out += "      memory " + gib(d.at("mem_total_bytes").get<std::uint64_t>()) + " (used " +
             gib(d.at("mem_used_bytes").get<std::uint64_t>()) + ")";
      if (d.at("sm_count").get<int>() > 0)
        out += ", SMs/cores " + std::to_string(d.at("sm_count").get<int>());
      if (d.at("l2_bytes").get<std::uint64_t>() > 0)
        out += ", L2 " + mib(d.at("l2_bytes").get<std::uint64_t>());
      if (!d.at("compute_capability").get<std::string>().empty()) {
        out += ", cc " + d.at("compute_capability").get<std::string>();
      }
      out +=
          "\n      clocks: SM " +
          (d.at("sm_clock_mhz").get<int>() > 0 ? std::to_string(d.at("sm_clock_mhz").get<int>())
                                               : "?") +
          " / max " +
          (d.at("sm_clock_max_mhz").get<int>() > 0
               ? std::to_string(d.at("sm_clock_max_mhz").get<int>())
               : "?") +
          " MHz, memory " +
          (d.at("mem_clock_mhz").get<int>() > 0 ? std::to_string(d.at("mem_clock_mhz").get<int>())
                                                : "?") +
          " MHz\n";
      out += "      driver " + d.at("driver_version").get<std::string>() + ", runtime " +
             d.at("runtime_version").get<std::string>() + "\n";
      for (const auto& [k, v] : d.at("extra").items())
        out += "      " + k + ": " + v.get<std::string>() + "\n";
    }
    if (b.contains("why_none"))
      out += "  no devices: " + b.at("why_none").get<std::string>() + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace caliber::backends
