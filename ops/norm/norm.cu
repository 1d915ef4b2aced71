// Row normalizations over the last dimension: softmax, log_softmax, layer_norm (weight, bias,
// eps 1e-5), rms_norm (weight, eps 1e-6).
// Baseline: cuDNN's softmax (ACCURATE / LOG, INSTANCE mode on an N x C x 1 x 1 tensor) where
// cuDNN is built in and has the dtype; otherwise, and for layer_norm / rms_norm which cuDNN's
// legacy API lacks, a plain two-kernel reference (statistics pass, then a normalizing pass that
// reads the row again). Candidate: the row is read once from device memory (16-byte vector loads)
// into shared memory in its own type, the statistics are exact two-pass ones over that copy (max
// then sum of exp; mean then centered sum of squares; sum of squares), and the output is written
// once with 16-byte stores; one wave of resident blocks loops over the rows. Rows too long for
// shared memory or too few to fill the device are split over blocks (two kernels, with single-
// pass mergeable statistics: online softmax, Welford).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cuda_common.cuh"
#include "common/rowwise.cuh"

#ifdef CALIBER_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace caliber::ops::cuda::norm {
namespace {

using rowwise::RowShape;

enum class Kind { softmax, log_softmax, layer_norm, rms_norm };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::softmax:
      return "softmax";
    case Kind::log_softmax:
      return "log_softmax";
    case Kind::layer_norm:
      return "layer_norm";
    default:
      return "rms_norm";
  }
}

constexpr float kLayerEps = 1e-5f;
constexpr float kRmsEps = 1e-6f;

// Split path: running statistics of part of a row. softmax: (max, sum of exp(x - max));
// layer_norm: Welford (count, mean, M2); rms_norm: (sum of squares).
struct Stats {
  float a, b, c;
};

template <Kind K>
struct StatOps {
  __device__ static Stats identity() {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) return {-INFINITY, 0.f, 0.f};
    return {0.f, 0.f, 0.f};
  }
  __device__ static Stats one(float x) {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) return {x, 1.f, 0.f};
    if constexpr (K == Kind::layer_norm) return {1.f, x, 0.f};
    return {x * x, 0.f, 0.f};
  }
  __device__ Stats operator()(Stats p, Stats q) const {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) {
      if (p.b == 0.f) return q;
      if (q.b == 0.f) return p;
      const float m = fmaxf(p.a, q.a);
      return {m, p.b * expf(p.a - m) + q.b * expf(q.a - m), 0.f};
    } else if constexpr (K == Kind::layer_norm) {
      if (p.a == 0.f) return q;
      if (q.a == 0.f) return p;
      const float n = p.a + q.a;
      const float d = q.b - p.b;
      return {n, p.b + d * (q.a / n), p.c + q.c + d * d * (p.a * q.a / n)};
    } else {
      return {p.a + q.a, 0.f, 0.f};
    }
  }
};

// What the normalizing pass needs, from the row's final statistics.
struct Fin {
  float shift, scale;
};

template <Kind K>
__device__ __forceinline__ Fin finish(Stats s, long long cols) {
  if constexpr (K == Kind::softmax) return {s.a, 1.f / s.b};
  if constexpr (K == Kind::log_softmax) return {s.a + logf(s.b), 0.f};
  if constexpr (K == Kind::layer_norm) return {s.b, rsqrtf(s.c / s.a + kLayerEps)};
  return {0.f, rsqrtf(s.a / static_cast<float>(cols) + kRmsEps)};
}

template <Kind K, class T>
__device__ __forceinline__ T apply(float x, Fin f, const T* w, const T* b, long long j) {
  if constexpr (K == Kind::softmax) return from_float<T>(expf(x - f.shift) * f.scale);
  if constexpr (K == Kind::log_softmax) return from_float<T>(x - f.shift);
  if constexpr (K == Kind::layer_norm)
    return from_float<T>((x - f.shift) * f.scale * to_float(w[j]) + to_float(b[j]));
  return from_float<T>(x * f.scale * to_float(w[j]));
}

// ---------------------------------------------------------------------------------------------
// Candidate, fused path: a block per row (grid-stride over rows, one wave of resident blocks),
// the row kept in shared memory in its own type T so that device memory sees each element read
// once and written once. With V > 1 (cols % V == 0, 16-byte aligned rows) the row is copied
// 16 bytes at a time with cp.async, straight into shared memory: the whole row is in flight at
// once without staging registers. The output is written with 16-byte stores. With V = 1 the
// copy goes through registers, kUnroll elements in flight per thread. The statistics are exact
// two-pass ones over the shared copy: softmax max, then sum of exp(x - max); layer_norm sum,
// then sum of (x - mean)^2; rms_norm sum of squares.
//
// Shared memory: every thread reads back only the slots it wrote itself (vector i of the row
// belongs to thread i % blockDim.x in every pass, and cp.async.wait_all makes a thread's own
// copies visible to it), so within a row the passes need no barrier for the row buffer; the
// block reductions carry their own barriers (the trailing one lets the scratch be reused). One
// __syncthreads at the end of each row separates the last reads of a row from the next row's
// asynchronous copies into the same buffer.

constexpr int kUnroll = 4;  // copy through registers: vectors loaded before any is stored

// 16 bytes from global to shared memory, asynchronously (sm_80+; L2 only, no register staging).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// V elements to float; pairs of 16-bit types are converted two at a time.
template <class T, int V>
__device__ __forceinline__ void unpack(const Vec<T, V>& in, float (&f)[V]) {
  if constexpr (std::is_same_v<T, __half> && V % 2 == 0) {
#pragma unroll
    for (int e = 0; e < V; e += 2) {
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&in.v[e]));
      f[e] = p.x;
      f[e + 1] = p.y;
    }
  } else if constexpr (std::is_same_v<T, __nv_bfloat16> && V % 2 == 0) {
#pragma unroll
    for (int e = 0; e < V; e += 2) {
      const float2 p = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&in.v[e]));
      f[e] = p.x;
      f[e + 1] = p.y;
    }
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = to_float(in.v[e]);
  }
}

