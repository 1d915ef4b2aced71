// The cuda backend of a build without CUDA (-DCALIBER_CUDA=OFF): it exists so that selection,
// listing and planning behave the same, and it says why it has no devices.
#include "backends/builtin.hpp"
#include "backends/cuda/cuda_common.hpp"

namespace caliber::backends {
namespace {

class CudaStubBackend final : public cuda::CudaBackendBase {
 public:
  Capabilities capabilities() const override { return family_capabilities(); }
  Availability availability() const override {
    Availability a;
    a.runtime_found = false;
    a.looked_for = "the CUDA runtime (libcudart)";
    a.detail = "this build has no CUDA support (-DCALIBER_CUDA=OFF)";
    return a;
  }
  std::vector<DeviceDesc> enumerate() const override { return {}; }
  std::unique_ptr<Device> open(int, std::uint64_t) const override {
    throw BackendUnavailable("backend 'cuda': this build has no CUDA support (-DCALIBER_CUDA=OFF)");
  }
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaStubBackend instance;
  return instance;
}

}  // namespace caliber::backends
