// CUDA: the names are already the CUDA runtime's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CALIBER_GPU_RUNTIME_NAME "CUDA"
