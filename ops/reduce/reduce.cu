// Row reductions over the last dimension: sum, amax, argmax (int64), cumsum (inclusive).
// Baseline: CUB (device-wide for one row, segmented otherwise; fp32 accumulation through a
// converting iterator so that half inputs are not summed in half). Candidate: own kernels, a
// warp per row for short rows, blocks per row for long ones, and long rows split over several
// blocks when there are too few rows to fill the device. Accumulation is fp32 throughout.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/atomic>
#include <cuda/std/functional>
#include <limits>
#include <memory>

#include "common/check_kernels.cuh"
#include "common/cuda_common.cuh"
#include "common/rowwise.cuh"
#include "reduce/scan_lookback.hpp"

namespace caliber::ops::cuda::reduce {
namespace {

using rowwise::RowShape;

enum class Kind { sum, amax, argmax, cumsum };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::sum:
      return "sum";
    case Kind::amax:
      return "amax";
    case Kind::argmax:
      return "argmax";
    default:
      return "cumsum";
  }
}

// ---------------------------------------------------------------------------------------------
// Accumulators. Argmax carries the index; ties keep the lower index (torch's rule).

struct SumAcc {
  float v;
};
struct MaxAcc {
  float v;
};
struct ArgAcc {
  float v;
  unsigned pad;
  long long i;
};

template <Kind K>
struct AccOf {
  using type = SumAcc;
};
template <>
struct AccOf<Kind::amax> {
  using type = MaxAcc;
};
template <>
struct AccOf<Kind::argmax> {
  using type = ArgAcc;
};

struct CombineSum {
  __device__ SumAcc operator()(SumAcc a, SumAcc b) const { return {a.v + b.v}; }
};
struct CombineMax {
  __device__ MaxAcc operator()(MaxAcc a, MaxAcc b) const { return {fmaxf(a.v, b.v)}; }
};
struct CombineArg {
  __device__ ArgAcc operator()(ArgAcc a, ArgAcc b) const {
    return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
  }
};

template <Kind K>
struct Ops;
template <>
struct Ops<Kind::sum> {
  using Acc = SumAcc;
  using Comb = CombineSum;
  __device__ static Acc identity() { return {0.f}; }
  __device__ static Acc one(float x, long long) { return {x}; }
};
template <>
struct Ops<Kind::amax> {
  using Acc = MaxAcc;
  using Comb = CombineMax;
  __device__ static Acc identity() { return {-INFINITY}; }
  __device__ static Acc one(float x, long long) { return {x}; }
};
template <>
struct Ops<Kind::argmax> {
  using Acc = ArgAcc;
  using Comb = CombineArg;
  __device__ static Acc identity() { return {-INFINITY, 0u, 0x7fffffffffffffffLL}; }
  __device__ static Acc one(float x, long long i) { return {x, 0u, i}; }
};

// Final write of one row's result: the value (sum, amax) or the index (argmax).
template <Kind K, class T>
__device__ __forceinline__ void write_result(void* out, long long row, typename Ops<K>::Acc a) {
  if constexpr (K == Kind::argmax) {
    static_cast<long long*>(out)[row] = a.i;
  } else {
    static_cast<T*>(out)[row] = from_float<T>(a.v);
  }
}

// One task = (row, split): reduce elements [split*chunk, min(cols, split*chunk+chunk)) of the
// row. WARP: a warp per task (short rows); otherwise the whole block. With splits == 1 the
// result is final; otherwise the partial goes to `partial[task]`, finished by finalize_kernel.
template <Kind K, class T, int V, bool WARP>
__global__ void reduce_rows_kernel(const T* __restrict__ x, long long rows, long long cols,
                                   long long chunk, long long splits, void* out,
                                   typename Ops<K>::Acc* partial) {
  using O = Ops<K>;
  using Acc = typename O::Acc;
  __shared__ Acc scratch[33];
  const typename O::Comb comb;
  const int lanes = WARP ? 32 : static_cast<int>(blockDim.x);
  const int lane = WARP ? static_cast<int>(threadIdx.x & 31) : static_cast<int>(threadIdx.x);
  const long long units_per_block = WARP ? blockDim.x / 32 : 1;
  const long long unit = WARP ? (threadIdx.x >> 5) : 0;
  const long long tasks = rows * splits;
  for (long long base = static_cast<long long>(blockIdx.x) * units_per_block; base < tasks;
       base += static_cast<long long>(gridDim.x) * units_per_block) {
    const long long task = base + unit;
    Acc a = O::identity();
    if (task < tasks) {
      const long long row = task / splits;
      const long long s = task % splits;
      const long long begin = s * chunk;
      const long long end = min(cols, begin + chunk);
      const T* p = x + row * cols;
      if constexpr (V > 1) {
        // cols and chunk are multiples of V here, so every vector lies inside the range.
        for (long long j = begin + static_cast<long long>(lane) * V; j < end;
             j += static_cast<long long>(lanes) * V) {
          const Vec<T, V> v = load_vec<T, V>(p + j);
#pragma unroll
          for (int k = 0; k < V; ++k) a = comb(a, O::one(to_float(v.v[k]), j + k));
        }
      } else {
        for (long long j = begin + lane; j < end; j += lanes) {
          a = comb(a, O::one(to_float(p[j]), j));
        }
      }
    }
    if constexpr (WARP) {
      a = rowwise::warp_reduce(a, comb);
    } else {
      a = rowwise::block_reduce(a, comb, O::identity(), scratch);
    }
    if (lane == 0 && task < tasks) {
      if (splits == 1) {
        write_result<K, T>(out, task, a);
      } else {
        partial[task] = a;
      }
    }
  }
}

// A warp per row combines the row's `splits` partials.
template <Kind K, class T>
__global__ void finalize_kernel(const typename Ops<K>::Acc* __restrict__ partial, long long rows,
                                long long splits, void* out) {
  using O = Ops<K>;
  const typename O::Comb comb;
  const long long warps = blockDim.x / 32;
  for (long long row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows;
       row += static_cast<long long>(gridDim.x) * warps) {
    typename O::Acc a = O::identity();
    for (long long s = threadIdx.x & 31; s < splits; s += 32)
      a = comb(a, partial[row * splits + s]);
    a = rowwise::warp_reduce(a, comb);
    if ((threadIdx.x & 31) == 0) write_result<K, T>(out, row, a);
  }
}

// ---------------------------------------------------------------------------------------------
// Inclusive scan. Each thread owns 4 consecutive elements of a tile of blockDim*4; tiles carry
// their total forward. For few long rows, the row is split: partial sums per chunk (reduce
// kernel), an exclusive scan of those per row, then every chunk scans with its carry-in.

constexpr int kScanItems = 4;

