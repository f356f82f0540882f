// The ranks that collective matmul and sparse all-reduce run on: one process driving every GPU of the
// node, rank r on CUDA device device(r). Several ranks may share one device (correctness runs of 4 or
// 8 ranks on 2 GPUs); timings from such runs are marked as not meaningful.
//
// This is the small interface these two runners need from a communicator. It is deliberately narrow
// so that the executor's Communicator can hand over its device list and NCCL communicators
// (RankGpus(devices, comms)) instead of this class creating its own.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

namespace cclab::exec {

class RankGpus {
 public:
  // nranks ranks on the visible GPUs, rank r on device r % ngpus. Throws an environment error when no
  // GPU is visible, and an input error when nranks exceeds the GPUs and allow_share is false.
  static RankGpus create(int nranks, bool allow_share);

  // Explicit placement; `comms` (optional, one per rank, owned by the caller) are NCCL communicators
  // of these ranks. Enables peer access between every pair of distinct devices.
  explicit RankGpus(std::vector<int> device_of_rank, std::vector<ncclComm_t> comms = {});
  ~RankGpus();
  RankGpus(RankGpus&&) noexcept;
  RankGpus(const RankGpus&) = delete;
  RankGpus& operator=(const RankGpus&) = delete;
  RankGpus& operator=(RankGpus&&) = delete;

  int nranks() const { return int(device_.size()); }
  int device(int rank) const { return device_.at(rank); }
  // True when two ranks run on the same device: NCCL cannot serve them and timings mean little.
  bool shared() const { return shared_; }
  // NCCL communicator of `rank`, created on first use (ncclCommInitAll over the devices, with
  // NCCL_NVLS_ENABLE=0: NVLink multicast must stay off on the lent machines). Throws an environment
  // error when ranks share a device (NCCL allows one rank per device per communicator).
  ncclComm_t nccl(int rank);
  bool has_nccl() const { return !shared_; }
  // "NVIDIA H200 x2": the device column of measured records.
  std::string device_label() const;

 private:
  std::vector<int> device_;
  std::vector<ncclComm_t> comms_;
  bool own_comms_ = false;
  bool shared_ = false;
};

}  // namespace cclab::exec
