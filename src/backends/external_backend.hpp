// Base of the backends whose runtime this binary does not link (rocm, musa, ascend): availability
// by loading the runtime library, devices from the vendor tool, the caller's visibility applied,
// and an open() that says plainly that the device interface is not in this build.
#pragma once

#include <mutex>
#include <optional>

#include "backends/backend.hpp"
#include "backends/visibility.hpp"

namespace caliber::backends {

class ExternalBackend : public Backend {
 public:
  [[nodiscard]] Availability availability() const final;
  [[nodiscard]] std::vector<DeviceDesc> enumerate() const final;
  [[nodiscard]] std::unique_ptr<Device> open(int visible_index, std::uint64_t seed) const final;
  [[nodiscard]] std::map<std::string, std::string> child_env(int visible_index) const final;

 protected:
  // The runtime library names to try, and what they are ("HIP runtime").
  [[nodiscard]] virtual std::vector<std::string> runtime_libraries() const = 0;
  [[nodiscard]] virtual std::string runtime_what() const = 0;
  // Every physical device the vendor tool reports (physical_id = the tool's index).
  [[nodiscard]] virtual std::vector<DeviceDesc> physical_devices() const = 0;
  // The caller's visibility, read from the environment.
  [[nodiscard]] virtual Visibility caller_visibility(int physical_count) const = 0;
  // The variables that pin a child to one physical device.
  [[nodiscard]] virtual std::map<std::string, std::string> pin_env(
      const std::string& physical_id) const = 0;
  // How a build would get the device interface ("hipcc").
  [[nodiscard]] virtual std::string toolchain() const = 0;

 private:
  [[nodiscard]] const std::vector<DeviceDesc>& cached_physical() const;
  mutable std::once_flag physical_once_;
  mutable std::vector<DeviceDesc> physical_;
};

}  // namespace caliber::backends