// Exclusive block scan of one float per thread; `total` gets the block's sum. Ends with a
// barrier so the scratch can be reused.
__device__ __forceinline__ float block_exclusive_scan(float v, float& total, float* warp_sums) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  float inc = v;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float o = __shfl_up_sync(0xffffffffu, inc, off);
    if (lane >= off) inc += o;
  }
  if (lane == 31) warp_sums[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? warp_sums[lane] : 0.f;
    float winc = w;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float o = __shfl_up_sync(0xffffffffu, winc, off);
      if (lane >= off) winc += o;
    }
    if (lane < 32) warp_sums[lane] = winc - w;  // exclusive prefix of warp totals
    if (lane == 31) warp_sums[32] = winc;
  }
  __syncthreads();
  const float excl = warp_sums[warp] + inc - v;
  total = warp_sums[32];
  __syncthreads();
  return excl;
}

template <class T, bool VEC>
__global__ void cumsum_kernel(const T* __restrict__ x, T* __restrict__ y, long long rows,
                              long long cols, long long chunk, long long splits,
                              const float* __restrict__ carry_in) {
  __shared__ float warp_sums[33];
  const long long tasks = rows * splits;
  const long long tile = static_cast<long long>(blockDim.x) * kScanItems;
  for (long long task = blockIdx.x; task < tasks; task += gridDim.x) {
    const long long row = task / splits;
    const long long begin = (task % splits) * chunk;
    const long long end = min(cols, begin + chunk);
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    float carry = carry_in != nullptr ? carry_in[task] : 0.f;
    for (long long t0 = begin; t0 < end; t0 += tile) {
      const long long j0 = t0 + static_cast<long long>(threadIdx.x) * kScanItems;
      float v[kScanItems];
      if (VEC && j0 + kScanItems <= end) {
        const Vec<T, kScanItems> in = load_vec<T, kScanItems>(xr + j0);
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) v[k] = to_float(in.v[k]);
      } else {
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) v[k] = j0 + k < end ? to_float(xr[j0 + k]) : 0.f;
      }
#pragma unroll
      for (int k = 1; k < kScanItems; ++k) v[k] += v[k - 1];
      float total = 0.f;
      const float excl = carry + block_exclusive_scan(v[kScanItems - 1], total, warp_sums);
      if (VEC && j0 + kScanItems <= end) {
        Vec<T, kScanItems> o;
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) o.v[k] = from_float<T>(excl + v[k]);
        store_vec<T, kScanItems>(yr + j0, o);
      } else {
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) {
          if (j0 + k < end) yr[j0 + k] = from_float<T>(excl + v[k]);
        }
      }
      carry += total;
    }
  }
}

// Exclusive scan of each row's chunk sums (one block per row): the carry-in of every chunk.
__global__ void carry_scan_kernel(const SumAcc* __restrict__ partial, float* __restrict__ carry,
                                  long long rows, long long splits) {
  __shared__ float warp_sums[33];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    float run = 0.f;
    for (long long s0 = 0; s0 < splits; s0 += blockDim.x) {
      const long long s = s0 + threadIdx.x;
      const float v = s < splits ? partial[row * splits + s].v : 0.f;
      float total = 0.f;
      const float excl = block_exclusive_scan(v, total, warp_sums);
      if (s < splits) carry[row * splits + s] = run + excl;
      run += total;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Single-pass inclusive scan with decoupled look-back (Merrill and Garland 2016, "Single-pass
// parallel prefix scan with decoupled look-back"; CUB's DeviceScan): the input is read once and
// the output written once. The flattened rows x cols tensor is cut into tiles of block * ITEMS
// elements, one tile per block; a row start (flat index % cols == 0) resets the sum, so a tile
// may hold many short rows, and a long row spans many tiles. Index and status arithmetic lives
// in reduce/scan_lookback.hpp (unit-tested on the host).
//
// Inside a tile, warp w owns 32 * ITEMS consecutive elements, lane l its vectors k * 32 + l
// (V = 16 / sizeof(T) elements each, so loads and stores are 16-byte and coalesced). Each step
// k scans a lane's vector, then the warp's 32 vectors (segmented Kogge-Stone: a lane adds a
// partner only when no row start lies between), carrying a (reset, value) pair from step to
// step; warp 0 then scans the warps' pairs. An element whose row starts inside the same warp
// segment is final at that point ("reached"); the others add their warp's exclusive prefix,
// which for a warp with no row start before it in the tile needs the tile's exclusive prefix:
// the look-back.
//
// Look-back (warp 0 of the block): the tile publishes its aggregate at once (as a prefix when
// it holds a row start: nothing before it matters to anything after it), then, unless its first
// element starts a row, reads its 32 closest predecessors' status words, waits (with backoff)
// until none is invalid, adds the values from the closest one up to the closest prefix, and
// moves 32 tiles further back when there is no prefix among them. The chain always ends: the
// tile holding the row's start publishes a prefix without waiting on anything. Then it
// publishes its own prefix. Tile ids come from a ticket counter, in the order blocks started,
// so a tile waits only on tiles that are already running and publish without waiting: no
// deadlock whatever order the hardware schedules blocks in. Status words are single 64-bit
// values read and written with relaxed device-scope atomics (a reader needs nothing else from
// the writer); tile sums are fp32, the exclusive prefixes fp64 (see scan_lookback.hpp).

constexpr int kLookbackMaxBlock = 512;

// cumsum's config key "algo": the three-pass scan (chunk sums, their scan, then every chunk
// with its carry-in; configs without the key) or the single-pass look-back scan (with "items"
// per thread, 8 or 16).
constexpr std::int64_t kAlgoThreePass = 0;
constexpr std::int64_t kAlgoLookback = 1;
constexpr int kStatusOffset = 16;  // words: the ticket counter sits alone in the first 128 bytes

using StatusRef = ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>;

// Segmented inclusive warp scan of one float per lane: `seg` is the lane where this lane's
// segment starts (-1: before lane 0); a lane adds a partner's partial only inside its segment.
__device__ __forceinline__ float warp_segmented_scan(float v, int lane, int seg) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const float o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d && lane - d >= seg) v += o;
  }
  return v;
}

// The exclusive prefix of tile `tile` in its row (warp 0, every lane; the tile's first element
// does not start a row). Every predecessor has started (lower ticket) and publishes before its
// own look-back, so the waits end.
__device__ double lookback(unsigned long long* status, long long tile, unsigned long long tag,
                           int lane) {
  double excl = 0.0;
  for (long long pred = tile - 1;; pred -= 32) {
    const long long p = pred - lane;  // lane 0 is the closest predecessor
    unsigned long long word = 0;
    unsigned long long flag = scan::kFlagInvalid;
    unsigned ns = 32;
    for (long long spins = 0;; ++spins) {
      if (flag == scan::kFlagInvalid) {
        if (p < 0) {
          flag = scan::kFlagPrefix;  // before tile 0: an empty prefix (tile 0 starts a row)
          word = 0;
        } else {
          word = StatusRef(status[p]).load(::cuda::memory_order_relaxed);
          flag = scan::status_flag(word, tag);
        }
      }
      if (__all_sync(0xffffffffu, flag != scan::kFlagInvalid)) break;
      // Legitimate waits are microseconds. Far past that an invariant is broken (a launch that
      // did not take its tickets): fail with a device error rather than hang the process.
      if (spins > (1LL << 24)) __trap();
      __nanosleep(ns);
      if (ns < 1024) ns *= 2;
    }
    const unsigned prefixes = __ballot_sync(0xffffffffu, flag == scan::kFlagPrefix);
    const int stop = prefixes != 0 ? __ffs(prefixes) - 1 : 31;  // the closest prefix
    double part = lane <= stop && p >= 0 ? scan::status_value(word) : 0.0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) part += __shfl_xor_sync(0xffffffffu, part, off);
    excl += part;
    if (prefixes != 0) return excl;
  }
}

