// The device a host program (the Python package) sees: the backend's own device, with graph
// capture routed through the host's graph API (torch.cuda.CUDAGraph and its memory pool) when
// the host installed capture hooks, and the launch helper that turns a host callback's status
// into caliber's errors. docs/python.md explains why capture goes through the host.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "backends/backend.hpp"
#include "capi/caliber_c.h"

namespace caliber::capi {

// An error of the host language outside any capture (a Python exception): the case fails with
// its message; it is not a runtime error, so the device stays usable.
class HostRaised : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Calls `launch(target, provider)`: returns on success; throws NativeError for a runtime error
// (classified by the backend), timing::CaptureRefused for a host error while `ctx` captures,
// HostRaised for a host error outside a capture.
void invoke_launch(caliber_c_launch_fn launch, std::int64_t target, std::int64_t provider,
                   const DeviceContext& ctx);

// Wraps `inner`; with `hooks` non-null, begin/end/abort capture and graph replay go to the host.
[[nodiscard]] std::unique_ptr<backends::Device> wrap_device(std::unique_ptr<backends::Device> inner,
                                                            caliber_c_capture_fn hooks);

}  // namespace caliber::capi
