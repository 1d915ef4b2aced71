// The number formatters of caliber's text output, in one place: every table, progress line and
// message that shows a number formats it with one of these (printf semantics, C locale).
#pragma once

#include <string>

namespace caliber::core {

// `decimals` digits after the point: fixed(3.14159, 2) == "3.14" (printf "%.*f").
[[nodiscard]] std::string fixed(double v, int decimals);
// `digits` significant digits: general(0.000123456, 3) == "0.000123" (printf "%.*g").
[[nodiscard]] std::string general(double v, int digits);
// A latency in ms with `decimals` digits, or 3 significant digits below 0.01 ms, where fixed
// decimals would lose them (a 0.226 us kernel reads "0.000226", not "0.0002").
[[nodiscard]] std::string latency_ms(double ms, int decimals);
// Bytes in GiB (2^30) and MiB (2^20) with `decimals` digits: "1.50 GiB", "512 MiB".
[[nodiscard]] std::string gib(double bytes, int decimals);
[[nodiscard]] std::string mib(double bytes, int decimals);
// A duration for a person: "8s", "1m20s", "2h00m" (rounded to whole seconds; negative as 0).
[[nodiscard]] std::string duration_text(double seconds);

}  // namespace caliber::core
