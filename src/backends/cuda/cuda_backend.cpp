// cuda: devices through the CUDA runtime (linked), clocks and throttle reasons through NVML
// (loaded at run time, optional).
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "backends/builtin.hpp"
#include "backends/cuda/cuda_common.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/nvml.hpp"
#include "backends/gpu_runtime.hpp"

namespace caliber::backends {
namespace {

std::string version_text(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string uuid_text(const char* raw) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw);
  // The "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" spelling nvidia-smi, NVML and
  // CUDA_VISIBLE_DEVICES use.
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof(hex), "%02x", bytes[i]);
    out += hex;
  }
  return out;
}

class CudaBackend final : public cuda::CudaBackendBase {
 public:
  Capabilities capabilities() const override {
    Capabilities c = family_capabilities();
    const auto& devices = probe().devices;
    if (!devices.empty()) {
      // Clusters need sm_90; the cluster-fix stage applies when any visible device has them.
      c.clusters = false;
      for (const DeviceDesc& d : devices) {
        if (std::atoi(d.compute_capability.c_str()) >= 9) c.clusters = true;
      }
      c.max_cluster = c.clusters ? kPortableMaxCluster : 0;
    }
    return c;
  }

  Availability availability() const override {
    const Probe& p = probe();
    Availability a;
    a.looked_for = "a CUDA driver (libcuda.so.1) for the linked CUDA runtime " + p.runtime;
    a.runtime_found = p.driver_version > 0;
    a.detail = p.driver_version > 0 ? "driver supports CUDA " + version_text(p.driver_version)
                                    : "no CUDA driver";
    if (!p.count_error.empty()) a.detail += "; " + p.count_error;
    a.detail += "; " + cuda::Nvml::get().status();
    return a;
  }

  std::vector<DeviceDesc> enumerate() const override {
    std::vector<DeviceDesc> devices = probe().devices;
    // Clocks and memory in use change; everything else was read once.
    const cuda::Nvml& nvml = cuda::Nvml::get();
    for (DeviceDesc& d : devices) {
      void* h = nvml.handle_by_uuid(d.uuid);
      if (auto c = nvml.clocks(h)) {
        d.sm_clock_mhz = c->sm_mhz;
        d.sm_clock_max_mhz = c->sm_max_mhz;
        d.mem_clock_mhz = c->mem_mhz;
      }
      if (auto m = nvml.memory(h)) d.mem_used = m->used;
    }
    return devices;
  }

  std::unique_ptr<Device> open(int visible_index, std::uint64_t seed) const override {
    const auto devices = enumerate();
    if (visible_index < 0 || visible_index >= static_cast<int>(devices.size())) {
      std::string listing;
      for (const DeviceDesc& d : devices) {
        listing += (listing.empty() ? "" : ", ") + std::to_string(d.index) + " (" + d.name +
                   ", physical " + d.physical_id + ")";
      }
      throw std::out_of_range("cuda device " + std::to_string(visible_index) +
                              " is out of range; " +
                              (listing.empty() ? "no device is visible" : "visible: " + listing));
    }
    return std::make_unique<cuda::CudaDevice>(visible_index, devices[visible_index], seed);
  }

 protected:
  int physical_count() const override { return cuda::Nvml::get().physical_count(); }

 private:
  struct Probe {
    int driver_version = 0;
    std::string runtime;
    std::string count_error;
    std::vector<DeviceDesc> devices;
  };

  const Probe& probe() const {
    std::call_once(once_, [this] { probe_ = run_probe(); });
    return probe_;
  }

  Probe run_probe() const {
    Probe p;
    int rt = 0;
    if (cudaRuntimeGetVersion(&rt) == cudaSuccess) p.runtime = version_text(rt);
    (void)cudaDriverGetVersion(&p.driver_version);  // 0 when no driver: never fails hard
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      p.count_error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) + " (code " +
                      std::to_string(static_cast<int>(e)) + ")";
      (void)cudaGetLastError();
      return p;
    }
    const cuda::Nvml& nvml = cuda::Nvml::get();
    const std::string driver = nvml.driver_version();
    const auto env = env_value("CUDA_VISIBLE_DEVICES");
    const Visibility vis = parse_cuda_visible(
        env ? std::optional<std::string_view>(*env) : std::nullopt, nvml.physical_count());
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      DeviceDesc d;
      d.index = i;
      // When the caller's list is shorter than what the runtime shows (a UUID prefix matching
      // twice is impossible, but be safe), fall back to the runtime's own uuid.
      d.physical_id = (vis.all || i < static_cast<int>(vis.ids.size()))
                          ? physical_id_for(vis, i, count)
                          : uuid_text(prop.uuid.bytes);
      d.name = prop.name;
      d.uuid = uuid_text(prop.uuid.bytes);
      d.mem_total = prop.totalGlobalMem;
      d.driver_version = driver.empty() ? "CUDA " + version_text(p.driver_version) : driver;
      d.runtime_version = p.runtime;
      d.sm_count = prop.multiProcessorCount;
      d.l2_bytes = static_cast<std::uint64_t>(prop.l2CacheSize);
      d.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
      char bus[32] = {};
      if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) == cudaSuccess) d.extra["pci_bus_id"] = bus;
      d.extra["nvml"] = nvml.status();
      void* h = nvml.handle_by_uuid(d.uuid);
      if (h == nullptr && d.extra.count("pci_bus_id") != 0) {
        h = nvml.handle_by_pci(d.extra["pci_bus_id"]);
      }
      if (auto c = nvml.clocks(h)) {
        d.sm_clock_mhz = c->sm_mhz;
        d.sm_clock_max_mhz = c->sm_max_mhz;
        d.mem_clock_mhz = c->mem_mhz;
      }
      if (auto m = nvml.memory(h)) d.mem_used = m->used;
      p.devices.push_back(std::move(d));
    }
    return p;
  }

  mutable std::once_flag once_;
  mutable Probe probe_;
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend instance;
  return instance;
}

}  // namespace caliber::backends
