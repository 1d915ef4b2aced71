// A scripted device for the timing tests: a simulated device clock that kernels, flushes and graph
// replays advance; events read that clock; capture and launches can be made to throw chosen native
// codes. A FakeBackend classifies codes as CUDA does.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "caliber/context.hpp"
#include "timing/timer.hpp"

namespace caliber::timing::test {

class FakeDevice : public backends::Device {
 public:
  FakeDevice() {
    desc_.name = "fake";
    props_.name = "fake";
    caps_.graph_capture = true;
    caps_.graph_timer_default = true;
    caps_.default_rng = true;
    caps_.l2_known = true;
  }

  // --- the script ---
  // Duration (ms) of the n-th kernel execution on the device (direct or inside a replay).
  std::function<double(long n)> kernel_ms = [](long) { return 1.0; };
  double flush_ms = 0;
  int throw_in_capture = 0;      // native code a launch throws while capturing (0: none)
  int throw_at_captured = 0;     // ... once this many launches were captured
  int throw_at_end_capture = 0;  // native code end_capture throws
  int throw_on_launch = 0;       // native code uncaptured launches throw once `throw_after` ran
  long throw_after = 0;
  bool unhealthy_after_abort = false;
  int poison_code_after_abort = 0;  // uncaptured launches throw this after an abort
  std::function<std::optional<backends::ClockSample>(int call)> clock_script;
  bool has_generator = true;

  // --- what happened ---
  double now_ms = 0;
  long executions = 0;
  long uncaptured_launches = 0;
  long captured_launches = 0;
  int captures = 0, aborts = 0, replays = 0, flushes = 0, clock_calls = 0, events_created = 0;
  GeneratorState gen{42, 0};

  // What a test's launch function calls: one kernel launch on the stream.
  void kernel() {
    if (capturing_) {
      if (has_generator) gen.advance(1);  // a captured RNG op reserves offsets at capture time
      ++pending_;
      ++captured_launches;
      if (throw_in_capture != 0 && pending_ >= std::max(1, throw_at_captured)) {
        throw NativeError(throw_in_capture, "fakeLaunch", "operation not permitted when capturing");
      }
      return;
    }
    if (poison_code_after_abort != 0 && aborts > 0) {
      throw NativeError(poison_code_after_abort, "fakeLaunch", "context is dead");
    }
    if (throw_on_launch != 0 && uncaptured_launches >= throw_after) {
      throw NativeError(throw_on_launch, "fakeLaunch", "scripted launch failure");
    }
    if (has_generator) gen.advance(1);
    ++uncaptured_launches;
    now_ms += kernel_ms(executions++);
  }
  [[nodiscard]] double wall_s() const { return now_ms * 1e-3; }

  // --- backends::Device ---
  [[nodiscard]] const backends::DeviceDesc& desc() const override { return desc_; }
  [[nodiscard]] backends::Capabilities capabilities() const override { return caps_; }
  [[nodiscard]] std::unique_ptr<backends::Event> create_event() override {
    ++events_created;
    return std::make_unique<FakeEvent>();
  }
  void record(backends::Event& e) override { static_cast<FakeEvent&>(e).t = now_ms; }
  [[nodiscard]] double elapsed_ms(backends::Event& s, backends::Event& e) override {
    return static_cast<FakeEvent&>(e).t - static_cast<FakeEvent&>(s).t;
  }
  void begin_capture() override {
    capturing_ = true;
    pending_ = 0;
    ++captures;
  }
  [[nodiscard]] std::unique_ptr<backends::Graph> end_capture() override {
    capturing_ = false;
    if (throw_at_end_capture != 0) {
      throw NativeError(throw_at_end_capture, "fakeEndCapture", "capture invalidated");
    }
    return std::make_unique<FakeGraph>(*this, pending_);
  }
  void abort_capture() noexcept override {
    capturing_ = false;
    ++aborts;
  }
  void flush_l2() override {
    ++flushes;
    now_ms += flush_ms;
  }
  [[nodiscard]] std::optional<backends::ClockSample> clocks() override {
    const int call = clock_calls++;
    if (clock_script) return clock_script(call);
    return std::nullopt;
  }
  [[nodiscard]] bool healthy() noexcept override { return !(unhealthy_after_abort && aborts > 0); }
  [[nodiscard]] int take_last_error() noexcept override { return 0; }

  // --- DeviceContext ---
  [[nodiscard]] std::string_view backend() const override { return "fake"; }
  [[nodiscard]] const DeviceProps& props() const override { return props_; }
  [[nodiscard]] void* stream() const override { return nullptr; }
  [[nodiscard]] void* alloc(std::size_t) override { return nullptr; }
  void free(void*) noexcept override {}
  void copy(void*, const void*, std::size_t, CopyKind) override {}
  void memset(void*, int, std::size_t) override {}
  void fill_uniform(void*, DType, std::size_t, double, double, std::uint64_t) override {}
  void synchronize() override {}
  [[nodiscard]] std::size_t free_bytes() const override { return 0; }
  [[nodiscard]] std::uint64_t seed() const override { return 1; }
  [[nodiscard]] bool capturing() const override { return capturing_; }
  [[nodiscard]] GeneratorState* default_generator() noexcept override {
    return has_generator ? &gen : nullptr;
  }

  backends::Capabilities caps_;

 private:
  struct FakeEvent : backends::Event {
    double t = 0;
  };
  struct FakeGraph : backends::Graph {
    FakeGraph(FakeDevice& d, long k) : dev(d), launches(k) {}
    void launch() override {
      ++dev.replays;
      for (long i = 0; i < launches; ++i) dev.now_ms += dev.kernel_ms(dev.executions++);
    }
    FakeDevice& dev;
    long launches;
  };

  backends::DeviceDesc desc_;
  DeviceProps props_;
  bool capturing_ = false;
  long pending_ = 0;
};

// Classifies native codes as the CUDA runtime's: 900-908 refuse capture, sticky errors are fatal.
class FakeBackend : public backends::Backend {
 public:
  backends::Capabilities caps;
  FakeBackend() {
    caps.graph_capture = true;
    caps.graph_timer_default = true;
    caps.default_rng = true;
  }
  [[nodiscard]] std::string name() const override { return "fake"; }
  [[nodiscard]] std::vector<std::string> aliases() const override { return {}; }
  [[nodiscard]] std::vector<std::string> visibility_vars() const override { return {}; }
  [[nodiscard]] backends::Capabilities capabilities() const override { return caps; }
  [[nodiscard]] backends::Availability availability() const override { return {true, "", ""}; }
  [[nodiscard]] std::vector<backends::DeviceDesc> enumerate() const override { return {}; }
  [[nodiscard]] std::unique_ptr<backends::Device> open(int, std::uint64_t) const override {
    return std::make_unique<FakeDevice>();
  }
  [[nodiscard]] backends::Failure classify(int code) const override {
    if (code == 0) return backends::Failure::ok;
    if (code >= 900 && code <= 908) return backends::Failure::refused_capture;
    if (code == 700 || code == 710 || (code >= 714 && code <= 719)) {
      return backends::Failure::fatal_on_device;
    }
    return backends::Failure::other;
  }
  [[nodiscard]] std::map<std::string, std::string> child_env(int) const override { return {}; }
  [[nodiscard]] std::vector<std::string> capture_deny_ops() const override { return deny; }
  std::vector<std::string> deny;
};

// Options whose wall clock is the fake device's clock, so that timeouts are deterministic.
inline TimingOptions fake_options(FakeDevice& dev) {
  TimingOptions o;
  o.now = [&dev] { return dev.wall_s(); };
  return o;
}

}  // namespace caliber::timing::test
