#include "run/peaks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/format.hpp"
#include "records/identity.hpp"
#include "records/rundir.hpp"
#include "run/cases.hpp"

namespace caliber::run {

using nlohmann::json;

json Peaks::to_json() const {
  json j = {{"copy_gbps", copy_gbps},
            {"copy_bytes", copy_bytes},
            {"gemm_tflops", gemm_tflops},
            {"gemm_case", gemm_case},
            {"gemm_provider", gemm_provider},
            {"timer_floor_us", timer_floor_us},
            {"timer_floor_method", timer_floor_method}};
  if (!note.empty()) j["note"] = note;
  return j;
}

namespace {

// What a device can measure, generously: a cached figure outside its range is damage or a hand
// edit, never a device (docs/limits.md).
struct PeakRange {
  const char* field;
  double low, high;
  bool low_inclusive;
};
constexpr PeakRange kPeakRanges[] = {
    {"copy_gbps", 1e-3, 1e6, false},    // 1 MB/s .. 1 PB/s
    {"copy_bytes", 0, 0x1p56, false},   // a buffer, at most kMaxCount bytes
    {"gemm_tflops", 1e-9, 1e6, false},  // 1 kFLOP/s .. 1 EFLOP/s
    {"timer_floor_us", 0, 1e6, true},   // 0 (not measured) .. 1 s
};

}  // namespace

std::optional<Peaks> Peaks::from_json(const json& j, std::string* why) {
  if (!j.is_object()) {
    if (why) *why = "its entry is not a JSON object";
    return std::nullopt;
  }
  for (const auto& r : kPeakRanges) {
    const auto v = j.find(r.field);
    if (v == j.end() || !v->is_number()) continue;  // the reads below refuse it
    const double x = v->get<double>();
    if (std::isfinite(x) && (r.low_inclusive ? x >= r.low : x > r.low) && x <= r.high) continue;
    if (why) {
      *why = std::string(r.field) + "=" + v->dump() + " is out of range (" +
             (r.low_inclusive ? "[" : "(") + core::general(r.low, 3) + ", " +
             core::general(r.high, 3) + "])";
    }
    return std::nullopt;
  }
  try {
    Peaks p;
    p.copy_gbps = j.at("copy_gbps").get<double>();
    p.copy_bytes = j.at("copy_bytes").get<double>();
    p.gemm_tflops = j.at("gemm_tflops").get<double>();
    p.gemm_case = j.at("gemm_case").get<std::string>();
    p.gemm_provider = j.at("gemm_provider").get<std::string>();
    p.timer_floor_us = j.at("timer_floor_us").get<double>();
    p.timer_floor_method = j.at("timer_floor_method").get<std::string>();
    p.note = j.value("note", std::string());
    return p;
  } catch (const json::exception&) {
    if (why) *why = "its entry lacks a field or has one of the wrong type";
    return std::nullopt;
  }
}

namespace {

// A file-name-safe spelling: letters, digits, '.', '-' and '_' kept, anything else '_'.
std::string file_safe(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
    out += ok ? ch : '_';
  }
  return out.empty() ? "_" : out;
}

}  // namespace

std::filesystem::path peaks_cache_file(const std::string& backend,
                                       const backends::DeviceDesc& device) {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = fs::path(xdg) / "caliber" / "peaks";
  else if (const char* home = std::getenv("HOME"); home && *home)
    dir = fs::path(home) / ".cache" / "caliber" / "peaks";
  else
    dir = fs::temp_directory_path() / "caliber" / "peaks";
  const std::string id = !device.uuid.empty() ? device.uuid : core::host_name() + "-" + device.name;
  return dir / (file_safe(backend + "-" + id) + ".json");
}

std::string peaks_policy(core::TimerKind timer, const timing::TimingOptions& o) {
  return "timer=" + std::string(core::to_string(timer)) + ",l2=" + timing::to_string(o.l2) +
         ",clock=" + timing::to_string(o.regime.regime) + ",caliber=" + core::caliber_version();
}

std::optional<Peaks> load_cached_peaks(const std::filesystem::path& file, const std::string& policy,
                                       std::string* warning) {
  const auto ignored = [&](const std::string& why) -> std::optional<Peaks> {
    if (warning)
      *warning = "the peaks cache " + file.string() + " was ignored (" + why +
                 "); the peaks are measured again";
    return std::nullopt;
  };
  std::string text;
  try {
    text = core::read_data_file(file, kMaxPeaksCacheBytes);
  } catch (const core::DataFileError& e) {
    if (e.why() == "it does not exist") return std::nullopt;  // not measured yet
    return ignored(e.why());
  }
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return ignored("not a JSON object");
  if (!j.contains(policy)) return std::nullopt;
  std::string why;
  auto p = Peaks::from_json(j[policy], &why);
  if (!p) return ignored(why);
  return p;
}

