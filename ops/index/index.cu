// Index ops: embedding and index_select along dim 0. Both gather whole rows of a weight table
// [num_embeddings, dim] by int64 indices [num_indices] into out [num_indices, dim].
// Baseline: thrust::gather over the flattened output with a row-index map (one pass).
// Candidate "rowcopy": caliber's own kernel, a group of threads per row, 16-byte accesses.
#include <thrust/execution_policy.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <memory>
#include <string>
#include <vector>

#include "caliber/caliber.hpp"
#include "caliber/reference.hpp"
#include "common/check_kernels.cuh"
#include "common/cuda_common.cuh"

namespace caliber::ops::cuda {
namespace {

enum class IndexKind { embedding, index_select };

const char* index_name(IndexKind k) {
  return k == IndexKind::embedding ? "embedding" : "index_select";
}

struct IndexShape {
  std::int64_t num_embeddings = 1, dim = 1, num_indices = 1;
};

// Shapes are (num_embeddings, dim, num_indices); shorter shapes fill from the left, so a 2-D
// (num_embeddings, dim) gathers num_embeddings rows.
IndexShape index_shape(const Case& c) {
  IndexShape s;
  const auto& v = c.shape;
  if (!v.empty()) s.num_embeddings = v[0];
  if (v.size() > 1) s.dim = v[1];
  s.num_indices = v.size() > 2 ? v[2] : s.num_embeddings;
  return s;
}

// Flattened output element e reads weight element idx[e / dim] * dim + e % dim.
struct RowMap {
  const std::int64_t* idx;
  std::int64_t dim;
  __host__ __device__ std::int64_t operator()(std::int64_t e) const {
    return idx[e / dim] * dim + e % dim;
  }
};

// One group of TPR threads copies one row per step; rows are grid-strided.
template <class T, int V>
__global__ void __launch_bounds__(1024)
    row_gather_kernel(const T* __restrict__ weight, const std::int64_t* __restrict__ idx,
                      T* __restrict__ out, std::int64_t num_indices, std::int64_t dim, int tpr) {
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const std::int64_t groups_per_block = blockDim.x / tpr;
  const std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * groups_per_block +
                             static_cast<std::int64_t>(threadIdx.x) / tpr;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * groups_per_block;
  const std::int64_t nvec = dim / V;
  for (std::int64_t r = group; r < num_indices; r += stride) {
    const T* src = weight + idx[r] * dim;
    T* dst = out + r * dim;
    for (std::int64_t j = lane; j < nvec; j += tpr)
      store_vec<T, V>(dst + j * V, load_vec<T, V>(src + j * V));
  }
}

constexpr std::int64_t kFullCheckLimit = std::int64_t{1} << 24;
constexpr std::int64_t kSampleRows = 4096;

template <class T, IndexKind K>
class IndexWorkload final : public Workload {
 public:
  IndexWorkload(DeviceContext& ctx, const Case& c) : ctx_(ctx), s_(index_shape(c)) {
    total_ = s_.num_indices * s_.dim;
    weight_ = Buffer(ctx, static_cast<std::size_t>(s_.num_embeddings * s_.dim) * sizeof(T));
    idx_ = Buffer(ctx, static_cast<std::size_t>(s_.num_indices) * sizeof(std::int64_t));
    out_ = Buffer(ctx, static_cast<std::size_t>(total_) * sizeof(T));
    const std::uint64_t seed = ctx.seed();
    ctx.fill_uniform(weight_.get(), dtype_of<T>(),
                     static_cast<std::size_t>(s_.num_embeddings * s_.dim), -1.0, 1.0, seed);
    ctx.fill_uniform(idx_.get(), DType::i64, static_cast<std::size_t>(s_.num_indices), 0.0,
                     static_cast<double>(s_.num_embeddings), seed + 1);
    ctx.synchronize();
    // The widest access that divides a row and keeps every row start aligned.
    vec_ = 1;
    for (int v = max_vec<T>(); v > 1; v /= 2) {
      if (s_.dim % v == 0 && aligned_to(weight_.get(), sizeof(T) * v) &&
          aligned_to(out_.get(), sizeof(T) * v)) {
        vec_ = v;
        break;
      }
    }
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "thrust";
    base.role = Role::baseline;
    base.label = "thrust::gather with a row-index map, par_nosync on the case stream";
    ProviderInfo cand;
    cand.name = "rowcopy";
    cand.role = Role::candidate;
    cand.label = "own row gather, one thread group per row, 16-byte accesses";
    for (std::int64_t block : {128, 256, 512}) {
      for (std::int64_t tpr : {8, 32, 128}) {
        if (tpr > block) continue;
        cand.space.configs.push_back(Config{{{"block", block}, {"tpr", tpr}}});
      }
    }
    cand.space.default_config = Config{{{"block", 256}, {"tpr", 32}}};
    cand.space.key = {KeyArg{"I", s_.num_indices, KeyStrategy::log2},
                      KeyArg{"D", s_.dim, KeyStrategy::log2}};
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) return;
    if (p != 1) throw std::out_of_range(std::string(index_name(K)) + ": provider index");
    block_ = static_cast<int>(c.get("block", 256));
    tpr_ = static_cast<int>(c.get("tpr", 32));
    if (tpr_ <= 0 || block_ <= 0 || block_ % tpr_ != 0 || tpr_ % 8 != 0) {
      throw ConfigRejected(std::string(index_name(K)) + ": tpr must divide block (multiple of 8)");
    }
    require_launchable(kernel_for(vec_), block_, 0, "row_gather_kernel");
    const std::int64_t rows_per_block = block_ / tpr_;
    grid_ = grid_for(s_.num_indices, rows_per_block, ctx_.props(), 4, 2048 / block_);
  }

