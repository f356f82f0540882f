// The communicator of the MPI mode: one process per GPU, started by mpirun. MPI only bootstraps
// (ranks, the CUDA IPC handles, NCCL's unique id, results and timings gathered on rank 0); the data
// moves GPU to GPU through CUDA IPC mappings (copy engines and kernels) or through NCCL.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/mpi_kernels.hpp"

namespace cclab::exec {

class MpiWorld {
 public:
  // MPI_Init (unless already initialised), one GPU per process: local rank % visible GPUs. Throws an
  // environment error: no GPU, two ranks on one GPU, no peer access between the node's GPUs; an
  // input error: more processes on this node than GPUs.
  MpiWorld();
  ~MpiWorld();  // MPI_Finalize (when this object initialised MPI)
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  bool single_node() const { return local_size_ == size_; }
  int device() const { return device_; }
  int sm_count() const { return sm_count_; }
  const std::string& device_label() const { return label_; }  // "NVIDIA H200 x2": GPU name x processes
  const std::string& versions() const { return versions_; }
  cudaStream_t origin() const { return origin_.get(); }  // every iteration forks from and joins into it

  // Host collectives over MPI_COMM_WORLD.
  void barrier() const;
  int64_t sum(int64_t v) const;
  double max(double v) const;
  std::vector<char> allgather(const void* mine, size_t bytes) const;  // size() * bytes, rank-major
  void broadcast(void* data, size_t bytes, int root) const;
  // Every rank learns whether any rank failed and the first failing rank's message (collective).
  // Returns that message; empty when every rank succeeded.
  std::string first_failure(const std::string& mine) const;
  [[noreturn]] void abort(int code) const;

  // Device-side barrier of all ranks on `stream` (CUDA IPC ctrl words; single node only);
  // next_epoch: it ends an iteration of flag-synchronised work (mpi_kernels.hpp).
  void device_barrier(cudaStream_t stream, uint64_t timeout_ns, bool next_epoch = false) const;
  MpiCtrl* ctrl() const { return ctrls_[size_t(rank_)]; }  // this process's, in its device memory
  MpiErrWord* err_device() const { return static_cast<MpiErrWord*>(err_->device()); }
  // The first spin-wait timeout reported on this process's GPU, as one line; empty when none.
  std::string device_error() const;

 private:
  bool initialised_mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, device_ = 0, sm_count_ = 0;
  std::string label_, versions_;
  DeviceBuffer ctrl_;
  std::vector<MpiCtrl*> ctrls_;      // every rank's ctrl as mapped here (own: local pointer)
  std::vector<void*> opened_;        // IPC mappings to close
  std::unique_ptr<MappedHost> err_;  // created once this process's GPU is current
  Stream origin_;
};

// One process's device buffers, exported to the peers through CUDA IPC and the peers' mapped, so a
// schedule's Ref resolves to a pointer for every rank (as RankBuffers does in one process).
class MpiBuffers {
 public:
  enum Slot { kInput, kOutput, kScratch, kFlags, kSlots };
  // Allocates this rank's buffers (sizes[rank]) and `flag_bytes` of zeroed flags. Collective: every
  // rank learns whether any rank lacked memory (then all throw the same input error) before the
  // handles are exchanged. share = false: no exchange (NCCL moves the data).
  MpiBuffers(const MpiWorld& world, const std::vector<BufferSizes>& sizes, int64_t flag_bytes, bool share,
             size_t reserve_bytes = size_t(1) << 30);
  ~MpiBuffers();
  MpiBuffers(const MpiBuffers&) = delete;
  MpiBuffers& operator=(const MpiBuffers&) = delete;

  void* base(int rank, Buf b) const {
    return slot(rank, b == Buf::input ? kInput : b == Buf::output ? kOutput : kScratch);
  }
  int64_t size(int rank, Buf b) const;
  void* ptr(Ref r) const { return static_cast<char*>(base(r.rank, r.buf)) + r.offset; }
  unsigned long long* flags(int rank) const { return static_cast<unsigned long long*>(slot(rank, kFlags)); }
  // Closes the mappings, then waits for every rank (collective) so no buffer is freed while mapped.
  void release();

 private:
  void* slot(int rank, Slot s) const;
  const MpiWorld& world_;
  int rank_;
  std::array<DeviceBuffer, kSlots> mine_;
  std::vector<std::array<void*, kSlots>> ptrs_;
  std::vector<std::array<int64_t, kSlots>> bytes_;
  std::vector<void*> opened_;
};

}  // namespace cclab::exec
