// rocm: the HIP runtime is found by loading libamdhip64 (never linked here); devices come from
// amd-smi, or rocm-smi on older installs. The HIP device interface needs a hipcc build.
#include "backends/builtin.hpp"
#include "backends/external_backend.hpp"
#include "backends/probe.hpp"
#include "backends/rocm/rocm_tools.hpp"

namespace caliber::backends {
namespace {

class RocmBackend final : public ExternalBackend {
 public:
  std::string name() const override { return "rocm"; }
  std::vector<std::string> aliases() const override { return {"amd", "hip"}; }
  std::vector<std::string> visibility_vars() const override {
    return {"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
  }
  Capabilities capabilities() const override {
    Capabilities c;
    c.graph_capture = true;  // hipStreamBeginCapture / hipGraphLaunch exist
    // The graph timer is the default only where it was checked against a profiler (CUDA);
    // elsewhere capture-then-fallback only adds noise (docs/timing.md, "The two timers").
    c.graph_timer_default = false;
    c.clusters = false;
    c.default_rng = true;
    c.l2_known = true;  // hipDeviceProp_t::l2CacheSize
    return c;
  }
  Failure classify(int code) const override {
    // HIP keeps CUDA's numbering for these (hipErrorStreamCapture* = 900..908,
    // hipErrorIllegalAddress = 700, hipErrorAssert = 710, hipErrorLaunchFailure = 719).
    if (code == 0) return Failure::ok;
    if (code >= 900 && code <= 908) return Failure::refused_capture;
    if (code == 700 || code == 710 || (code >= 714 && code <= 719)) return Failure::fatal_on_device;
    return Failure::other;
  }

 protected:
  std::vector<std::string> runtime_libraries() const override {
    return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  }
  std::string runtime_what() const override { return "HIP runtime"; }
  std::vector<DeviceDesc> physical_devices() const override {
    std::vector<DeviceDesc> devices =
        devices_from_tool("amd-smi list --json", rocm::parse_amd_smi_list);
    const std::vector<DeviceDesc> names =
        devices_from_tool("rocm-smi --showproductname --json", rocm::parse_rocm_smi_productname);
    if (devices.empty()) return names;
    rocm::merge_product_names(devices, names);
    return devices;
  }
  Visibility caller_visibility(int physical_count) const override {
    const auto rocr = env_value("ROCR_VISIBLE_DEVICES");
    const auto hip = env_value("HIP_VISIBLE_DEVICES");
    return parse_rocm_visible(rocr ? std::optional<std::string_view>(*rocr) : std::nullopt,
                              hip ? std::optional<std::string_view>(*hip) : std::nullopt,
                              physical_count);
  }
  std::map<std::string, std::string> pin_env(const std::string& physical_id) const override {
    // ROCr is applied first, so the physical id goes there; HIP then sees exactly one device,
    // its 0, which also overrides any HIP_VISIBLE_DEVICES the child would inherit.
    return {{"ROCR_VISIBLE_DEVICES", physical_id}, {"HIP_VISIBLE_DEVICES", "0"}};
  }
  std::string toolchain() const override { return "HIP (hipcc)"; }
};

}  // namespace

const Backend& rocm_backend() {
  static const RocmBackend instance;
  return instance;
}

}  // namespace caliber::backends
