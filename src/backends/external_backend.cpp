#include "backends/external_backend.hpp"

#include "backends/probe.hpp"

namespace caliber::backends {

Availability ExternalBackend::availability() const {
  return library_availability(runtime_libraries(), runtime_what());
}

const std::vector<DeviceDesc>& ExternalBackend::cached_physical() const {
  // The tool is a process spawn: ask once per process; devices do not come and go mid-run.
  std::call_once(physical_once_, [this] {
    if (availability().runtime_found) physical_ = physical_devices();
  });
  return physical_;
}

std::vector<DeviceDesc> ExternalBackend::enumerate() const {
  const auto& physical = cached_physical();
  if (physical.empty()) return {};
  return apply_visibility(physical, caller_visibility(static_cast<int>(physical.size())));
}

std::unique_ptr<Device> ExternalBackend::open(int visible_index, std::uint64_t /*seed*/) const {
  throw BackendUnavailable("backend '" + name() + "': the device interface for " + name() +
                           " is not built in this binary (it needs a " + toolchain() +
                           " build); cannot open device " + std::to_string(visible_index));
}

std::map<std::string, std::string> ExternalBackend::child_env(int visible_index) const {
  const auto& physical = cached_physical();
  const int physical_count = physical.empty() ? -1 : static_cast<int>(physical.size());
  const Visibility vis = caller_visibility(physical_count);
  return pin_env(physical_id_for(vis, visible_index, static_cast<int>(enumerate().size())));
}

}  // namespace caliber::backends
