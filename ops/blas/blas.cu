// BLAS ops: mm (C = A B), addmm (C = beta*bias + alpha*A B, bias broadcast over rows), bmm.
// All tensors are row-major: A [Bt,M,K], B [Bt,K,N] (or column-major B [Bt,N,K] storage with the
// case parameter B=col), C [Bt,M,N], bias [N].
//
// Baseline "cublas": cublasGemmEx / cublasGemmStridedBatchedEx. Candidate "lt-tuned":
// cublasLtMatmul with the algorithm chosen by caliber's tuner among the heuristic's candidates
// ({"algo": i} is the i-th result of cublasLtMatmulAlgoGetHeuristic for this problem), as PyTorch's
// TunableOp does.
//
// Math mode: both providers compute with CUBLAS_COMPUTE_32F and fp32 scales. For fp32 inputs that
// is full fp32 (no TF32) in both, so the comparison is between algorithms, not precisions; for
// fp16/bf16 inputs both use tensor cores with fp32 accumulation. The candidate's heuristic
// excludes split-K reductions in the output type, so it keeps the same accumulation precision.
//
// Row-major through column-major libraries: C = A B  <=>  C^T = B^T A^T, and a row-major matrix
// read as column-major is its transpose. So every call computes the column-major N x M product of
// (our B) times (our A).
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "caliber/caliber.hpp"
#include "caliber/reference.hpp"
#include "common/check_kernels.cuh"
#include "common/cuda_common.cuh"

#define CALIBER_CUBLAS_CHECK(expr)                                                       \
  do {                                                                                   \
    const cublasStatus_t caliber_st_ = (expr);                                           \
    if (caliber_st_ != CUBLAS_STATUS_SUCCESS) {                                          \
      ::caliber::ops::cuda::check_status(static_cast<int>(caliber_st_),                  \
                                         static_cast<int>(CUBLAS_STATUS_SUCCESS), #expr, \
                                         cublasGetStatusString(caliber_st_));            \
    }                                                                                    \
  } while (0)

namespace caliber::ops::cuda {
namespace {

enum class BlasKind { mm, addmm, bmm };

const char* blas_name(BlasKind k) {
  switch (k) {
    case BlasKind::mm:
      return "mm";
    case BlasKind::addmm:
      return "addmm";
    case BlasKind::bmm:
      return "bmm";
  }
  return "?";
}

struct GemmShape {
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
  bool b_col = false;
};

GemmShape gemm_shape(BlasKind kind, const Case& c) {
  GemmShape g;
  const auto& s = c.shape;
  if (s.size() >= 4) {
    // (B, M, N, K): mm and addmm use one matrix of the batch.
    g.batch = kind == BlasKind::bmm ? s[s.size() - 4] : 1;
  }
  if (s.size() >= 3) {
    g.m = s[s.size() - 3];
    g.n = s[s.size() - 2];
    g.k = s[s.size() - 1];
  } else {
    throw CaseSkipped(std::string(blas_name(kind)) + ": shape needs (M, N, K) or (B, M, N, K)");
  }
  g.b_col = c.param("B") == "col";
  return g;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
constexpr int kHeuristicRequest = 16;

// Bias broadcast for the cuBLAS baseline of addmm: C[b,i,:] = bias, then the GEMM runs with
// beta = 1 (cuBLAS has no bias epilogue; this is what torch does for addmm on cuBLAS).
template <class T>
__global__ void broadcast_rows_kernel(const T* __restrict__ bias, T* __restrict__ c,
                                      std::int64_t rows, std::int64_t n) {
  const std::int64_t total = rows * n;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    c[e] = bias[e % n];
  }
}

// RAII holders for the library handles and descriptors.
struct CublasHandle {
  cublasHandle_t h = nullptr;
  CublasHandle() { CALIBER_CUBLAS_CHECK(cublasCreate(&h)); }
  ~CublasHandle() {
    if (h != nullptr) cublasDestroy(h);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
};
struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { CALIBER_CUBLAS_CHECK(cublasLtCreate(&h)); }
  ~LtHandle() {
    if (h != nullptr) cublasLtDestroy(h);
  }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
};
struct LtLayout {
  cublasLtMatrixLayout_t d = nullptr;
  LtLayout(cudaDataType_t t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
           std::int64_t batch, std::int64_t batch_stride) {
    CALIBER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d, t, static_cast<std::uint64_t>(rows),
                                                    static_cast<std::uint64_t>(cols), ld));
    if (batch > 1) {
      const auto count = static_cast<std::int32_t>(batch);
      CALIBER_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                            &count, sizeof count));
      CALIBER_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof batch_stride));
    }
  }
  ~LtLayout() {
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
  }
  LtLayout(const LtLayout&) = delete;
  LtLayout& operator=(const LtLayout&) = delete;
};
struct LtMatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  LtMatmulDesc() {
    CALIBER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  }
  ~LtMatmulDesc() {
    if (d != nullptr) cublasLtMatmulDescDestroy(d);
  }
  LtMatmulDesc(const LtMatmulDesc&) = delete;
  LtMatmulDesc& operator=(const LtMatmulDesc&) = delete;
};
struct LtPreference {
  cublasLtMatmulPreference_t d = nullptr;
  LtPreference() { CALIBER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d)); }
  ~LtPreference() {
    if (d != nullptr) cublasLtMatmulPreferenceDestroy(d);
  }
  LtPreference(const LtPreference&) = delete;
  LtPreference& operator=(const LtPreference&) = delete;
};

