// caliber public API: what an op sees of the device. Ops never see the harness's internals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "caliber/dtype.hpp"

namespace caliber {

struct DeviceProps {
  std::string name;
  int sm_count = 0;            // multiprocessors (cpu: cores)
  std::uint64_t l2_bytes = 0;  // last-level cache
  std::uint64_t total_bytes = 0;
  int cc_major = 0, cc_minor = 0;  // compute capability where it applies
  bool host = false;               // true for the cpu backend: pointers are host memory
};

// The default generator callers see (torch's default CUDA generator in the old runner): a Philox
// seed and a counter offset. Random ops reserve offsets from it; the RNG capture guard saves and
// restores it so that capturing an RNG op does not advance what callers see.
struct GeneratorState {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  // Reserve `n` counter values; returns the first.
  std::uint64_t advance(std::uint64_t n) noexcept {
    const std::uint64_t first = offset;
    offset += n;
    return first;
  }
  bool operator==(const GeneratorState&) const = default;
};

enum class CopyKind { host_to_device, device_to_host, device_to_device };

// An error from a vendor runtime or library, with its native code. The backend classifies it.
class NativeError : public std::runtime_error {
 public:
  NativeError(int code, std::string api, const std::string& message)
      : std::runtime_error(api + ": " + message + " (code " + std::to_string(code) + ")"),
        code_(code),
        api_(std::move(api)) {}
  [[nodiscard]] int code() const noexcept { return code_; }
  [[nodiscard]] const std::string& api() const noexcept { return api_; }

 private:
  int code_;
  std::string api_;
};

// A configuration that cannot run on this device or shape (out of resources, invalid launch).
class ConfigRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A case that cannot run here (too large, unsupported combination): the row is skipped with this
// reason.
class CaseSkipped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  DeviceContext() = default;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  [[nodiscard]] virtual std::string_view backend() const = 0;
  [[nodiscard]] virtual const DeviceProps& props() const = 0;
  // The native stream every launch must use (cudaStream_t, hipStream_t, ...); nullptr on the host.
  [[nodiscard]] virtual void* stream() const = 0;
  [[nodiscard]] virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* p) noexcept = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) = 0;
  virtual void memset(void* p, int value, std::size_t bytes) = 0;
  // Uniform random values in [lo, hi) (integers: lo..hi-1), generated on the device, never zeros.
  virtual void fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                            std::uint64_t seed) = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual std::size_t free_bytes() const = 0;
  // A fresh seed for this case's inputs.
  [[nodiscard]] virtual std::uint64_t seed() const = 0;
  // True while launches are being captured into a graph.
  [[nodiscard]] virtual bool capturing() const = 0;
  // The default generator, or nullptr where the backend has none (then the RNG guard is skipped).
  [[nodiscard]] virtual GeneratorState* default_generator() noexcept { return nullptr; }
};

// RAII device buffer on a context.
class Buffer {
 public:
  Buffer() = default;
  Buffer(DeviceContext& ctx, std::size_t bytes)
      : ctx_(&ctx), ptr_(ctx.alloc(bytes)), bytes_(bytes) {}
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : ctx_(o.ctx_), ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      ctx_ = o.ctx_;
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  void reset() noexcept {
    if (ptr_ != nullptr && ctx_ != nullptr) ctx_->free(ptr_);
    ptr_ = nullptr;
  }
  [[nodiscard]] void* get() const noexcept { return ptr_; }
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(ptr_);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  DeviceContext* ctx_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace caliber
