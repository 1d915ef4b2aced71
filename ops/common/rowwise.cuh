// Helpers shared by the row-wise families of the CUDA corpus (reduce, norm, sort, random, fft):
// the rows x cols view of a case, the tunable block-size space, row sampling for references,
// and warp/block reductions of a small accumulator. Built on common/cuda_common.cuh.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "caliber/reference.hpp"
#include "common/cuda_common.cuh"

namespace caliber::ops::cuda::rowwise {

// The last dimension is the row; every other dimension multiplies the row count. A 1-D shape
// is one row.
struct RowShape {
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  [[nodiscard]] std::int64_t numel() const { return rows * cols; }
};

[[nodiscard]] inline RowShape row_shape(const Case& c) {
  RowShape r;
  r.cols = c.shape.empty() ? 1 : std::max<std::int64_t>(c.shape.back(), 1);
  r.rows = std::max<std::int64_t>(c.numel() / r.cols, 1);
  return r;
}

// The tunable launch space of the own row kernels: block size, keyed by the row length and the
// row count (log2 buckets so nearby shapes share a tuned config).
[[nodiscard]] inline ConfigSpace block_space(const RowShape& rs, std::int64_t default_block = 256) {
  ConfigSpace s;
  for (std::int64_t b : {64, 128, 256, 512, 1024}) s.configs.push_back(Config{{{"block", b}}});
  s.default_config = Config{{{"block", default_block}}};
  s.key = {{"cols", rs.cols, KeyStrategy::log2}, {"rows", rs.rows, KeyStrategy::log2}};
  return s;
}

[[nodiscard]] inline int block_of(const Config& c, int fallback = 256) {
  const auto b = c.get("block", fallback);
  if (b < 32 || b > 1024 || b % 32 != 0) {
    throw ConfigRejected("block=" + std::to_string(b) + " is not a multiple of 32 in [32, 1024]");
  }
  return static_cast<int>(b);
}

// Rows checked against the host: all of them when the tensor is small, otherwise a
// deterministic sample whose elements stay within `budget` (at least one row, first and last
// included, so an off-by-one at either edge is seen).
[[nodiscard]] inline std::vector<std::int64_t> sample_rows(const RowShape& rs, std::uint64_t seed,
                                                           std::int64_t budget = 1 << 22) {
  const std::int64_t want = std::max<std::int64_t>(1, budget / std::max<std::int64_t>(rs.cols, 1));
  return check::sample_indices(rs.rows, std::min(want, rs.rows), seed);
}

[[nodiscard]] inline std::string rows_detail(const RowShape& rs, std::size_t sampled) {
  if (static_cast<std::int64_t>(sampled) == rs.rows) {
    return "all " + std::to_string(rs.rows) + " rows of " + std::to_string(rs.cols);
  }
  return std::to_string(sampled) + " sampled rows of " + std::to_string(rs.rows) + " (" +
         std::to_string(rs.cols) + " each)";
}

// Blocks that fill the device a few times over: the target for splitting long rows.
[[nodiscard]] inline std::int64_t fill_blocks(const DeviceProps& p, int block) {
  const std::int64_t sms = p.sm_count > 0 ? p.sm_count : 132;
  return sms * std::max(1, 2048 / block) * 2;
}

// Device: shuffle-based reductions of a trivially copyable accumulator via a combine functor.
template <class A, class Combine>
__device__ __forceinline__ A warp_reduce(A a, Combine comb) {
  static_assert(sizeof(A) % 4 == 0, "accumulator must be a whole number of 32-bit words");
  constexpr int kWords = sizeof(A) / 4;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    A other;
    const auto* src = reinterpret_cast<const unsigned*>(&a);
    auto* dst = reinterpret_cast<unsigned*>(&other);
#pragma unroll
    for (int w = 0; w < kWords; ++w) dst[w] = __shfl_xor_sync(0xffffffffu, src[w], off);
    a = comb(a, other);
  }
  return a;
}

// Block-wide reduction; every thread gets the result. `scratch` holds at least 33 A's. The
// trailing barrier lets the caller reuse scratch right away.
template <class A, class Combine>
__device__ __forceinline__ A block_reduce(A a, Combine comb, A identity, A* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  a = warp_reduce(a, comb);
  if (lane == 0) scratch[warp] = a;
  __syncthreads();
  if (warp == 0) {
    A v = lane < warps ? scratch[lane] : identity;
    v = warp_reduce(v, comb);
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  const A r = scratch[32];
  __syncthreads();
  return r;
}

}  // namespace caliber::ops::cuda::rowwise

namespace caliber::ops::cuda::rowwise {

// Streams elements [first, first + count) of a device tensor back in chunks converted to double,
// calling fn(values, offset_of_first_value). Keeps host memory bounded for 1G-element rows.
template <class F>
void stream_back(const void* dev, DType t, std::int64_t first, std::int64_t count, cudaStream_t s,
                 F&& fn, std::int64_t chunk = std::int64_t{1} << 24) {
  const std::size_t es = size_of(t);
  std::vector<unsigned char> raw;
  for (std::int64_t off = 0; off < count; off += chunk) {
    const std::int64_t n = std::min(chunk, count - off);
    raw.resize(static_cast<std::size_t>(n) * es);
    CALIBER_CUDA_CHECK(cudaMemcpyAsync(
        raw.data(),
        static_cast<const unsigned char*>(dev) + static_cast<std::size_t>(first + off) * es,
        raw.size(), cudaMemcpyDeviceToHost, s));
    CALIBER_CUDA_CHECK(cudaStreamSynchronize(s));
    fn(check::to_double(raw.data(), t, static_cast<std::size_t>(n)), off);
  }
}

// Row r starts at element r * cols: the segment offsets that CUB's segmented algorithms take.
struct RowStart {
  long long cols;
  __host__ __device__ long long operator()(long long r) const { return r * cols; }
};

}  // namespace caliber::ops::cuda::rowwise
