// A kernel of known length, the ground truth the timers are checked against (the timer
// self-benchmarks in bench/ and the GPU timing tests): it spins on the device's global timer.
#pragma once

namespace caliber::known_kernels {

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Runs for `ns` nanoseconds of %globaltimer (which ticks about every microsecond, so the kernel
// overshoots by up to one tick).
static __global__ void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) {
  }
}

}  // namespace caliber::known_kernels