template <class T, int ITEMS>
__global__ void __launch_bounds__(kLookbackMaxBlock)
    cumsum_lookback_kernel(const T* __restrict__ x, T* __restrict__ y, long long n, long long cols,
                           long long tiles, unsigned long long magic, bool vec,
                           unsigned long long* __restrict__ scratch) {
  constexpr int V = max_vec<T>();
  static_assert(ITEMS % V == 0 && ITEMS <= 16, "whole 16-byte vectors, one bit per item");
  constexpr int NV = ITEMS / V;
  constexpr unsigned kFull = 0xffffffffu;
  __shared__ long long s_tile, s_col0;
  __shared__ unsigned long long s_tag;
  __shared__ float s_warp_sum[32];
  __shared__ int s_warp_reset[32];
  __shared__ double s_warp_prefix[32];

  unsigned long long* status = scratch + kStatusOffset;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int warps = static_cast<int>(blockDim.x >> 5);
  const long long tile_elems = static_cast<long long>(blockDim.x) * ITEMS;
  if (threadIdx.x == 0) {
    const scan::TileTicket tt = scan::tile_of_ticket(atomicAdd(scratch, 1ull), tiles);
    s_tile = tt.tile;
    s_tag = tt.tag;
    s_col0 = (tt.tile * tile_elems) % cols;
  }
  __syncthreads();
  const long long tile = s_tile;
  const long long col0 = s_col0;
  const long long begin = tile * tile_elems;
  const long long warp_off = static_cast<long long>(warp) * 32 * ITEMS;

  // Loads: vector k of this lane starts at tile offset warp_off + (k * 32 + lane) * V.
  float v[NV][V];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const long long e = begin + warp_off + static_cast<long long>(k * 32 + lane) * V;
    if (vec && e + V <= n) {
      const Vec<T, V> in = load_vec<T, V>(x + e);
#pragma unroll
      for (int i = 0; i < V; ++i) v[k][i] = to_float(in.v[i]);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) v[k][i] = e + i < n ? to_float(x[e + i]) : 0.f;
    }
  }

  // Step k: scan the lane's vector, then the warp's row of 32 vectors, then add the carry of
  // steps < k. reached: bit k * V + i when element i of vector k needs no prefix from outside
  // the warp segment (its row starts inside it).
  float carry = 0.f;
  bool carry_reset = false;
  unsigned reached = 0;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const long long off = warp_off + static_cast<long long>(k * 32 + lane) * V;
    const long long e = begin + off;
    unsigned heads = 0;
    if (e < n) {
      heads = scan::head_bits<V>(scan::column_at(col0, off, cols, magic), cols) &
              scan::valid_bits(n - e, V);
    }
    float run = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      run = ((heads >> i) & 1u) != 0 ? v[k][i] : run + v[k][i];
      v[k][i] = run;
    }
    const unsigned ball = __ballot_sync(kFull, heads != 0);
    const float inc = warp_segmented_scan(run, lane, scan::last_set_at_or_below(ball, lane));
    float ex = __shfl_up_sync(kFull, inc, 1);
    const bool ex_reset = (ball & ((1u << lane) - 1u)) != 0;  // a row start in a lower lane
    float base = 0.f;
    bool base_reset = true;
    if (ex_reset) {
      base = ex;
    } else {
      base = lane == 0 ? carry : carry + ex;
      base_reset = carry_reset;
    }
    const unsigned first_head = heads != 0 ? static_cast<unsigned>(__ffs(heads) - 1) : V;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if (static_cast<unsigned>(i) >= first_head) {
        reached |= 1u << (k * V + i);  // its row starts in this vector
      } else {
        v[k][i] = base + v[k][i];
        if (base_reset) reached |= 1u << (k * V + i);
      }
    }
    const float total = __shfl_sync(kFull, inc, 31);
    if (ball != 0) {
      carry = total;
      carry_reset = true;
    } else {
      carry += total;
    }
  }
  if (lane == 0) {
    s_warp_sum[warp] = carry;
    s_warp_reset[warp] = carry_reset ? 1 : 0;
  }
  __syncthreads();

  if (warp == 0) {
    const float a = lane < warps ? s_warp_sum[lane] : 0.f;
    const bool r = lane < warps && s_warp_reset[lane] != 0;
    const unsigned ball = __ballot_sync(kFull, r);
    const float inc = warp_segmented_scan(a, lane, scan::last_set_at_or_below(ball, lane));
    const float up = __shfl_up_sync(kFull, inc, 1);
    const float ex = lane == 0 ? 0.f : up;
    const bool ex_reset = (ball & ((1u << lane) - 1u)) != 0;
    const float tile_sum = __shfl_sync(kFull, inc, 31);  // lanes >= warps add nothing
    const bool tile_reset = ball != 0;
    const unsigned long long tag = s_tag;
    if (lane == 0) {
      StatusRef(status[tile])
          .store(scan::pack_status(tile_sum, tag,
                                   tile_reset ? scan::kFlagPrefix : scan::kFlagAggregate),
                 ::cuda::memory_order_relaxed);
    }
    const double excl = col0 != 0 ? lookback(status, tile, tag, lane) : 0.0;
    if (lane == 0 && !tile_reset) {
      StatusRef(status[tile])
          .store(scan::pack_status(excl + static_cast<double>(tile_sum), tag, scan::kFlagPrefix),
                 ::cuda::memory_order_relaxed);
    }
    if (lane < warps) {
      s_warp_prefix[lane] = ex_reset ? static_cast<double>(ex) : excl + static_cast<double>(ex);
    }
  }
  __syncthreads();

  const float prefix = static_cast<float>(s_warp_prefix[warp]);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const long long e = begin + warp_off + static_cast<long long>(k * 32 + lane) * V;
    Vec<T, V> o;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float r = ((reached >> (k * V + i)) & 1u) != 0 ? v[k][i] : prefix + v[k][i];
      o.v[i] = from_float<T>(r);
    }
    if (vec && e + V <= n) {
      store_vec<T, V>(y + e, o);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (e + i < n) y[e + i] = o.v[i];
      }
    }
  }
}

