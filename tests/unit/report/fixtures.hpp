// Hand-made run directories for the report tests: a run.log and a run_identity.json written by
// the test itself, so every expected number is known.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"

namespace caliber::testing {

using nlohmann::json;

// An H200's identity, so that compare takes share/caliber/calibration/nvidia-h200.yaml's terms.
inline json identity(const std::string& level = "core", const std::string& timer = "direct") {
  return {{"backend", "cuda"},
          {"level", level},
          {"timer", timer},
          {"tune", "off"},
          {"repeat", 1},
          {"l2", "cold"},
          {"shape_mode", "file"},
          {"device", {{"index", 0}, {"physical_id", "0"}, {"name", "NVIDIA H200"}}}};
}

// `n` samples around `center` with relative noise `rel` (normal), deterministic for `seed`.
inline std::vector<double> samples(double center, double rel, int n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(0.0, rel);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(center * (1.0 + d(gen)));
  return out;
}

struct RowSpec {
  std::string op = "add";
  std::string dtype = "f32";
  std::string shape = "1024";
  std::string family;  // empty: no "family" field
  std::string status = "ok";
  std::vector<double> cand;  // candidate samples (empty: baseline-only op)
  std::vector<double> base;  // baseline samples
  std::vector<std::string> markers;
  json speedup_override = json();  // explicit speedup (e.g. null); default: from the medians
  bool has_speedup_override = false;
};

inline double med(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline json make_row(const RowSpec& s) {
  json row = {{"type", "case"},
              {"op", s.op},
              {"dtype", s.dtype},
              {"shape", s.shape},
              {"node", s.op + "[" + s.dtype + "-" + s.shape + "]"},
              {"status", s.status},
              {"timer", "direct"},
              {"markers", s.markers},
              {"repeat", 1}};
  if (!s.family.empty()) row["family"] = s.family;
  json provs = json::array();
  json lat = nullptr, base = nullptr;
  if (!s.cand.empty()) {
    lat = med(s.cand);
    provs.push_back({{"name", "mine"},
                     {"role", "candidate"},
                     {"latency_ms", lat},
                     {"samples_ms", s.cand},
                     {"markers", json::array()}});
  }
  if (!s.base.empty()) {
    base = med(s.base);
    provs.push_back({{"name", "vendor"},
                     {"role", "baseline"},
                     {"latency_ms", base},
                     {"samples_ms", s.base},
                     {"markers", json::array()}});
  }
  row["providers"] = provs;
  row["latency_ms"] = lat;
  row["latency_base_ms"] = base;
  if (s.has_speedup_override) {
    row["speedup"] = s.speedup_override;
  } else if (lat.is_number() && base.is_number() && s.status == "ok") {
    row["speedup"] = base.get<double>() / lat.get<double>();
  } else {
    row["speedup"] = nullptr;
  }
  row["accuracy"] = s.cand.empty() ? json() : json(s.status == "ok");
  if (s.status == "failed") row["error"] = "made to fail";
  return row;
}

// Writes <parent>/<name>/ with run.log (header, rows, footer) and run_identity.json.
inline std::filesystem::path write_run(const std::filesystem::path& parent, const std::string& name,
                                       const std::vector<json>& rows,
                                       const json& ident = identity(), bool footer = true,
                                       const std::string& tail = "") {
  const std::filesystem::path dir = parent / name;
  std::filesystem::create_directories(dir);
  std::ofstream log(dir / "run.log");
  log << json{{"type", "header"}, {"backend", "cpu"}}.dump() << "\n";
  for (const auto& r : rows) log << r.dump() << "\n";
  if (footer) log << json{{"type", "footer"}, {"cases", rows.size()}}.dump() << "\n";
  log << tail;
  if (!ident.is_null()) std::ofstream(dir / "run_identity.json") << ident.dump(2) << "\n";
  return dir;
}

// A row with a given speedup and no samples to speak of (summary tests).
inline json speedup_row(const std::string& op, const std::string& dtype, const std::string& shape,
                        double speedup, std::vector<std::string> markers = {}) {
  RowSpec s;
  s.op = op;
  s.dtype = dtype;
  s.shape = shape;
  s.cand = {1.0};
  s.base = {speedup};
  s.markers = std::move(markers);
  return make_row(s);
}

}  // namespace caliber::testing
