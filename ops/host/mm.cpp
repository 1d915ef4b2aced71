// mm: C (M x N) = A (M x K) * B (K x N), row-major A and C; B row-major or, with the "B=col"
// variant, column-major. The candidate is tunable: its tile sizes are a config space swept by the
// autotuner, with a working-set limit that rejects the tiles it cannot hold.
#include <algorithm>

#include "host/host_common.hpp"

namespace caliber::host {
namespace {

// The packing buffers of one tile step must fit this budget (about an L2 slice): a config whose
// A, B and C tiles exceed it is rejected, not run slowly.
constexpr std::int64_t kMaxTileBytes = 512 * 1024;
// Above this many multiply-adds the float64 reference checks a spread of rows, not all of them
// (every element is still checked for having been written).
constexpr double kFullReferenceMacs = 1u << 30;

struct Dims {
  std::int64_t M = 0, N = 0, K = 0;
  bool b_col = false;
};

template <class T>
T b_at(const T* B, const Dims& d, std::int64_t k, std::int64_t j) {
  return d.b_col ? B[j * d.K + k] : B[k * d.N + j];
}

template <class T>
void mm_naive(const T* A, const T* B, T* C, const Dims& d) {
  for (std::int64_t i = 0; i < d.M; ++i) {
    for (std::int64_t j = 0; j < d.N; ++j) {
      T acc = 0;
      for (std::int64_t k = 0; k < d.K; ++k) acc += A[i * d.K + k] * b_at(B, d, k, j);
      C[i * d.N + j] = acc;
    }
  }
}

struct Tiles {
  std::int64_t tm = 64, tn = 256, tk = 64;
};

// Packs a tk x tn panel of B (whatever its layout) and a tm x tk panel of A into contiguous
// buffers, then accumulates rank-1 updates along rows of C: the inner loop is a unit-stride
// multiply-add over the B panel's row, which the compiler vectorizes.
template <class T>
void mm_blocked(const T* A, const T* B, T* __restrict C, const Dims& d, const Tiles& t,
                T* __restrict pa, T* __restrict pb) {
  std::fill(C, C + d.M * d.N, T(0));
  for (std::int64_t j0 = 0; j0 < d.N; j0 += t.tn) {
    const std::int64_t nb = std::min(t.tn, d.N - j0);
    for (std::int64_t k0 = 0; k0 < d.K; k0 += t.tk) {
      const std::int64_t kb = std::min(t.tk, d.K - k0);
      for (std::int64_t kk = 0; kk < kb; ++kk) {
        for (std::int64_t jj = 0; jj < nb; ++jj) pb[kk * nb + jj] = b_at(B, d, k0 + kk, j0 + jj);
      }
      for (std::int64_t i0 = 0; i0 < d.M; i0 += t.tm) {
        const std::int64_t mb = std::min(t.tm, d.M - i0);
        for (std::int64_t i = 0; i < mb; ++i) {
          for (std::int64_t kk = 0; kk < kb; ++kk) pa[i * kb + kk] = A[(i0 + i) * d.K + k0 + kk];
        }
        for (std::int64_t i = 0; i < mb; ++i) {
          T* __restrict c = C + (i0 + i) * d.N + j0;
          for (std::int64_t kk = 0; kk < kb; ++kk) {
            const T av = pa[i * kb + kk];
            const T* __restrict b = pb + kk * nb;
            for (std::int64_t jj = 0; jj < nb; ++jj) c[jj] += av * b[jj];
          }
        }
      }
    }
  }
}

[[nodiscard]] Config tiles_config(std::int64_t tm, std::int64_t tn, std::int64_t tk) {
  return Config{{{"tm", tm}, {"tn", tn}, {"tk", tk}}};
}

[[nodiscard]] ConfigSpace blocked_space(const Dims& d) {
  ConfigSpace s;
  for (std::int64_t tm : {16, 64}) {
    for (std::int64_t tn : {64, 256}) {
      for (std::int64_t tk : {64, 256}) s.configs.push_back(tiles_config(tm, tn, tk));
    }
  }
  const Tiles def;
  s.default_config = tiles_config(def.tm, def.tn, def.tk);
  s.key = {
      {"M", d.M, KeyStrategy::log2}, {"N", d.N, KeyStrategy::log2}, {"K", d.K, KeyStrategy::log2}};
  return s;
}

template <class T>
class MmWorkload final : public HostWorkload {
 public:
  MmWorkload(DeviceContext& ctx, const Dims& d)
      : d_(d),
        a_(ctx, static_cast<std::size_t>(d.M * d.K)),
        b_(ctx, static_cast<std::size_t>(d.K * d.N)),
        c_(ctx, static_cast<std::size_t>(d.M * d.N)) {
    fill(ctx, a_, -1.0, 1.0, 0);
    fill(ctx, b_, -1.0, 1.0, 1);
    apply(Tiles{});
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"naive", Role::baseline, "1", kHostBaselineLabel, {}},
            {"blocked", Role::candidate, "1", "packed A and B tiles, tunable tm/tn/tk",
             blocked_space(d_)}};
  }
  void prepare(std::size_t p, const Config& c) override {
    if (p == 0) return;
    const Tiles def;
    Tiles t{c.get("tm", def.tm), c.get("tn", def.tn), c.get("tk", def.tk)};
    if (t.tm <= 0 || t.tn <= 0 || t.tk <= 0) {
      throw ConfigRejected("mm blocked: tile sizes must be positive (" + c.str() + ")");
    }
    // Each side alone within the budget first, so the products below cannot overflow (tm=2^62
    // would wrap to a small working set and size the packing buffers to nothing).
    constexpr std::int64_t kMaxSide = kMaxTileBytes / static_cast<std::int64_t>(sizeof(T));
    if (t.tm > kMaxSide || t.tn > kMaxSide || t.tk > kMaxSide) {
      throw ConfigRejected("mm blocked: tiles " + c.str() + " have a side over " +
                           std::to_string(kMaxSide) + " elements of " +
                           std::string(to_string(dtype_of<T>())) + ", past the " +
                           std::to_string(kMaxTileBytes) + "-byte tile budget");
    }
    const std::int64_t set =
        (t.tm * t.tk + t.tk * t.tn + t.tm * t.tn) * static_cast<std::int64_t>(sizeof(T));
    if (set > kMaxTileBytes) {
      throw ConfigRejected("mm blocked: tiles " + c.str() + " need " + std::to_string(set) +
                           " bytes of " + std::string(to_string(dtype_of<T>())) +
                           ", more than the " + std::to_string(kMaxTileBytes) +
                           "-byte tile budget");
    }
    apply(t);
  }
  void launch(std::size_t p) override {
    if (p == 0) {
      mm_naive(a_.data(), b_.data(), c_.data(), d_);
    } else {
      mm_blocked(a_.data(), b_.data(), c_.data(), d_, tiles_, pa_.data(), pb_.data());
    }
  }
  [[nodiscard]] double flops() const override {
    return 2.0 * static_cast<double>(d_.M) * static_cast<double>(d_.N) * static_cast<double>(d_.K);
  }
  [[nodiscard]] double bytes() const override {
    return static_cast<double>((d_.M * d_.K + d_.K * d_.N + d_.M * d_.N) *
                               static_cast<std::int64_t>(sizeof(T)));
  }

