// The tests' one wait for a state another process or thread brings about: poll until it holds,
// within a bound generous enough for a loaded host (a test's verdict must not depend on load).
#pragma once

#include <chrono>
#include <thread>

namespace caliber::testing {

// Polls `done` every 10 ms until it holds or `bound_s` seconds have passed; whether it held.
template <class Pred>
bool eventually(Pred done, int bound_s = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(bound_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace caliber::testing