// V floats to T, rounded to nearest even (as from_float).
template <class T, int V>
__device__ __forceinline__ Vec<T, V> pack(const float (&f)[V]) {
  Vec<T, V> out;
  if constexpr (std::is_same_v<T, __half> && V % 2 == 0) {
#pragma unroll
    for (int e = 0; e < V; e += 2) {
      *reinterpret_cast<__half2*>(&out.v[e]) = __floats2half2_rn(f[e], f[e + 1]);
    }
  } else if constexpr (std::is_same_v<T, __nv_bfloat16> && V % 2 == 0) {
#pragma unroll
    for (int e = 0; e < V; e += 2) {
      *reinterpret_cast<__nv_bfloat162*>(&out.v[e]) = __floats2bfloat162_rn(f[e], f[e + 1]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(f[e]);
  }
  return out;
}

// exp(x - m) for softmax. float rows use the accurate expf; 16-bit rows, whose outputs are
// rounded to 11 or 8 bits, use exp2 of a prescaled argument (a few 1e-7 relative error, far
// below their rounding) which halves the instruction count of the two exponentials per element.
template <class T>
__device__ __forceinline__ float exp_shifted(float x, [[maybe_unused]] float m,
                                             [[maybe_unused]] float m_log2e) {
  if constexpr (std::is_same_v<T, float>) {
    return expf(x - m);
  } else {
    return exp2f(fmaf(x, 1.4426950408889634f, -m_log2e));
  }
}

// Pass 1 of the fused and warp kernels on one vector: the max (softmax, log_softmax), the sum
// (layer_norm) or the sum of squares (rms_norm), into acc.
template <Kind K, int V>
__device__ __forceinline__ void accumulate_vec(float& acc, const float (&f)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if constexpr (K == Kind::softmax || K == Kind::log_softmax) {
      acc = fmaxf(acc, f[e]);
    } else if constexpr (K == Kind::layer_norm) {
      acc += f[e];
    } else {
      acc = fmaf(f[e], f[e], acc);
    }
  }
}

// Pass 3 of the fused and warp kernels on one vector: the V values at vector index i of a row,
// normalized in place with the row's statistics (weight and bias, when the op has them, at i).
template <Kind K, class T, int V>
__device__ __forceinline__ void normalize_vec(float (&f)[V], float shift, float shift_log2e,
                                              float scale, const T* __restrict__ w,
                                              const T* __restrict__ bias, int i) {
  if constexpr (K == Kind::softmax) {
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = exp_shifted<T>(f[e], shift, shift_log2e) * scale;
  } else if constexpr (K == Kind::log_softmax) {
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = (f[e] - shift) - scale;
  } else if constexpr (K == Kind::layer_norm) {
    float fw[V], fb[V];
    unpack<T, V>(load_vec<T, V>(w + i * V), fw);
    unpack<T, V>(load_vec<T, V>(bias + i * V), fb);
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = fmaf((f[e] - shift) * scale, fw[e], fb[e]);
  } else {
    float fw[V];
    unpack<T, V>(load_vec<T, V>(w + i * V), fw);
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = f[e] * scale * fw[e];
  }
}

template <Kind K, class T, int V>
__global__ void __launch_bounds__(1024)
    fused_rows_kernel(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ w,
                      const T* __restrict__ bias, long long rows, long long cols) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const row_buf = reinterpret_cast<T*>(smem_raw);
  __shared__ float scratch[33];
  constexpr bool kSoftmax = K == Kind::softmax || K == Kind::log_softmax;
  const int nvec = static_cast<int>(cols / V);  // cols % V == 0 (host-checked)
  const int tid = static_cast<int>(threadIdx.x);
  const int nt = static_cast<int>(blockDim.x);
  const float n = static_cast<float>(cols);

  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* const xr = x + r * cols;
    T* const yr = y + r * cols;

    // Pass 0: device memory -> shared memory (this thread's slots only).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr bool kAsync = V * sizeof(T) == 16;
#else
    constexpr bool kAsync = false;
#endif
    if constexpr (kAsync) {
      for (int i = tid; i < nvec; i += nt) {
        cp_async_16(row_buf + i * V, xr + static_cast<long long>(i) * V);
      }
      cp_async_wait_all();
    } else {
      for (int i0 = tid; i0 < nvec; i0 += kUnroll * nt) {
        Vec<T, V> v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int i = i0 + u * nt;
          if (i < nvec) v[u] = load_vec<T, V>(xr + static_cast<long long>(i) * V);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int i = i0 + u * nt;
          if (i < nvec) store_vec<T, V>(row_buf + i * V, v[u]);
        }
      }
    }

    // Pass 1 over the shared copy: max, sum or sum of squares.
    float acc = kSoftmax ? -INFINITY : 0.f;
    for (int i = tid; i < nvec; i += nt) {
      float f[V];
      unpack<T, V>(load_vec<T, V>(row_buf + i * V), f);
      accumulate_vec<K, V>(acc, f);
    }

    // Pass 2 (softmax, layer_norm) and the row's final constants.
    float shift = 0.f, scale = 1.f, shift_log2e = 0.f;
    if constexpr (kSoftmax) {
      const float m = rowwise::block_reduce(acc, MaxOp{}, -INFINITY, scratch);
      const float m_log2e = m * 1.4426950408889634f;
      float s = 0.f;
      for (int i = tid; i < nvec; i += nt) {
        float f[V];
        unpack<T, V>(load_vec<T, V>(row_buf + i * V), f);
#pragma unroll
        for (int e = 0; e < V; ++e) s += exp_shifted<T>(f[e], m, m_log2e);
      }
      s = rowwise::block_reduce(s, SumOp{}, 0.f, scratch);
      shift = m;
      shift_log2e = m_log2e;
      scale = K == Kind::softmax ? 1.f / s : logf(s);  // log_softmax: x - m - log(sum)
    } else if constexpr (K == Kind::layer_norm) {
      const float mean = rowwise::block_reduce(acc, SumOp{}, 0.f, scratch) / n;
      float q = 0.f;
      for (int i = tid; i < nvec; i += nt) {
        float f[V];
        unpack<T, V>(load_vec<T, V>(row_buf + i * V), f);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const float d = f[e] - mean;
          q = fmaf(d, d, q);
        }
      }
      q = rowwise::block_reduce(q, SumOp{}, 0.f, scratch);
      shift = mean;
      scale = rsqrtf(q / n + kLayerEps);
    } else {
      const float ss = rowwise::block_reduce(acc, SumOp{}, 0.f, scratch);
      scale = rsqrtf(ss / n + kRmsEps);
    }

    // Pass 3: normalize from shared memory into device memory (weight and bias are L2-resident).
