// ascend: the CANN runtime is found by loading libascendcl; devices come from `npu-smi info`.
// The ACL device interface (aclmdlRICapture* for graphs) needs a CANN build.
#include "backends/ascend/ascend_tools.hpp"
#include "backends/builtin.hpp"
#include "backends/external_backend.hpp"
#include "backends/probe.hpp"

namespace caliber::backends {
namespace {

class AscendBackend final : public ExternalBackend {
 public:
  std::string name() const override { return "ascend"; }
  std::vector<std::string> aliases() const override { return {"npu", "cann", "huawei"}; }
  std::vector<std::string> visibility_vars() const override {
    return {"ASCEND_RT_VISIBLE_DEVICES"};
  }
  Capabilities capabilities() const override {
    Capabilities c;
    c.graph_capture = true;         // aclmdlRICaptureBegin / CaptureEnd / ExecuteAsync
    c.graph_timer_default = false;  // non-cuda backends stay on direct (docs/timing.md)
    c.clusters = false;
    c.default_rng = true;
    c.l2_known = false;  // ACL does not report the L2 size, so a flush cannot be sized to it
    return c;
  }
  Failure classify(int code) const override {
    // ACL's error numbers share nothing with CUDA's, and no wording is guessed for capture
    // refusal or device faults (docs/timing.md): every error is an ordinary failure.
    return code == 0 ? Failure::ok : Failure::other;
  }

 protected:
  std::vector<std::string> runtime_libraries() const override { return {"libascendcl.so"}; }
  std::string runtime_what() const override { return "CANN AscendCL runtime"; }
  std::vector<DeviceDesc> physical_devices() const override {
    return devices_from_tool("npu-smi info", ascend::parse_npu_smi_info);
  }
  Visibility caller_visibility(int physical_count) const override {
    const auto v = env_value("ASCEND_RT_VISIBLE_DEVICES");
    return parse_ascend_visible(v ? std::optional<std::string_view>(*v) : std::nullopt,
                                physical_count);
  }
  std::map<std::string, std::string> pin_env(const std::string& physical_id) const override {
    return {{"ASCEND_RT_VISIBLE_DEVICES", physical_id}};
  }
  std::string toolchain() const override { return "CANN (AscendCL)"; }
};

}  // namespace

const Backend& ascend_backend() {
  static const AscendBackend instance;
  return instance;
}

}  // namespace caliber::backends
