// Device helpers for check() on tensors too large to copy back whole: count the elements that
// are still poisoned (non-finite) on the device, and gather a deterministic sample to the host.
#pragma once

#include <cstdint>
#include <vector>

#include "common/cuda_common.cuh"

namespace caliber::ops::cuda {

template <class T>
__global__ void count_nonfinite_kernel(const T* p, std::int64_t n, unsigned long long* counter) {
  unsigned long long local = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = to_float(p[i]);
    if (!isfinite(v)) ++local;
  }
  if (local != 0) atomicAdd(counter, local);
}

// Elements of p[0, n) that are NaN or infinite: poison left behind, or a real overflow.
template <class T>
[[nodiscard]] std::uint64_t count_nonfinite(DeviceContext& ctx, const T* p, std::int64_t n) {
  const cudaStream_t s = stream_of(ctx);
  Buffer counter(ctx, sizeof(unsigned long long));
  CALIBER_CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), s));
  const unsigned grid = grid_for(n, 256, ctx.props(), 2);
  count_nonfinite_kernel<T><<<grid, 256, 0, s>>>(p, n, counter.as<unsigned long long>());
  CALIBER_LAUNCH_CHECK("count_nonfinite_kernel");
  unsigned long long host = 0;
  CALIBER_CUDA_CHECK(cudaMemcpyAsync(&host, counter.get(), sizeof host, cudaMemcpyDeviceToHost, s));
  sync(s);
  return host;
}

template <class T>
__global__ void gather_kernel(const T* src, const std::int64_t* idx, T* dst, std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) dst[i] = src[idx[i]];
}

// src[idx[k]] for every k, copied back and converted to double.
template <class T>
[[nodiscard]] std::vector<double> gather_to_host(DeviceContext& ctx, const T* src,
                                                 const std::vector<std::int64_t>& idx) {
  const cudaStream_t s = stream_of(ctx);
  const auto count = static_cast<std::int64_t>(idx.size());
  if (count == 0) return {};
  Buffer d_idx(ctx, idx.size() * sizeof(std::int64_t));
  Buffer d_out(ctx, idx.size() * sizeof(T));
  CALIBER_CUDA_CHECK(cudaMemcpyAsync(d_idx.get(), idx.data(), idx.size() * sizeof(std::int64_t),
                                     cudaMemcpyHostToDevice, s));
  gather_kernel<T><<<static_cast<unsigned>(ceil_div(count, 256)), 256, 0, s>>>(
      src, d_idx.as<std::int64_t>(), d_out.as<T>(), count);
  CALIBER_LAUNCH_CHECK("gather_kernel");
  return check::download(ctx, d_out.get(), dtype_of<T>(), idx.size());
}

}  // namespace caliber::ops::cuda

namespace caliber::ops::cuda {

template <class T>
__global__ void gather_vectors_kernel(const T* src, const std::int64_t* offsets,
                                      std::int64_t stride, std::int64_t len, std::int64_t count,
                                      T* dst) {
  const std::int64_t total = count * len;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const std::int64_t v = e / len, k = e % len;
    dst[e] = src[offsets[v] + k * stride];
  }
}

// Copies back `offsets.size()` strided vectors of `len` elements (vector v holds
// src[offsets[v] + k*stride] for k < len), e.g. sampled rows and columns of a matrix, as
// double: vector v occupies [v*len, (v+1)*len) of the result.
template <class T>
[[nodiscard]] std::vector<double> gather_vectors_to_host(DeviceContext& ctx, const T* src,
                                                         const std::vector<std::int64_t>& offsets,
                                                         std::int64_t stride, std::int64_t len) {
  const cudaStream_t s = stream_of(ctx);
  const auto count = static_cast<std::int64_t>(offsets.size());
  if (count == 0 || len <= 0) return {};
  Buffer d_off(ctx, offsets.size() * sizeof(std::int64_t));
  Buffer d_out(ctx, static_cast<std::size_t>(count * len) * sizeof(T));
  CALIBER_CUDA_CHECK(cudaMemcpyAsync(d_off.get(), offsets.data(),
                                     offsets.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice,
                                     s));
  const unsigned grid = grid_for(count * len, 256, ctx.props(), 1);
  gather_vectors_kernel<T>
      <<<grid, 256, 0, s>>>(src, d_off.as<std::int64_t>(), stride, len, count, d_out.as<T>());
  CALIBER_LAUNCH_CHECK("gather_vectors_kernel");
  return check::download(ctx, d_out.get(), dtype_of<T>(), static_cast<std::size_t>(count * len));
}

}  // namespace caliber::ops::cuda
