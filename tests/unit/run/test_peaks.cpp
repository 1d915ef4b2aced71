// The peak measurements and the percent-of-peak annotation of rows.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "backends/cpu/cpu_backend.hpp"
#include "run/peaks.hpp"
#include "temp_dir.hpp"

using caliber::run::Peaks;
using nlohmann::json;

TEST(Peaks, AnnotatesRowAndProvidersAsPercentOfPeak) {
  Peaks p;
  p.copy_gbps = 200;
  p.gemm_tflops = 10;
  caliber::core::CaseRow typed = caliber::core::case_row_from_json(
      {{"type", "case"},
       {"op", "add"},
       {"gbps", 50.0},
       {"tflops", 2.5},
       {"providers", json::array({{{"name", "w"}, {"gbps", 100.0}}, {{"name", "x"}}})}});
  caliber::run::annotate_with_peaks(typed, p);
  const json row = caliber::core::to_json(typed);
  EXPECT_DOUBLE_EQ(row["pct_peak_bw"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(row["pct_peak_flops"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(row["providers"][0]["pct_peak_bw"].get<double>(), 50.0);
  EXPECT_FALSE(row["providers"][1].contains("pct_peak_bw"));
}

TEST(Peaks, UnknownPeakAddsNothing) {
  Peaks p;  // nothing measured
  caliber::core::CaseRow typed;
  typed.gbps = 50.0;
  caliber::run::annotate_with_peaks(typed, p);
  const json row = caliber::core::to_json(typed);
  EXPECT_FALSE(row.contains("pct_peak_bw"));
}

TEST(Peaks, CopyBandwidthIsMeasuredOnTheHost) {
  const auto& cpu = caliber::backends::cpu_backend();
  auto dev = cpu.open(0, 7);
  caliber::timing::TimingOptions o;
  o.stop.min_samples = 3;
  o.stop.timeout_s = 0.5;
  o.stop.warmup_s = 0;
  const Peaks p = caliber::run::measure_peaks(*dev, cpu, o);
  EXPECT_GT(p.copy_gbps, 0.1);  // any machine copies faster than 100 MB/s
  EXPECT_GT(p.copy_bytes, 0);
  // This test binary links no op library: the gemm rate is unknown and the note says why.
  EXPECT_EQ(p.gemm_tflops, 0);
  EXPECT_NE(p.note.find("no mm op"), std::string::npos) << p.note;
  EXPECT_TRUE(p.to_json().contains("copy_gbps"));
}

// The peaks cache is a cache, not input: a file that is no small regular file or holds figures no
// device measures is ignored with a one-line warning (and the peaks measured again), never read
// blocking (a fifo hung the run), without bound (/dev/zero) or into the tables (1e-300 GB/s).
TEST(Peaks, ACacheThatFailsItsChecksIsIgnoredWithAWarning) {
  namespace fs = std::filesystem;
  caliber::testing::TempDir dir;
  const fs::path file = dir.path() / "cpu-host.json";
  Peaks good;
  good.copy_gbps = 20;
  good.copy_bytes = 1 << 20;
  good.gemm_tflops = 0.1;
  good.gemm_case = "mm[f32-M1024-N1024-K1024]";
  good.gemm_provider = "blocked";
  good.timer_floor_us = 0.02;
  ASSERT_TRUE(caliber::run::store_cached_peaks(file, "p", good));
  std::string warning;
  ASSERT_TRUE(caliber::run::load_cached_peaks(file, "p", &warning).has_value());
  EXPECT_EQ(warning, "");
  EXPECT_FALSE(caliber::run::load_cached_peaks(file, "other policy", &warning).has_value());
  EXPECT_EQ(warning, "") << "an entry not measured yet is no damage";
  EXPECT_FALSE(caliber::run::load_cached_peaks(dir.path() / "none.json", "p", &warning));
  EXPECT_EQ(warning, "");

  const auto ignored = [&](const fs::path& f, const std::string& words) {
    std::string w;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(caliber::run::load_cached_peaks(f, "p", &w).has_value()) << words;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    EXPECT_NE(w.find("was ignored"), std::string::npos) << w;
    EXPECT_NE(w.find(words), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << "one line: " << w;
  };
  const fs::path fifo = dir.path() / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ignored(fifo, "not a regular file");
  const fs::path zero = dir.path() / "zero.json";
  fs::create_symlink("/dev/zero", zero);
  ignored(zero, "not a regular file");
  const fs::path big = dir.path() / "big.json";
  { std::ofstream(big) << std::string(caliber::run::kMaxPeaksCacheBytes + 1, ' '); }
  ignored(big, "larger than");
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, double>>{{"copy_gbps", 1e-300},
                                                   {"gemm_tflops", -5},
                                                   {"copy_gbps", 1e300},
                                                   {"timer_floor_us", -1},
                                                   {"copy_bytes", 0}}) {
    json entry = good.to_json();
    entry[field] = value;
    const fs::path f = dir.path() / ("bad-" + field + ".json");
    { std::ofstream(f) << json{{"p", entry}}.dump(); }
    ignored(f, field + "=");
  }
  const fs::path text = dir.path() / "text.json";
  { std::ofstream(text) << "not json"; }
  ignored(text, "not a JSON object");
}
