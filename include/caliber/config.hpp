// caliber public API: tunable configurations and their keys.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace caliber {

// One configuration of a tunable provider: ordered name=value pairs ("block=256,vec=4").
struct Config {
  std::vector<std::pair<std::string, std::int64_t>> values;

  [[nodiscard]] std::int64_t get(std::string_view name, std::int64_t fallback = 0) const;
  // The value of `name` as T, c.get<int>("block"): a key the config does not have throws
  // std::invalid_argument naming it and the keys it has (a typo fails the case; it never runs a
  // fallback).
  template <class T>
  requires std::is_integral_v<T>
  [[nodiscard]] T get(std::string_view name) const {
    std::string keys;
    for (const auto& [key, value] : values) {
      if (key == name) return static_cast<T>(value);
      keys += (keys.empty() ? "" : ", ") + key;
    }
    throw std::invalid_argument("config '" + str() + "' has no key '" + std::string(name) +
                                "' (its keys: " + (keys.empty() ? "none" : keys) + ")");
  }
  [[nodiscard]] bool has(std::string_view name) const;
  [[nodiscard]] std::string str() const;  // "block=256,vec=4"; "" for the empty config
  [[nodiscard]] static std::optional<Config> parse(std::string_view s);
  [[nodiscard]] bool empty() const noexcept { return values.empty(); }
  // Convention: a config with "cluster" > 1 needs thread-block clusters.
  [[nodiscard]] bool needs_clusters() const { return get("cluster", 1) > 1; }
  bool operator==(const Config&) const = default;
};

// How a key argument is bucketed so nearby shapes share a tuned config (FlagGems' LibTuner
// strategies).
enum class KeyStrategy {
  exact,
  log2,
  align32
};  // exact is "default"; log2 is "log" (next power of two)

struct KeyArg {
  std::string name;
  std::int64_t value = 0;
  KeyStrategy strategy = KeyStrategy::exact;
};

[[nodiscard]] std::int64_t bucket(std::int64_t value, KeyStrategy s) noexcept;
// "M=4096,N=4096,K=512" after bucketing each argument.
[[nodiscard]] std::string tune_key(const std::vector<KeyArg>& args);

// What a candidate declares: its configs, its default, and the arguments of its key.
struct ConfigSpace {
  std::vector<Config> configs;
  Config default_config;
  std::vector<KeyArg> key;
  [[nodiscard]] bool tunable() const noexcept { return configs.size() > 1; }
};

}  // namespace caliber
