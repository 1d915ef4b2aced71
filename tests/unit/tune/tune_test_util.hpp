// Helpers shared by the tune room's tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "caliber/config.hpp"
#include "temp_dir.hpp"
#include "tune/cache.hpp"
#include "tune/tuner.hpp"

namespace caliber::tune::testing {

using caliber::testing::TempDir;

inline Config cfg(std::int64_t block, std::int64_t vec = 1) {
  return Config{{{"block", block}, {"vec", vec}}};
}

inline ConfigSpace space4(std::int64_t m = 4096) {
  ConfigSpace s;
  s.configs = {cfg(64), cfg(128), cfg(256), cfg(512)};
  s.default_config = cfg(128);
  s.key = {{"M", m, KeyStrategy::log2}, {"N", 4096, KeyStrategy::log2}};
  return s;
}

inline CacheKey key_for(const std::string& op, const std::string& key) {
  return CacheKey{op, "own", "1.0", "cpu", "host-8c", "fp32", key};
}

inline Settings make_settings(Mode mode, std::filesystem::path shared = {},
                              std::filesystem::path run = {}, std::filesystem::path replay = {}) {
  Settings s;
  s.mode = mode;
  s.shared_cache = std::move(shared);
  s.run_dir = std::move(run);
  s.replay_from = std::move(replay);
  s.show_progress = false;
  return s;
}

}  // namespace caliber::tune::testing
