// sum over the last dimension: (rows, cols) -> (rows). A reduction: its accuracy depends on how
// the additions are ordered, which is what the two providers differ in.
#include "host/host_common.hpp"

namespace caliber::host {
namespace {

template <class T>
T sum_naive(const T* x, std::int64_t n) {
  T acc = 0;
  for (std::int64_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

// Eight accumulators break the add-latency chain (and vectorize); blocks of 1024 keep each partial
// sum short; the block sums are combined with Kahan compensation so the long tail adds no error.
template <class T>
T sum_blocked(const T* __restrict x, std::int64_t n) {
  constexpr std::int64_t kBlock = 1024;
  T total = 0, carry = 0;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t len = n - b < kBlock ? n - b : kBlock;
    T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
      for (int l = 0; l < 8; ++l) acc[l] += x[b + i + l];
    }
    for (; i < len; ++i) acc[0] += x[b + i];
    const T block =
        ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    const T y = block - carry;
    const T t = total + y;
    carry = (t - total) - y;
    total = t;
  }
  return total;
}

template <class T>
class SumWorkload final : public HostWorkload {
 public:
  SumWorkload(DeviceContext& ctx, const Case& c)
      : rc_(rows_cols(c)),
        x_(ctx, static_cast<std::size_t>(rc_.rows * rc_.cols)),
        out_(ctx, static_cast<std::size_t>(rc_.rows)) {
    fill(ctx, x_, -1.0, 1.0, 0);
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"naive", Role::baseline, "1", kHostBaselineLabel, {}},
            {"blocked",
             Role::candidate,
             "1",
             "8 accumulators per 1024-block, Kahan across blocks",
             {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    const T* x = x_.data();
    T* out = out_.data();
    for (std::int64_t r = 0; r < rc_.rows; ++r) {
      out[r] =
          p == 0 ? sum_naive(x + r * rc_.cols, rc_.cols) : sum_blocked(x + r * rc_.cols, rc_.cols);
    }
  }
  [[nodiscard]] double flops() const override { return static_cast<double>(rc_.rows * rc_.cols); }
  [[nodiscard]] double bytes() const override {
    return static_cast<double>((rc_.rows * rc_.cols + rc_.rows) *
                               static_cast<std::int64_t>(sizeof(T)));
  }

  void poison_output() override { poison(out_); }
  [[nodiscard]] Accuracy verify() override {
    if (ref_.empty()) {
      ref_.assign(static_cast<std::size_t>(rc_.rows), 0.0);
      abs_.assign(static_cast<std::size_t>(rc_.rows), 0.0);
      for (std::int64_t r = 0; r < rc_.rows; ++r) {
        for (std::int64_t i = 0; i < rc_.cols; ++i) {
          const double v = static_cast<double>(x_[static_cast<std::size_t>(r * rc_.cols + i)]);
          ref_[static_cast<std::size_t>(r)] += v;
          abs_[static_cast<std::size_t>(r)] += std::fabs(v);
        }
      }
    }
    return compare(out_.data(), ref_, &abs_, reduction_growth(rc_.cols), "sum");
  }
  [[nodiscard]] void* output_data() const override { return out_.data(); }
  [[nodiscard]] std::size_t output_count() const override { return out_.size(); }

 private:
  RowsCols rc_;
  HostTensor<T> x_, out_;
  std::vector<double> ref_, abs_;
};

class SumOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {"sum",
            "reduction",
            {DType::f32, DType::f64},
            {},
            false,
            false,
            "sum over the last dimension on the host"};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    const auto rc = rows_cols(c);
    return bytes_of(count_add(count_mul(rc.rows, rc.cols), rc.rows), c.dtype);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    require_host(ctx, c);
    require_positive(c);
    switch (c.dtype) {
      case DType::f32:
        return std::make_unique<SumWorkload<float>>(ctx, c);
      case DType::f64:
        return std::make_unique<SumWorkload<double>>(ctx, c);
      default:
        throw CaseSkipped("sum: dtype " + std::string(to_string(c.dtype)) +
                          " is not implemented on the host");
    }
  }
};

CALIBER_REGISTER_OP("cpu", SumOp);

}  // namespace
}  // namespace caliber::host
