// sort: each row of the last dimension sorted ascending. A comparison sort against a radix sort:
// the radix sort's cost does not grow with log(n), which shows on long rows.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "host/host_common.hpp"

namespace caliber::host {
namespace {

// Maps a key to an unsigned integer whose unsigned order is the key's order: flip the sign bit of
// two's-complement integers; for IEEE floats flip every bit of a negative and the sign of a
// positive. (Inputs hold no NaN; fill never produces one.)
template <class T>
struct RadixKey {
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static constexpr U kSign = U(1) << (8 * sizeof(T) - 1);
  static U to(T v) {
    U u;
    std::memcpy(&u, &v, sizeof u);
    if constexpr (std::is_floating_point_v<T>) {
      return (u & kSign) != 0 ? ~u : (u | kSign);
    } else {
      return u ^ kSign;
    }
  }
  static T from(U u) {
    if constexpr (std::is_floating_point_v<T>) {
      u = (u & kSign) != 0 ? (u & ~kSign) : ~u;
    } else {
      u ^= kSign;
    }
    T v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  }
};

// LSD radix sort, one byte per pass, all histograms from one read; a byte on which every key agrees
// needs no pass.
template <class T>
void radix_sort_row(const T* in, T* out, std::int64_t n, std::vector<typename RadixKey<T>::U>& a,
                    std::vector<typename RadixKey<T>::U>& b) {
  using K = RadixKey<T>;
  using U = typename K::U;
  constexpr int kBytes = sizeof(U);
  std::array<std::array<std::uint32_t, 256>, kBytes> hist{};
  for (std::int64_t i = 0; i < n; ++i) {
    const U u = K::to(in[i]);
    a[static_cast<std::size_t>(i)] = u;
    for (int d = 0; d < kBytes; ++d) ++hist[d][(u >> (8 * d)) & 0xFF];
  }
  U* src = a.data();
  U* dst = b.data();
  for (int d = 0; d < kBytes; ++d) {
    auto& h = hist[d];
    if (h[(src[0] >> (8 * d)) & 0xFF] == static_cast<std::uint32_t>(n)) continue;
    std::uint32_t sum = 0;
    for (auto& c : h) {
      const std::uint32_t count = c;
      c = sum;
      sum += count;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const U u = src[i];
      dst[h[(u >> (8 * d)) & 0xFF]++] = u;
    }
    std::swap(src, dst);
  }
  for (std::int64_t i = 0; i < n; ++i) out[i] = K::from(src[i]);
}

template <class T>
class SortWorkload final : public HostWorkload {
 public:
  SortWorkload(DeviceContext& ctx, const Case& c)
      : rc_(rows_cols(c)),
        x_(ctx, static_cast<std::size_t>(rc_.rows * rc_.cols)),
        out_(ctx, static_cast<std::size_t>(rc_.rows * rc_.cols)) {
    if constexpr (std::is_floating_point_v<T>) {
      fill(ctx, x_, -1000.0, 1000.0, 0);
    } else if constexpr (sizeof(T) == 4) {
      fill(ctx, x_, -1.0e9, 1.0e9, 0);
    } else {
      fill(ctx, x_, -1.0e15, 1.0e15, 0);
    }
  }
  [[nodiscard]] std::vector<ProviderInfo> providers() const override {
    return {
        {"std-sort", Role::baseline, "1", "std::sort per row; the host has no vendor library", {}},
        {"radix",
         Role::candidate,
         "1",
         "LSD radix sort, 8 bits per pass, skipping uniform bytes",
         {}}};
  }
  void prepare(std::size_t p, const Config&) override {
    if (p == 1) {
      a_.resize(static_cast<std::size_t>(rc_.cols));
      b_.resize(static_cast<std::size_t>(rc_.cols));
    }
  }
  void launch(std::size_t p) override {
    if (p == 1 && a_.size() != static_cast<std::size_t>(rc_.cols)) prepare(1, {});
    for (std::int64_t r = 0; r < rc_.rows; ++r) {
      const T* in = x_.data() + r * rc_.cols;
      T* out = out_.data() + r * rc_.cols;
      if (p == 0) {
        std::copy_n(in, rc_.cols, out);
        std::sort(out, out + rc_.cols);
      } else {
        radix_sort_row(in, out, rc_.cols, a_, b_);
      }
    }
  }
  [[nodiscard]] double bytes() const override {
    return 2.0 * static_cast<double>(rc_.rows * rc_.cols * static_cast<std::int64_t>(sizeof(T)));
  }

