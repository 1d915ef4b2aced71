// Host-side entry points of the backend's own kernels (cuda_kernels.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/gpu_runtime.hpp"
#include "caliber/dtype.hpp"

namespace caliber::backends::cuda {

// Uniform values in [lo, hi) (integers lo..hi-1) from a counter-based hash of (seed, index): the
// same seed gives the same data on any launch geometry; a zero is replaced by a nonzero value of
// the range wherever the range has one. Returns the launch's error.
cudaError_t launch_fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                                std::uint64_t seed, cudaStream_t stream);
// Reads `bytes` of `buf` (16-byte aligned) once, leaving clean lines in the L2; `sink` is a
// device word it may write.
cudaError_t launch_l2_evict(const void* buf, std::size_t bytes, unsigned* sink, int sm_count,
                            cudaStream_t stream);
// A one-thread kernel that holds the stream until *release is nonzero or timeout_s has passed;
// *gave_up says which. `release` and `gave_up` are device pointers to mapped host memory.
cudaError_t launch_hold(volatile int* release, volatile int* gave_up, double timeout_s,
                        cudaStream_t stream);
// An empty kernel of the backend's own (its name says so to the kernel trace): a boundary
// between two timed launches in the records.
cudaError_t launch_trace_mark(cudaStream_t stream);
// An empty kernel: the cheapest proof that the context still launches.
cudaError_t launch_probe(cudaStream_t stream);

}  // namespace caliber::backends::cuda