  void poison_output() override { poison(c_); }
  [[nodiscard]] Accuracy verify() override {
    const bool full =
        static_cast<double>(d_.M) * static_cast<double>(d_.N) * static_cast<double>(d_.K) <=
        kFullReferenceMacs;
    if (ref_rows_.empty()) {
      // A spread of rows, always with the first and last (edge tiles are where blocking goes
      // wrong).
      const std::int64_t step = full ? 1 : std::max<std::int64_t>(1, d_.M / 61);
      for (std::int64_t i = 0; i < d_.M; i += step) ref_rows_.push_back(i);
      if (ref_rows_.back() != d_.M - 1) ref_rows_.push_back(d_.M - 1);
      ref_.assign(ref_rows_.size() * static_cast<std::size_t>(d_.N), 0.0);
      abs_.assign(ref_.size(), 0.0);
      for (std::size_t r = 0; r < ref_rows_.size(); ++r) {
        const std::int64_t i = ref_rows_[r];
        double* ref = ref_.data() + r * static_cast<std::size_t>(d_.N);
        double* mag = abs_.data() + r * static_cast<std::size_t>(d_.N);
        for (std::int64_t k = 0; k < d_.K; ++k) {
          const double a = static_cast<double>(a_[static_cast<std::size_t>(i * d_.K + k)]);
          for (std::int64_t j = 0; j < d_.N; ++j) {
            const double p = a * static_cast<double>(b_at(b_.data(), d_, k, j));
            ref[j] += p;
            mag[j] += std::fabs(p);
          }
        }
      }
    }
    // Every element must have been written, sampled rows or not.
    for (std::size_t i = 0; i < c_.size(); ++i) {
      if (std::isnan(static_cast<double>(c_[i]))) {
        Accuracy a;
        a.max_abs_err = std::numeric_limits<double>::quiet_NaN();
        a.detail = "mm: element " + std::to_string(i) + " (row " +
                   std::to_string(i / static_cast<std::size_t>(d_.N)) + ") is NaN: not written";
        return a;
      }
    }
    std::vector<T> got(ref_.size());
    for (std::size_t r = 0; r < ref_rows_.size(); ++r) {
      std::copy_n(c_.data() + ref_rows_[r] * d_.N, d_.N,
                  got.data() + r * static_cast<std::size_t>(d_.N));
    }
    auto acc = compare(got.data(), ref_, &abs_, reduction_growth(d_.K), "mm");
    if (!full)
      acc.detail +=
          " (" + std::to_string(ref_rows_.size()) + " of " + std::to_string(d_.M) + " rows)";
    // Every element was checked for NaN; values on the sampled rows.
    return check::covered(acc, full ? check::method::host_full : check::method::host_sampled,
                          static_cast<std::int64_t>(got.size()),
                          static_cast<std::int64_t>(c_.size()));
  }
  [[nodiscard]] void* output_data() const override { return c_.data(); }
  [[nodiscard]] std::size_t output_count() const override { return c_.size(); }

