// nonzero: the int64 indices of the nonzero elements of a tensor viewed as 1-D (about half of
// the inputs are zero). Like torch.nonzero, each launch counts, copies the count to pinned host
// memory and synchronizes to size the output before compacting. That synchronize is what makes
// this op refuse graph capture (cudaErrorStreamCaptureUnsupported, 900): it is built to, so the
// harness's per-case fallback to the direct timer is exercised by a real op.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <memory>

#include "common/cuda_common.cuh"
#include "common/rowwise.cuh"

namespace caliber::ops::cuda::nonzero {
namespace {

template <class T>
struct IsNonzero {
  __host__ __device__ long long operator()(T v) const { return to_float(v) != 0.f ? 1 : 0; }
};

// Inputs are uniform in [-1, 1); the negative half becomes zero.
template <class T>
__global__ void zero_negatives_kernel(T* x, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (to_float(x[i]) < 0.f) x[i] = from_float<T>(0.f);
  }
}

// Pass 1: each block counts the nonzeros of its contiguous chunk.
template <class T>
__global__ void count_kernel(const T* __restrict__ x, long long n, long long chunk,
                             long long* __restrict__ block_counts) {
  __shared__ long long scratch[33];
  const long long begin = static_cast<long long>(blockIdx.x) * chunk;
  const long long end = min(n, begin + chunk);
  long long c = 0;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) c += to_float(x[i]) != 0.f;
  struct Add {
    __device__ long long operator()(long long a, long long b) const { return a + b; }
  };
  c = rowwise::block_reduce(c, Add{}, 0LL, scratch);
  if (threadIdx.x == 0) block_counts[blockIdx.x] = c;
}

// Pass 2: exclusive scan of the block counts (one block); offsets[nblocks] is the total.
__global__ void offsets_kernel(const long long* __restrict__ counts,
                               long long* __restrict__ offsets, long long nblocks) {
  __shared__ long long warp_sums[33];
  long long run = 0;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (long long b0 = 0; b0 < nblocks; b0 += blockDim.x) {
    const long long b = b0 + threadIdx.x;
    const long long v = b < nblocks ? counts[b] : 0;
    long long inc = v;
    for (int off = 1; off < 32; off <<= 1) {
      const long long o = __shfl_up_sync(0xffffffffu, inc, off);
      if (lane >= off) inc += o;
    }
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    if (threadIdx.x == 0) {
      long long acc = 0;
      for (int w = 0; w < warps; ++w) {
        const long long t = warp_sums[w];
        warp_sums[w] = acc;
        acc += t;
      }
      warp_sums[32] = acc;
    }
    __syncthreads();
    if (b < nblocks) offsets[b] = run + warp_sums[warp] + inc - v;
    run += warp_sums[32];
    __syncthreads();
  }
  if (threadIdx.x == 0) offsets[nblocks] = run;
}

