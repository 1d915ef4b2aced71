// The host as a device: host memory, a host clock for events, no graphs. Host ops run
// synchronously inside launch(), so an event recorded after a launch is recorded after the work.
// Header-only (no out-of-line virtuals), so tests of the host corpus can run on the real device
// without linking the backends room.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_fill.hpp"
#include "backends/cpu/cpu_host_info.hpp"

namespace caliber::backends::cpu {

class CpuEvent final : public Event {
 public:
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};

class CpuDevice final : public Device {
 public:
  // Flush size when the cache size cannot be read: larger than any current last-level cache slice.
  static constexpr std::uint64_t kFallbackFlushBytes = 64ull << 20;

  CpuDevice(DeviceDesc desc, Capabilities caps, std::uint64_t seed)
      : desc_(std::move(desc)), caps_(caps), seed_(seed) {
    props_.name = desc_.name;
    props_.sm_count = desc_.sm_count;
    props_.l2_bytes = desc_.l2_bytes;
    props_.total_bytes = desc_.mem_total;
    props_.host = true;
  }
  ~CpuDevice() override { std::free(flush_buf_); }

  // caliber::DeviceContext
  [[nodiscard]] std::string_view backend() const override { return "cpu"; }
  [[nodiscard]] const DeviceProps& props() const override { return props_; }
  [[nodiscard]] void* stream() const override { return nullptr; }
  [[nodiscard]] void* alloc(std::size_t bytes) override {
    // aligned_alloc wants a multiple of the alignment; 64 bytes is a cache line and an AVX-512
    // vector.
    const std::size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) {
      throw NativeError(12, "aligned_alloc",
                        "out of host memory allocating " + std::to_string(bytes) + " bytes");
    }
    return p;
  }
  void free(void* p) noexcept override { std::free(p); }
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind) override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
  void memset(void* p, int value, std::size_t bytes) override {
    if (bytes != 0) std::memset(p, value, bytes);
  }
  void fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                    std::uint64_t seed) override {
    fill_uniform_host(p, t, n, lo, hi, seed);
  }
  void synchronize() override {}
  [[nodiscard]] std::size_t free_bytes() const override {
    return static_cast<std::size_t>(mem_available_now());
  }
  [[nodiscard]] std::uint64_t seed() const override { return seed_; }
  [[nodiscard]] bool capturing() const override { return false; }

  // backends::Device
  [[nodiscard]] const DeviceDesc& desc() const override { return desc_; }
  [[nodiscard]] Capabilities capabilities() const override { return caps_; }
  [[nodiscard]] std::unique_ptr<Event> create_event() override {
    return std::make_unique<CpuEvent>();
  }
  void record(Event& e) override {
    auto& ce = static_cast<CpuEvent&>(e);
    ce.at = std::chrono::steady_clock::now();
    ce.recorded = true;
  }
  [[nodiscard]] double elapsed_ms(Event& start, Event& end) override {
    const auto& s = static_cast<CpuEvent&>(start);
    const auto& e = static_cast<CpuEvent&>(end);
    if (!s.recorded || !e.recorded) {
      throw NativeError(-1, "elapsed_ms", "an event was never recorded");
    }
    return std::chrono::duration<double, std::milli>(e.at - s.at).count();
  }
  void begin_capture() override { throw no_graphs(); }
  [[nodiscard]] std::unique_ptr<Graph> end_capture() override { throw no_graphs(); }
  void abort_capture() noexcept override {}
  void flush_l2() override {
    if (flush_buf_ == nullptr) {
      flush_bytes_ = desc_.l2_bytes != 0 ? desc_.l2_bytes : kFallbackFlushBytes;
      flush_buf_ = static_cast<unsigned char*>(alloc(flush_bytes_));
    }
    // A new value each time, so every line is really rewritten and left dirty: that is what
    // pushes the previous working set out of the cache.
    std::memset(flush_buf_, static_cast<int>(++flush_count_ & 0xFF), flush_bytes_);
  }
  [[nodiscard]] std::optional<ClockSample> clocks() override { return std::nullopt; }
  [[nodiscard]] bool healthy() noexcept override { return true; }
  [[nodiscard]] int take_last_error() noexcept override { return 0; }

  [[nodiscard]] std::uint64_t flush_bytes() const noexcept { return flush_bytes_; }

 private:
  static NativeError no_graphs() {
    return NativeError(-1, "capture", "the cpu backend has no graphs");
  }

  DeviceDesc desc_;
  Capabilities caps_;
  DeviceProps props_;
  std::uint64_t seed_;
  unsigned char* flush_buf_ = nullptr;
  std::uint64_t flush_bytes_ = 0;
  std::uint64_t flush_count_ = 0;
};

}  // namespace caliber::backends::cpu
