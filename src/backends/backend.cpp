#include "backends/backend.hpp"

#include <cstdlib>

#include "backends/registry.hpp"

namespace caliber::backends {

const char* to_string(Failure f) noexcept {
  switch (f) {
    case Failure::ok:
      return "ok";
    case Failure::refused_capture:
      return "refused_capture";
    case Failure::fatal_on_device:
      return "fatal_on_device";
    case Failure::capture_poisoned:
      return "capture_poisoned";
    case Failure::other:
      return "other";
  }
  return "other";
}

bool leaves_process_unusable(Failure f) noexcept {
  return f == Failure::fatal_on_device || f == Failure::capture_poisoned;
}

namespace {

std::string plural_devices(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " device" : " devices");
}

// "cuda (2 devices), cpu (1 device)": what the caller could pick instead.
std::string available_elsewhere(const Backend& self) {
  std::string out;
  for (const Backend* b : all_backends()) {
    if (b == &self || b->name() == self.name()) continue;
    const std::size_t n = b->enumerate().size();
    if (n == 0) continue;
    if (!out.empty()) out += ", ";
    out += b->name() + " (" + plural_devices(n) + ")";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

void Backend::setup_guard() const {
  const Availability a = availability();
  const std::string head = "backend '" + name() + "': ";
  if (!a.runtime_found) {
    throw BackendUnavailable(head + "looked for " + a.looked_for + ": " +
                             (a.detail.empty() ? "not found" : a.detail) +
                             "; available: " + available_elsewhere(*this));
  }
  if (enumerate().empty()) {
    std::string vars;
    for (const std::string& v : visibility_vars()) {
      if (!vars.empty()) vars += ", ";
      const char* value = std::getenv(v.c_str());
      vars += v + (value == nullptr ? " unset" : "='" + std::string(value) + "'");
    }
    throw BackendUnavailable(head + "found " + a.looked_for +
                             (a.detail.empty() ? "" : " (" + a.detail + ")") +
                             " but no device is visible" + (vars.empty() ? "" : " (" + vars + ")") +
                             "; available: " + available_elsewhere(*this));
  }
}

bool compat_lifts(const Backend& running, const std::string& op, const std::string& reason) {
  for (const CompatRule& rule : running.compat_rules())
    if (rule.op == op && rule.reason == reason) return true;
  return false;
}

}  // namespace caliber::backends
