// The device's measured ceilings, once per run (measured rather than taken
// from datasheets): the device-to-device copy bandwidth and the matrix rate of the corpus's own
// mm baseline. Rows report their GB/s and TFLOPS as a percent of these.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "records/runlog_rows.hpp"

#include "backends/backend.hpp"
#include "timing/timer.hpp"

namespace caliber::run {

struct Peaks {
  double copy_gbps = 0;    // bytes read + bytes written per second, over 1e9
  double copy_bytes = 0;   // the buffer size copied
  double gemm_tflops = 0;  // the mm baseline on a large square case
  std::string gemm_case;   // its node id
  std::string gemm_provider;
  // What this run's timer reads for an empty kernel, in us: the part of any figure that is the
  // timer's own (event overhead, the kernel's launch and teardown; docs/timing.md). 0 when the
  // measurement failed.
  double timer_floor_us = 0;
  std::string timer_floor_method;  // the l2_method / sample_method it was read with
  std::string note;                // what could not be measured, and why
  [[nodiscard]] nlohmann::json to_json() const;
  // The same from to_json's object; nullopt for one that is not (a damaged cache entry), or whose
  // figures lie outside what any device measures (kPeakRanges; `why` then says which).
  [[nodiscard]] static std::optional<Peaks> from_json(const nlohmann::json& j,
                                                      std::string* why = nullptr);
};

// The peaks cache (docs/measurements.md): a device's peaks are measured once and kept in one JSON
// file per device under the user's cache directory ($XDG_CACHE_HOME or ~/.cache,
// caliber/peaks/<backend>-<device UUID>.json; a device without a UUID, such as the host, by its
// host and device name), one entry per timing policy (`peaks_policy`), since the timer floor
// depends on the timer, the L2 policy and the clock regime.
[[nodiscard]] std::filesystem::path peaks_cache_file(const std::string& backend,
                                                     const backends::DeviceDesc& device);
[[nodiscard]] std::string peaks_policy(core::TimerKind timer, const timing::TimingOptions& o);
// The largest peaks cache file read (docs/limits.md): a few entries of a few hundred bytes each.
inline constexpr std::uintmax_t kMaxPeaksCacheBytes = 1u << 20;
// The cached entry, or nullopt (no file, no entry for this policy, or an unreadable one). A cache
// is not user input: one that is no regular file (a fifo hung the run, a link to /dev/zero grew
// memory without bound), is larger than kMaxPeaksCacheBytes, is no JSON object or holds an entry
// out of range (copy_gbps=1e-300 printed "% bw 1.4e+300%") is ignored, and `warning` (when given)
// says so in one line; the peaks are then measured again.
[[nodiscard]] std::optional<Peaks> load_cached_peaks(const std::filesystem::path& file,
                                                     const std::string& policy,
                                                     std::string* warning = nullptr);
// Writes the entry (the file's other entries kept); false where the cache cannot be written.
bool store_cached_peaks(const std::filesystem::path& file, const std::string& policy,
                        const Peaks& peaks);

// Measures both ceilings on `dev` with the direct timer and the given stop rule. Never throws for a
// measurement that fails: the reason goes into `note` and the value stays 0.
[[nodiscard]] Peaks measure_peaks(backends::Device& dev, const backends::Backend& backend,
                                  const timing::TimingOptions& timing);

// Adds "pct_peak_bw" / "pct_peak_flops" to a case row and its providers where the row has GB/s or
// TFLOPS and the peak is known.
void annotate_with_peaks(core::CaseRow& row, const Peaks& peaks);

}  // namespace caliber::run