#pragma unroll 2
    for (int i = tid; i < nvec; i += nt) {
      float f[V];
      unpack<T, V>(load_vec<T, V>(row_buf + i * V), f);
      normalize_vec<K, T, V>(f, shift, shift_log2e, scale, w, bias, i);
      store_vec<T, V>(yr + static_cast<long long>(i) * V, pack<T, V>(f));
    }
    __syncthreads();  // row_buf is overwritten (asynchronously) by the next row
  }
}

// ---------------------------------------------------------------------------------------------
// Candidate, warp path (config key "warp" = L lanes per row, 4, 8, 16 or 32): rows of at most
// L * NV 16-byte vectors are held in registers, a group of L lanes per row (32 / L rows per
// warp), so a row needs no shared memory, no __syncthreads and no block reduction: the block
// path's per-row fixed costs dominated rows of up to a few thousand elements. Each lane loads
// vectors sub, sub + L, ... of its row (16-byte loads, coalesced across the group), the exact
// two-pass statistics of the fused path are formed from those registers with shuffles inside the
// group (softmax max, then sum of exp(x - max); layer_norm sum, then sum of (x - mean)^2;
// rms_norm sum of squares; same formulas, fp32), and the output is written with 16-byte stores.
// Needs cols % V == 0 and 16-byte aligned tensors (the host rejects the config otherwise).
// Rows are dealt out warp by warp (grid-stride, one wave of resident blocks); the loop bound is
// uniform over the warp, so every lane reaches every shuffle (a group past the last row computes
// on nothing and stores nothing).

constexpr int kWarpBlockMax = 256;  // launch bound of the warp path (blocks 128 and 256 offered)
// Vectors per lane at L = 32: rows of up to 1024 f32 or 2048 f16/bf16. 16 (2048 f32, 4096
// 16-bit) needed 100-170 registers, or spilled (up to 1.2 KB for bf16) when held to 80.
constexpr int kWarpNvMax = 8;
constexpr int kSubWarpNvMax = 4;  // vectors per lane at L < 32

// Registers at 8 vectors per lane: held to 80 (three blocks of 256 per SM) for f32 and f16,
// which need no more; bf16 rows kept as floats need 90-102 and spilled at 80, so they get 128.
template <class T, int NV>
constexpr int warp_min_blocks() {
  if constexpr (NV < 8) return 1;
  return std::is_same_v<T, __nv_bfloat16> ? 2 : 3;
}

template <int L>
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int off = L / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

template <int L>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int off = L / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <Kind K, class T, int L, int NV>
__global__ void __launch_bounds__(kWarpBlockMax, warp_min_blocks<T, NV>())
    warp_rows_kernel(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ w,
                     const T* __restrict__ bias, long long rows, long long cols) {
  static_assert(L == 4 || L == 8 || L == 16 || L == 32, "lanes per row");
  constexpr int V = max_vec<T>();
  constexpr int kRowsPerWarp = 32 / L;
  constexpr bool kSoftmax = K == Kind::softmax || K == Kind::log_softmax;
  const int nvec = static_cast<int>(cols / V);  // cols % V == 0 (host-checked)
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int sub = lane % L;  // lane within the row's group
  const int grp = lane / L;  // the group's row within the warp's rows
  const long long warp =
      (static_cast<long long>(blockIdx.x) * blockDim.x + static_cast<long long>(threadIdx.x)) >> 5;
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  const float n = static_cast<float>(cols);

  for (long long base = warp * kRowsPerWarp; base < rows; base += warps * kRowsPerWarp) {
    const bool live = base + grp < rows;
    const long long r = live ? base + grp : base;  // a dead group keeps an in-range pointer
    const T* const xr = x + r * cols;
    T* const yr = y + r * cols;

    // Load the whole row slice of this lane before using any of it.
    Vec<T, V> v[NV];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = sub + k * L;
      if (live && i < nvec) {
        v[k] = load_vec<T, V>(xr + static_cast<long long>(i) * V);
      } else {
        v[k] = Vec<T, V>{};  // zeros: a dead group's statistics read only defined values
      }
    }

    // Pass 1: max, sum or sum of squares (vectors past the row's end are skipped).
    float acc = kSoftmax ? -INFINITY : 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      if (sub + k * L < nvec) {
        float f[V];
        unpack<T, V>(v[k], f);
        accumulate_vec<K, V>(acc, f);
      }
    }

    // Pass 2 (softmax, layer_norm) and the row's final constants, as in the fused path.
    float shift = 0.f, scale = 1.f, shift_log2e = 0.f;
    if constexpr (kSoftmax) {
      const float m = group_max<L>(acc);
      const float m_log2e = m * 1.4426950408889634f;
      float s = 0.f;
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        if (sub + k * L < nvec) {
          float f[V];
          unpack<T, V>(v[k], f);
#pragma unroll
          for (int e = 0; e < V; ++e) s += exp_shifted<T>(f[e], m, m_log2e);
        }
      }
      s = group_sum<L>(s);
      shift = m;
      shift_log2e = m_log2e;
      scale = K == Kind::softmax ? 1.f / s : logf(s);  // log_softmax: x - m - log(sum)
    } else if constexpr (K == Kind::layer_norm) {
      const float mean = group_sum<L>(acc) / n;
      float q = 0.f;
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        if (sub + k * L < nvec) {
          float f[V];
          unpack<T, V>(v[k], f);
#pragma unroll
          for (int e = 0; e < V; ++e) {
            const float d = f[e] - mean;
            q = fmaf(d, d, q);
          }
        }
      }
      q = group_sum<L>(q);
      shift = mean;
      scale = rsqrtf(q / n + kLayerEps);
    } else {
      const float ss = group_sum<L>(acc);
      scale = rsqrtf(ss / n + kRmsEps);
    }

    // Pass 3: normalize from registers into device memory (weight and bias are L1/L2-resident).
    if (live) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int i = sub + k * L;
        if (i < nvec) {
          float f[V];
          unpack<T, V>(v[k], f);
          normalize_vec<K, T, V>(f, shift, shift_log2e, scale, w, bias, i);
          store_vec<T, V>(yr + static_cast<long long>(i) * V, pack<T, V>(f));
        }
      }
    }
  }
}

