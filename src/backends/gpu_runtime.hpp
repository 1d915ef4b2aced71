// One name set for the GPU runtime: the device interface and kernels are written against the CUDA
// runtime names, and this header maps them to HIP or MUSA (the ggml vendors/ pattern), so the
// same sources build under nvcc, hipcc or mcc. Only the CUDA path is compiled in this project's
// builds; the others are written to be built where their toolchain exists.
#pragma once

#if defined(CALIBER_USE_HIP)
#include "backends/vendors/hip.hpp"
#elif defined(CALIBER_USE_MUSA)
#include "backends/vendors/musa.hpp"
#else
#include "backends/vendors/cuda.hpp"
#endif
