// softmax over the last dimension: out = exp(x - max) / sum(exp(x - max)), row by row.
#include <algorithm>

#include "host/host_common.hpp"

namespace caliber::host {
namespace {

// The textbook form: one pass for the max, one for the sum of exponentials, one to write.
template <class T>
void softmax_three_pass(const T* x, T* out, std::int64_t n) {
  T m = x[0];
  for (std::int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  T s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (std::int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i] - m) / s;
}

// The online form (Milakov and Gimelshein, 2018): the max and the sum are found in one pass, the
// sum rescaled whenever the max grows; a second pass writes. One read of the row fewer.
template <class T>
void softmax_online(const T* __restrict x, T* __restrict out, std::int64_t n) {
  T m = x[0], s = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (x[i] > m) {
      s = s * std::exp(m - x[i]) + T(1);
      m = x[i];
    } else {
      s += std::exp(x[i] - m);
    }
  }
  const T inv = T(1) / s;
  for (std::int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i] - m) * inv;
}

template <class T>
class SoftmaxWorkload final : public HostWorkload {
 public:
  SoftmaxWorkload(DeviceContext& ctx, const Case& c)
      : rc_(rows_cols(c)),
        x_(ctx, static_cast<std::size_t>(rc_.rows * rc_.cols)),
        out_(ctx, static_cast<std::size_t>(rc_.rows * rc_.cols)) {
    fill(ctx, x_, -4.0, 4.0, 0);
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"three-pass", Role::baseline, "1", kHostBaselineLabel, {}},
            {"online",
             Role::candidate,
             "1",
             "online max and sum in one pass, then one write pass",
             {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    for (std::int64_t r = 0; r < rc_.rows; ++r) {
      const T* x = x_.data() + r * rc_.cols;
      T* out = out_.data() + r * rc_.cols;
      if (p == 0) {
        softmax_three_pass(x, out, rc_.cols);
      } else {
        softmax_online(x, out, rc_.cols);
      }
    }
  }
  // Per element: a compare, a subtract, an exponential, an add and a multiply or divide.
  [[nodiscard]] double flops() const override {
    return 5.0 * static_cast<double>(rc_.rows * rc_.cols);
  }
  [[nodiscard]] double bytes() const override {
    return 2.0 * static_cast<double>(rc_.rows * rc_.cols * static_cast<std::int64_t>(sizeof(T)));
  }

  void poison_output() override { poison(out_); }
  [[nodiscard]] Accuracy verify() override {
    if (ref_.empty()) {
      ref_.resize(out_.size());
      for (std::int64_t r = 0; r < rc_.rows; ++r) {
        const auto base = static_cast<std::size_t>(r * rc_.cols);
        double m = static_cast<double>(x_[base]);
        for (std::int64_t i = 0; i < rc_.cols; ++i) {
          m = std::max(m, static_cast<double>(x_[base + static_cast<std::size_t>(i)]));
        }
        double s = 0;
        for (std::int64_t i = 0; i < rc_.cols; ++i) {
          const auto k = base + static_cast<std::size_t>(i);
          ref_[k] = std::exp(static_cast<double>(x_[k]) - m);
          s += ref_[k];
        }
        for (std::int64_t i = 0; i < rc_.cols; ++i) ref_[base + static_cast<std::size_t>(i)] /= s;
      }
    }
    // Every output carries the rounding of the row's sum, hence the reduction growth.
    return compare(out_.data(), ref_, nullptr, reduction_growth(rc_.cols), "softmax");
  }
  [[nodiscard]] void* output_data() const override { return out_.data(); }
  [[nodiscard]] std::size_t output_count() const override { return out_.size(); }

 private:
  RowsCols rc_;
  HostTensor<T> x_, out_;
  std::vector<double> ref_;
};

class SoftmaxOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {"softmax",
            "norm",
            {DType::f32, DType::f64},
            {},
            false,
            false,
            "softmax over the last dimension on the host"};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return 2 * static_cast<std::size_t>(c.numel()) * size_of(c.dtype);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    require_host(ctx, c);
    require_positive(c);
    switch (c.dtype) {
      case DType::f32:
        return std::make_unique<SoftmaxWorkload<float>>(ctx, c);
      case DType::f64:
        return std::make_unique<SoftmaxWorkload<double>>(ctx, c);
      default:
        throw CaseSkipped("softmax: dtype " + std::string(to_string(c.dtype)) +
                          " is not implemented on the host");
    }
  }
};

CALIBER_REGISTER_OP("cpu", SoftmaxOp);

}  // namespace
}  // namespace caliber::host
