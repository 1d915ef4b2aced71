// The stopping rule and its noise estimate (one concern per file, as NVBench keeps them).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "timing/timer.hpp"

namespace caliber::timing {

namespace {

double median_in_place(std::vector<double>& v) {
  const std::size_t n = v.size();
  const std::size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", x * 100.0);
  return buf;
}

std::string seconds(double s) {
  char buf[32];
  if (s >= 0.1) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  }
  return buf;
}

}  // namespace

double median_rel_std_error(std::span<const double> xs) {
  const std::size_t n = xs.size();
  if (n < 2) return 0;
  std::vector<double> v(xs.begin(), xs.end());
  std::sort(v.begin(), v.end());
  const double med = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  if (med == 0) return 0;
  std::vector<double> dev;
  dev.reserve(n);
  for (double x : v) dev.push_back(std::fabs(x - med));
  // 1.4826 * MAD estimates a normal distribution's sigma and ignores outliers.
  const double mad_sigma = 1.4826 * median_in_place(dev);
  // Event timings are quantized (about 0.5 us): when more than half the samples tie at the
  // median, MAD is 0 although the median can still flip between two values from run to run.
  // 1.2533 * the mean absolute deviation of the central 90% of the samples sees those ties and
  // stays blind to the few outliers in the tails.
  const std::size_t trim = n / 20;
  double sum_abs = 0;
  for (std::size_t i = trim; i < n - trim; ++i) sum_abs += std::fabs(v[i] - med);
  const double mean_ad_sigma = 1.2533 * sum_abs / static_cast<double>(n - 2 * trim);
  const double sigma = std::max(mad_sigma, mean_ad_sigma);
  // 1.2533 / sqrt(n): the median's standard error for that sigma.
  return 1.2533 * sigma / (std::fabs(med) * std::sqrt(static_cast<double>(n)));
}

StopState evaluate_stop(const StopRule& rule, int kept, double sum_s, double noise,
                        double elapsed_s, int discarded) {
  StopState st;
  const bool enough_samples = kept >= rule.min_samples;
  const bool enough_time = sum_s >= rule.min_time_s;
  const bool quiet = kept >= 2 && noise <= rule.max_noise;
  if (enough_samples && enough_time && quiet) {
    st.stop = true;
    st.converged = true;
    st.reason = "converged";
    return st;
  }
  const bool capped = kept >= rule.max_samples;
  const bool timed_out = elapsed_s >= rule.timeout_s;
  if (!capped && !timed_out) return st;
  st.stop = true;
  std::string missed;
  auto add = [&missed](const std::string& s) {
    if (!missed.empty()) missed += ", ";
    missed += s;
  };
  if (!enough_samples) {
    add("samples " + std::to_string(kept) + " < " + std::to_string(rule.min_samples));
  }
  if (!enough_time) add("time " + seconds(sum_s) + " < " + seconds(rule.min_time_s));
  if (!quiet) add("noise " + percent(noise) + " > " + percent(rule.max_noise));
  if (discarded > 0) add(std::to_string(discarded) + " samples discarded as throttled");
  st.reason = capped ? "sample cap " + std::to_string(rule.max_samples) + " reached"
                     : "timeout after " + seconds(elapsed_s);
  if (!missed.empty()) st.reason += ": " + missed;
  return st;
}

}  // namespace caliber::timing