  void poison_output() override { poison(out_); }
  // Sorting only permutes: the result must equal the reference exactly, floats included.
  [[nodiscard]] Accuracy verify() override {
    if (ref_.empty()) {
      ref_.resize(out_.size());
      std::vector<T> row(static_cast<std::size_t>(rc_.cols));
      for (std::int64_t r = 0; r < rc_.rows; ++r) {
        std::copy_n(x_.data() + r * rc_.cols, rc_.cols, row.begin());
        std::stable_sort(row.begin(), row.end());
        for (std::int64_t i = 0; i < rc_.cols; ++i) {
          ref_[static_cast<std::size_t>(r * rc_.cols + i)] =
              static_cast<double>(row[static_cast<std::size_t>(i)]);
        }
      }
    }
    Accuracy a;
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < ref_.size(); ++i) {
      const double o = static_cast<double>(out_[i]);
      if (!(o == ref_[i])) {
        if (bad++ == 0) first = i;
        if (std::isnan(o) || std::fabs(o - ref_[i]) > a.max_abs_err)
          a.max_abs_err = std::fabs(o - ref_[i]);
      }
    }
    a.passed = bad == 0;
    a.rel_err = bad == 0 ? 0.0 : static_cast<double>(bad) / static_cast<double>(ref_.size());
    if (a.passed) {
      a.detail = "sort: " + std::to_string(ref_.size()) + " elements equal to the sorted reference";
    } else {
      a.detail = "sort: " + std::to_string(bad) + " of " + std::to_string(ref_.size()) +
                 " elements out of place; first at " + std::to_string(first) + ": got " +
                 std::to_string(static_cast<double>(out_[first])) + ", reference " +
                 std::to_string(ref_[first]);
      if (out_[first] != out_[first] || out_[first] == check::poison_value<T>())
        a.detail += " (not written)";
    }
    return a;
  }
  [[nodiscard]] void* output_data() const override { return out_.data(); }
  [[nodiscard]] std::size_t output_count() const override { return out_.size(); }

 private:
  RowsCols rc_;
  HostTensor<T> x_, out_;
  std::vector<typename RadixKey<T>::U> a_, b_;
  std::vector<double> ref_;
};

class SortOp final : public Op {
 public:
  [[nodiscard]] OpInfo info() const override {
    return {"sort",
            "sort",
            {DType::f32, DType::f64, DType::i32, DType::i64},
            {},
            false,
            false,
            "ascending sort of each row of the last dimension on the host"};
  }
  [[nodiscard]] std::size_t bytes_needed(const Case& c) const override {
    return 2 * static_cast<std::size_t>(c.numel()) * size_of(c.dtype);
  }
  [[nodiscard]] std::unique_ptr<Workload> setup(DeviceContext& ctx, const Case& c) const override {
    require_host(ctx, c);
    require_positive(c);
    if (rows_cols(c).cols > std::int64_t{0xFFFFFFFF}) {
      throw CaseSkipped("sort: rows longer than 2^32 - 1 elements are not supported on the host");
    }
    switch (c.dtype) {
      case DType::f32:
        return std::make_unique<SortWorkload<float>>(ctx, c);
      case DType::f64:
        return std::make_unique<SortWorkload<double>>(ctx, c);
      case DType::i32:
        return std::make_unique<SortWorkload<std::int32_t>>(ctx, c);
      case DType::i64:
        return std::make_unique<SortWorkload<std::int64_t>>(ctx, c);
      default:
        throw CaseSkipped("sort: dtype " + std::string(to_string(c.dtype)) +
                          " is not implemented on the host");
    }
  }
};

CALIBER_REGISTER_OP("cpu", SortOp);

}  // namespace
}  // namespace caliber::host
