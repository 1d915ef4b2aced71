// What the cuda backend is whether or not this build has CUDA: its name, aliases, visibility
// rule, failure classification and child pinning. Shared by cuda/ and cuda/stub/.
#pragma once

#include "backends/backend.hpp"
#include "backends/visibility.hpp"

namespace caliber::backends::cuda {

// cudaError_t numbers (stable across CUDA releases).
[[nodiscard]] inline Failure classify_cuda_error(int code) noexcept {
  if (code == 0) return Failure::ok;
  // 900..908: capture unsupported, invalidated, merge, unmatched, unjoined, isolation, implicit,
  // captured event, wrong thread: the kernel refused capture.
  if (code >= 900 && code <= 908) return Failure::refused_capture;
  // Sticky errors: 700 illegal address, 710 assert, 714..718 (hardware stack, illegal
  // instruction, misaligned address, invalid address space, invalid pc), 719 launch failure.
  if (code == 700 || code == 710 || (code >= 714 && code <= 719)) return Failure::fatal_on_device;
  return Failure::other;
}

class CudaBackendBase : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::vector<std::string> aliases() const override { return {"nvidia"}; }
  std::vector<std::string> visibility_vars() const override { return {"CUDA_VISIBLE_DEVICES"}; }
  Failure classify(int native_code) const override { return classify_cuda_error(native_code); }
  // Empty on purpose: no op of the built-in corpus is known to poison a CUDA context when its
  // capture is attempted. Ops found to do so go here (or to --capture-deny for one run).
  std::vector<std::string> capture_deny_ops() const override { return {}; }
  std::map<std::string, std::string> child_env(int visible_index) const override {
    const auto value = env_value("CUDA_VISIBLE_DEVICES");
    const Visibility vis = parse_cuda_visible(
        value ? std::optional<std::string_view>(*value) : std::nullopt, physical_count());
    const std::string physical =
        physical_id_for(vis, visible_index, static_cast<int>(enumerate().size()));
    return {{"CUDA_VISIBLE_DEVICES", physical}};
  }

 protected:
  // How many physical devices exist (NVML's count), -1 when unknown.
  [[nodiscard]] virtual int physical_count() const { return -1; }
  // The capabilities every CUDA device of the targeted architectures has. Clusters need
  // compute capability 9.0; the backend-wide flag is refined from the devices found.
  [[nodiscard]] static Capabilities family_capabilities() {
    Capabilities c;
    c.graph_capture = true;
    c.graph_timer_default = true;
    c.clusters = true;
    c.default_rng = true;
    c.l2_known = true;
    c.graph_event_nodes = true;
    c.stream_hold = true;
    return c;
  }
};

}  // namespace caliber::backends::cuda
