// Every CUDA and NCCL call is checked: a failure throws cclab::Error (environment kind) carrying the
// call, file:line and the library's own error string.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace cclab::exec {

[[noreturn]] void throw_cuda(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl(ncclResult_t res, const char* call, const char* file, int line);

// NCCL's name for a cclab dtype.
inline ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

}  // namespace cclab::exec

#define CCLAB_CUDA(call)                                                                             \
  do {                                                                                               \
    cudaError_t cclab_err_ = (call);                                                                 \
    if (cclab_err_ != cudaSuccess) ::cclab::exec::throw_cuda(cclab_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define CCLAB_NCCL(call)                                                                             \
  do {                                                                                               \
    ncclResult_t cclab_res_ = (call);                                                                \
    if (cclab_res_ != ncclSuccess) ::cclab::exec::throw_nccl(cclab_res_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define CCLAB_CUDA_LAUNCHED() CCLAB_CUDA(cudaGetLastError())