// Segmented CUB ArgMax gives (int offset, value) pairs; torch's argmax is int64.
template <class T>
__global__ void pair_to_index_kernel(const cub::KeyValuePair<int, T>* __restrict__ kv,
                                     long long* __restrict__ idx, long long rows) {
  for (long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<long long>(gridDim.x) * blockDim.x) {
    idx[r] = kv[r].key;
  }
}

// ---------------------------------------------------------------------------------------------
// Device references for check() on rows longer than kHostRowLimit (streaming such a row to the
// host and reducing it there took most of a corpus run). Plain and independent of the kernels
// above: double accumulation per thread or per warp, shared-memory tree and shuffle reductions,
// fixed launch shapes so every result is deterministic on a given device.

constexpr std::int64_t kHostRowLimit = std::int64_t{1} << 24;  // longer rows: device reference
constexpr int kRefBlock = 256;
constexpr long long kRefChunk = 4096;                      // scan reference: elements per chunk sum
constexpr std::int64_t kRefBatch = std::int64_t{1} << 18;  // scan positions per download

// Per block: the double sum and the float maximum (exact: it is an input element) of the
// block's grid-stride share of x[0, n).
template <class T>
__global__ void __launch_bounds__(kRefBlock)
    ref_sum_max_kernel(const T* __restrict__ x, long long n, double* __restrict__ block_sum,
                       float* __restrict__ block_max) {
  __shared__ double ssum[kRefBlock];
  __shared__ float smax[kRefBlock];
  double s = 0;
  float m = -INFINITY;
  const long long step = static_cast<long long>(gridDim.x) * kRefBlock;
  for (long long i = static_cast<long long>(blockIdx.x) * kRefBlock + threadIdx.x; i < n;
       i += step) {
    const float v = to_float(x[i]);
    s += static_cast<double>(v);
    m = fmaxf(m, v);
  }
  ssum[threadIdx.x] = s;
  smax[threadIdx.x] = m;
  __syncthreads();
  for (int h = kRefBlock / 2; h > 0; h >>= 1) {
    if (static_cast<int>(threadIdx.x) < h) {
      ssum[threadIdx.x] += ssum[threadIdx.x + h];
      smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + h]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    block_sum[blockIdx.x] = ssum[0];
    block_max[blockIdx.x] = smax[0];
  }
}

__device__ __forceinline__ double ref_warp_sum(double s) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  return s;
}

// A warp per chunk of kRefChunk elements of x[0, n): the chunk's sum in double.
template <class T>
__global__ void __launch_bounds__(kRefBlock)
    ref_chunk_sum_kernel(const T* __restrict__ x, long long n, long long chunks,
                         double* __restrict__ sums) {
  constexpr long long kWarps = kRefBlock / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  for (long long c = static_cast<long long>(blockIdx.x) * kWarps + (threadIdx.x >> 5); c < chunks;
       c += static_cast<long long>(gridDim.x) * kWarps) {
    const long long begin = c * kRefChunk;
    const long long end = min(n, begin + kRefChunk);
    double s = 0;
    for (long long i = begin + lane; i < end; i += 32) s += static_cast<double>(to_float(x[i]));
    s = ref_warp_sum(s);
    if (lane == 0) sums[c] = s;
  }
}

// The compared positions of a scanned row of n: k * stride for k < ceil(n / stride), then n - 1
// when it is not one of those.
__host__ __device__ __forceinline__ long long scan_position(long long k, long long n,
                                                            long long stride) {
  const long long strided = (n + stride - 1) / stride;
  return k < strided ? k * stride : n - 1;
}

