#include "backends/cpu/cpu_backend.hpp"

#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "backends/cpu/cpu_device.hpp"

namespace caliber::backends {
namespace {

using cpu::HostFacts;
using cpu::Layout;

struct Snapshot {
  HostFacts facts;
  Layout layout;
};

Snapshot snapshot() {
  Snapshot s;
  s.facts = cpu::read_host_facts();
  s.layout =
      cpu::make_layout(s.facts, cpu::env_value(cpu::kDevicesEnv), cpu::env_value(cpu::kVisibleEnv));
  return s;
}

std::string device_list(const Snapshot& s) {
  if (s.layout.visible.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < s.layout.visible.size(); ++i) {
    if (!out.empty()) out += ", ";
    const auto& cores = s.layout.group_cores[static_cast<std::size_t>(s.layout.visible[i])];
    out += std::to_string(i) + " (cores " + cpu::format_cpu_list(cores) + ")";
  }
  return out;
}

// The calling thread (and every thread and child it starts later) runs on `cores` only.
void pin_to(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) {
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    throw NativeError(errno, "sched_setaffinity",
                      std::string("cannot pin to cores ") + cpu::format_cpu_list(cores) + ": " +
                          std::strerror(errno));
  }
}

class CpuBackend final : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] std::vector<std::string> aliases() const override { return {"host"}; }
  [[nodiscard]] std::vector<std::string> visibility_vars() const override {
    return {cpu::kVisibleEnv};
  }
  [[nodiscard]] Capabilities capabilities() const override {
    Capabilities c;
    c.host = true;
    c.l2_known = cpu::read_host_facts().llc_bytes != 0;
    return c;
  }
  [[nodiscard]] Availability availability() const override {
    const auto s = snapshot();
    Availability a;
    a.runtime_found = true;
    a.looked_for = "the host (/proc/cpuinfo, sched_getaffinity)";
    a.detail = s.facts.model_name + ", " + std::to_string(s.facts.cores.size()) +
               " allowed cores, " + std::to_string(s.layout.groups) + " device group(s)";
    if (!s.layout.error.empty()) a.detail += "; " + s.layout.error;
    return a;
  }
  [[nodiscard]] std::vector<DeviceDesc> enumerate() const override {
    const auto s = snapshot();
    std::vector<DeviceDesc> out;
    for (std::size_t i = 0; i < s.layout.visible.size(); ++i) {
      out.push_back(cpu::describe_device(s.facts, s.layout, static_cast<int>(i)));
    }
    return out;
  }
  [[nodiscard]] std::unique_ptr<Device> open(int visible_index, std::uint64_t seed) const override {
    const auto s = snapshot();
    if (visible_index < 0 || static_cast<std::size_t>(visible_index) >= s.layout.visible.size()) {
      throw std::out_of_range("cpu: no device " + std::to_string(visible_index) +
                              "; devices: " + device_list(s));
    }
    auto desc = cpu::describe_device(s.facts, s.layout, visible_index);
    const bool grouped = s.layout.groups > 1 || cpu::env_value(cpu::kVisibleEnv).has_value();
    if (grouped) {
      // Saved before pinning, so that children of this process cut the same groups.
      setenv(cpu::kAllowedCoresEnv, cpu::format_cpu_list(s.facts.cores).c_str(), 0);
      pin_to(s.layout.group_cores[static_cast<std::size_t>(
          s.layout.visible[static_cast<std::size_t>(visible_index)])]);
    }
    return std::make_unique<cpu::CpuDevice>(std::move(desc), capabilities(), seed);
  }
  // There is no device to poison and no capture to refuse: every error is an ordinary one.
  [[nodiscard]] Failure classify(int native_code) const override {
    return native_code == 0 ? Failure::ok : Failure::other;
  }
  [[nodiscard]] std::map<std::string, std::string> child_env(int visible_index) const override {
    const auto s = snapshot();
    if (visible_index < 0 || static_cast<std::size_t>(visible_index) >= s.layout.visible.size()) {
      throw std::out_of_range("cpu: no device " + std::to_string(visible_index) +
                              "; devices: " + device_list(s));
    }
    return {{cpu::kVisibleEnv,
             std::to_string(s.layout.visible[static_cast<std::size_t>(visible_index)])}};
  }
  // A bad device count is the cpu backend's own mistake to name; the rest (no device visible)
  // is the common guard's message.
  void setup_guard() const override {
    const auto s = snapshot();
    if (!s.layout.error.empty()) throw BackendUnavailable("backend 'cpu': " + s.layout.error);
    Backend::setup_guard();
  }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace caliber::backends
