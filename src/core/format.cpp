#include "core/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace caliber::core {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string latency_ms(double ms, int decimals) {
  return ms > 0 && ms < 0.01 ? general(ms, 3) : fixed(ms, decimals);
}

std::string general(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string gib(double bytes, int decimals) {
  return fixed(bytes / (1024.0 * 1024 * 1024), decimals) + " GiB";
}

std::string mib(double bytes, int decimals) {
  return fixed(bytes / (1024.0 * 1024), decimals) + " MiB";
}

std::string duration_text(double seconds) {
  const auto t = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", t);
  return buf;
}

}  // namespace caliber::core
