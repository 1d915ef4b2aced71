// The CUDA kernel trace: CUPTI's activity API (kernels, memcpys, memsets, graph-launched kernels
// included), with libcupti loaded at run time, so that caliber has no link-time dependency on it
// and a machine without it times by events (docs/timing.md).
#pragma once

#include <string>
#include <vector>

#include "backends/backend.hpp"

namespace caliber::backends::cuda {

// One process holds one activity subscription at most (CUPTI's buffers are the process's), so
// this is a process-wide object; a CudaDevice opens and closes it around one measurement.
class CuptiTrace {
 public:
  static CuptiTrace& get();

  // Starts collecting the records of device `ordinal`. Fails, saying why, where libcupti cannot
  // be loaded (CALIBER_CUPTI_LIB names it; else libcupti.so.13, libcupti.so and the toolkit's
  // copies are tried) or another CUPTI subscriber is there (a profiler: torch.profiler, nsys,
  // ncu), whose callbacks are then left alone, unless `share` vouches for that subscriber as idle
  // and CUPTI does not name it as one of NVIDIA's tools.
  TraceOpen open(int ordinal, const TraceShare& share);
  // Flushes CUPTI's buffers and returns the records of device `ordinal` since the last collect,
  // ordered by start. A kernel is the backend's own when its name carries `own_marker`.
  std::vector<TraceRecord> collect();
  void close();

  struct Api;  // the entry points resolved from libcupti (cupti_trace.cpp)

 private:
  CuptiTrace() = default;
  Api* api_ = nullptr;  // resolved once; nullptr with load_error_ set when not loadable
  std::string load_error_;
  bool loaded_ = false;
  bool open_ = false;
  int ordinal_ = 0;
  void* subscriber_ = nullptr;  // null while open beside another subscriber
  bool load();
};

// The substring every kernel of the backend's own (cuda_kernels.cu) has in its name.
inline constexpr const char* kOwnKernelMarker = "caliber_own_";

}  // namespace caliber::backends::cuda