// Pass 3: each block compacts its chunk in order, tile by tile, with warp ballots.
template <class T>
__global__ void compact_kernel(const T* __restrict__ x, long long n, long long chunk,
                               const long long* __restrict__ offsets, long long* __restrict__ out) {
  __shared__ int warp_base[33];
  const long long begin = static_cast<long long>(blockIdx.x) * chunk;
  const long long end = min(n, begin + chunk);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  long long base = offsets[blockIdx.x];
  for (long long t0 = begin; t0 < end; t0 += blockDim.x) {
    const long long i = t0 + threadIdx.x;
    const bool keep = i < end && to_float(x[i]) != 0.f;
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_base[warp] = __popc(mask);
    __syncthreads();
    if (threadIdx.x == 0) {
      int acc = 0;
      for (int w = 0; w < warps; ++w) {
        const int t = warp_base[w];
        warp_base[w] = acc;
        acc += t;
      }
      warp_base[32] = acc;
    }
    __syncthreads();
    if (keep) out[base + warp_base[warp] + __popc(mask & ((1u << lane) - 1u))] = i;
    base += warp_base[32];
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------------------------
// check() on the device (streaming a 1G-element input and its 4 GB of indices to the host took
// minutes): a count of the nonzeros independent of both providers, and a pass over the reported
// indices. Reported positions k < count that are in range, strictly increasing and at nonzero
// elements, with count equal to the number of nonzeros, are exactly the ordered nonzero indices.

constexpr int kRefBlock = 256;

__device__ __forceinline__ unsigned long long ref_warp_sum(unsigned long long v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// stats[0] += the nonzeros of x[0, n).
template <class T>
__global__ void __launch_bounds__(kRefBlock)
    ref_count_kernel(const T* __restrict__ x, long long n, unsigned long long* stats) {
  unsigned long long c = 0;
  const long long step = static_cast<long long>(gridDim.x) * kRefBlock;
  for (long long i = static_cast<long long>(blockIdx.x) * kRefBlock + threadIdx.x; i < n;
       i += step) {
    c += to_float(x[i]) != 0.f ? 1ULL : 0ULL;
  }
  c = ref_warp_sum(c);
  if ((threadIdx.x & 31) == 0 && c != 0) atomicAdd(stats, c);
}

// For every reported position k < count: idx[k] in [0, n), x[idx[k]] != 0, and idx[k-1] <
// idx[k]. stats[1] += the positions that fail; stats[2] = the first of them (min).
template <class T>
__global__ void __launch_bounds__(kRefBlock)
    ref_verify_kernel(const long long* __restrict__ idx, long long count, const T* __restrict__ x,
                      long long n, unsigned long long* stats) {
  unsigned long long bad = 0;
  const long long step = static_cast<long long>(gridDim.x) * kRefBlock;
  for (long long k = static_cast<long long>(blockIdx.x) * kRefBlock + threadIdx.x; k < count;
       k += step) {
    const long long i = idx[k];
    bool ok = i >= 0 && i < n && to_float(x[i]) != 0.f;
    if (ok && k > 0) ok = idx[k - 1] < i;
    if (!ok) {
      ++bad;
      atomicMin(stats + 2, static_cast<unsigned long long>(k));
    }
  }
  bad = ref_warp_sum(bad);
  if ((threadIdx.x & 31) == 0 && bad != 0) atomicAdd(stats + 1, bad);
}

class NonzeroWorkload final : public Workload {
 public:
  NonzeroWorkload(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), case_(c), n_(std::max<std::int64_t>(c.numel(), 1)), s_(stream_of(ctx)) {
    x_ = Buffer(ctx, static_cast<std::size_t>(n_) * size_of(c.dtype));
    ctx.fill_uniform(x_.get(), c.dtype, static_cast<std::size_t>(n_), -1.0, 1.0, ctx.seed());
    dispatch_float(c.dtype, [&](auto tag) {
      using T = decltype(tag);
      zero_negatives_kernel<T><<<grid_for(n_, 256, ctx.props()), 256, 0, s_>>>(x_.as<T>(), n_);
      CALIBER_LAUNCH_CHECK("zero_negatives_kernel");
    });
    out_ = Buffer(ctx, static_cast<std::size_t>(n_) * sizeof(long long));
    count_ = Buffer(ctx, sizeof(long long));
    void* h = nullptr;
    CALIBER_CUDA_CHECK(cudaMallocHost(&h, sizeof(long long)));
    host_count_ = static_cast<long long*>(h);
    *host_count_ = -1;
    sync(s_);
  }
  ~NonzeroWorkload() override {
    if (host_count_ != nullptr) cudaFreeHost(host_count_);
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base{"cub",
                      Role::baseline,
                      "1",
                      "cub::DeviceReduce count, sync for the size, cub::DeviceSelect::Flagged",
                      {}};
    ProviderInfo cand{"caliber",
                      Role::candidate,
                      "1",
                      "own two-pass count + ordered compaction (syncs for the size)",
                      {}};
    cand.space = rowwise::block_space(rowwise::RowShape{1, n_});
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) {
      dispatch_float(case_.dtype, [&](auto tag) {
        using T = decltype(tag);
        std::size_t a = 0, b = 0;
        auto flags = thrust::make_transform_iterator(x_.as<const T>(), IsNonzero<T>{});
        CALIBER_CUDA_CHECK(
            cub::DeviceReduce::Sum(nullptr, a, flags, count_.as<long long>(), n_, s_));
        CALIBER_CUDA_CHECK(
            cub::DeviceSelect::Flagged(nullptr, b, thrust::counting_iterator<long long>(0), flags,
                                       out_.as<long long>(), count_.as<long long>(), n_, s_));
        temp_bytes_ = std::max<std::size_t>(std::max(a, b), 1);
      });
      temp_ = Buffer(ctx_, temp_bytes_);
      return;
    }
    block_ = rowwise::block_of(c);
    nblocks_ = grid_for(n_, block_, ctx_.props(), 4, std::max(1, 2048 / block_));
    chunk_ = ceil_div(n_, nblocks_);
    nblocks_ = ceil_div(n_, chunk_);
    block_counts_ = Buffer(ctx_, static_cast<std::size_t>(nblocks_) * sizeof(long long));
    offsets_ = Buffer(ctx_, static_cast<std::size_t>(nblocks_ + 1) * sizeof(long long));
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      require_launchable(compact_kernel<T>, block_, 0, "compact_kernel");
    });
  }

  void launch(std::size_t p) override {
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      auto flags = thrust::make_transform_iterator(x_.as<const T>(), IsNonzero<T>{});
      if (p == 0) {
        std::size_t bytes = temp_bytes_;
        CALIBER_CUDA_CHECK(
            cub::DeviceReduce::Sum(temp_.get(), bytes, flags, count_.as<long long>(), n_, s_));
        read_count(count_.as<const long long>());
        bytes = temp_bytes_;
        CALIBER_CUDA_CHECK(cub::DeviceSelect::Flagged(
            temp_.get(), bytes, thrust::counting_iterator<long long>(0), flags,
            out_.as<long long>(), count_.as<long long>(), n_, s_));
      } else {
        const auto nb = static_cast<unsigned>(nblocks_);
        count_kernel<T>
            <<<nb, block_, 0, s_>>>(x_.as<const T>(), n_, chunk_, block_counts_.as<long long>());
        CALIBER_LAUNCH_CHECK("count_kernel");
        offsets_kernel<<<1, 1024, 0, s_>>>(block_counts_.as<const long long>(),
                                           offsets_.as<long long>(), nblocks_);
        CALIBER_LAUNCH_CHECK("offsets_kernel");
        read_count(offsets_.as<const long long>() + nblocks_);
        compact_kernel<T><<<nb, block_, 0, s_>>>(
            x_.as<const T>(), n_, chunk_, offsets_.as<const long long>(), out_.as<long long>());
        CALIBER_LAUNCH_CHECK("compact_kernel");
      }
    });
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    check::poison(ctx_, out_.get(), out_.bytes());
    launch(p);
    sync(s_);
    const long long count = *host_count_;
    // Positions that exist in the output buffer; a count outside [0, n] fails below anyway.
    const long long reported = std::clamp<long long>(count, 0, n_);
    // stats: [0] nonzeros of x, [1] bad reported positions, [2] the first bad position.
    Buffer stats(ctx_, 3 * sizeof(unsigned long long));
    CALIBER_CUDA_CHECK(cudaMemsetAsync(stats.get(), 0, 2 * sizeof(unsigned long long), s_));
    CALIBER_CUDA_CHECK(
        cudaMemsetAsync(stats.as<unsigned long long>() + 2, 0xFF, sizeof(unsigned long long), s_));
    dispatch_float(case_.dtype, [&](auto tag) {
      using T = decltype(tag);
      ref_count_kernel<T><<<grid_for(n_, kRefBlock, ctx_.props(), 2), kRefBlock, 0, s_>>>(
          x_.as<const T>(), n_, stats.as<unsigned long long>());
      CALIBER_LAUNCH_CHECK("ref_count_kernel");
      if (reported > 0) {
        ref_verify_kernel<T><<<grid_for(reported, kRefBlock, ctx_.props(), 2), kRefBlock, 0, s_>>>(
            out_.as<const long long>(), reported, x_.as<const T>(), n_,
            stats.as<unsigned long long>());
        CALIBER_LAUNCH_CHECK("ref_verify_kernel");
      }
    });
    const auto st = check::download_raw<unsigned long long>(ctx_, stats.get(), 3);
    const auto expected = static_cast<long long>(st[0]);
    const auto bad = static_cast<long long>(st[1]);
    const long long missing = expected > count ? expected - count : count - expected;
    Accuracy a;
    a.passed = bad == 0 && expected == count && expected > 0;
    a.rel_err =
        expected > 0 ? static_cast<double>(bad + missing) / static_cast<double>(expected) : 1.0;
    a.max_abs_err = bad + missing > 0 ? 1 : 0;
    a.detail = "nonzero indices of all " + std::to_string(n_) +
               " elements vs device count, exact: " + std::to_string(expected) + " expected, " +
               std::to_string(count) + " reported, " + std::to_string(bad) +
               " reported indices out of range, not increasing or at a zero element";
    if (bad > 0) {
      const auto k = static_cast<long long>(st[2]);
      const auto v = check::download_raw<long long>(ctx_, out_.as<const long long>() + k, 1);
      a.detail += "; first bad at output position " + std::to_string(k) + " (index " +
                  std::to_string(v[0]) + ")";
    }
    return a;
  }

  [[nodiscard]] double bytes() const override {
    // Input read once; about half of it written back as int64 indices.
    return static_cast<double>(n_) * static_cast<double>(size_of(case_.dtype)) +
           static_cast<double>(n_ / 2) * 8.0;
  }

 private:
  // The synchronize that sizes the output, as torch.nonzero does (and that capture refuses).
  void read_count(const long long* dev) {
    CALIBER_CUDA_CHECK(
        cudaMemcpyAsync(host_count_, dev, sizeof(long long), cudaMemcpyDeviceToHost, s_));
    CALIBER_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  DeviceContext& ctx_;
  Case case_;
  std::int64_t n_;
  cudaStream_t s_;
  Buffer x_, out_, count_, temp_, block_counts_, offsets_;
  long long* host_count_ = nullptr;
  std::size_t temp_bytes_ = 0;
  int block_ = 256;
  std::int64_t nblocks_ = 1, chunk_ = 1;
};

class NonzeroOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = "nonzero";
    i.family = "reduction";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.refuses_capture = true;
    i.description =
        "indices of nonzero elements (flattened); synchronizes to size its output, so it refuses "
        "graph capture";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(c.numel(), 1));
    return n * size_of(c.dtype) + n * 8 + (std::size_t{64} << 20);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<NonzeroWorkload>(ctx, c);
  }
};

}  // namespace
}  // namespace caliber::ops::cuda::nonzero

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::nonzero::NonzeroOp);
