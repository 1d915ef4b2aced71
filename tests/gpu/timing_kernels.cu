// Kernels of known behaviour for the timing GPU tests (test_timing.cpp).
#include <cuda_runtime.h>

#include "spin_kernel.cuh"

#include <cstddef>
#include <string>

#include "caliber/context.hpp"

namespace caliber::timing::gpu_test {

namespace {

using caliber::known_kernels::spin_kernel;

// Writes through a null pointer passed at run time: page 0 is never mapped, so this always faults.
// (An earlier version wrote 1 TiB past null, an address that is mapped on the H200: no fault.)
__global__ void illegal_address_kernel(int* p) {
  p[threadIdx.x] = 1;
}

__global__ void copy_kernel(const uint4* src, uint4* dst, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

void check(cudaError_t e, const char* api) {
  if (e != cudaSuccess) throw NativeError(static_cast<int>(e), api, cudaGetErrorString(e));
}

}  // namespace

void launch_spin(void* stream, double us) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<unsigned long long>(us * 1e3));
  check(cudaGetLastError(), "spin_kernel");
}

// A launch function that cannot live in a graph: it synchronizes its stream after the kernel
// (as an op that reads a result back to the host would). Under capture this is refused (900).
void launch_spin_then_sync(void* stream, double us) {
  launch_spin(stream, us);
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

// A device copy of `bytes` (a multiple of 16): the data an L2-resident kernel reads and writes.
void launch_copy(void* stream, const void* src, void* dst, std::size_t bytes) {
  copy_kernel<<<132 * 4, 512, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
  check(cudaGetLastError(), "copy_kernel");
}

void launch_illegal_address(void* stream) {
  illegal_address_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(nullptr);
  check(cudaGetLastError(), "illegal_address_kernel");
}

}  // namespace caliber::timing::gpu_test
