// What the cpu backend knows of the host: the parsers of /proc and sysfs text, the split of the
// allowed cores into device groups and the visibility list. Header-only and free of process state
// so that every rule here is unit-tested on sample text without touching the machine.
#pragma once

#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace caliber::backends::cpu {

// Splits the allowed cores into N groups, each exposed as one device (so that parallel warmup
// shards run on disjoint cores, docs/cluster.md). Unset: one device, the whole host.
inline constexpr const char* kDevicesEnv = "CALIBER_CPU_DEVICES";
// The cpu backend's visibility variable: indices into the groups, with CUDA_VISIBLE_DEVICES'
// rules (the first invalid or repeated entry ends the list).
inline constexpr const char* kVisibleEnv = "CALIBER_CPU_VISIBLE_DEVICES";
// The cores the groups are cut from, saved by the first process that pins itself: a child inherits
// its parent's pinned affinity, and cutting groups from that would shift every group.
inline constexpr const char* kAllowedCoresEnv = "CALIBER_CPU_ALLOWED_CORES";

struct HostFacts {
  std::string model_name = "unknown host cpu";
  std::vector<int> cores;  // allowed cores, ascending
  std::uint64_t mem_total = 0;
  std::uint64_t mem_available = 0;
  std::uint64_t llc_bytes = 0;  // largest cache level; 0 when unknown
  int llc_level = 0;
  std::string kernel;  // uname release
};

[[nodiscard]] inline std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

template <class Int>
[[nodiscard]] inline std::optional<Int> parse_int(std::string_view s) {
  s = trim(s);
  Int v{};
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// The values of the "key: value" lines of /proc files (cpuinfo, meminfo) whose key, trimmed, is
// `key`, trimmed, in file order.
[[nodiscard]] inline std::vector<std::string_view> colon_values(std::string_view text,
                                                                std::string_view key) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon)) == key)
      out.push_back(trim(line.substr(colon + 1)));
  }
  return out;
}

// The first "model name" of /proc/cpuinfo; ARM kernels spell it differently, so those are tried
// too.
[[nodiscard]] inline std::string parse_model_name(std::string_view cpuinfo) {
  for (const std::string_view key : {"model name", "Model", "Hardware", "cpu model", "Processor"})
    for (const std::string_view value : colon_values(cpuinfo, key))
      if (!value.empty()) return std::string(value);
  return "unknown host cpu";
}

// "MemAvailable:   1234 kB" -> bytes.
[[nodiscard]] inline std::optional<std::uint64_t> parse_meminfo_bytes(std::string_view meminfo,
                                                                      std::string_view key) {
  const auto values = colon_values(meminfo, key);
  if (values.empty()) return std::nullopt;
  std::string_view rest = values.front();
  std::uint64_t scale = 1;
  if (rest.ends_with("kB")) {
    scale = 1024;
    rest = trim(rest.substr(0, rest.size() - 2));
  }
  const auto v = parse_int<std::uint64_t>(rest);
  if (!v) return std::nullopt;
  return *v * scale;
}

// "0-3,8,10-11" (the kernel's cpu list format) -> {0,1,2,3,8,10,11}, sorted and unique.
[[nodiscard]] inline std::optional<std::vector<int>> parse_cpu_list(std::string_view s) {
  std::vector<int> out;
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    const std::string_view item = s.substr(pos, comma - pos);
    pos = comma + 1;
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      const auto v = parse_int<int>(item);
      if (!v || *v < 0) return std::nullopt;
      out.push_back(*v);
    } else {
      const auto a = parse_int<int>(item.substr(0, dash));
      const auto b = parse_int<int>(item.substr(dash + 1));
      if (!a || !b || *a < 0 || *b < *a) return std::nullopt;
      for (int c = *a; c <= *b; ++c) out.push_back(c);
    }
    if (comma == s.size()) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// {0,1,2,3,8} -> "0-3,8".
[[nodiscard]] inline std::string format_cpu_list(const std::vector<int>& cores) {
  std::string out;
  for (std::size_t i = 0; i < cores.size();) {
    std::size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cores[i]);
    if (j > i) out += '-' + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

// sysfs cache "size": "32K", "1024K", "32M".
[[nodiscard]] inline std::optional<std::uint64_t> parse_cache_size(std::string_view s) {
  s = trim(s);
  std::uint64_t scale = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'k')) scale = 1024;
  if (!s.empty() && (s.back() == 'M' || s.back() == 'm')) scale = 1024 * 1024;
  if (scale != 1) s.remove_suffix(1);
  const auto v = parse_int<std::uint64_t>(s);
  if (!v || *v == 0) return std::nullopt;
  return *v * scale;
}