  void launch(std::size_t p) override {
    const cudaStream_t s = stream_of(ctx_);
    if (p == 0) {
      try {
        const auto map = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                         RowMap{idx_.as<std::int64_t>(), s_.dim});
        thrust::gather(thrust::cuda::par_nosync.on(s), map, map + total_, weight_.as<T>(),
                       out_.as<T>());
      } catch (const thrust::system_error& e) {
        throw NativeError(e.code().value(), "thrust::gather", e.what());
      }
      CALIBER_LAUNCH_CHECK("thrust::gather");
      return;
    }
    kernel_for(vec_)<<<grid_, block_, 0, s>>>(weight_.as<T>(), idx_.as<std::int64_t>(),
                                              out_.as<T>(), s_.num_indices, s_.dim, tpr_);
    CALIBER_LAUNCH_CHECK("row_gather_kernel");
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    const cudaStream_t s = stream_of(ctx_);
    check::poison(ctx_, out_.get(), static_cast<std::size_t>(total_) * sizeof(T));
    launch(p);
    sync(s);
    const auto idx = check::download_raw<std::int64_t>(ctx_, idx_.get(),
                                                       static_cast<std::size_t>(s_.num_indices));
    for (std::size_t r = 0; r < idx.size(); ++r) {
      if (idx[r] < 0 || idx[r] >= s_.num_embeddings) {
        Accuracy bad;
        bad.detail = "index " + std::to_string(idx[r]) + " at " + std::to_string(r) +
                     " outside [0, num_embeddings): the input generator is wrong";
        return bad;
      }
    }
    std::vector<std::int64_t> rows;
    std::uint64_t unwritten = 0;
    std::string what = std::string(index_name(K)) + ": ";
    if (total_ <= kFullCheckLimit) {
      rows = check::sample_indices(s_.num_indices, s_.num_indices, 0);
      what += "all " + std::to_string(s_.num_indices) + " rows, exact copy";
    } else {
      rows = check::sample_indices(s_.num_indices, kSampleRows, 0x1DE0u + s_.num_indices);
      unwritten = count_nonfinite(ctx_, out_.as<T>(), total_);
      what += std::to_string(rows.size()) + " sampled of " + std::to_string(s_.num_indices) +
              " rows, exact copy; all elements checked for NaN on device";
    }
    // One gather kernel per tensor brings the chosen rows back (not one copy per row).
    std::vector<std::int64_t> out_off(rows.size()), src_off(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out_off[i] = rows[i] * s_.dim;
      src_off[i] = idx[static_cast<std::size_t>(rows[i])] * s_.dim;
    }
    const auto out = gather_vectors_to_host(ctx_, out_.as<T>(), out_off, 1, s_.dim);
    const auto expect = gather_vectors_to_host(ctx_, weight_.as<T>(), src_off, 1, s_.dim);
    // A gather is a copy: the gate is bit-exact.
    Accuracy acc = check::compare(out, expect, check::Tolerance{0, 0, 0}, what);
    if (unwritten > 0) {
      acc.passed = false;
      acc.detail += "; " + std::to_string(unwritten) + " unwritten/NaN elements on device";
    }
    return acc;
  }

  [[nodiscard]] double bytes() const override {
    // The gathered rows read once, the output written once, the indices read once.
    return static_cast<double>(total_) * sizeof(T) * 2.0 +
           static_cast<double>(s_.num_indices) * sizeof(std::int64_t);
  }

 private:
  using KernelFn = void (*)(const T*, const std::int64_t*, T*, std::int64_t, std::int64_t, int);
  static KernelFn kernel_for(int vec) {
    if constexpr (sizeof(T) <= 2) {
      if (vec == 8) return row_gather_kernel<T, 8>;
    }
    switch (vec) {
      case 4:
        return row_gather_kernel<T, 4>;
      case 2:
        return row_gather_kernel<T, 2>;
      default:
        return row_gather_kernel<T, 1>;
    }
  }

  DeviceContext& ctx_;
  IndexShape s_;
  std::int64_t total_ = 0;
  Buffer weight_, idx_, out_;
  int vec_ = 1, block_ = 256, tpr_ = 32;
  unsigned grid_ = 1;
};

template <IndexKind K>
class IndexOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = index_name(K);
    i.family = "index";
    i.dtypes = {DType::f32, DType::f16, DType::bf16};
    i.description = K == IndexKind::embedding
                        ? "embedding lookup: out[i] = weight[indices[i]]"
                        : "index_select along dim 0 of a [num_embeddings, dim] tensor";
    return i;
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const IndexShape s = index_shape(c);
    return bytes_of(count_mul(count_add(s.num_embeddings, s.num_indices), s.dim), c.dtype) +
           bytes_of(s.num_indices, DType::i64);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    return dispatch_float(c.dtype, [&](auto t) -> std::unique_ptr<Workload> {
      return std::make_unique<IndexWorkload<decltype(t), K>>(ctx, c);
    });
  }
};

using EmbeddingOp = IndexOp<IndexKind::embedding>;
using IndexSelectOp = IndexOp<IndexKind::index_select>;

}  // namespace
}  // namespace caliber::ops::cuda

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::EmbeddingOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::IndexSelectOp);
