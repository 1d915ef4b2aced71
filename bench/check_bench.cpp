// Where a correctness check's host time goes (docs/writing-ops.md, "The gate's cost"): the
// host half of a download (raw f32 to double), the float64 reference of an elementwise op, and
// check::compare, at 2^20 and 2^24 elements, on one thread and on the host's threads. No device:
// the device-to-host copy itself is not here.
//
//   caliber_check_bench [reps]     the median of `reps` repetitions (default 5) per figure
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "caliber/check.hpp"
#include "caliber/reference.hpp"

namespace {

using caliber::DType;
namespace check = caliber::check;
namespace ref = caliber::ref;

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  unsetenv(check::kCheckThreadsEnv);
  const unsigned many = check::default_threads();
  std::printf("host threads: %u (hardware_concurrency %u); median of %d\n", many,
              std::thread::hardware_concurrency(), reps);
  std::printf("%10s %7s  %9s %9s %9s %9s %9s %9s\n", "elements", "threads", "zero-fill", "convert",
              "ref add", "ref gelu", "ref exp", "compare");
  for (const std::size_t n : {std::size_t{1} << 20, std::size_t{1} << 24}) {
    // Inputs as a check sees them: raw f32 from the device, converted to double.
    std::vector<float> raw(n);
    for (std::size_t i = 0; i < n; ++i)
      raw[i] = static_cast<float>(-4.0 + 8.0 * static_cast<double>((i * 2654435761u) % n) /
                                             static_cast<double>(n));
    for (const unsigned threads : {1u, many}) {
      if (threads == many && many == 1) continue;
      setenv(check::kCheckThreadsEnv, std::to_string(threads).c_str(), 1);
      std::vector<double> a, r, out;
      const double t_zero = median_ms(reps, [&] { a = std::vector<double>(n); });
      const double t_conv =
          median_ms(reps, [&] { a = check::to_double(raw.data(), DType::f32, n); });
      const double t_add =
          median_ms(reps, [&] { r = ref::zip(a, a, [](double x, double y) { return x + y; }); });
      const double t_exp =
          median_ms(reps, [&] { r = ref::map(a, [](double x) { return std::exp(x); }); });
      const double t_gelu = median_ms(reps, [&] { r = ref::map(a, ref::gelu_erf); });
      // A correctly rounded f32 output of gelu, and one planted error at the end.
      out = ref::map(r, [](double v) { return check::round_to(v, DType::f32); });
      out[n - 1] += 1.0;
      caliber::Accuracy acc;
      const double t_cmp = median_ms(reps, [&] {
        acc = check::compare(out, r, check::pointwise_tolerance(DType::f32), "gelu");
      });
      if (acc.passed) {
        std::fprintf(stderr, "compare passed a planted error: %s\n", acc.detail.c_str());
        return 1;
      }
      std::printf("%10zu %7u  %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", n, threads, t_zero, t_conv,
                  t_add, t_gelu, t_exp, t_cmp);
    }
  }
  unsetenv(check::kCheckThreadsEnv);
  return 0;
}
