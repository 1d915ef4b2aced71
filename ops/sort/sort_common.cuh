// Row sorts shared by sort.cu (values), argsort.cu (int64 indices) and topk.cu (k = min(cols, 64)
// largest per row, values and indices). Each op's file instantiates only its own mode, so the
// heavy CUB device sorts compile in parallel files.
// Baseline: CUB radix sort (DeviceRadixSort for one row, DeviceSegmentedRadixSort otherwise;
// temp storage from prepare); topk takes the first k of a descending sort.
// Candidate: a block per row sorting in shared memory with cub::BlockRadixSort for rows up to
// 4096 elements; longer rows fall back to the CUB path (the label says so).
#pragma once

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <limits>
#include <memory>
#include <mutex>

#include "common/cuda_common.cuh"
#include "common/rowwise.cuh"

namespace caliber::ops::cuda::sort {

enum class Mode { sort, argsort, topk };

inline const char* mode_name(Mode m) {
  return m == Mode::sort ? "sort" : m == Mode::argsort ? "argsort" : "topk";
}

constexpr std::int64_t kTopK = 64;
constexpr std::int64_t kBlockSortMax = 4096;

// The padding key that sorts after every real key (ascending) or after it in descending order.
template <class K, bool DESC>
__device__ __forceinline__ K pad_key() {
  if constexpr (std::is_same_v<K, __half>) {
    return DESC ? __ushort_as_half(0xFC00u) : __ushort_as_half(0x7C00u);
  } else if constexpr (std::is_same_v<K, __nv_bfloat16>) {
    return DESC ? __ushort_as_bfloat16(0xFF80u) : __ushort_as_bfloat16(0x7F80u);
  } else if constexpr (std::is_floating_point_v<K>) {
    return DESC ? -INFINITY : INFINITY;
  } else {
    return DESC ? std::numeric_limits<K>::lowest() : std::numeric_limits<K>::max();
  }
}

// One block per row; BLOCK * ITEMS >= cols. Keys are padded so the padding sorts last; radix sort
// is stable, so real keys equal to the padding stay ahead of it.
template <Mode M, class K, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK)
    block_sort_kernel(const K* __restrict__ x, K* __restrict__ y, long long* __restrict__ idx,
                      long long rows, long long cols, long long out_cols) {
  constexpr bool kDesc = M == Mode::topk;
  constexpr bool kPairs = M != Mode::sort;
  using Sorter = cub::BlockRadixSort<K, BLOCK, ITEMS, long long>;
  using KeysOnly = cub::BlockRadixSort<K, BLOCK, ITEMS>;
  __shared__ union {
    typename Sorter::TempStorage pairs;
    typename KeysOnly::TempStorage keys;
  } tmp;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    K keys[ITEMS];
    long long vals[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const long long j = static_cast<long long>(threadIdx.x) * ITEMS + i;
      keys[i] = j < cols ? x[r * cols + j] : pad_key<K, kDesc>();
      vals[i] = j;
    }
    if constexpr (kPairs) {
      if constexpr (kDesc) {
        Sorter(tmp.pairs).SortDescendingBlockedToStriped(keys, vals);
      } else {
        Sorter(tmp.pairs).SortBlockedToStriped(keys, vals);
      }
    } else {
      KeysOnly(tmp.keys).SortBlockedToStriped(keys);
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const long long j = static_cast<long long>(i) * BLOCK + threadIdx.x;
      if (j < out_cols) {
        if (M != Mode::argsort) y[r * out_cols + j] = keys[i];
        if constexpr (kPairs) idx[r * out_cols + j] = vals[i];
      }
    }
    __syncthreads();  // temp storage is reused by the next row
  }
}

// Segment-local positions 0..cols-1, the values a pairs sort carries.
template <class I>
__global__ void iota_rows_kernel(I* __restrict__ v, I n, I cols) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    v[i] = i % cols;
  }
}

// topk baseline tail: the first k of every descending-sorted row.
template <class K>
__global__ void take_first_kernel(const K* __restrict__ keys, const long long* __restrict__ vals,
                                  K* __restrict__ y, long long* __restrict__ idx, long long rows,
                                  long long cols, long long k) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < rows * k;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / k, j = i % k;
    y[i] = keys[r * cols + j];
    idx[i] = vals[r * cols + j];
  }
}