template <class T>
using WarpKernel = void (*)(const T*, T*, const T*, const T*, long long, long long);

// The instantiation for L lanes per row and nv vectors per lane (a power of two up to
// kWarpNvMax at L = 32, kSubWarpNvMax below); nullptr for any other pair.
template <Kind K, class T, int L>
WarpKernel<T> warp_kernel_nv(int nv) {
  switch (nv) {
    case 1:
      return warp_rows_kernel<K, T, L, 1>;
    case 2:
      return warp_rows_kernel<K, T, L, 2>;
    case 4:
      return warp_rows_kernel<K, T, L, 4>;
    default:
      break;
  }
  if constexpr (L == 32) {
    if (nv == 8) return warp_rows_kernel<K, T, L, 8>;
  }
  return nullptr;
}

template <Kind K, class T>
WarpKernel<T> warp_kernel(int lanes, int nv) {
  switch (lanes) {
    case 4:
      return warp_kernel_nv<K, T, 4>(nv);
    case 8:
      return warp_kernel_nv<K, T, 8>(nv);
    case 16:
      return warp_kernel_nv<K, T, 16>(nv);
    case 32:
      return warp_kernel_nv<K, T, 32>(nv);
    default:
      return nullptr;
  }
}

// Split path, pass 1: statistics of chunk `task % splits` of row `task / splits`.
template <Kind K, class T>
__global__ void partial_stats_kernel(const T* __restrict__ x, long long rows, long long cols,
                                     long long chunk, long long splits,
                                     Stats* __restrict__ partial) {
  __shared__ Stats scratch[33];
  const StatOps<K> comb;
  for (long long task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const long long row = task / splits;
    const long long begin = (task % splits) * chunk;
    const long long end = min(cols, begin + chunk);
    Stats s = StatOps<K>::identity();
    for (long long j = begin + threadIdx.x; j < end; j += blockDim.x) {
      s = comb(s, StatOps<K>::one(to_float(x[row * cols + j])));
    }
    s = rowwise::block_reduce(s, comb, StatOps<K>::identity(), scratch);
    if (threadIdx.x == 0) partial[task] = s;
  }
}

// Split path, pass 2: combine the row's partials, then normalize this block's chunk.
template <Kind K, class T>
__global__ void apply_split_kernel(const T* __restrict__ x, T* __restrict__ y,
                                   const T* __restrict__ w, const T* __restrict__ bias,
                                   long long rows, long long cols, long long chunk,
                                   long long splits, const Stats* __restrict__ partial) {
  __shared__ Stats scratch[33];
  const StatOps<K> comb;
  for (long long task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const long long row = task / splits;
    const long long begin = (task % splits) * chunk;
    const long long end = min(cols, begin + chunk);
    Stats s = StatOps<K>::identity();
    for (long long q = threadIdx.x; q < splits; q += blockDim.x)
      s = comb(s, partial[row * splits + q]);
    s = rowwise::block_reduce(s, comb, StatOps<K>::identity(), scratch);
    const Fin f = finish<K>(s, cols);
    for (long long j = begin + threadIdx.x; j < end; j += blockDim.x) {
      y[row * cols + j] = apply<K, T>(to_float(x[row * cols + j]), f, w, bias, j);
    }
  }
}

