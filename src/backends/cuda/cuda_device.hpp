// The CUDA device interface: one non-blocking stream per device, events, graph capture, a
// persistent L2-sized flush buffer, NVML clocks, the default generator. Written against the CUDA
// runtime names of gpu_runtime.hpp so that it builds for HIP and MUSA too.
#pragma once

#include <atomic>

#include "backends/backend.hpp"
#include "backends/gpu_runtime.hpp"

namespace caliber::backends::cuda {

class CudaDevice final : public Device {
 public:
  // `ordinal` is the runtime's device number (the caller's visible index).
  CudaDevice(int ordinal, DeviceDesc desc, std::uint64_t seed);
  ~CudaDevice() override;

  // DeviceContext
  std::string_view backend() const override { return "cuda"; }
  const DeviceProps& props() const override { return props_; }
  void* stream() const override { return static_cast<void*>(stream_); }
  void* alloc(std::size_t bytes) override;
  void free(void* p) noexcept override;
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) override;
  void memset(void* p, int value, std::size_t bytes) override;
  void fill_uniform(void* p, DType t, std::size_t n, double lo, double hi,
                    std::uint64_t seed) override;
  void synchronize() override;
  std::size_t free_bytes() const override;
  std::uint64_t seed() const override;
  bool capturing() const override { return capturing_; }
  GeneratorState* default_generator() noexcept override { return &generator_; }
  std::uint64_t seeds_drawn() const noexcept override { return seeds_drawn_.load(); }
  void rewind_seeds(std::uint64_t drawn) noexcept override { seeds_drawn_.store(drawn); }

  // Device
  const DeviceDesc& desc() const override { return desc_; }
  Capabilities capabilities() const override;
  std::unique_ptr<Event> create_event() override;
  void record(Event& e) override;
  double elapsed_ms(Event& start, Event& end) override;
  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;
  void abort_capture() noexcept override;
  void record_in_graph(Event& e) override;
  void flush_l2() override;
  bool hold_stream() override;
  void release_stream() override;
  bool hold_gave_up() override;
  double timer_resolution_us() const override;
  void launch_empty() override;
  std::optional<ClockSample> clocks() override;
  // The processes besides this one and its ancestors with work on the device (NVML), -1 unknown.
  int other_processes();
  bool healthy() noexcept override;
  int take_last_error() noexcept override;
  TraceOpen trace_open(const TraceShare& share) override;
  std::vector<TraceRecord> trace_collect() override;
  void trace_close() override;
  void trace_boundary() override;
  double trace_resolution_us() const override;
  void range_push(const std::string& name) override;
  void range_pop() override;

 private:
  void activate() const;

  int ordinal_;
  DeviceDesc desc_;
  DeviceProps props_;
  cudaStream_t stream_ = nullptr;
  void* l2_buffer_ = nullptr;
  std::size_t l2_bytes_ = 0;
  std::size_t flush_bytes_ = 0;  // twice the L2: see flush_l2
  unsigned* flush_sink_ = nullptr;
  // The stream hold's two words in mapped host memory (host pointer; the kernel gets the device
  // alias): [0] release, [1] gave up.
  volatile int* hold_words_ = nullptr;
  volatile int* hold_words_dev_ = nullptr;
  bool capturing_ = false;
  bool tracing_ = false;   // this device holds the process's kernel trace (cupti_trace.hpp)
  int pending_error_ = 0;  // an error seen (and cleared) by healthy(), kept for take_last_error
  void* nvml_handle_ = nullptr;
  bool static_read_ = false;  // sm_max_mhz_ and power_limit_mw_ hold NVML's values
  // The other processes on the device, read at most every kOthersEvery s (clocks()).
  int other_processes_ = -1;
  double others_read_at_ = -1e9;
  int sm_max_mhz_ = 0;
  unsigned power_limit_mw_ = 0;
  GeneratorState generator_;
  std::uint64_t base_seed_;
  mutable std::atomic<std::uint64_t> seeds_drawn_{0};
};

// Throws caliber::NativeError when `code` is not success.
void check(cudaError_t code, const char* api);

}  // namespace caliber::backends::cuda
