#include "backends/cuda/nvml.hpp"

#include <dlfcn.h>

namespace caliber::backends::cuda {
namespace {

// nvmlClockType_t values.
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;

// nvmlMemory_t (v1): total, free, used, in bytes.
struct NvmlMemoryV1 {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 and _v2 fill it.
struct NvmlProcessInfo {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
constexpr int kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE

template <class F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

Nvml& Nvml::get() {
  static Nvml instance;
  return instance;
}

Nvml::Nvml() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    status_ = "NVML not available (libnvidia-ml.so.1 not found): no clocks, throttle reasons";
    return;
  }
  bind(lib_, "nvmlInit_v2", init_);
  bind(lib_, "nvmlSystemGetDriverVersion", system_driver_version_);
  bind(lib_, "nvmlDeviceGetCount_v2", device_count_);
  bind(lib_, "nvmlDeviceGetHandleByUUID", by_uuid_);
  bind(lib_, "nvmlDeviceGetHandleByPciBusId_v2", by_pci_);
  bind(lib_, "nvmlDeviceGetUUID", get_uuid_);
  bind(lib_, "nvmlDeviceGetClockInfo", clock_info_);
  bind(lib_, "nvmlDeviceGetMaxClockInfo", max_clock_info_);
  // Renamed in recent drivers; the old name stays as an alias in most of them.
  bind(lib_, "nvmlDeviceGetCurrentClocksEventReasons", throttle_reasons_);
  if (throttle_reasons_ == nullptr) {
    bind(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons", throttle_reasons_);
  }
  bind(lib_, "nvmlDeviceGetMemoryInfo", memory_info_);
  bind(lib_, "nvmlDeviceGetPowerUsage", power_usage_);
  bind(lib_, "nvmlDeviceGetEnforcedPowerLimit", power_limit_);
  bind(lib_, "nvmlDeviceGetComputeRunningProcesses_v3", compute_processes_);
  if (compute_processes_ == nullptr) {
    bind(lib_, "nvmlDeviceGetComputeRunningProcesses_v2", compute_processes_);
  }
  if (init_ == nullptr) {
    status_ = "NVML loaded but nvmlInit_v2 is missing";
    return;
  }
  const int rc = init_();
  if (rc != 0) {
    status_ = "NVML loaded but nvmlInit_v2 failed (code " + std::to_string(rc) + ")";
    return;
  }
  ok_ = true;
  status_ = "NVML loaded";
}

std::string Nvml::driver_version() const {
  if (!ok_ || system_driver_version_ == nullptr) return "";
  char buf[96] = {};
  if (system_driver_version_(buf, sizeof(buf)) != 0) return "";
  return buf;
}

int Nvml::physical_count() const {
  unsigned n = 0;
  if (!ok_ || device_count_ == nullptr || device_count_(&n) != 0) return -1;
  return static_cast<int>(n);
}

void* Nvml::handle_by_uuid(const std::string& uuid) const {
  Dev d = nullptr;
  if (!ok_ || by_uuid_ == nullptr || by_uuid_(uuid.c_str(), &d) != 0) return nullptr;
  return d;
}

void* Nvml::handle_by_pci(const std::string& bus_id) const {
  Dev d = nullptr;
  if (!ok_ || by_pci_ == nullptr || by_pci_(bus_id.c_str(), &d) != 0) return nullptr;
  return d;
}

std::optional<NvmlClocks> Nvml::clocks(void* handle, bool full) const {
  if (!ok_ || handle == nullptr || clock_info_ == nullptr) return std::nullopt;
  NvmlClocks c;
  unsigned v = 0;
  if (clock_info_(handle, kClockSm, &v) != 0) return std::nullopt;
  c.sm_mhz = static_cast<int>(v);
  unsigned long long reasons = 0;
  if (throttle_reasons_ != nullptr && throttle_reasons_(handle, &reasons) == 0) {
    c.throttle_reasons = reasons;
  }
  if (power_usage_ != nullptr && power_usage_(handle, &v) == 0) c.power_mw = v;
  if (!full) return c;
  if (max_clock_info_ != nullptr && max_clock_info_(handle, kClockSm, &v) == 0) {
    c.sm_max_mhz = static_cast<int>(v);
  }
  if (clock_info_(handle, kClockMem, &v) == 0) c.mem_mhz = static_cast<int>(v);
  if (power_limit_ != nullptr && power_limit_(handle, &v) == 0) c.power_limit_mw = v;
  return c;
}

std::optional<NvmlMemory> Nvml::memory(void* handle) const {
  if (!ok_ || handle == nullptr || memory_info_ == nullptr) return std::nullopt;
  NvmlMemoryV1 m{};
  if (memory_info_(handle, &m) != 0) return std::nullopt;
  return NvmlMemory{m.total, m.used};
}

std::optional<std::vector<unsigned>> Nvml::compute_pids(void* handle) const {
  if (!ok_ || handle == nullptr || compute_processes_ == nullptr) return std::nullopt;
  std::vector<NvmlProcessInfo> infos(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned n = static_cast<unsigned>(infos.size());
    const int rc = compute_processes_(handle, &n, infos.data());
    if (rc == kInsufficientSize) {  // n holds the count now; more may start meanwhile
      infos.resize(static_cast<std::size_t>(n) + 16);
      continue;
    }
    if (rc != 0) return std::nullopt;
    std::vector<unsigned> pids;
    for (unsigned i = 0; i < n && i < infos.size(); ++i) pids.push_back(infos[i].pid);
    return pids;
  }
  return std::nullopt;
}

std::string Nvml::uuid(void* handle) const {
  if (!ok_ || handle == nullptr || get_uuid_ == nullptr) return "";
  char buf[96] = {};
  if (get_uuid_(handle, buf, sizeof(buf)) != 0) return "";
  return buf;
}

}  // namespace caliber::backends::cuda