#ifdef CALIBER_HAVE_CUDNN
#define CALIBER_CUDNN_CHECK(expr)                                                \
  do {                                                                           \
    const cudnnStatus_t st_ = (expr);                                            \
    if (st_ != CUDNN_STATUS_SUCCESS) {                                           \
      throw NativeError(static_cast<int>(st_), #expr, cudnnGetErrorString(st_)); \
    }                                                                            \
  } while (0)
#endif

class NormWorkload final : public Workload {
 public:
  NormWorkload(DeviceContext& ctx, const Case& c, Kind kind)
      : ctx_(ctx), case_(c), kind_(kind), rs_(rowwise::row_shape(c)), s_(stream_of(ctx)) {
    const std::size_t es = size_of(c.dtype);
    const auto n = static_cast<std::size_t>(rs_.numel());
    x_ = Buffer(ctx, n * es);
    y_ = Buffer(ctx, n * es);
    w_ = Buffer(ctx, static_cast<std::size_t>(rs_.cols) * es);
    b_ = Buffer(ctx, static_cast<std::size_t>(rs_.cols) * es);
    const std::uint64_t seed = ctx.seed();
    // Softmax inputs span a few units so that exp() varies; norms get a shifted mean.
    const bool sm = kind == Kind::softmax || kind == Kind::log_softmax;
    ctx.fill_uniform(x_.get(), c.dtype, n, sm ? -4.0 : -1.0, sm ? 4.0 : 3.0, seed);
    ctx.fill_uniform(w_.get(), c.dtype, static_cast<std::size_t>(rs_.cols), 0.5, 1.5, seed + 1);
    ctx.fill_uniform(b_.get(), c.dtype, static_cast<std::size_t>(rs_.cols), -0.5, 0.5, seed + 2);
  }

  ~NormWorkload() override {
#ifdef CALIBER_HAVE_CUDNN
    if (desc_ != nullptr) cudnnDestroyTensorDescriptor(desc_);
    if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
#endif
  }

  [[nodiscard]] bool use_cudnn() const {
#ifdef CALIBER_HAVE_CUDNN
    // bf16 is left to the reference: the legacy softmax API does not promise it.
    return (kind_ == Kind::softmax || kind_ == Kind::log_softmax) && case_.dtype != DType::bf16;
#else
    return false;
#endif
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.role = Role::baseline;
    if (use_cudnn()) {
      base.name = "cudnn";
      base.label = kind_ == Kind::softmax ? "cudnnSoftmaxForward ACCURATE, INSTANCE mode"
                                          : "cudnnSoftmaxForward LOG, INSTANCE mode";
    } else {
      base.name = "reference";
      base.label = "plain reference kernel, no vendor baseline";
    }
    ProviderInfo cand;
    cand.name = "caliber";
    cand.role = Role::candidate;
    cand.version = "2";  // the warp path (key "warp") joined the space and is the default
    cand.label = kind_ == Kind::layer_norm
                     ? "own kernel, row in registers (warp=L lanes) or shared memory (block), "
                       "16-byte accesses, two-pass mean/variance"
                 : kind_ == Kind::rms_norm
                     ? "own kernel, row in registers (warp=L lanes) or shared memory (block), "
                       "16-byte accesses"
                     : "own kernel, row in registers (warp=L lanes) or shared memory (block), "
                       "16-byte accesses, max then sum of exp";
    cand.space = norm_space();
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) {
      if (use_cudnn()) {
        prepare_cudnn();
      } else {
        plan_split(ref_plan_, 256, /*force_split=*/true);
      }
      return;
    }
    if (c.has("warp")) {
      plan_warp(own_plan_, c);
      return;
    }
    plan_split(own_plan_, rowwise::block_of(c), false);
  }

  void launch(std::size_t p) override {
    if (p == 0) {
      if (use_cudnn()) {
        run_cudnn();
      } else {
        run_plan(ref_plan_, y_.get());
      }
      return;
    }
    run_plan(own_plan_, y_.get());
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    check::poison(ctx_, y_.get(), y_.bytes());
    launch(p);
    sync(s_);
    if (rs_.cols > (std::int64_t{1} << 24)) return check_against_device_reference();
    const auto rows = rowwise::sample_rows(rs_, ctx_.seed() ^ 0x40f3);
    const auto x = check::download_rows(ctx_, x_.get(), case_.dtype, rows, rs_.cols);
    const auto y = check::download_rows(ctx_, y_.get(), case_.dtype, rows, rs_.cols);
    const auto nr = static_cast<std::int64_t>(rows.size());
    std::vector<double> ref;
    if (kind_ == Kind::softmax) ref = ref::row_softmax(x, nr, rs_.cols);
    if (kind_ == Kind::log_softmax) ref = ref::row_log_softmax(x, nr, rs_.cols);
    if (kind_ == Kind::layer_norm || kind_ == Kind::rms_norm) {
      const auto w =
          check::download(ctx_, w_.get(), case_.dtype, static_cast<std::size_t>(rs_.cols));
      const auto b =
          check::download(ctx_, b_.get(), case_.dtype, static_cast<std::size_t>(rs_.cols));
      ref = kind_ == Kind::layer_norm ? ref::row_layer_norm(x, nr, rs_.cols, kLayerEps, w, b)
                                      : ref::row_rms_norm(x, nr, rs_.cols, kRmsEps, w);
    }
    Accuracy acc = check::compare(y, ref, check::reduction_tolerance(case_.dtype, rs_.cols),
                                  std::string(kind_name(kind_)) + " on " +
                                      rowwise::rows_detail(rs_, rows.size()) + " vs host float64");
    const bool all = static_cast<std::int64_t>(rows.size()) == rs_.rows;
    return check::covered(acc, all ? check::method::host_full : check::method::host_sampled,
                          static_cast<std::int64_t>(y.size()), rs_.numel());
  }

  [[nodiscard]] double bytes() const override {
    const double es = static_cast<double>(size_of(case_.dtype));
    const double params = kind_ == Kind::layer_norm ? 2 : kind_ == Kind::rms_norm ? 1 : 0;
    return es * (2.0 * static_cast<double>(rs_.numel()) + params * static_cast<double>(rs_.cols));
  }
  [[nodiscard]] double flops() const override {
    return 5.0 * static_cast<double>(rs_.numel());
  }

 private:
  struct Plan {
    int block = 256;
    int warp = 0;     // warp path: lanes per row (0: the fused or split path)
    int warp_nv = 0;  // warp path: 16-byte vectors per lane
    bool split = false;
    bool smem = false;
    int vec = 1;                 // fused path: elements per global access (16 bytes or 1)
    unsigned grid = 1;           // fused path: resident blocks of the whole device
    std::size_t smem_bytes = 0;  // fused path: the row, in T
    std::int64_t chunk = 1, splits = 1;
    Buffer partial;
  };

  // The fused path keeps the row (in T) in shared memory up to this size; longer rows go to
  // the split path. 96 KB leaves room for two blocks per SM on the H200 (228 KB).
  static constexpr std::size_t kMaxRowSmem = 96 * 1024;

  [[nodiscard]] std::size_t row_smem_bytes() const {
    const std::size_t raw = static_cast<std::size_t>(rs_.cols) * size_of(case_.dtype);
    return (raw + 15) / 16 * 16;
  }

  // Default block of the candidate (used with --tune off and before a key is tuned). A row of
  // 40 KB or more in shared memory leaves room for at most five blocks per SM (228 KB on
  // Hopper), so 512 threads keep more in flight. Otherwise one thread per four 16-byte vectors
  // of the row, 64 to 256 (what the tuner picked at 1024, 4096 and 16384 columns): 256 threads
  // on a row of 1024 fp16 (128 vectors) left half of them idle and reached 44-66% of the copy
  // peak where the tuned block=64 reached 79-88% (H200, 2026-11-29). Rows above kMaxRowSmem
  // take the split path, tuned at 256.
  [[nodiscard]] std::int64_t default_block() const {
    const std::size_t row = row_smem_bytes();
    if (row >= 40 * 1024 && row <= kMaxRowSmem) return 512;
    if (row > kMaxRowSmem) return 256;
    const std::int64_t vectors = static_cast<std::int64_t>(row / 16);
    std::int64_t b = 64;
    while (b < 256 && 2 * b * 4 <= vectors) b *= 2;
    return b;
  }

  // The warp path: L lanes per row, each holding a power of two of 16-byte vectors (at most
  // kWarpNvMax at L = 32, kSubWarpNvMax below). 0 when the row does not fit at L lanes or the
  // tensors do not allow 16-byte accesses (cols % V, alignment).
  [[nodiscard]] int warp_nv_for(int lanes) const {
    const auto v = static_cast<std::int64_t>(16 / size_of(case_.dtype));
    if (rs_.cols % v != 0 || !aligned_to(x_.get(), 16) || !aligned_to(y_.get(), 16) ||
        !aligned_to(w_.get(), 16) || !aligned_to(b_.get(), 16)) {
      return 0;
    }
    const std::int64_t need = ceil_div(rs_.cols / v, lanes);
    const int most = lanes == 32 ? kWarpNvMax : kSubWarpNvMax;
    int nv = 1;
    while (nv < need) nv *= 2;
    return nv <= most ? nv : 0;
  }

  // Default lanes per row of the warp path: the fewest of 4, 8, 16, 32 that hold the row in at
  // most two vectors per lane (so short rows share a warp instead of idling most of its lanes),
  // 32 for longer rows; 0 when the row does not fit the warp path at all.
  [[nodiscard]] int default_warp_lanes() const {
    for (int lanes : {4, 8, 16}) {
      const int nv = warp_nv_for(lanes);
      if (nv > 0 && nv <= 2) return lanes;
    }
    return warp_nv_for(32) > 0 ? 32 : 0;
  }

  // The candidate's space: the fused/split path's block sizes (block_space), and where the row
  // fits, the warp path at every lane count that holds it, in blocks of 128 and 256 threads.
  // The warp path is the default when it fits (block 128: a finer grain for the last wave).
  [[nodiscard]] ConfigSpace norm_space() const {
    ConfigSpace s = rowwise::block_space(rs_, default_block());
    for (int lanes : {4, 8, 16, 32}) {
      if (warp_nv_for(lanes) == 0) continue;
      for (std::int64_t block : {128, 256}) {
        s.configs.push_back(Config{{{"warp", lanes}, {"block", block}}});
      }
    }
    const int lanes = default_warp_lanes();
    if (lanes > 0) s.default_config = Config{{{"warp", lanes}, {"block", 128}}};
    return s;
  }

  void plan_warp(Plan& plan, const Config& c) {
    const std::int64_t lanes = c.get("warp", 32);
    if (lanes != 4 && lanes != 8 && lanes != 16 && lanes != 32) {
      throw ConfigRejected("warp=" + std::to_string(lanes) +
                           " is not 4, 8, 16 or 32 lanes per row");
    }
    const int block = rowwise::block_of(c, 128);
    if (block > kWarpBlockMax) {
      throw ConfigRejected("warp path: block " + std::to_string(block) + " exceeds its bound " +
                           std::to_string(kWarpBlockMax));
    }
    const int nv = warp_nv_for(static_cast<int>(lanes));
    if (nv == 0) {
      throw ConfigRejected("warp path: a row of " + std::to_string(rs_.cols) + " " +
                           std::string(to_string(case_.dtype)) + " does not fit " +
                           std::to_string(lanes) +
                           " lanes of 16-byte vectors (or is not a whole number of aligned "
                           "16-byte vectors)");
    }
    plan.block = block;
    plan.split = false;
    plan.smem = false;
    plan.smem_bytes = 0;
    plan.warp = static_cast<int>(lanes);
    plan.warp_nv = nv;
    plan.vec = static_cast<int>(16 / size_of(case_.dtype));
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_kind([&](auto kc) {
        constexpr Kind K = decltype(kc)::value;
        const WarpKernel<T> kernel = warp_kernel<K, T>(plan.warp, plan.warp_nv);
        if (kernel == nullptr) {
          throw ConfigRejected("warp path: no kernel for " + std::to_string(plan.warp) +
                               " lanes x " + std::to_string(plan.warp_nv) + " vectors");
        }
        require_launchable(kernel, block, 0, "warp_rows_kernel");
        int blocks = 0;
        CALIBER_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, 0));
        if (blocks < 1) {
          throw ConfigRejected("warp_rows_kernel: block " + std::to_string(block) +
                               " fits no block on an SM");
        }
        // One wave of resident blocks; each warp loops over its share of the rows.
        const std::int64_t rows_per_block = static_cast<std::int64_t>(block / 32) * (32 / lanes);
        plan.grid = grid_for(ceil_div(rs_.rows, rows_per_block), 1, ctx_.props(), 1, blocks);
      });
    });
  }

  // 16-byte accesses need every row (cols % V == 0) and every base pointer 16-byte aligned.
  template <class T>
  [[nodiscard]] bool vector_ok(const void* out) const {
    constexpr int kV = max_vec<T>();
    return rs_.cols % kV == 0 && aligned_to(x_.get(), 16) && aligned_to(out, 16) &&
           aligned_to(w_.get(), 16) && aligned_to(b_.get(), 16);
  }

  void plan_split(Plan& plan, int block, bool force_split) {
    plan.block = block;
    plan.warp = 0;
    plan.warp_nv = 0;
    const std::int64_t target = rowwise::fill_blocks(ctx_.props(), block);
    plan.smem_bytes = row_smem_bytes();
    plan.smem = !force_split && plan.smem_bytes <= kMaxRowSmem;
    plan.split = force_split || (rs_.rows < target / 2 && rs_.cols >= 16 * block) || !plan.smem;
    if (plan.split) {
      plan.smem = false;
      const std::int64_t min_chunk = static_cast<std::int64_t>(block) * 8;
      const std::int64_t want = ceil_div(target, rs_.rows);
      const std::int64_t most = std::max<std::int64_t>(1, rs_.cols / min_chunk);
      plan.splits = std::min(want, most);
      plan.chunk = ceil_div(rs_.cols, plan.splits);
      plan.splits = ceil_div(rs_.cols, plan.chunk);
      plan.partial = Buffer(ctx_, static_cast<std::size_t>(rs_.rows * plan.splits) * sizeof(Stats));
    }
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_kind([&](auto kc) {
        constexpr Kind K = decltype(kc)::value;
        if (plan.split) {
          require_launchable(partial_stats_kernel<K, T>, block, 0, "partial_stats_kernel");
          require_launchable(apply_split_kernel<K, T>, block, 0, "apply_split_kernel");
          return;
        }
        // Both widths are made launchable: run_plan falls back to V = 1 for an unaligned output.
        constexpr int kV = max_vec<T>();
        plan.vec = vector_ok<T>(y_.get()) ? kV : 1;
        const auto setup = [&](auto kernel) {
          require_launchable(kernel, block, plan.smem_bytes, "fused_rows_kernel");
          // Rows live in shared memory: ask for the largest carveout so that the most blocks
          // fit per SM (the occupancy query below assumes it).
          CALIBER_CUDA_CHECK(cudaFuncSetAttribute(kernel,
                                                  cudaFuncAttributePreferredSharedMemoryCarveout,
                                                  cudaSharedmemCarveoutMaxShared));
          int blocks = 0;
          CALIBER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block,
                                                                           plan.smem_bytes));
          return blocks;
        };
        const int occ_vec = setup(fused_rows_kernel<K, T, kV>);
        const int occ_one = setup(fused_rows_kernel<K, T, 1>);
        const int occupancy = plan.vec == kV ? occ_vec : occ_one;
        if (occupancy < 1) {
          throw ConfigRejected("fused_rows_kernel: block " + std::to_string(block) + " with " +
                               std::to_string(plan.smem_bytes) +
                               " bytes of shared memory fits no block on an SM");
        }
        // One wave of resident blocks, each looping over rows: no tail wave, and the rows of a
        // block's loop differ by at most one across blocks.
        plan.grid = grid_for(rs_.rows, 1, ctx_.props(), 1, occupancy);
      });
    });
  }

  template <class F>
  void with_kind(F&& f) {
    switch (kind_) {
      case Kind::softmax:
        f(std::integral_constant<Kind, Kind::softmax>{});
        break;
      case Kind::log_softmax:
        f(std::integral_constant<Kind, Kind::log_softmax>{});
        break;
      case Kind::layer_norm:
        f(std::integral_constant<Kind, Kind::layer_norm>{});
        break;
      case Kind::rms_norm:
        f(std::integral_constant<Kind, Kind::rms_norm>{});
        break;
    }
  }

  void run_plan(Plan& plan, void* out) {
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_kind([&](auto kc) {
        constexpr Kind K = decltype(kc)::value;
        const T* x = x_.as<const T>();
        const T* w = w_.as<const T>();
        const T* b = b_.as<const T>();
        T* y = static_cast<T*>(out);
        if (plan.split) {
          const std::int64_t tasks = rs_.rows * plan.splits;
          const unsigned grid = grid_for(tasks, 1, ctx_.props(), 4, std::max(1, 2048 / plan.block));
          partial_stats_kernel<K, T><<<grid, plan.block, 0, s_>>>(
              x, rs_.rows, rs_.cols, plan.chunk, plan.splits, plan.partial.as<Stats>());
          CALIBER_LAUNCH_CHECK("partial_stats_kernel");
          apply_split_kernel<K, T><<<grid, plan.block, 0, s_>>>(x, y, w, b, rs_.rows, rs_.cols,
                                                                plan.chunk, plan.splits,
                                                                plan.partial.as<const Stats>());
          CALIBER_LAUNCH_CHECK("apply_split_kernel");
          return;
        }
        if (plan.warp > 0) {
          // prepare() checked the lanes, the vectors and the alignment of x, y, w and b.
          if (!aligned_to(out, 16)) {
            throw std::logic_error("warp_rows_kernel: output not 16-byte aligned");
          }
          const WarpKernel<T> kernel = warp_kernel<K, T>(plan.warp, plan.warp_nv);
          kernel<<<plan.grid, plan.block, 0, s_>>>(x, y, w, b, rs_.rows, rs_.cols);
          CALIBER_LAUNCH_CHECK("warp_rows_kernel");
          return;
        }
        constexpr int kV = max_vec<T>();
        if (plan.vec == kV && aligned_to(out, 16)) {
          fused_rows_kernel<K, T, kV>
              <<<plan.grid, plan.block, plan.smem_bytes, s_>>>(x, y, w, b, rs_.rows, rs_.cols);
        } else {
          fused_rows_kernel<K, T, 1>
              <<<plan.grid, plan.block, plan.smem_bytes, s_>>>(x, y, w, b, rs_.rows, rs_.cols);
        }
        CALIBER_LAUNCH_CHECK("fused_rows_kernel");
      });
    });
  }

  // Rows longer than 16M elements: the host float64 reference would take minutes, so the output
  // is compared with the plain reference kernel (fp32 statistics) on a strided sample, and every
  // element is checked for NaN.
  [[nodiscard]] Accuracy check_against_device_reference() {
    Plan plan;
    plan_split(plan, 256, true);
    Buffer ref_out(ctx_, y_.bytes());
    run_plan(plan, ref_out.get());
    sync(s_);
    const std::int64_t stride = std::max<std::int64_t>(1, rs_.numel() / (1 << 20));
    std::vector<double> out_s, ref_s;
    std::size_t nonfinite = 0;
    rowwise::stream_back(y_.get(), case_.dtype, 0, rs_.numel(), s_,
                         [&](const std::vector<double>& v, std::int64_t off) {
                           for (std::size_t k = 0; k < v.size(); ++k) {
                             if (!std::isfinite(v[k])) ++nonfinite;
                             if ((off + static_cast<std::int64_t>(k)) % stride == 0)
                               out_s.push_back(v[k]);
                           }
                         });
    rowwise::stream_back(ref_out.get(), case_.dtype, 0, rs_.numel(), s_,
                         [&](const std::vector<double>& v, std::int64_t off) {
                           for (std::size_t k = 0; k < v.size(); ++k) {
                             if ((off + static_cast<std::int64_t>(k)) % stride == 0)
                               ref_s.push_back(v[k]);
                           }
                         });
    Accuracy a =
        check::compare(out_s, ref_s, check::reduction_tolerance(case_.dtype, rs_.cols),
                       std::string(kind_name(kind_)) + ": every " + std::to_string(stride) +
                           "th element vs the plain reference kernel (host float64 "
                           "unaffordable for this row length), all NaN-checked");
    if (nonfinite > 0) {
      a.passed = false;
      a.detail += "; " + std::to_string(nonfinite) + " NaN/unwritten elements";
    }
    return a;
  }

  void prepare_cudnn() {
#ifdef CALIBER_HAVE_CUDNN
    if (cudnn_ == nullptr) CALIBER_CUDNN_CHECK(cudnnCreate(&cudnn_));
    CALIBER_CUDNN_CHECK(cudnnSetStream(cudnn_, s_));
    if (desc_ == nullptr) CALIBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    const cudnnDataType_t dt = case_.dtype == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    if (rs_.rows > INT32_MAX || rs_.cols > INT32_MAX) {
      throw CaseSkipped("cuDNN tensor dimensions are 32-bit");
    }
    CALIBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, dt,
                                                   static_cast<int>(rs_.rows),
                                                   static_cast<int>(rs_.cols), 1, 1));
