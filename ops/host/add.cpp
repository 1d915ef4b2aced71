// add: out = a + b over any shape. Memory bound: it measures how close a loop gets to the host's
// memory bandwidth.
#include "host/host_common.hpp"

namespace caliber::host {
namespace {

template <class T>
void add_plain(const T* a, const T* b, T* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// No aliasing and eight independent lanes per step: the shape a vectorizer turns into full-width
// SIMD without runtime overlap checks.
template <class T>
void add_unrolled(const T* __restrict a, const T* __restrict b, T* __restrict out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (std::size_t l = 0; l < 8; ++l) out[i + l] = a[i + l] + b[i + l];
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

template <class T>
class AddWorkload final : public HostWorkload {
 public:
  AddWorkload(DeviceContext& ctx, const Case& c)
      : n_(static_cast<std::size_t>(c.numel())), a_(ctx, n_), b_(ctx, n_), out_(ctx, n_) {
    fill(ctx, a_, -1.0, 1.0, 0);
    fill(ctx, b_, -1.0, 1.0, 1);
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {{"loop", Role::baseline, "1", kHostBaselineLabel, {}},
            {"unrolled", Role::candidate, "1", "restrict pointers, 8 lanes per step", {}}};
  }
  void prepare(std::size_t, const Config&) override {}
  void launch(std::size_t p) override {
    if (p == 0) {
      add_plain(a_.data(), b_.data(), out_.data(), n_);
    } else {
      add_unrolled(a_.data(), b_.data(), out_.data(), n_);
    }
  }
  [[nodiscard]] double flops() const override { return static_cast<double>(n_); }
  [[nodiscard]] double bytes() const override { return 3.0 * static_cast<double>(n_ * sizeof(T)); }

  void poison_output() override { poison(out_); }
  [[nodiscard]] Accuracy verify() override {
    if (ref_.empty()) {
      ref_.resize(n_);
      for (std::size_t i = 0; i < n_; ++i) {
        ref_[i] = static_cast<double>(a_[i]) + static_cast<double>(b_[i]);
      }
    }
    return compare(out_.data(), ref_, nullptr, 1.0, "add");
  }
  [[nodiscard]] void* output_data() const override { return out_.data(); }
  [[nodiscard]] std::size_t output_count() const override { return n_; }

 private:
  std::size_t n_;
  HostTensor<T> a_, b_, out_;
  std::vector<double> ref_;
};

class AddOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {"add", "pointwise", {DType::f32, DType::f64},       {},
            false, false,       "elementwise a + b on the host"};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return 3 * static_cast<std::size_t>(c.numel()) * size_of(c.dtype);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    require_host(ctx, c);
    require_positive(c);
    switch (c.dtype) {
      case DType::f32:
        return std::make_unique<AddWorkload<float>>(ctx, c);
      case DType::f64:
        return std::make_unique<AddWorkload<double>>(ctx, c);
      default:
        throw CaseSkipped("add: dtype " + std::string(to_string(c.dtype)) +
                          " is not implemented on the host");
    }
  }
};

CALIBER_REGISTER_OP("cpu", AddOp);

}  // namespace
}  // namespace caliber::host