// A warp per compared position k in [first, first + count): the reference inclusive prefix at
// j = scan_position(k), carry[j / kRefChunk] (the exclusive prefix of the chunk sums) plus
// x[chunk start .. j] in double, and the candidate's y[j] (exact in double).
template <class T>
__global__ void __launch_bounds__(kRefBlock)
    ref_scan_at_kernel(const T* __restrict__ x, const T* __restrict__ y, long long n,
                       long long stride, long long first, long long count,
                       const double* __restrict__ carry, double* __restrict__ ref,
                       double* __restrict__ got) {
  constexpr long long kWarps = kRefBlock / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  for (long long t = static_cast<long long>(blockIdx.x) * kWarps + (threadIdx.x >> 5); t < count;
       t += static_cast<long long>(gridDim.x) * kWarps) {
    const long long j = scan_position(first + t, n, stride);
    const long long c = j / kRefChunk;
    double s = 0;
    for (long long i = c * kRefChunk + lane; i <= j; i += 32) {
      s += static_cast<double>(to_float(x[i]));
    }
    s = ref_warp_sum(s);
    if (lane == 0) {
      ref[t] = carry[c] + s;
      got[t] = static_cast<double>(to_float(y[j]));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Iterator functors for the CUB baseline.

template <class T>
struct ToFloat {
  __host__ __device__ float operator()(T v) const { return to_float(v); }
};
struct RowOf {
  long long cols;
  __host__ __device__ long long operator()(long long i) const { return i / cols; }
};
struct MaxF {
  __host__ __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// ---------------------------------------------------------------------------------------------

class ReduceWorkload final : public Workload {
 public:
  ReduceWorkload(DeviceContext& ctx, const Case& c, Kind kind)
      : ctx_(ctx), case_(c), kind_(kind), rs_(rowwise::row_shape(c)), s_(stream_of(ctx)) {
    const std::size_t es = size_of(c.dtype);
    x_ = Buffer(ctx, static_cast<std::size_t>(rs_.numel()) * es);
    // Sums and scans of values in [-1, 1) stay well inside fp16's range even for 1G elements.
    ctx.fill_uniform(x_.get(), c.dtype, static_cast<std::size_t>(rs_.numel()), -1.0, 1.0,
                     ctx.seed());
    out_ = Buffer(ctx, out_bytes());
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "cub";
    base.role = Role::baseline;
    if (kind_ == Kind::cumsum) {
      base.label = rs_.rows == 1
                       ? "cub::DeviceScan::InclusiveScan, fp32 accumulation"
                       : "cub::DeviceScan::InclusiveScanByKey (row keys), fp32 accumulation";
    } else {
      const char* what = kind_ == Kind::sum    ? "Reduce(plus)"
                         : kind_ == Kind::amax ? "Reduce(max)"
                                               : "ArgMax";
      base.label =
          std::string(rs_.rows == 1 ? "cub::DeviceReduce::" : "cub::DeviceSegmentedReduce::") +
          what;
      if (kind_ == Kind::argmax && rs_.rows > 1) base.label += " + int64 index conversion";
    }
    ProviderInfo cand;
    cand.name = "caliber";
    cand.role = Role::candidate;
    cand.label = "own row kernels (warp per short row, split blocks per long row)";
    cand.space = rowwise::block_space(rs_);
    if (kind_ == Kind::cumsum) {
      cand.version = "2";  // the algo key (three-pass or look-back) joined the space
      cand.label =
          "own scans: single-pass decoupled look-back (algo=1) or three passes (algo=0), fp32 "
          "sums, fp64 tile prefixes";
      cand.space = scan_space();
    }
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) {
      prepare_cub();
    } else {
      prepare_own(c);
    }
  }

  void launch(std::size_t p) override {
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (p == 0) {
        run_cub<T>(temp_.get(), temp_bytes_);
      } else {
        run_own<T>();
      }
    });
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    check::poison(ctx_, out_.get(), out_bytes());
    launch(p);
    sync(s_);
    return kind_ == Kind::cumsum ? check_scan() : check_reduction();
  }

  [[nodiscard]] double flops() const override { return static_cast<double>(rs_.numel()); }
  [[nodiscard]] double bytes() const override {
    return static_cast<double>(rs_.numel() * static_cast<std::int64_t>(size_of(case_.dtype)) +
                               static_cast<std::int64_t>(out_bytes()));
  }

 private:
  [[nodiscard]] std::size_t out_bytes() const {
    const auto n = static_cast<std::size_t>(kind_ == Kind::cumsum ? rs_.numel() : rs_.rows);
    return n * (kind_ == Kind::argmax ? sizeof(long long) : size_of(case_.dtype));
  }

  // CUB calls with a null temp pointer only size the workspace.
  template <class T>
  void run_cub(void* temp, std::size_t& temp_bytes) {
    const T* x = x_.as<const T>();
    auto xf = thrust::make_transform_iterator(x, ToFloat<T>{});
    auto starts = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                                  rowwise::RowStart{rs_.cols});
    const bool one_row = rs_.rows == 1;
    const auto n = rs_.numel();
    switch (kind_) {
      case Kind::sum:
        if (one_row) {
          CALIBER_CUDA_CHECK(cub::DeviceReduce::Reduce(temp, temp_bytes, xf, out_.as<T>(), n,
                                                       ::cuda::std::plus<float>{}, 0.f, s_));
        } else {
          CALIBER_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(
              temp, temp_bytes, xf, out_.as<T>(), rs_.rows, starts, starts + 1,
              ::cuda::std::plus<float>{}, 0.f, s_));
        }
        break;
      case Kind::amax:
        if (one_row) {
          CALIBER_CUDA_CHECK(cub::DeviceReduce::Reduce(temp, temp_bytes, xf, out_.as<T>(), n,
                                                       MaxF{}, -INFINITY, s_));
        } else {
          CALIBER_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(temp, temp_bytes, xf, out_.as<T>(),
                                                                rs_.rows, starts, starts + 1,
                                                                MaxF{}, -INFINITY, s_));
        }
        break;
      case Kind::argmax:
        if (one_row) {
          CALIBER_CUDA_CHECK(cub::DeviceReduce::ArgMax(temp, temp_bytes, x, pair_scratch_.as<T>(),
                                                       out_.as<long long>(), n, s_));
        } else {
          using KV = cub::KeyValuePair<int, T>;
          CALIBER_CUDA_CHECK(cub::DeviceSegmentedReduce::ArgMax(
              temp, temp_bytes, x, pair_scratch_.as<KV>(), rs_.rows, starts, starts + 1, s_));
          if (temp != nullptr) {
            pair_to_index_kernel<T><<<grid_for(rs_.rows, 256, ctx_.props()), 256, 0, s_>>>(
                pair_scratch_.as<const KV>(), out_.as<long long>(), rs_.rows);
            CALIBER_LAUNCH_CHECK("pair_to_index_kernel");
          }
        }
        break;
      case Kind::cumsum:
        if (one_row) {
          CALIBER_CUDA_CHECK(cub::DeviceScan::InclusiveScan(temp, temp_bytes, xf, out_.as<T>(),
                                                            ::cuda::std::plus<float>{}, n, s_));
        } else {
          auto keys = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                                      RowOf{rs_.cols});
          CALIBER_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(
              temp, temp_bytes, keys, xf, out_.as<T>(), ::cuda::std::plus<float>{}, n,
              ::cuda::std::equal_to<long long>{}, s_));
        }
        break;
    }
  }

  void prepare_cub() {
    if (kind_ == Kind::argmax) {
      // Room for the segmented (int, T) pairs, or for the one-row max value.
      pair_scratch_ = Buffer(ctx_, static_cast<std::size_t>(rs_.rows) * 16);
    }
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      std::size_t bytes = 0;
      run_cub<T>(nullptr, bytes);
      temp_bytes_ = std::max<std::size_t>(bytes, 1);
    });
    temp_ = Buffer(ctx_, temp_bytes_);
  }

  // cumsum: the three-pass configs (every block size of block_space) and the look-back ones
  // (block x items: one kernel, input read once; many short rows share a tile, long rows chain
  // tiles).
  [[nodiscard]] ConfigSpace scan_space() const {
    ConfigSpace s = rowwise::block_space(rs_);
    for (auto& c : s.configs) c.values.insert(c.values.begin(), {"algo", kAlgoThreePass});
    for (std::int64_t b : {128, 256, 512}) {
      for (std::int64_t items : {8, 16}) {
        s.configs.push_back(Config{{{"algo", kAlgoLookback}, {"block", b}, {"items", items}}});
      }
    }
    // Default: the three-pass scan. Tuned on the H200 (2026-11-29, comprehensive level) the
    // look-back won only 4096x4096 f32, [1048576] and 65536x128; the three-pass scan won the
    // long rows ([2^30]: 64.8% vs CUB's 73.8% of the copy peak) and 1024- to 8192-column rows.
    s.default_config.values.insert(s.default_config.values.begin(), {"algo", kAlgoThreePass});
    return s;
  }

  void prepare_own(const Config& c) {
    const int block = rowwise::block_of(c);
    const std::int64_t algo =
        kind_ == Kind::cumsum ? c.get("algo", kAlgoThreePass) : kAlgoThreePass;
    if (algo == kAlgoLookback) {
      prepare_lookback(block, c.get("items", 16));
      algo_ = kAlgoLookback;
      return;
    }
    if (algo != kAlgoThreePass) {
      throw ConfigRejected("algo=" + std::to_string(algo) + " is neither " +
                           std::to_string(kAlgoThreePass) + " (three-pass scan) nor " +
                           std::to_string(kAlgoLookback) + " (look-back scan)");
    }
    algo_ = kAlgoThreePass;
    block_ = block;
    const std::int64_t vec = static_cast<std::int64_t>(max_vec_for());
    warp_mode_ = kind_ != Kind::cumsum && rs_.cols <= 1024;
    splits_ = 1;
    chunk_ = rs_.cols;
    const std::int64_t target = rowwise::fill_blocks(ctx_.props(), block);
    if (!warp_mode_ && rs_.rows < target) {
      // Each split keeps at least 4 full passes of the block so the partials stay cheap.
      const std::int64_t per_pass =
          static_cast<std::int64_t>(block) * (kind_ == Kind::cumsum ? kScanItems : vec);
      const std::int64_t min_chunk = per_pass * 4;
      const std::int64_t want = ceil_div(target, rs_.rows);
      const std::int64_t most = std::max<std::int64_t>(1, rs_.cols / min_chunk);
      const std::int64_t splits = std::min(want, most);
      chunk_ = ceil_div(ceil_div(rs_.cols, splits), per_pass) * per_pass;
      splits_ = ceil_div(rs_.cols, chunk_);
    }
    if (splits_ > 1) {
      partial_ = Buffer(ctx_, static_cast<std::size_t>(rs_.rows * splits_) * sizeof(ArgAcc));
      if (kind_ == Kind::cumsum) {
        carry_ = Buffer(ctx_, static_cast<std::size_t>(rs_.rows * splits_) * sizeof(float));
      }
    }
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (kind_ == Kind::cumsum) {
        require_launchable(cumsum_kernel<T, true>, block, 0, "cumsum_kernel");
      } else {
        require_launchable(reduce_rows_kernel<Kind::sum, T, 1, false>, block, 0,
                           "reduce_rows_kernel");
      }
    });
  }

  // The look-back scan's scratch: the ticket counter, then one status word per tile, zeroed here
  // once (see scan_lookback.hpp: launches tell their words apart by tag, so launch() adds no
  // memset).
  void prepare_lookback(int block, std::int64_t items) {
    if (items != 8 && items != 16) {
      throw ConfigRejected("items=" + std::to_string(items) + " is not 8 or 16");
    }
    if (block > kLookbackMaxBlock) {
      throw ConfigRejected("block=" + std::to_string(block) + " exceeds the look-back scan's " +
                           std::to_string(kLookbackMaxBlock));
    }
    const auto plan = scan::plan_lookback(rs_.numel(), rs_.cols, block, static_cast<int>(items));
    if (plan.tiles > std::numeric_limits<int>::max()) {
      throw ConfigRejected(std::to_string(plan.tiles) + " tiles exceed the grid limit");
    }
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (items == 8) {
        require_launchable(cumsum_lookback_kernel<T, 8>, block, 0, "cumsum_lookback_kernel");
      } else {
        require_launchable(cumsum_lookback_kernel<T, 16>, block, 0, "cumsum_lookback_kernel");
      }
    });
    const auto bytes = static_cast<std::size_t>(kStatusOffset + plan.tiles) * sizeof(std::uint64_t);
    scan_scratch_ = Buffer(ctx_, bytes);
    CALIBER_CUDA_CHECK(cudaMemsetAsync(scan_scratch_.get(), 0, bytes, s_));
    block_ = block;
    items_ = static_cast<int>(items);
    plan_ = plan;
  }

  template <class T>
  void run_lookback() {
    const bool vec = aligned_to(x_.get(), 16) && aligned_to(out_.get(), 16);
    const auto grid = static_cast<unsigned>(plan_.tiles);
    auto* scratch = scan_scratch_.as<unsigned long long>();
    if (items_ == 8) {
      cumsum_lookback_kernel<T, 8><<<grid, block_, 0, s_>>>(x_.as<const T>(), out_.as<T>(),
                                                            rs_.numel(), rs_.cols, plan_.tiles,
                                                            plan_.magic, vec, scratch);
    } else {
      cumsum_lookback_kernel<T, 16><<<grid, block_, 0, s_>>>(x_.as<const T>(), out_.as<T>(),
                                                             rs_.numel(), rs_.cols, plan_.tiles,
                                                             plan_.magic, vec, scratch);
    }
    CALIBER_LAUNCH_CHECK("cumsum_lookback_kernel");
  }

  [[nodiscard]] int max_vec_for() const {
    const int v = static_cast<int>(16 / size_of(case_.dtype));
    return rs_.cols % v == 0 ? v : 1;
  }

  template <Kind K, class T, bool WARP>
  void launch_reduce(std::int64_t rows, std::int64_t cols, std::int64_t chunk, std::int64_t splits,
                     void* out, void* partial) {
    using Acc = typename Ops<K>::Acc;
    const std::int64_t tasks = rows * splits;
    const unsigned grid =
        grid_for(tasks, WARP ? block_ / 32 : 1, ctx_.props(), 4, std::max(1, 2048 / block_));
    const bool vec = max_vec_for() > 1 && aligned_to(x_.get(), 16);
    constexpr int V = max_vec<T>();
    if (vec) {
      reduce_rows_kernel<K, T, V, WARP><<<grid, block_, 0, s_>>>(
          x_.as<const T>(), rows, cols, chunk, splits, out, static_cast<Acc*>(partial));
    } else {
      reduce_rows_kernel<K, T, 1, WARP><<<grid, block_, 0, s_>>>(
          x_.as<const T>(), rows, cols, chunk, splits, out, static_cast<Acc*>(partial));
    }
    CALIBER_LAUNCH_CHECK("reduce_rows_kernel");
  }

  template <Kind K, class T>
  void run_reduce() {
    if (warp_mode_) {
      launch_reduce<K, T, true>(rs_.rows, rs_.cols, rs_.cols, 1, out_.get(), nullptr);
      return;
    }
    launch_reduce<K, T, false>(rs_.rows, rs_.cols, chunk_, splits_, out_.get(), partial_.get());
    if (splits_ > 1) {
      finalize_kernel<K, T><<<grid_for(rs_.rows, 8, ctx_.props()), 256, 0, s_>>>(
          partial_.as<const typename Ops<K>::Acc>(), rs_.rows, splits_, out_.get());
      CALIBER_LAUNCH_CHECK("finalize_kernel");
    }
  }

  template <class T>
  void run_own() {
    switch (kind_) {
      case Kind::sum:
        run_reduce<Kind::sum, T>();
        break;
      case Kind::amax:
        run_reduce<Kind::amax, T>();
        break;
      case Kind::argmax:
        run_reduce<Kind::argmax, T>();
        break;
      case Kind::cumsum: {
        if (algo_ == kAlgoLookback) {
          run_lookback<T>();
          break;
        }
        const float* carry = nullptr;
        if (splits_ > 1) {
          // Chunk sums (the reduce kernel's partial path), then their per-row exclusive scan.
          launch_reduce<Kind::sum, T, false>(rs_.rows, rs_.cols, chunk_, splits_, nullptr,
                                             partial_.get());
          carry_scan_kernel<<<grid_for(rs_.rows, 1, ctx_.props()), 1024, 0, s_>>>(
              partial_.as<const SumAcc>(), carry_.as<float>(), rs_.rows, splits_);
          CALIBER_LAUNCH_CHECK("carry_scan_kernel");
          carry = carry_.as<const float>();
        }
        const unsigned grid =
            grid_for(rs_.rows * splits_, 1, ctx_.props(), 4, std::max(1, 2048 / block_));
        const bool vec = rs_.cols % kScanItems == 0 &&
                         aligned_to(x_.get(), sizeof(T) * kScanItems) &&
                         aligned_to(out_.get(), sizeof(T) * kScanItems);
        if (vec) {
          cumsum_kernel<T, true><<<grid, block_, 0, s_>>>(x_.as<const T>(), out_.as<T>(), rs_.rows,
                                                          rs_.cols, chunk_, splits_, carry);
        } else {
          cumsum_kernel<T, false><<<grid, block_, 0, s_>>>(x_.as<const T>(), out_.as<T>(), rs_.rows,
                                                           rs_.cols, chunk_, splits_, carry);
        }
        CALIBER_LAUNCH_CHECK("cumsum_kernel");
        break;
      }
    }
  }

  // Device reference of one row (rows longer than kHostRowLimit): its sum in double and its
  // exact maximum. Per-block partials are combined on the host in block order.
  template <class T>
  void device_sum_max(const T* row, std::int64_t cols, double& sum, double& max) {
    const unsigned grid = grid_for(cols, kRefBlock, ctx_.props(), 2);
    Buffer sums(ctx_, grid * sizeof(double));
    Buffer maxes(ctx_, grid * sizeof(float));
    ref_sum_max_kernel<T>
        <<<grid, kRefBlock, 0, s_>>>(row, cols, sums.as<double>(), maxes.as<float>());
    CALIBER_LAUNCH_CHECK("ref_sum_max_kernel");
    const auto hs = check::download_raw<double>(ctx_, sums.get(), grid);
    const auto hm = check::download_raw<float>(ctx_, maxes.get(), grid);
    sum = 0;
    float m = -std::numeric_limits<float>::infinity();
    for (unsigned b = 0; b < grid; ++b) {
      sum += hs[b];
      m = std::fmax(m, hm[b]);
    }
    max = static_cast<double>(m);
  }

  // Device reference of one scanned row (rows longer than kHostRowLimit): appends the
  // candidate's value and the double prefix at every compared position (scan_position) to
  // got / want. Chunk sums in double on the device, their exclusive prefix on the host, then
  // each position adds its chunk's elements up to itself; positions go in batches of kRefBatch
  // so the scratch stays a few MB.
  template <class T>
  void device_scan_at(const T* x, const T* y, std::int64_t cols, std::int64_t stride,
                      std::vector<double>& got, std::vector<double>& want) {
    const std::int64_t chunks = ceil_div(cols, kRefChunk);
    Buffer carry(ctx_, static_cast<std::size_t>(chunks) * sizeof(double));
    ref_chunk_sum_kernel<T>
        <<<grid_for(chunks, kRefBlock / 32, ctx_.props(), 4), kRefBlock, 0, s_>>>(
            x, cols, chunks, carry.as<double>());
    CALIBER_LAUNCH_CHECK("ref_chunk_sum_kernel");
    auto prefix = check::download_raw<double>(ctx_, carry.get(), static_cast<std::size_t>(chunks));
    double run = 0;
    for (auto& v : prefix) {
      const double chunk_sum = v;
      v = run;
      run += chunk_sum;
    }
    CALIBER_CUDA_CHECK(cudaMemcpyAsync(carry.get(), prefix.data(), prefix.size() * sizeof(double),
                                       cudaMemcpyHostToDevice, s_));
    const std::int64_t strided = ceil_div(cols, stride);
    const std::int64_t positions = strided + ((cols - 1) % stride != 0 ? 1 : 0);
    const std::int64_t batch = std::min(positions, kRefBatch);
    Buffer ref_d(ctx_, static_cast<std::size_t>(batch) * sizeof(double));
    Buffer got_d(ctx_, static_cast<std::size_t>(batch) * sizeof(double));
    for (std::int64_t first = 0; first < positions; first += batch) {
      const std::int64_t count = std::min(batch, positions - first);
      ref_scan_at_kernel<T><<<grid_for(count, kRefBlock / 32, ctx_.props(), 4), kRefBlock, 0, s_>>>(
          x, y, cols, stride, first, count, carry.as<const double>(), ref_d.as<double>(),
          got_d.as<double>());
      CALIBER_LAUNCH_CHECK("ref_scan_at_kernel");
      const auto r =
          check::download_raw<double>(ctx_, ref_d.get(), static_cast<std::size_t>(count));
      const auto g =
          check::download_raw<double>(ctx_, got_d.get(), static_cast<std::size_t>(count));
      want.insert(want.end(), r.begin(), r.end());
      got.insert(got.end(), g.begin(), g.end());
    }
  }

  // sum / amax / argmax on sampled rows, each row reduced in double: streamed back to the host,
  // or for rows longer than kHostRowLimit on the device (ref_sum_max_kernel).
  [[nodiscard]] Accuracy check_reduction() {
    const auto rows = rowwise::sample_rows(rs_, ctx_.seed() ^ 0x5eed, 1 << 24);
    const bool on_device = rs_.cols > kHostRowLimit;
    std::vector<double> ref_v;
    std::vector<long long> ref_i, out_i;
    std::vector<double> out_v;
    std::vector<double> row_max;  // for argmax: the value at the reported index must be the max
    std::vector<double> at_idx;
    if (kind_ == Kind::argmax) {
      out_i = check::download_raw<long long>(ctx_, out_.get(), static_cast<std::size_t>(rs_.rows));
    } else {
      const auto all =
          check::download(ctx_, out_.get(), case_.dtype, static_cast<std::size_t>(rs_.rows));
      for (auto r : rows) out_v.push_back(all[static_cast<std::size_t>(r)]);
    }
    std::size_t bad_idx = 0;
    for (auto r : rows) {
      double s = 0, m = -std::numeric_limits<double>::infinity();
      long long mi = -1;
      double v_at = std::numeric_limits<double>::quiet_NaN();
      const long long want = kind_ == Kind::argmax ? out_i[static_cast<std::size_t>(r)] : -1;
      if (on_device) {
        dispatch_float(case_.dtype, [&](auto tag) {
          using T = decltype(tag);
          device_sum_max<T>(x_.as<const T>() + r * rs_.cols, rs_.cols, s, m);
        });
        if (want >= 0 && want < rs_.cols) {
          // The one element at the reported index.
          const auto* at = static_cast<const unsigned char*>(x_.get()) +
                           static_cast<std::size_t>(r * rs_.cols + want) * size_of(case_.dtype);
          v_at = check::download(ctx_, at, case_.dtype, 1)[0];
        }
      } else {
        rowwise::stream_back(x_.get(), case_.dtype, r * rs_.cols, rs_.cols, s_,
                             [&](const std::vector<double>& v, std::int64_t off) {
                               for (std::size_t k = 0; k < v.size(); ++k) {
                                 s += v[k];
                                 if (v[k] > m) m = v[k], mi = off + static_cast<long long>(k);
                                 if (off + static_cast<long long>(k) == want) v_at = v[k];
                               }
                             });
      }
      if (kind_ == Kind::sum) ref_v.push_back(s);
      if (kind_ == Kind::amax) ref_v.push_back(m);
      if (kind_ == Kind::argmax) {
        ref_i.push_back(mi);
        // Ties: any index holding the maximum is accepted (the values are what matter).
        if (!(v_at == m)) ++bad_idx;
      }
    }
    const std::string what = std::string(kind_name(kind_)) + " on " +
                             rowwise::rows_detail(rs_, rows.size()) +
                             (on_device ? " vs device float64 reference" : " vs host float64");
    if (kind_ == Kind::argmax) {
      Accuracy a;
      a.passed = bad_idx == 0 && !rows.empty();
      a.rel_err = static_cast<double>(bad_idx) / static_cast<double>(rows.size());
      a.max_abs_err = bad_idx > 0 ? 1 : 0;
      a.detail = what + ": " + std::to_string(bad_idx) +
                 " rows whose index does not hold the row maximum (ties accepted)";
      return check::covered(a, coverage_method(on_device, rows.size()),
                            static_cast<std::int64_t>(rows.size()), rs_.rows);
    }
    check::Tolerance tol = check::reduction_tolerance(case_.dtype, rs_.cols);
    if (kind_ == Kind::amax) {
      tol = {0, 0, 0};  // the maximum is an input element: exact
      tol.norm_rel = 0;
    } else {
      // fp32 accumulation of n values in [-1,1) errs by ~u32*sqrt(n) absolute around a sum
      // that can cancel to near zero.
      tol.atol = std::max(tol.atol, 16.0 * 0x1p-24 * std::sqrt(static_cast<double>(rs_.cols)));
    }
    Accuracy acc = check::compare(out_v, ref_v, tol, what);
    return check::covered(acc, coverage_method(on_device, rows.size()),
                          static_cast<std::int64_t>(rows.size()), rs_.rows);
  }

  // How a reduction's check covered its rows: a device reference for long rows, else the host's
  // on all rows or a sample.
  [[nodiscard]] const char* coverage_method(bool on_device, std::size_t rows) const {
    if (on_device) return check::method::device;
    return static_cast<std::int64_t>(rows) == rs_.rows ? check::method::host_full
                                                       : check::method::host_sampled;
  }

  // cumsum: sampled rows with their prefix in double, streamed back to the host, or for rows
  // longer than kHostRowLimit computed on the device (device_scan_at) with only the compared
  // outputs downloaded. Every element is checked for NaN (poison; on the device for long rows);
  // values are compared on all of them, or on a strided sample of a row longer than 4M elements.
  [[nodiscard]] Accuracy check_scan() {
    const auto rows = rowwise::sample_rows(rs_, ctx_.seed() ^ 0x5ca9, 1 << 24);
    const std::int64_t stride = rs_.cols > (1 << 22) ? rs_.cols / (1 << 20) : 1;
    const bool on_device = rs_.cols > kHostRowLimit;
    std::vector<double> out_s, ref_s;
    std::size_t nonfinite = 0;
    for (auto r : rows) {
      if (on_device) {
        dispatch_float(case_.dtype, [&](auto tag) {
          using T = decltype(tag);
          const T* y = out_.as<const T>() + r * rs_.cols;
          nonfinite += static_cast<std::size_t>(count_nonfinite<T>(ctx_, y, rs_.cols));
          device_scan_at<T>(x_.as<const T>() + r * rs_.cols, y, rs_.cols, stride, out_s, ref_s);
        });
        continue;
      }
      std::vector<double> prefix;
      double s = 0;
      rowwise::stream_back(x_.get(), case_.dtype, r * rs_.cols, rs_.cols, s_,
                           [&](const std::vector<double>& v, std::int64_t off) {
                             for (std::size_t k = 0; k < v.size(); ++k) {
                               s += v[k];
                               const auto j = off + static_cast<std::int64_t>(k);
                               if (j % stride == 0 || j == rs_.cols - 1) prefix.push_back(s);
                             }
                           });
      std::size_t at = 0;
      rowwise::stream_back(out_.get(), case_.dtype, r * rs_.cols, rs_.cols, s_,
                           [&](const std::vector<double>& v, std::int64_t off) {
                             for (std::size_t k = 0; k < v.size(); ++k) {
                               if (!std::isfinite(v[k])) ++nonfinite;
                               const auto j = off + static_cast<std::int64_t>(k);
                               if (j % stride == 0 || j == rs_.cols - 1) {
                                 out_s.push_back(v[k]);
                                 ref_s.push_back(prefix[at++]);
                               }
                             }
                           });
    }
    check::Tolerance tol = check::reduction_tolerance(case_.dtype, rs_.cols);
    tol.atol = std::max(tol.atol, 16.0 * 0x1p-24 * std::sqrt(static_cast<double>(rs_.cols)));
    std::string what = "cumsum on " + rowwise::rows_detail(rs_, rows.size()) +
                       (on_device ? " vs device float64 reference" : " vs host float64");
    if (stride > 1)
      what += " (every " + std::to_string(stride) + "th element compared, all NaN-checked)";
    Accuracy a = check::compare(out_s, ref_s, tol, what);
    if (nonfinite > 0) {
      a.passed = false;
      a.detail += "; " + std::to_string(nonfinite) + " NaN/unwritten elements";
    }
    return a;
  }

  DeviceContext& ctx_;
  Case case_;
  Kind kind_;
  RowShape rs_;
  cudaStream_t s_;
  Buffer x_, out_, temp_, pair_scratch_, partial_, carry_, scan_scratch_;
  std::size_t temp_bytes_ = 0;
  int block_ = 256;
  std::int64_t algo_ = kAlgoThreePass;
  int items_ = 16;
  scan::LookbackPlan plan_;
  bool warp_mode_ = false;
  std::int64_t splits_ = 1, chunk_ = 1;
};

