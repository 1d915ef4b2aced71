// The refused-capture leftover test op (scripts/gpu-check's `refuse` step): `hrefuse`, one case
// per spin length in microseconds (shape 37: a 37 us spin). Its baseline `ref` spins and checks
// the runtime's last error after the launch, the common CUDA idiom; its candidate `sync` spins and
// synchronizes its stream inside the launch, checking only that call's code, so that its graph
// capture is refused and it falls back to the direct timer. Built with the CUDA runtime linked
// statically into the library (an op library a user builds with nvcc's defaults): the call that
// refused the capture leaves its code in this library's own copy of the runtime's last-error
// state, which the caliber binary cannot clear, and which `ref`'s check then reads when the
// baseline is timed again by the direct timer (one regime per row). The case must come out ok,
// `timer=direct`, with BENCHMARK_DIRECT_NO_CUDAGRAPH. A test op library only: never in the corpus.
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include <caliber/caliber.hpp>
#include <caliber/check.hpp>

namespace {
using namespace caliber;

void cuda_ok(cudaError_t e, const char* api) {
  if (e != cudaSuccess) throw NativeError(static_cast<int>(e), api, cudaGetErrorString(e));
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins for `ns` of the global timer, then writes 1 to `done`.
__global__ void spin_kernel(unsigned long long ns, int* done) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) {
  }
  *done = 1;
}

class Spin final : public Workload {
 public:
  Spin(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), ns_(static_cast<unsigned long long>(c.shape.at(0)) * 1000ULL), out_(ctx, 4) {}
  std::vector<ProviderInfo> providers() const override {
    return {
        {"ref", Role::baseline, "1", "spin, then cudaGetLastError", {}},
        {"sync", Role::candidate, "1", "spin, then cudaStreamSynchronize (refuses capture)", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    auto* stream = static_cast<cudaStream_t>(ctx_.stream());
    spin_kernel<<<1, 1, 0, stream>>>(ns_, out_.as<int>());
    if (p == 0) {
      cuda_ok(cudaGetLastError(), "spin");
    } else {
      cuda_ok(cudaStreamSynchronize(stream), "spin_then_sync");
    }
  }
  Accuracy check(std::size_t p) override {
    check::poison(ctx_, out_.get(), out_.bytes());
    launch(p);
    int got = 0;
    ctx_.copy(&got, out_.get(), sizeof got, CopyKind::device_to_host);
    Accuracy a;
    a.passed = got == 1;
    a.detail = "the spin's completion flag";
    return a;
  }
  double flops() const override { return 0; }
  double bytes() const override { return 4; }

 private:
  DeviceContext& ctx_;
  unsigned long long ns_;
  Buffer out_;
};

class RefuseOp final : public Op {
 public:
  OpInfo info() const override {
    return {"hrefuse",
            "test",
            {DType::f32},
            {"us"},
            false,
            false,
            "a spin whose candidate synchronizes inside its launch (its capture is refused)"};
  }
  std::size_t bytes_needed(const Case&) const override { return 64; }
  std::optional<std::string> skip_reason(const Case& c, const DeviceContext&) const override {
    if (c.shape.size() != 1 || c.shape[0] < 1 || c.shape[0] > 100000)
      return std::string("hrefuse: a shape is one spin length, 1 to 100000 us");
    return std::nullopt;
  }
  std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<Spin>(ctx, c);
  }
};

[[maybe_unused]] const bool registered = [] {
  register_op("cuda", [] { return std::make_unique<RefuseOp>(); });
  return true;
}();

}  // namespace