template <class T, BlasKind K>
class GemmWorkload final : public Workload {
 public:
  GemmWorkload(DeviceContext& ctx, const Case& c) : ctx_(ctx), g_(gemm_shape(K, c)) {
    const std::size_t es = sizeof(T);
    a_ = Buffer(ctx, static_cast<std::size_t>(g_.batch * g_.m * g_.k) * es);
    b_ = Buffer(ctx, static_cast<std::size_t>(g_.batch * g_.k * g_.n) * es);
    c_ = Buffer(ctx, static_cast<std::size_t>(g_.batch * g_.m * g_.n) * es);
    const std::uint64_t seed = ctx.seed();
    ctx.fill_uniform(a_.get(), dtype_of<T>(), static_cast<std::size_t>(g_.batch * g_.m * g_.k),
                     -1.0, 1.0, seed);
    ctx.fill_uniform(b_.get(), dtype_of<T>(), static_cast<std::size_t>(g_.batch * g_.k * g_.n),
                     -1.0, 1.0, seed + 1);
    if (K == BlasKind::addmm) {
      bias_ = Buffer(ctx, static_cast<std::size_t>(g_.n) * es);
      ctx.fill_uniform(bias_.get(), dtype_of<T>(), static_cast<std::size_t>(g_.n), -1.0, 1.0,
                       seed + 2);
    }
    ctx.synchronize();

    const cudaDataType_t t = cuda_type(dtype_of<T>());
    // Column-major view: first operand = our B (N x K after op), second = our A (K x M), D = N x M.
    if (g_.b_col) {
      lt_a_ = std::make_unique<LtLayout>(t, g_.k, g_.n, g_.k, g_.batch, g_.k * g_.n);
    } else {
      lt_a_ = std::make_unique<LtLayout>(t, g_.n, g_.k, g_.n, g_.batch, g_.k * g_.n);
    }
    lt_b_ = std::make_unique<LtLayout>(t, g_.k, g_.m, g_.k, g_.batch, g_.m * g_.k);
    lt_c_ = std::make_unique<LtLayout>(t, g_.n, g_.m, g_.n, g_.batch, g_.m * g_.n);
    const cublasOperation_t opa = g_.b_col ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opb = CUBLAS_OP_N;
    CALIBER_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_.d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CALIBER_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_.d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (K == BlasKind::addmm) {
      // The bias epilogue adds bias[row of D] = bias[j] to every column of the N x M result,
      // which is the broadcast over C's rows; beta is then 1 by construction.
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      const void* bias = bias_.get();
      CALIBER_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(desc_.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
      CALIBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          desc_.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
      const cudaDataType_t bt = t;
      CALIBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          desc_.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    const std::uint64_t ws = kWorkspaceBytes;
    CALIBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref_.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    const std::uint32_t reductions =
        CUBLASLT_REDUCTION_SCHEME_MASK &
        ~static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
    CALIBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref_.d, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions, sizeof reductions));
    heuristic_count_ = static_cast<int>(heuristic().size());

    CALIBER_CUBLAS_CHECK(cublasSetStream(blas_.h, stream_of(ctx)));
    CALIBER_CUBLAS_CHECK(cublasSetMathMode(blas_.h, CUBLAS_DEFAULT_MATH));
  }

  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    ProviderInfo base;
    base.name = "cublas";
    base.role = Role::baseline;
    base.label = K == BlasKind::bmm ? "cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F"
                 : K == BlasKind::addmm
                     ? "bias broadcast into C, then cublasGemmEx with beta=1, CUBLAS_COMPUTE_32F"
                     : "cublasGemmEx, CUBLAS_COMPUTE_32F";
    ProviderInfo cand;
    cand.name = "lt-tuned";
    cand.role = Role::candidate;
    // The algo index means "the i-th heuristic result": it only replays under the same library.
    cand.version = "1.cublasLt" + std::to_string(cublasLtGetVersion());
    cand.label = std::string("cublasLtMatmul, algorithm tuned among ") +
                 std::to_string(heuristic_count_) + " heuristic candidates" +
                 (K == BlasKind::addmm ? ", bias epilogue" : "");
    for (int i = 0; i < heuristic_count_; ++i) cand.space.configs.push_back(Config{{{"algo", i}}});
    cand.space.default_config = Config{{{"algo", 0}}};
    // Exact keys: a config is an index into the heuristic's list for THIS problem, and algorithm i
    // of one shape is not algorithm i of another. With log2 buckets, shapes sharing a bucket reused
    // an index that named another algorithm, and 11 of 174 comprehensive bf16 rows ran up to 25%
    // slower than cuBLAS (H200, 2026-11-29).
    cand.space.key = {KeyArg{"M", g_.m, KeyStrategy::exact}, KeyArg{"N", g_.n, KeyStrategy::exact},
                      KeyArg{"K", g_.k, KeyStrategy::exact}};
    if (K == BlasKind::bmm) cand.space.key.push_back(KeyArg{"B", g_.batch, KeyStrategy::exact});
    cand.space.key.push_back(KeyArg{"Bcol", g_.b_col ? 1 : 0, KeyStrategy::exact});
    return {base, cand};
  }

  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) {
      // Stream first: cublasSetStream resets the workspace to the library's own pool, which
      // allocates on first use and so could not run inside a graph capture.
      CALIBER_CUBLAS_CHECK(cublasSetStream(blas_.h, stream_of(ctx_)));
      if (blas_ws_.get() == nullptr) blas_ws_ = Buffer(ctx_, kWorkspaceBytes);
      CALIBER_CUBLAS_CHECK(cublasSetWorkspace(blas_.h, blas_ws_.get(), kWorkspaceBytes));
      return;
    }
    if (p != 1) throw std::out_of_range(std::string(blas_name(K)) + ": provider index");
    const std::int64_t i = c.get("algo", 0);
    // Deterministic for one problem and library: re-query and take the i-th result.
    const auto results = heuristic();
    if (i < 0 || i >= static_cast<std::int64_t>(results.size())) {
      throw ConfigRejected(std::string(blas_name(K)) + ": algo " + std::to_string(i) +
                           " outside the heuristic's " + std::to_string(results.size()) +
                           " candidates");
    }
    algo_ = results[static_cast<std::size_t>(i)].algo;
    cublasLtMatmulHeuristicResult_t checked{};
    const cublasStatus_t st = cublasLtMatmulAlgoCheck(lt_.h, desc_.d, lt_a_->d, lt_b_->d, lt_c_->d,
                                                      lt_c_->d, &algo_, &checked);
    if (st != CUBLAS_STATUS_SUCCESS || checked.state != CUBLAS_STATUS_SUCCESS) {
      throw ConfigRejected(std::string(blas_name(K)) + ": algo " + std::to_string(i) +
                           " fails cublasLtMatmulAlgoCheck: " +
                           cublasGetStatusString(st != CUBLAS_STATUS_SUCCESS ? st : checked.state));
    }
    lt_ws_bytes_ =
        std::max(results[static_cast<std::size_t>(i)].workspaceSize, checked.workspaceSize);
    if (lt_ws_bytes_ > lt_ws_.bytes() || lt_ws_.get() == nullptr) {
      lt_ws_ = Buffer(ctx_, std::max<std::size_t>(lt_ws_bytes_, 256));
    }
    lt_ready_ = true;
  }

  void launch(std::size_t p) override {
    const cudaStream_t s = stream_of(ctx_);
    const cudaDataType_t t = cuda_type(dtype_of<T>());
    const float alpha = 1.0f;
    const auto n = static_cast<int>(g_.n), m = static_cast<int>(g_.m), k = static_cast<int>(g_.k);
    const cublasOperation_t opa = g_.b_col ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = g_.b_col ? k : n;
    if (p == 0) {
      float beta = 0.0f;
      if constexpr (K == BlasKind::addmm) {
        beta = 1.0f;
        const unsigned grid = grid_for(g_.m * g_.n, 256, ctx_.props(), 2);
        broadcast_rows_kernel<T><<<grid, 256, 0, s>>>(bias_.as<T>(), c_.as<T>(), g_.m, g_.n);
        CALIBER_LAUNCH_CHECK("broadcast_rows_kernel");
      }
      if constexpr (K == BlasKind::bmm) {
        CALIBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            blas_.h, opa, CUBLAS_OP_N, n, m, k, &alpha, b_.get(), t, lda, g_.k * g_.n, a_.get(), t,
            k, g_.m * g_.k, &beta, c_.get(), t, n, g_.m * g_.n, static_cast<int>(g_.batch),
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      } else {
        CALIBER_CUBLAS_CHECK(cublasGemmEx(blas_.h, opa, CUBLAS_OP_N, n, m, k, &alpha, b_.get(), t,
                                          lda, a_.get(), t, k, &beta, c_.get(), t, n,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
      return;
    }
    if (!lt_ready_) throw std::logic_error(std::string(blas_name(K)) + ": launch before prepare");
    const float beta = 0.0f;  // addmm's bias comes through the epilogue
    CALIBER_CUBLAS_CHECK(cublasLtMatmul(lt_.h, desc_.d, &alpha, b_.get(), lt_a_->d, a_.get(),
                                        lt_b_->d, &beta, c_.get(), lt_c_->d, c_.get(), lt_c_->d,
                                        &algo_, lt_ws_.get(), lt_ws_bytes_, s));
  }

  [[nodiscard]] Accuracy check(std::size_t p) override {
    const cudaStream_t s = stream_of(ctx_);
    const std::int64_t c_elems = g_.batch * g_.m * g_.n;
    check::poison(ctx_, c_.get(), static_cast<std::size_t>(c_elems) * sizeof(T));
    launch(p);
    sync(s);
    const std::uint64_t unwritten = count_nonfinite(ctx_, c_.as<T>(), c_elems);

    // Sample: a few batches, and in each a grid of rows x columns (edges always included), so
    // that only those rows of A and columns of B travel to the host even at K = 151936.
    const std::uint64_t seed = 0xB1A5u + static_cast<std::uint64_t>(g_.m * 131 + g_.n * 7 + g_.k);
    const auto batches = check::sample_indices(g_.batch, K == BlasKind::bmm ? 4 : 1, seed);
    const std::int64_t per = batches.size() > 1 ? 8 : 16;
    const auto rows = check::sample_indices(g_.m, per, seed + 1);
    const auto cols = check::sample_indices(g_.n, per, seed + 2);
    std::vector<double> bias;
    if (K == BlasKind::addmm) {
      std::vector<std::int64_t> off(cols.begin(), cols.end());
      bias = gather_to_host(ctx_, bias_.as<T>(), off);
    }
    std::vector<ref::GemmSample> samples;
    std::vector<std::int64_t> c_idx;
    for (const std::int64_t b : batches) {
      std::vector<std::int64_t> a_off, b_off;
      for (const std::int64_t i : rows) a_off.push_back(b * g_.m * g_.k + i * g_.k);
      for (const std::int64_t j : cols) {
        b_off.push_back(b * g_.k * g_.n + (g_.b_col ? j * g_.k : j));
      }
      const auto a_rows = gather_vectors_to_host(ctx_, a_.as<T>(), a_off, 1, g_.k);
      const auto b_cols =
          gather_vectors_to_host(ctx_, b_.as<T>(), b_off, g_.b_col ? 1 : g_.n, g_.k);
      for (std::size_t ri = 0; ri < rows.size(); ++ri) {
        for (std::size_t ci = 0; ci < cols.size(); ++ci) {
          // a_rows is rows x K row-major, b_cols is cols x K: the column-major form of B.
          auto smp = ref::gemm_element(a_rows, b_cols, static_cast<std::int64_t>(cols.size()), g_.k,
                                       true, static_cast<std::int64_t>(ri),
                                       static_cast<std::int64_t>(ci), 1.0, 1.0, bias);
          smp.i = rows[ri];
          smp.j = cols[ci];
          samples.push_back(smp);
          c_idx.push_back(b * g_.m * g_.n + rows[ri] * g_.n + cols[ci]);
        }
      }
    }
    const auto out = gather_to_host(ctx_, c_.as<T>(), c_idx);
    Accuracy acc =
        ref::compare_gemm(out, samples, check::gemm_tolerance(dtype_of<T>(), g_.k),
                          std::string(blas_name(K)) + (g_.b_col ? " (B col-major)" : ""));
    acc.detail += "; all " + std::to_string(c_elems) + " outputs checked for NaN on device";
    if (unwritten > 0) {
      acc.passed = false;
      acc.detail += ": " + std::to_string(unwritten) + " unwritten/NaN";
    }
    return acc;
  }

  [[nodiscard]] double flops() const override {
    const double mnk =
        static_cast<double>(g_.m) * static_cast<double>(g_.n) * static_cast<double>(g_.k);
    if (K == BlasKind::addmm) {
      return static_cast<double>(g_.m) * static_cast<double>(g_.n) *
             (2.0 * static_cast<double>(g_.k) + 1.0);
    }
    return 2.0 * mnk * static_cast<double>(g_.batch);
  }

  [[nodiscard]] double bytes() const override {
    const double es = sizeof(T);
    double e = static_cast<double>(g_.batch) *
               (static_cast<double>(g_.m * g_.k) + static_cast<double>(g_.k * g_.n) +
                static_cast<double>(g_.m * g_.n));
    if (K == BlasKind::addmm) e += static_cast<double>(g_.n);
    return e * es;
  }

 private:
  std::vector<cublasLtMatmulHeuristicResult_t> heuristic() {
    std::array<cublasLtMatmulHeuristicResult_t, kHeuristicRequest> res{};
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt_.h, desc_.d, lt_a_->d, lt_b_->d, lt_c_->d, lt_c_->d,
                                       pref_.d, kHeuristicRequest, res.data(), &found);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) return {};  // no algorithm: the candidate is rejected
    CALIBER_CUBLAS_CHECK(st);
    std::vector<cublasLtMatmulHeuristicResult_t> out;
    for (int i = 0; i < found; ++i) {
      if (res[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS) {
        out.push_back(res[static_cast<std::size_t>(i)]);
      }
    }
    return out;
  }

  DeviceContext& ctx_;
  GemmShape g_;
  Buffer a_, b_, c_, bias_, blas_ws_, lt_ws_;
  CublasHandle blas_;
  LtHandle lt_;
  LtMatmulDesc desc_;
  LtPreference pref_;
  std::unique_ptr<LtLayout> lt_a_, lt_b_, lt_c_;
  int heuristic_count_ = 0;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t lt_ws_bytes_ = 0;
  bool lt_ready_ = false;
};

template <BlasKind K>
class GemmOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    OpInfo i;
    i.name = blas_name(K);
    i.family = "blas";
    i.dtypes = {DType::bf16, DType::f16, DType::f32};
    i.dim_names = K == BlasKind::bmm ? std::vector<std::string>{"B", "M", "N", "K"}
                                     : std::vector<std::string>{"M", "N", "K"};
    i.description = K == BlasKind::mm      ? "C = A B"
                    : K == BlasKind::addmm ? "C = beta*bias + alpha*A B, bias broadcast over rows "
                                             "(alpha = beta = 1)"
                                           : "batched C[b] = A[b] B[b]";
    return i;
  }
  [[nodiscard]] std::vector<std::int64_t> canonical_shape(
      const std::vector<std::int64_t>& s) const override {
    if (K != BlasKind::bmm && s.size() == 4) return {s[1], s[2], s[3]};
    return s;
  }
  [[nodiscard]] std::vector<std::map<std::string, std::string>> variants(
      bool comprehensive) const override {
    if (!comprehensive) return {{}};
    return {{}, {{"B", "col"}}};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const GemmShape g = gemm_shape(K, c);
    const std::int64_t per =
        count_add(count_add(count_mul(g.m, g.k), count_mul(g.k, g.n)), count_mul(g.m, g.n));
    const std::int64_t elems = count_add(count_mul(g.batch, per), K == BlasKind::addmm ? g.n : 0);
    return bytes_of(elems, c.dtype) + 2 * kWorkspaceBytes;
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    const GemmShape g = gemm_shape(K, c);
    if (g.m > 2147483647LL || g.n > 2147483647LL || g.k > 2147483647LL) {
      throw CaseSkipped(std::string(blas_name(K)) + ": a dimension exceeds the 32-bit BLAS API");
    }
    return dispatch_float(c.dtype, [&](auto t) -> std::unique_ptr<Workload> {
      return std::make_unique<GemmWorkload<decltype(t), K>>(ctx, c);
    });
  }
};

using MmOp = GemmOp<BlasKind::mm>;
using AddmmOp = GemmOp<BlasKind::addmm>;
using BmmOp = GemmOp<BlasKind::bmm>;

}  // namespace
}  // namespace caliber::ops::cuda

CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::MmOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::AddmmOp);
CALIBER_REGISTER_OP("cuda", caliber::ops::cuda::BmmOp);