class ReduceOp : public Op {
 public:
  explicit ReduceOp(Kind k) : kind_(k) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = kind_name(kind_);
    i.family = "reduction";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.description = std::string(kind_name(kind_)) + " over the last dimension";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto rs = rowwise::row_shape(c);
    const auto in = static_cast<std::size_t>(rs.numel()) * size_of(c.dtype);
    const auto out = kind_ == Kind::cumsum ? in : static_cast<std::size_t>(rs.rows) * 16;
    return in + out + (std::size_t{64} << 20);  // workspaces and partials
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<ReduceWorkload>(ctx, c, kind_);
  }

 private:
  Kind kind_;
};

struct SumOp final : ReduceOp {
  SumOp() : ReduceOp(Kind::sum) {}
};
struct AmaxOp final : ReduceOp {
  AmaxOp() : ReduceOp(Kind::amax) {}
};
struct ArgmaxOp final : ReduceOp {
  ArgmaxOp() : ReduceOp(Kind::argmax) {}
};
struct CumsumOp final : ReduceOp {
  CumsumOp() : ReduceOp(Kind::cumsum) {}
};

}  // namespace
}  // namespace caliber::ops::cuda::reduce

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::reduce::SumOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::reduce::AmaxOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::reduce::ArgmaxOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::reduce::CumsumOp);
