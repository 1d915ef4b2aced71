// NVML, loaded at run time from libnvidia-ml.so.1 (no nvml.h, no link): clocks, throttle reasons,
// memory, uuid. Everything degrades to "unknown" when the library or a symbol is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace caliber::backends::cuda {

struct NvmlClocks {
  int sm_mhz = 0;
  int sm_max_mhz = 0;
  int mem_mhz = 0;
  std::uint64_t throttle_reasons = 0;
  unsigned power_mw = 0;        // board power, 0 when unknown
  unsigned power_limit_mw = 0;  // the enforced limit, 0 when unknown
};

struct NvmlMemory {
  std::uint64_t total = 0;
  std::uint64_t used = 0;
};

class Nvml {
 public:
  // The process-wide instance; loads and initialises NVML on first use.
  static Nvml& get();
  [[nodiscard]] bool available() const noexcept { return ok_; }
  [[nodiscard]] const std::string& status() const noexcept { return status_; }
  [[nodiscard]] std::string driver_version() const;
  // The physical device count NVML sees (it ignores CUDA_VISIBLE_DEVICES), -1 when unknown.
  [[nodiscard]] int physical_count() const;
  // Handle lookup by uuid ("GPU-...") or PCI bus id; nullptr when unknown.
  [[nodiscard]] void* handle_by_uuid(const std::string& uuid) const;
  [[nodiscard]] void* handle_by_pci(const std::string& bus_id) const;
  // full: also the maximum SM clock, the memory clock and the power limit, which do not change
  // while a run lasts; without it three calls (SM clock, reasons, power), cheap enough to read
  // between samples.
  [[nodiscard]] std::optional<NvmlClocks> clocks(void* handle, bool full = true) const;
  [[nodiscard]] std::optional<NvmlMemory> memory(void* handle) const;
  [[nodiscard]] std::string uuid(void* handle) const;
  // The ids of the processes with a compute context on the device, as the driver gives them (its
  // PID namespace's); nullopt when unknown.
  [[nodiscard]] std::optional<std::vector<unsigned>> compute_pids(void* handle) const;

  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

 private:
  Nvml();
  bool ok_ = false;
  std::string status_;
  void* lib_ = nullptr;
  // NVML's ABI: int return codes (0 = success), opaque device handles.
  using Dev = void*;
  int (*init_)() = nullptr;
  int (*system_driver_version_)(char*, unsigned) = nullptr;
  int (*device_count_)(unsigned*) = nullptr;
  int (*by_uuid_)(const char*, Dev*) = nullptr;
  int (*by_pci_)(const char*, Dev*) = nullptr;
  int (*get_uuid_)(Dev, char*, unsigned) = nullptr;
  int (*clock_info_)(Dev, int, unsigned*) = nullptr;
  int (*max_clock_info_)(Dev, int, unsigned*) = nullptr;
  int (*throttle_reasons_)(Dev, unsigned long long*) = nullptr;
  int (*memory_info_)(Dev, void*) = nullptr;
  int (*power_usage_)(Dev, unsigned*) = nullptr;
  int (*power_limit_)(Dev, unsigned*) = nullptr;
  int (*compute_processes_)(Dev, unsigned*, void*) = nullptr;
};

}  // namespace caliber::backends::cuda
