// Every marker a run.log row can carry, spelled once (docs/run-log.md). The first four are the old
// runner's and keep its exact spelling.
#pragma once

#include <string>

namespace caliber::core::markers {

// A row of a graph-timed run that fell back to the direct timer (with repeat=N).
inline constexpr const char* direct_no_graph = "BENCHMARK_DIRECT_NO_CUDAGRAPH";
// The capture attempt left the context unusable: the op is capture-incompatible, not broken.
inline constexpr const char* capture_poisoned = "BENCHMARK_CAPTURE_POISONED";
inline constexpr const char* timer_direct = "timer=direct";
// "repeat=N" and "compile_<stage>_no_evict" are built by repeat_marker() and the tuner.
// Some kept samples ran at an SM clock the power limit alone held down (the sustained speed).
inline constexpr const char* power_capped = "CLOCK_POWER_CAPPED";
// The stopping rule was not met: the measurement stopped on its timeout or its sample cap.
inline constexpr const char* stop_missed = "STOP_NOT_CONVERGED";
// The kernel trace was the sample method (asked, or the default where the backend has one) but
// could not be used: no tracer library, another activity subscriber (a profiler) active, or
// records missing for a timed launch; the row is timed by its events instead.
inline constexpr const char* events_no_trace = "SAMPLE_METHOD_EVENTS_NO_TRACE";
// Another process had work on the device while the samples ran (docs/timing.md, "Another process
// on the device"): its kernels shared the memory and the SMs, and the figures may read slow with
// low noise.
inline constexpr const char* device_shared = "DEVICE_SHARED";
// A skip guard of the op was lifted by one of the backend's compat rules (the case row's own).
inline constexpr const char* compat_lifted = "compat_lifted";

}  // namespace caliber::core::markers