// Dtype dispatch over the key types of the sort family.
template <class F>
decltype(auto) dispatch_key(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    case DType::i32:
      return f(std::int32_t{});
    case DType::i64:
      return f(static_cast<long long>(0));
    default:
      break;
  }
  throw CaseSkipped("dtype " + std::string(to_string(t)) + " is not a sort key type");
}

template <Mode M>
class SortWorkload final : public Workload {
 public:
  SortWorkload(DeviceContext& ctx, const Case& c)
      : ctx_(ctx), case_(c), rs_(rowwise::row_shape(c)), s_(stream_of(ctx)) {
    const std::size_t es = size_of(c.dtype);
    const auto n = static_cast<std::size_t>(rs_.numel());
    k_ = M == Mode::topk ? std::min(rs_.cols, kTopK) : rs_.cols;
    x_ = Buffer(ctx, n * es);
    const bool integer = c.dtype == DType::i32 || c.dtype == DType::i64;
    // Integers from a range narrower than the row, so ties are common and must be handled.
    ctx.fill_uniform(x_.get(), c.dtype, n, integer ? -1000.0 : -1.0, integer ? 1000.0 : 1.0,
                     ctx.seed());
    const auto out_n = static_cast<std::size_t>(rs_.rows * k_);
    if (M != Mode::argsort) y_ = Buffer(ctx, out_n * es);
    if (M != Mode::sort) idx_ = Buffer(ctx, out_n * sizeof(long long));
  }

