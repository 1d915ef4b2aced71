// CUDA helpers shared by every family of the CUDA corpus: error checks that throw the public
// API's exceptions, dtype dispatch, half/bf16 conversions, vectorized loads and stores, launch
// sizing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "caliber/caliber.hpp"
#include "caliber/check.hpp"
#include "caliber/reference.hpp"

namespace caliber::ops::cuda {

// ---------------------------------------------------------------------------------------------
// Error checks. Every runtime/library call goes through one of these so that the backend can
// classify the native code (sticky vs capture-refused) from NativeError::code().

inline void throw_cuda(cudaError_t e, const char* api) {
  throw NativeError(static_cast<int>(e), api, cudaGetErrorString(e));
}

// For libraries whose status is an integer enum (cuBLAS, cuFFT, cuRAND, cuDNN): ok is its
// success value, name its status string where the library has one.
inline void check_status(int status, int ok, const char* api, const char* name = nullptr) {
  if (status != ok) {
    throw NativeError(status, api, name != nullptr ? name : "library call failed");
  }
}

}  // namespace caliber::ops::cuda

#define CALIBER_CUDA_CHECK(expr)                             \
  do {                                                       \
    const cudaError_t caliber_err_ = (expr);                 \
    if (caliber_err_ != cudaSuccess) {                       \
      ::caliber::ops::cuda::throw_cuda(caliber_err_, #expr); \
    }                                                        \
  } while (0)

// After every kernel launch: launch-configuration errors are reported here (enqueue-time only,
// so it is allowed inside launch()). Peeking would leave a sticky error for the next call.
#define CALIBER_LAUNCH_CHECK(kernel_name)                          \
  do {                                                             \
    const cudaError_t caliber_err_ = cudaGetLastError();           \
    if (caliber_err_ != cudaSuccess) {                             \
      ::caliber::ops::cuda::throw_cuda(caliber_err_, kernel_name); \
    }                                                              \
  } while (0)

// Generic library status check: CALIBER_LIB_CHECK(cublasGemmEx(...), CUBLAS_STATUS_SUCCESS).
#define CALIBER_LIB_CHECK(expr, ok)                                                           \
  do {                                                                                        \
    const auto caliber_st_ = (expr);                                                          \
    if (caliber_st_ != (ok)) {                                                                \
      ::caliber::ops::cuda::check_status(static_cast<int>(caliber_st_), static_cast<int>(ok), \
                                         #expr);                                              \
    }                                                                                         \
  } while (0)

namespace caliber::ops::cuda {

[[nodiscard]] inline cudaStream_t stream_of(const DeviceContext& ctx) {
  return static_cast<cudaStream_t>(ctx.stream());
}

// ---------------------------------------------------------------------------------------------
// Element conversions, usable on host and device. Accumulation is always in float.

template <class T>
__host__ __device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return static_cast<float>(v);
  }
}

template <class T>
__host__ __device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  if constexpr (std::is_same_v<T, __half>) return DType::f16;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return DType::bf16;
  if constexpr (std::is_same_v<T, double>) return DType::f64;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
  return DType::f32;
}

// Calls f(T{}) with T the device type of a floating dtype (float, __half, __nv_bfloat16).
// Instantiates the callable only for those three, which keeps compile time bounded.
template <class F>
decltype(auto) dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    default:
      break;
  }
  throw CaseSkipped("dtype " + std::string(to_string(t)) + " is not a floating type of this op");
}

// ---------------------------------------------------------------------------------------------
// Vectorized access: V elements of T in one aligned load (16 bytes when sizeof(T)*V == 16).

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, V>*>(p);
}

template <class T, int V>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, V>& v) {
  *reinterpret_cast<Vec<T, V>*>(p) = v;
}

// Elements of T that fit in 16 bytes (4 for float, 8 for half/bf16).
template <class T>
constexpr int max_vec() {
  return static_cast<int>(16 / sizeof(T));
}

[[nodiscard]] inline bool aligned_to(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// ---------------------------------------------------------------------------------------------
// Launch sizing. Grids are capped (grid-stride loops cover the rest) so a 1G-element tensor
// never asks for more blocks than the hardware's limit; indices inside kernels are 64-bit.

[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Blocks for `work` items at `per_block` items per block, capped at `waves` full waves of the
// device (blocks_per_sm resident blocks per SM), at least 1.
[[nodiscard]] inline unsigned grid_for(std::int64_t work, std::int64_t per_block,
                                       const DeviceProps& props, int waves = 4,
                                       int blocks_per_sm = 8) {
  const std::int64_t need = ceil_div(work > 0 ? work : 1, per_block);
  const std::int64_t sms = props.sm_count > 0 ? props.sm_count : 132;
  const std::int64_t cap = sms * blocks_per_sm * (waves > 0 ? waves : 1);
  std::int64_t g = need < cap ? need : cap;
  if (g > 2147483647LL) g = 2147483647LL;
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

// ---------------------------------------------------------------------------------------------
// Checks use the public helpers (caliber/check.hpp: check::poison, check::download, ...), which go
// through the DeviceContext and so run on the context's stream.

inline void sync(cudaStream_t s) {
  CALIBER_CUDA_CHECK(cudaStreamSynchronize(s));
}

// Kernel resources: reject a config whose block or dynamic shared memory the device cannot run
// (prepare() turns this into ConfigRejected before anything is timed).
template <class Kernel>
inline void require_launchable(Kernel k, int block, std::size_t smem, const char* what) {
  cudaFuncAttributes attr{};
  CALIBER_CUDA_CHECK(cudaFuncGetAttributes(&attr, k));
  if (block <= 0 || block > attr.maxThreadsPerBlock) {
    throw ConfigRejected(std::string(what) + ": block " + std::to_string(block) +
                         " exceeds the kernel's limit " + std::to_string(attr.maxThreadsPerBlock));
  }
  int dev = 0;
  CALIBER_CUDA_CHECK(cudaGetDevice(&dev));
  int smem_optin = 0;
  CALIBER_CUDA_CHECK(
      cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (smem + attr.sharedSizeBytes > static_cast<std::size_t>(smem_optin)) {
    throw ConfigRejected(std::string(what) + ": " + std::to_string(smem) +
                         " bytes of shared memory exceed the device's " +
                         std::to_string(smem_optin));
  }
  if (smem > 48 * 1024) {
    CALIBER_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
  }
}

}  // namespace caliber::ops::cuda
