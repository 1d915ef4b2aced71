// The stopping rule and its noise estimate (one concern per file, as NVBench keeps them).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "timing/timer.hpp"

namespace caliber::timing {

namespace {

std::string percent(double x) {
  return core::general(x * 100.0, 3) + "%";
}

std::string seconds(double s) {
  return s >= 0.1 ? core::fixed(s, 1) + " s" : core::general(s * 1e3, 3) + " ms";
}

}  // namespace

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
