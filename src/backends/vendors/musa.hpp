// MUSA: the CUDA runtime names this project uses, mapped to MUSA's. (MUSAGraph: a graph must
// outlive its exec; the device interface already keeps the graph until the exec is gone.)
#pragma once

#include <musa_bf16.h>
#include <musa_fp16.h>
#include <musa_runtime.h>

#define CALIBER_GPU_RUNTIME_NAME "MUSA"

#define __nv_bfloat16 __mt_bfloat16
#define cudaDeviceGetAttribute musaDeviceGetAttribute
#define cudaDeviceGetPCIBusId musaDeviceGetPCIBusId
#define cudaDeviceProp musaDeviceProp
#define cudaDevAttrL2CacheSize musaDevAttrL2CacheSize
#define cudaDevAttrMultiProcessorCount musaDevAttrMultiProcessorCount
#define cudaDriverGetVersion musaDriverGetVersion
#define cudaError_t musaError_t
#define cudaErrorNotReady musaErrorNotReady
#define cudaEventCreate musaEventCreate
#define cudaEventDestroy musaEventDestroy
#define cudaEventElapsedTime musaEventElapsedTime
#define cudaEventRecord musaEventRecord
#define cudaEventSynchronize musaEventSynchronize
#define cudaEvent_t musaEvent_t
#define cudaFree musaFree
#define cudaGetDevice musaGetDevice
#define cudaGetDeviceCount musaGetDeviceCount
#define cudaGetDeviceProperties musaGetDeviceProperties
#define cudaGetErrorString musaGetErrorString
#define cudaGetLastError musaGetLastError
#define cudaGraphDestroy musaGraphDestroy
#define cudaGraphExecDestroy musaGraphExecDestroy
#define cudaGraphExec_t musaGraphExec_t
#define cudaGraphInstantiate musaGraphInstantiate
#define cudaGraphLaunch musaGraphLaunch
#define cudaGraph_t musaGraph_t
#define cudaMalloc musaMalloc
#define cudaMemGetInfo musaMemGetInfo
#define cudaMemcpyAsync musaMemcpyAsync
#define cudaMemcpyDeviceToDevice musaMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost musaMemcpyDeviceToHost
#define cudaMemcpyHostToDevice musaMemcpyHostToDevice
#define cudaMemcpyKind musaMemcpyKind
#define cudaMemsetAsync musaMemsetAsync
#define cudaPeekAtLastError musaPeekAtLastError
#define cudaRuntimeGetVersion musaRuntimeGetVersion
#define cudaSetDevice musaSetDevice
#define cudaStreamBeginCapture musaStreamBeginCapture
#define cudaStreamCaptureModeGlobal musaStreamCaptureModeGlobal
#define cudaStreamCaptureModeThreadLocal musaStreamCaptureModeThreadLocal
#define cudaStreamCaptureStatus musaStreamCaptureStatus
#define cudaStreamCaptureStatusNone musaStreamCaptureStatusNone
#define cudaStreamCreateWithFlags musaStreamCreateWithFlags
#define cudaStreamDestroy musaStreamDestroy
#define cudaStreamEndCapture musaStreamEndCapture
#define cudaStreamIsCapturing musaStreamIsCapturing
#define cudaStreamNonBlocking musaStreamNonBlocking
#define cudaStreamSynchronize musaStreamSynchronize
#define cudaStream_t musaStream_t
#define cudaSuccess musaSuccess