 private:
  void apply(const Tiles& t) {
    tiles_ = t;
    pa_.assign(static_cast<std::size_t>(t.tm * t.tk), T(0));
    pb_.assign(static_cast<std::size_t>(t.tk * t.tn), T(0));
  }

  Dims d_;
  HostTensor<T> a_, b_, c_;
  Tiles tiles_;
  std::vector<T> pa_, pb_;
  std::vector<std::int64_t> ref_rows_;
  std::vector<double> ref_, abs_;
};

class MmOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {"mm",
            "blas",
            {DType::f32, DType::f64},
            {"M", "N", "K"},
            false,
            false,
            "matrix multiply on the host: naive triple loop against packed, tunable tiles"};
  }
  // The shape file's BLAS tuples are (B, M, N, K); mm has no batch.
  [[nodiscard]] std::vector<std::int64_t> canonical_shape(
      const std::vector<std::int64_t>& s) const override {
    if (s.size() == 4) return {s[1], s[2], s[3]};
    return s;
  }
  [[nodiscard]] std::vector<std::map<std::string, std::string>> variants(
      bool comprehensive) const override {
    if (comprehensive) return {{}, {{"B", "col"}}};
    return {{}};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    if (c.shape.size() != 3) return 0;
    const auto M = c.shape[0], N = c.shape[1], K = c.shape[2];
    const auto elems = count_add(count_add(count_mul(M, K), count_mul(K, N)), count_mul(M, N));
    return bytes_of(elems, c.dtype);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    require_host(ctx, c);
    if (c.shape.size() != 3) {
      throw CaseSkipped("mm: shape " + c.size_detail() + " is not (M, N, K)");
    }
    Dims d{c.shape[0], c.shape[1], c.shape[2], c.param("B") == "col"};
    if (d.M <= 0 || d.N <= 0 || d.K <= 0) throw CaseSkipped("mm: empty shape " + c.size_detail());
    switch (c.dtype) {
      case DType::f32:
        return std::make_unique<MmWorkload<float>>(ctx, d);
      case DType::f64:
        return std::make_unique<MmWorkload<double>>(ctx, d);
      default:
        throw CaseSkipped("mm: dtype " + std::string(to_string(c.dtype)) +
                          " is not implemented on the host");
    }
  }
};

CALIBER_REGISTER_OP("cpu", MmOp);

}  // namespace
}  // namespace caliber::host