  [[nodiscard]] bool own_fits() const { return rs_.cols <= kBlockSortMax; }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "cub";
    base.role = Role::baseline;
    base.label =
        std::string(rs_.rows == 1 ? "cub::DeviceRadixSort" : "cub::DeviceSegmentedRadixSort") +
        (M == Mode::sort      ? "::SortKeys"
         : M == Mode::argsort ? "::SortPairs (int64 positions)"
                              : "::SortPairsDescending + first k");
    ProviderInfo cand;
    cand.name = "caliber";
    cand.role = Role::candidate;
    cand.label = own_fits() ? "own block radix sort per row in shared memory"
                            : "rows longer than 4096: falls back to the CUB path (no own kernel)";
    return {base, cand};
  }

  void prepare(std::size_t p, const Config&) override {
    if (p == 1 && own_fits()) return;
    if (cub_ready_) return;
    const auto n = static_cast<std::size_t>(rs_.numel());
    const std::size_t es = size_of(case_.dtype);
    if (M != Mode::sort) {
      vals_in_ = Buffer(ctx_, n * sizeof(long long));
      iota_rows_kernel<long long><<<grid_for(rs_.numel(), 256, ctx_.props()), 256, 0, s_>>>(
          vals_in_.as<long long>(), rs_.numel(), rs_.cols);
      CALIBER_LAUNCH_CHECK("iota_rows_kernel");
    }
    if (M == Mode::argsort) keys_out_ = Buffer(ctx_, n * es);
    if (M == Mode::topk) {
      keys_out_ = Buffer(ctx_, n * es);
      vals_out_ = Buffer(ctx_, n * sizeof(long long));
    }
    dispatch_key(case_.dtype, [&](auto tag) {
      using K = decltype(tag);
      std::size_t bytes = 0;
      run_cub<K>(nullptr, bytes);
      temp_bytes_ = std::max<std::size_t>(bytes, 1);
    });
    temp_ = Buffer(ctx_, temp_bytes_);
    sync(s_);
    cub_ready_ = true;
  }

  void launch(std::size_t p) override {
    dispatch_key(case_.dtype, [&](auto tag) {
      using K = decltype(tag);
      if (p == 1 && own_fits()) {
        run_own<K>();
      } else {
        std::size_t bytes = temp_bytes_;
        run_cub<K>(temp_.get(), bytes);
      }
    });
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    if (y_.get() != nullptr) check::poison(ctx_, y_.get(), y_.bytes());
    if (idx_.get() != nullptr) check::poison(ctx_, idx_.get(), idx_.bytes());
    launch(p);
    sync(s_);
    const auto rows = rowwise::sample_rows(rs_, ctx_.seed() ^ 0x5027, std::int64_t{1} << 22);
    const auto x = check::download_rows(ctx_, x_.get(), case_.dtype, rows, rs_.cols);
    std::vector<double> y;
    std::vector<long long> idx;
    if (y_.get() != nullptr) y = check::download_rows(ctx_, y_.get(), case_.dtype, rows, k_);
    if (idx_.get() != nullptr) {
      for (auto r : rows) {
        auto part = std::vector<long long>(static_cast<std::size_t>(k_));
        CALIBER_CUDA_CHECK(cudaMemcpy(part.data(), idx_.as<long long>() + r * k_,
                                      part.size() * sizeof(long long), cudaMemcpyDeviceToHost));
        idx.insert(idx.end(), part.begin(), part.end());
      }
    }
    // Rows on the host's threads (docs/writing-ops.md, "The gate's cost"); each range of rows
    // reports its bad rows and its first, and the lowest first row wins whatever the threads.
    std::size_t bad_rows = 0, first_ri = rows.size();
    std::string first;
    std::mutex merge;
    check::parallel_for(
        rows.size(),
        [&](std::size_t begin, std::size_t end) {
          std::size_t range_bad = 0, range_first = rows.size();
          std::string range_why;
          for (std::size_t ri = begin; ri < end; ++ri) {
            const auto xr = x.begin() + static_cast<std::ptrdiff_t>(ri * rs_.cols);
            std::vector<double> want(xr, xr + rs_.cols);
            if (M == Mode::topk) {
              std::sort(want.begin(), want.end(), std::greater<double>());
            } else {
              std::sort(want.begin(), want.end());
            }
            std::string why;
            std::vector<char> seen(static_cast<std::size_t>(rs_.cols), 0);
            for (std::int64_t j = 0; j < k_ && why.empty(); ++j) {
              const auto o = ri * static_cast<std::size_t>(k_) + static_cast<std::size_t>(j);
              // Values: exactly the sorted input (sort, topk).
              if (!y.empty() && !(y[o] == want[static_cast<std::size_t>(j)])) {
                why = "value at " + std::to_string(j) + " is " + std::to_string(y[o]) + ", want " +
                      std::to_string(want[static_cast<std::size_t>(j)]);
              }
              // Indices: a permutation whose gather is the sorted order (ties allowed).
              if (!idx.empty() && why.empty()) {
                const long long i = idx[o];
                if (i < 0 || i >= rs_.cols || seen[static_cast<std::size_t>(i)]) {
                  why = "index at " + std::to_string(j) + " is " + std::to_string(i) +
                        " (out of range or repeated)";
                } else {
                  seen[static_cast<std::size_t>(i)] = 1;
                  if (!(xr[i] == want[static_cast<std::size_t>(j)])) {
                    why = "input[index at " + std::to_string(j) + "] is not the sorted value";
                  }
                }
              }
            }
            if (!why.empty()) {
              if (range_bad == 0) range_first = ri, range_why = std::move(why);
              ++range_bad;
            }
          }
          const std::lock_guard<std::mutex> lock(merge);
          bad_rows += range_bad;
          if (range_bad > 0 && range_first < first_ri) {
            first_ri = range_first;
            first = "row " + std::to_string(rows[range_first]) + ": " + range_why;
          }
        },
        std::max<std::size_t>(1, check::kParallelGrain / static_cast<std::size_t>(
                                                             std::max<std::int64_t>(rs_.cols, 1))));
    Accuracy a;
    a.passed = bad_rows == 0 && !rows.empty();
    a.rel_err =
        rows.empty() ? 1.0 : static_cast<double>(bad_rows) / static_cast<double>(rows.size());
    a.max_abs_err = bad_rows > 0 ? 1 : 0;
    a.detail = std::string(mode_name(M)) + " on " + rowwise::rows_detail(rs_, rows.size()) +
               " vs host std::sort, exact: " + std::to_string(bad_rows) + " bad rows" +
               (first.empty() ? "" : "; " + first);
    return a;
  }

  [[nodiscard]] double bytes() const override {
    const double es = static_cast<double>(size_of(case_.dtype));
    const double in = static_cast<double>(rs_.numel()) * es;
    const double out_n = static_cast<double>(rs_.rows * k_);
    const double out = (M != Mode::argsort ? out_n * es : 0) + (M != Mode::sort ? out_n * 8 : 0);
    return in + out;
  }

 private:
  template <class K>
  void run_cub(void* temp, std::size_t& bytes) {
    const K* x = x_.as<const K>();
    const long long n = rs_.numel();
    const int end_bit = static_cast<int>(sizeof(K) * 8);
    auto starts = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                                  rowwise::RowStart{rs_.cols});
    const bool one = rs_.rows == 1;
    if (!one && n > INT32_MAX) throw CaseSkipped("segmented radix sort takes 32-bit sizes");
    const int ni = static_cast<int>(std::min<long long>(n, INT32_MAX));
    const int segs = static_cast<int>(rs_.rows);
    if constexpr (M == Mode::sort) {
      if (one) {
        CALIBER_CUDA_CHECK(
            cub::DeviceRadixSort::SortKeys(temp, bytes, x, y_.as<K>(), n, 0, end_bit, s_));
      } else {
        CALIBER_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(
            temp, bytes, x, y_.as<K>(), ni, segs, starts, starts + 1, 0, end_bit, s_));
      }
    } else if constexpr (M == Mode::argsort) {
      const long long* v = vals_in_.as<const long long>();
      if (one) {
        CALIBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
            temp, bytes, x, keys_out_.as<K>(), v, idx_.as<long long>(), n, 0, end_bit, s_));
      } else {
        CALIBER_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
            temp, bytes, x, keys_out_.as<K>(), v, idx_.as<long long>(), ni, segs, starts,
            starts + 1, 0, end_bit, s_));
      }
    } else {
      const long long* v = vals_in_.as<const long long>();
      if (one) {
        CALIBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
            temp, bytes, x, keys_out_.as<K>(), v, vals_out_.as<long long>(), n, 0, end_bit, s_));
      } else {
        CALIBER_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
            temp, bytes, x, keys_out_.as<K>(), v, vals_out_.as<long long>(), ni, segs, starts,
            starts + 1, 0, end_bit, s_));
      }
      if (temp != nullptr) {
        take_first_kernel<K><<<grid_for(rs_.rows * k_, 256, ctx_.props()), 256, 0, s_>>>(
            keys_out_.as<const K>(), vals_out_.as<const long long>(), y_.as<K>(),
            idx_.as<long long>(), rs_.rows, rs_.cols, k_);
        CALIBER_LAUNCH_CHECK("take_first_kernel");
      }
    }
  }

  template <class K>
  void run_own() {
    const unsigned grid = grid_for(rs_.rows, 1, ctx_.props(), 4, 4);
    K* y = y_.get() != nullptr ? y_.as<K>() : nullptr;
    long long* idx = idx_.get() != nullptr ? idx_.as<long long>() : nullptr;
    if (rs_.cols <= 1024) {
      block_sort_kernel<M, K, 128, 8>
          <<<grid, 128, 0, s_>>>(x_.as<const K>(), y, idx, rs_.rows, rs_.cols, k_);
    } else {
      block_sort_kernel<M, K, 256, 16>
          <<<grid, 256, 0, s_>>>(x_.as<const K>(), y, idx, rs_.rows, rs_.cols, k_);
    }
    CALIBER_LAUNCH_CHECK("block_sort_kernel");
  }

  DeviceContext& ctx_;
  Case case_;
  rowwise::RowShape rs_;
  cudaStream_t s_;
  std::int64_t k_ = 1;
  Buffer x_, y_, idx_, vals_in_, keys_out_, vals_out_, temp_;
  std::size_t temp_bytes_ = 0;
  bool cub_ready_ = false;
};

template <Mode M>
class SortOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = mode_name(M);
    i.family = "sort";
    i.dtypes = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64};
    i.dim_names = {};
    i.description = M == Mode::sort      ? "ascending sort of every row"
                    : M == Mode::argsort ? "int64 positions that sort every row"
                                         : "the 64 largest of every row, values and positions";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(c.numel(), 1));
    // Input, keys out, int64 values in and out, radix temp storage (about the keys again).
    return n * (3 * size_of(c.dtype) + 24) + (std::size_t{64} << 20);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return std::make_unique<SortWorkload<M>>(ctx, c);
  }
};

}  // namespace caliber::ops::cuda::sort