// Contiguous groups as even as possible (the first groups take one extra core when it does not
// divide). More groups than cores: a group per core would leave groups empty, so cores are shared
// round-robin and the device's description says so.
[[nodiscard]] inline std::vector<std::vector<int>> split_cores(const std::vector<int>& cores,
                                                               int groups) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(std::max(groups, 1)));
  if (cores.empty()) return out;
  const std::size_t g = out.size();
  if (g > cores.size()) {
    for (std::size_t i = 0; i < g; ++i) out[i].push_back(cores[i % cores.size()]);
    return out;
  }
  const std::size_t base = cores.size() / g, extra = cores.size() % g;
  std::size_t next = 0;
  for (std::size_t i = 0; i < g; ++i) {
    const std::size_t n = base + (i < extra ? 1 : 0);
    out[i].assign(cores.begin() + static_cast<std::ptrdiff_t>(next),
                  cores.begin() + static_cast<std::ptrdiff_t>(next + n));
    next += n;
  }
  return out;
}

// CALIBER_CPU_DEVICES: unset -> 1; a positive integer -> itself; anything else -> nullopt.
[[nodiscard]] inline std::optional<int> parse_device_count(const std::optional<std::string>& v) {
  if (!v) return 1;
  const auto n = parse_int<int>(*v);
  if (!n || *n < 1 || *n > 4096) return std::nullopt;
  return n;
}

// The visible groups, in the caller's order: CUDA_VISIBLE_DEVICES' rules on indices, so that the
// caller's index i means the i-th entry and a child pinned with the entry runs on that group.
// Unset: every group. The first entry that is not an index in range, or repeats one, ends the list.
[[nodiscard]] inline std::vector<int> parse_visible(const std::optional<std::string>& v,
                                                    int groups) {
  std::vector<int> out;
  if (!v) {
    for (int i = 0; i < groups; ++i) out.push_back(i);
    return out;
  }
  std::string_view s = *v;
  std::size_t pos = 0;
  while (pos <= s.size() && !trim(s).empty()) {
    auto comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    const auto idx = parse_int<int>(s.substr(pos, comma - pos));
    if (!idx || *idx < 0 || *idx >= groups) break;
    if (std::find(out.begin(), out.end(), *idx) != out.end()) break;
    out.push_back(*idx);
    if (comma == s.size()) break;
    pos = comma + 1;
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Reading the machine.

[[nodiscard]] inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

[[nodiscard]] inline std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// The cores this process may run on. The saved set wins over the live affinity, which a pinned
// parent has narrowed for its children.
[[nodiscard]] inline std::vector<int> allowed_cores() {
  if (const auto saved = env_value(kAllowedCoresEnv)) {
    if (auto list = parse_cpu_list(*saved); list && !list->empty()) return *list;
  }
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cores.push_back(c);
    }
  }
  if (cores.empty()) cores.push_back(0);
  return cores;
}

// The largest cache level of cpu0 (the last-level cache, shared by the cores of a socket).
inline void read_llc(const std::filesystem::path& cache_dir, HostFacts& f) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (!entry.path().filename().string().starts_with("index")) continue;
    if (trim(read_text(entry.path() / "type")) == "Instruction") continue;
    const auto level = parse_int<int>(read_text(entry.path() / "level"));
    const auto size = parse_cache_size(read_text(entry.path() / "size"));
    if (level && size && *level >= f.llc_level) {
      f.llc_level = *level;
      f.llc_bytes = *size;
    }
  }
}

[[nodiscard]] inline HostFacts read_host_facts() {
  HostFacts f;
  f.model_name = parse_model_name(read_text("/proc/cpuinfo"));
  f.cores = allowed_cores();
  const std::string meminfo = read_text("/proc/meminfo");
  f.mem_total = parse_meminfo_bytes(meminfo, "MemTotal").value_or(0);
  f.mem_available = parse_meminfo_bytes(meminfo, "MemAvailable").value_or(0);
  read_llc("/sys/devices/system/cpu/cpu0/cache", f);
  utsname u{};
  if (uname(&u) == 0) f.kernel = std::string(u.sysname) + " " + u.release;
  return f;
}

[[nodiscard]] inline std::uint64_t mem_available_now() {
  return parse_meminfo_bytes(read_text("/proc/meminfo"), "MemAvailable").value_or(0);
}

}  // namespace caliber::backends::cpu