bool store_cached_peaks(const std::filesystem::path& file, const std::string& policy,
                        const Peaks& peaks) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  json all = json::object();
  try {  // the other policies' entries, where the file reads (write_file_atomic refuses the rest)
    json j = json::parse(core::read_data_file(file, kMaxPeaksCacheBytes), nullptr, false);
    if (j.is_object()) all = std::move(j);
  } catch (const core::DataFileError&) {
  }
  all[policy] = peaks.to_json();
  try {
    core::write_file_atomic(file, all.dump(2) + "\n");
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

namespace {

void add_note(Peaks& p, const std::string& s) {
  p.note += (p.note.empty() ? "" : "; ") + s;
}

void measure_copy(backends::Device& dev, const backends::Backend& backend,
                  const timing::TimingOptions& opt, Peaks& p) {
  // Large enough to dwarf the L2 many times over, small enough to fit beside any case.
  const bool host = dev.props().host;
  std::size_t bytes = host ? (std::size_t{256} << 20) : (std::size_t{2} << 30);
  bytes = std::min(bytes, dev.free_bytes() / 8);
  bytes &= ~std::size_t{4095};
  if (bytes < (std::size_t{1} << 20)) {
    add_note(p, "copy: too little free memory to measure");
    return;
  }
  try {
    Buffer src(dev, bytes), dst(dev, bytes);
    dev.fill_uniform(src.get(), DType::f32, bytes / 4, -1.0, 1.0, dev.seed());
    timing::TimingOptions o = opt;
    o.timer = timing::TimerKind::direct;
    o.repeat = 1;
    o.quantiles.clear();
    o.return_mode = core::ReturnMode::median;
    o.op = "peak_copy";
    const auto m = timing::measure(
        dev, backend, [&] { dev.copy(dst.get(), src.get(), bytes, CopyKind::device_to_device); },
        o);
    if (m.ok && m.latency_ms > 0) {
      p.copy_bytes = static_cast<double>(bytes);
      p.copy_gbps = 2.0 * static_cast<double>(bytes) / (m.latency_ms * 1e-3) / 1e9;
    } else {
      add_note(p, "copy: " + m.error);
    }
  } catch (const std::exception& e) {
    add_note(p, std::string("copy: ") + e.what());
  }
}

void measure_gemm(backends::Device& dev, const backends::Backend& backend,
                  const timing::TimingOptions& opt, Peaks& p) {
  auto ops = corpus(backend.name());
  auto it =
      std::find_if(ops.begin(), ops.end(), [](const OpEntry& e) { return e.info.name == "mm"; });
  if (it == ops.end()) {
    add_note(p, "gemm: the corpus of " + backend.name() + " has no mm op");
    return;
  }
  const bool host = dev.props().host;
  Case c;
  c.op = "mm";
  // The rate a matrix unit reaches: bf16 where the op has it, on a size that fills the device.
  c.dtype = it->info.dtypes.front();
  for (DType d : it->info.dtypes)
    if (d == DType::bf16) c.dtype = d;
  const std::int64_t n = host ? 256 : 8192;
  c.shape = it->op->canonical_shape({1, n, n, n});
  c.dim_names = it->info.dim_names;
  p.gemm_case = c.node_id();
  try {
    if (it->op->bytes_needed(c) > dev.free_bytes() / 2) {
      add_note(p, "gemm: too little free memory for " + c.node_id());
      return;
    }
    auto w = it->op->setup(dev, c);
    const auto providers = w->providers();
    timing::TimingOptions o = opt;
    o.repeat = 1;
    o.quantiles.clear();
    o.return_mode = core::ReturnMode::median;
    o.op = "peak_gemm";
    // The fastest provider with its default config: the rate this device reaches on this op.
    for (std::size_t i = 0; i < providers.size(); ++i) {
      w->prepare(i, providers[i].space.default_config);
      const auto m = timing::measure(
          dev, backend, [&] { w->launch(i); }, o);
      if (!m.ok || m.latency_ms <= 0 || w->flops() <= 0) {
        add_note(p, "gemm " + providers[i].name + ": " +
                        (m.error.empty() ? std::string("no flop count") : m.error));
        continue;
      }
      const double tflops = w->flops() / (m.latency_ms * 1e-3) / 1e12;
      if (tflops > p.gemm_tflops) {
        p.gemm_tflops = tflops;
        p.gemm_provider = providers[i].name;
      }
    }
  } catch (const std::exception& e) {
    add_note(p, std::string("gemm: ") + e.what());
  }
}

void measure_floor(backends::Device& dev, const backends::Backend& backend,
                   const timing::TimingOptions& timing, Peaks& p) {
  timing::TimingOptions o = timing;
  o.op = "empty";
  const timing::Measurement m = timing::measure(
      dev, backend, [&] { dev.launch_empty(); }, o);
  if (!m.ok) {
    p.note += (p.note.empty() ? "" : "; ") + std::string("timer floor: ") + m.error;
    return;
  }
  p.timer_floor_us = m.latency_ms * 1e3;
  p.timer_floor_method = core::spelled(m.timer) + ", " + core::spelled(m.l2_method) + ", " +
                         core::spelled(m.sample_method);
}

}  // namespace

Peaks measure_peaks(backends::Device& dev, const backends::Backend& backend,
                    const timing::TimingOptions& timing) {
  Peaks p;
  measure_copy(dev, backend, timing, p);
  measure_gemm(dev, backend, timing, p);
  measure_floor(dev, backend, timing, p);
  return p;
}

namespace {
// A rate's percent of the peak it is bounded by, when both are known.
template <class Row>
void annotate_rates(Row& r, const Peaks& peaks) {
  if (peaks.copy_gbps > 0 && r.gbps) r.pct_peak_bw = 100.0 * *r.gbps / peaks.copy_gbps;
  if (peaks.gemm_tflops > 0 && r.tflops) r.pct_peak_flops = 100.0 * *r.tflops / peaks.gemm_tflops;
}
}  // namespace

void annotate_with_peaks(core::CaseRow& row, const Peaks& peaks) {
  annotate_rates(row, peaks);
  if (row.providers)
    for (auto& p : *row.providers) annotate_rates(p, peaks);
}

}  // namespace caliber::run
