// The communicator of the single-process mode: the GPUs of this node, which rank runs on which GPU,
// peer access between every pair, and RAII wrappers for the CUDA resources the executor holds.
// Host objects own resources; kernels get small copyable handles (see kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/schedule.hpp"

namespace cclab::exec {

// Makes `device` current for the lifetime of the guard, then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// cudaMalloc'd bytes on one GPU; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  int device_ = -1;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Pinned host memory mapped into every GPU's address space (error words, release flags).
class MappedHost {
 public:
  explicit MappedHost(size_t bytes);
  ~MappedHost();
  MappedHost(const MappedHost&) = delete;
  MappedHost& operator=(const MappedHost&) = delete;
  void* host() const { return ptr_; }
  void* device() const;  // the same memory as seen by kernels (UVA: the same address)

 private:
  void* ptr_ = nullptr;
};

class Stream {
 public:
  Stream() = default;
  explicit Stream(int device);
  ~Stream();
  Stream(Stream&& o) noexcept { swap(o); }
  Stream& operator=(Stream&& o) noexcept {
    swap(o);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  int device() const { return device_; }

 private:
  void swap(Stream& o) noexcept {
    std::swap(s_, o.s_);
    std::swap(device_, o.device_);
  }
  cudaStream_t s_ = nullptr;
  int device_ = -1;
};

class Event {
 public:
  Event() = default;
  Event(int device, bool timing);
  ~Event();
  Event(Event&& o) noexcept { swap(o); }
  Event& operator=(Event&& o) noexcept {
    swap(o);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  int device() const { return device_; }

 private:
  void swap(Event& o) noexcept {
    std::swap(e_, o.e_);
    std::swap(device_, o.device_);
  }
  cudaEvent_t e_ = nullptr;
  int device_ = -1;
};

struct CommOptions {
  int nranks = 0;           // 0: one rank per visible GPU
  bool share_gpus = false;  // allow more ranks than GPUs (timings then not meaningful)
};

// One process driving all GPUs of the node. Rank r runs on GPU r, or with share_gpus on GPU
// r * ngpus / nranks (consecutive ranks share a GPU, as ranks of one node would).
class Communicator {
 public:
  // Throws an environment error: no CUDA device, peer access unavailable between two GPUs in use;
  // an input error: more ranks than GPUs without share_gpus.
  explicit Communicator(CommOptions options);
  ~Communicator() = default;

  int nranks() const { return nranks_; }
  int ngpus() const { return int(devices_.size()); }  // GPUs in use
  int device_of(int rank) const { return rank_device_[size_t(rank)]; }
  const std::vector<int>& rank_device() const { return rank_device_; }
  const std::vector<int>& devices() const { return devices_; }
  bool shared() const { return nranks_ > int(devices_.size()); }
  int ranks_on_device(int device) const;
  // "NVIDIA H200 x2" (GPU name x GPUs in use), driver and runtime versions, SM count.
  const std::string& device_label() const { return label_; }
  const std::string& versions() const { return versions_; }
  int sm_count() const { return sm_count_; }
  // Free bytes on each GPU in use (cudaMemGetInfo), indexed by device id.
  size_t free_bytes(int device) const;

  // The origin stream (on rank 0's GPU) that every iteration forks from and joins into.
  cudaStream_t origin() const { return origin_.get(); }

 private:
  int nranks_ = 0;
  std::vector<int> devices_, rank_device_;
  std::string label_, versions_;
  int sm_count_ = 0;
  Stream origin_;
};

// Number of visible CUDA devices (0 when the driver or devices are missing: never throws).
int visible_devices();

// "cuda_driver=13.0 cuda_runtime=13.0 nccl=2.28.3": the versions a record's extra columns carry.
std::string runtime_versions();

}  // namespace cclab::exec
