// The peak measurements and the percent-of-peak annotation of rows.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "run/peaks.hpp"

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
