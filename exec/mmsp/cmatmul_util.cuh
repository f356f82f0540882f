// Internal helpers shared by the collective-matmul and sparse all-reduce runners (CUDA sources only):
// error checks that throw cclab::Error with file:line and the library's message, RAII owners of
// device memory, streams, events and pinned host memory, a hash for reproducible data, and timing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "exec/runtime/cuda_check.hpp"

namespace cclab::exec::detail {

[[noreturn]] void cuda_fail(const char* call, const char* file, int line, cudaError_t e);
[[noreturn]] void cublas_fail(const char* call, const char* file, int line, cublasStatus_t s);
[[noreturn]] void nccl_fail(const char* call, const char* file, int line, ncclResult_t r);

}  // namespace cclab::exec::detail

#define MMSP_CUDA(call)                                                                               \
  do {                                                                                                \
    cudaError_t mmsp_e_ = (call);                                                                     \
    if (mmsp_e_ != cudaSuccess) ::cclab::exec::detail::cuda_fail(#call, __FILE__, __LINE__, mmsp_e_); \
  } while (0)
#define MMSP_CUBLAS(call)                                                                                         \
  do {                                                                                                            \
    cublasStatus_t mmsp_s_ = (call);                                                                              \
    if (mmsp_s_ != CUBLAS_STATUS_SUCCESS) ::cclab::exec::detail::cublas_fail(#call, __FILE__, __LINE__, mmsp_s_); \
  } while (0)
#define MMSP_NCCL(call)                                                                               \
  do {                                                                                                \
    ncclResult_t mmsp_r_ = (call);                                                                    \
    if (mmsp_r_ != ncclSuccess) ::cclab::exec::detail::nccl_fail(#call, __FILE__, __LINE__, mmsp_r_); \
  } while (0)
// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define MMSP_LAUNCHED() MMSP_CUDA(cudaGetLastError())

namespace cclab::exec::detail {

// Sets the current device for a scope and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    MMSP_CUDA(cudaGetDevice(&previous_));
    if (device != previous_) MMSP_CUDA(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// Device memory on one device (cudaMalloc: never managed memory on the lent machines).
class DevBuf {
 public:
  DevBuf() = default;
  DevBuf(int device, size_t bytes) : device_(device), bytes_(bytes) {
    if (bytes == 0) return;
    DeviceScope scope(device);
    MMSP_CUDA(cudaMalloc(&ptr_, bytes));
  }
  ~DevBuf() { reset(); }
  DevBuf(DevBuf&& o) noexcept { *this = std::move(o); }
  DevBuf& operator=(DevBuf&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(ptr_, o.ptr_);
      std::swap(bytes_, o.bytes_);
      device_ = o.device_;
    }
    return *this;
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void reset() {
    if (ptr_) {
      int prev = 0;
      cudaGetDevice(&prev);
      cudaSetDevice(device_);
      cudaFree(ptr_);
      cudaSetDevice(prev);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <class T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  char* bytes_ptr(size_t offset = 0) const { return static_cast<char*>(ptr_) + offset; }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
};

// Page-locked host memory (needed for truly asynchronous copies to and from the device).
class HostBuf {
 public:
  HostBuf() = default;
  explicit HostBuf(size_t bytes) : bytes_(bytes) {
    if (bytes) MMSP_CUDA(cudaHostAlloc(&ptr_, bytes, cudaHostAllocPortable));
  }
  ~HostBuf() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  HostBuf(HostBuf&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  HostBuf& operator=(HostBuf&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  HostBuf(const HostBuf&) = delete;
  HostBuf& operator=(const HostBuf&) = delete;
  template <class T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() = default;
  explicit Stream(int device) : device_(device) {
    DeviceScope scope(device);
    MMSP_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
  }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)), device_(o.device_) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    device_ = o.device_;
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  int device() const { return device_; }

 private:
  cudaStream_t s_ = nullptr;
  int device_ = 0;
};

class Event {
 public:
  Event() = default;
  Event(int device, bool timing) : device_(device) {
    DeviceScope scope(device);
    MMSP_CUDA(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)), device_(o.device_) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    device_ = o.device_;
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  operator cudaEvent_t() const { return e_; }
  int device() const { return device_; }

 private:
  cudaEvent_t e_ = nullptr;
  int device_ = 0;
};

// Records `e` on `s` (same device) and makes `waiter` (any device) wait for it: the cross-GPU
// dependency of the schedules, resolved by the GPUs' front ends, no host round trip.
inline void record(const Event& e, cudaStream_t s) { MMSP_CUDA(cudaEventRecord(e.get(), s)); }
inline void wait(cudaStream_t waiter, const Event& e) { MMSP_CUDA(cudaStreamWaitEvent(waiter, e.get(), 0)); }

// ncclGroupStart() ... end(): if an error escapes before end(), the destructor still closes the
// group, so that later NCCL calls are not silently nested in a group that never ends.
class NcclGroup {
 public:
  NcclGroup() { MMSP_NCCL(ncclGroupStart()); }
  void end() {
    open_ = false;
    MMSP_NCCL(ncclGroupEnd());
  }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

 private:
  bool open_ = true;
};

// A copy ordered on `s` and finished on return. Every copy next to work on our non-blocking streams
// goes through a stream: a plain cudaMemcpy runs on the legacy stream, which non-blocking streams do
// not wait for, and one from pageable memory may return before its DMA has landed.
inline void copy_on(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  MMSP_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  MMSP_CUDA(cudaStreamSynchronize(s));
}

inline float elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  MMSP_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

// splitmix64 finaliser: a stateless, reproducible hash shared by device generators and host checks.
__host__ __device__ inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

// "2026-11-22T10:31:05Z": the date column of measured records.
std::string utc_now_iso();
// The commit column: $CCLAB_COMMIT when set (machines that get the tree without .git), else the
// commit the build was configured at, else "unknown".
std::string commit_label();

}  // namespace cclab::exec::detail