#endif
  }

  void run_cudnn() {
#ifdef CALIBER_HAVE_CUDNN
    const float alpha = 1.f, beta = 0.f;
    CALIBER_CUDNN_CHECK(cudnnSoftmaxForward(
        cudnn_, kind_ == Kind::softmax ? CUDNN_SOFTMAX_ACCURATE : CUDNN_SOFTMAX_LOG,
        CUDNN_SOFTMAX_MODE_INSTANCE, &alpha, desc_, x_.get(), &beta, desc_, y_.get()));
#endif
  }

  DeviceContext& ctx_;
  Case case_;
  Kind kind_;
  RowShape rs_;
  cudaStream_t s_;
  Buffer x_, y_, w_, b_;
  Plan ref_plan_, own_plan_;
#ifdef CALIBER_HAVE_CUDNN
  cudnnHandle_t cudnn_ = nullptr;
  cudnnTensorDescriptor_t desc_ = nullptr;
#endif
};

class NormOp : public Op {
 public:
  explicit NormOp(Kind k) : kind_(k) {}
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = kind_name(kind_);
    i.family = "norm";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.description = std::string(kind_name(kind_)) + " over the last dimension";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto rs = rowwise::row_shape(c);
    const auto n = static_cast<std::size_t>(rs.numel()) * size_of(c.dtype);
    // Input, output, a reference output for the check of huge rows, parameters, partials.
    return 3 * n + (std::size_t{64} << 20);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<NormWorkload>(ctx, c, kind_);
  }

 private:
  Kind kind_;
};

struct SoftmaxOp final : NormOp {
  SoftmaxOp() : NormOp(Kind::softmax) {}
};
struct LogSoftmaxOp final : NormOp {
  LogSoftmaxOp() : NormOp(Kind::log_softmax) {}
};
struct LayerNormOp final : NormOp {
  LayerNormOp() : NormOp(Kind::layer_norm) {}
};
struct RmsNormOp final : NormOp {
  RmsNormOp() : NormOp(Kind::rms_norm) {}
};

}  // namespace
}  // namespace caliber::ops::cuda::norm

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::norm::SoftmaxOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::norm::LogSoftmaxOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::norm::LayerNormOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::norm::RmsNormOp);
