// Knob values and configs: every knob either takes a value or throws KnobError naming it;
// Config::parse gives a config that prints back to text it parses again identically, or nothing.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "caliber/caliber.hpp"
#include "settings/knobs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string value(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto& table = caliber::core::knob_table();
  const auto& spec = table[data[0] % table.size()];
  // Flags only, an environment that holds nothing: the value alone decides.
  auto no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  try {
    (void)caliber::core::resolve_knobs({{spec.name, value}}, no_env);
  } catch (const caliber::core::KnobError& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  (void)caliber::core::split_list(value);
  (void)caliber::core::split_fields(value, ',');
  if (auto c = caliber::Config::parse(value)) {
    const auto again = caliber::Config::parse(c->str());
    if (!again || again->str() != c->str()) std::abort();
  }
  return 0;
}
