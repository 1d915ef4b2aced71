#include "backends/probe.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace caliber::backends {

namespace {
// dlopen in a forked child: a vendor library's static initializers run in the child, so a library
// that aborts on load (seen on the H200 machine, 2026-11-29: "LLVM ERROR: inconsistency in
// registered CommandLine options" when a second LLVM copy came in) cannot take caliber down.
// Returns 0 loaded, 1 not loadable, 2 the child died while loading.
int probe_in_child(const std::string& name) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);  // no fork: probe here
    if (h != nullptr) dlclose(h);
    return h != nullptr ? 0 : 1;
  }
  if (pid == 0) {
    void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
    _exit(h != nullptr ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? 0 : 1;
  return 2;
}
}  // namespace

std::optional<std::string> find_library(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    // Only asks whether it loads; nothing is resolved or called, and not in this process.
    if (probe_in_child(n) == 0) return n;
  }
  return std::nullopt;
}

Availability library_availability(const std::vector<std::string>& names, const std::string& what) {
  Availability a;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : " or ") + n;
  a.looked_for = list + " (" + what + ")";
  if (auto found = find_library(names)) {
    a.runtime_found = true;
    a.detail = "loaded " + *found;
  } else {
    a.detail = "not found";
  }
  return a;
}

std::optional<std::string> run_tool(const std::string& command) {
  const std::string line = "timeout 20 " + command + " 2>/dev/null";
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

std::vector<DeviceDesc> devices_from_tool(const std::string& command,
                                          std::vector<DeviceDesc> (*parse)(const std::string&)) {
  const auto out = run_tool(command);
  if (!out) return {};
  try {
    return parse(*out);
  } catch (const std::exception&) {
    return {};
  }
}

namespace {

// Splits "81920MiB" into 81920 and "mib".
bool split_number(const std::string& text, double& value, std::string& unit) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const char* begin = text.c_str() + i;
  char* end = nullptr;
  value = std::strtod(begin, &end);
  if (end == begin) return false;
  unit.clear();
  for (const char* p = end; *p != '\0'; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p))) {
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    }
  }
  return value >= 0;
}

}  // namespace

std::uint64_t parse_bytes(const std::string& text, std::uint64_t default_unit) {
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit)) return 0;
  double scale = 0;
  if (unit.empty())
    scale = static_cast<double>(default_unit);
  else if (unit == "b")
    scale = 1;
  else if (unit == "kib" || unit == "kb" || unit == "k")
    scale = 1024.0;
  else if (unit == "mib" || unit == "mb" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "gb" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "tb")
    scale = 1024.0 * 1024 * 1024 * 1024;
  // Vendor tools print binary units whether they write MB or MiB; treat both as binary.
  // A value that does not fit (a hostile or garbled tool output) reads as unknown.
  const double bytes = v * scale + 0.5;
  if (!(bytes >= 0) || bytes >= 18446744073709551616.0) return 0;
  return static_cast<std::uint64_t>(bytes);
}

int parse_mhz(const std::string& text) {
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit)) return 0;
  double mhz = 0;
  if (unit.empty() || unit == "mhz")
    mhz = v;
  else if (unit == "ghz")
    mhz = v * 1000;
  else if (unit == "khz")
    mhz = v / 1000;
  else
    return 0;
  // No clock is a million MHz; anything outside int (or NaN) is garbage and reads as unknown.
  if (!(mhz >= 0) || mhz > 1e6) return 0;
  return static_cast<int>(mhz + 0.5);
}

}  // namespace caliber::backends

namespace caliber::backends {
namespace {

std::string normalize_key(std::string_view k) {
  std::string out;
  for (char c : k) {
    if (c == ' ' || c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

const nlohmann::json* find_key(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const std::string want = normalize_key(key);
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (normalize_key(it.key()) == want) return &it.value();
  }
  return nullptr;
}

std::string text_of(const nlohmann::json& object, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys) {
    const nlohmann::json* v = find_key(object, k);
    if (v == nullptr || v->is_null()) continue;
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number_integer()) return std::to_string(v->get<long long>());
    if (v->is_number()) return v->dump();
  }
  return "";
}

}  // namespace caliber::backends
