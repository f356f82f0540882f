// Device side of the MPI mode's cross-process dependencies: epoch-valued flags in device memory that
// the peers map through CUDA IPC. CUDA events cannot order streams of different processes, so a
// producing step is followed by a one-thread "signal" kernel that stores the iteration's epoch into
// each consuming rank's flag (after a system-scope fence), and a consuming step is preceded by a
// "wait" kernel that spins (ld.acquire.sys) on its local flag until the epoch arrives, or reports a
// timeout naming the rank and the op. The device barrier that ends every iteration bumps each
// process's epoch on the device, so a CUDA graph replays without host involvement and no flag is
// ever reset.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cclab::exec {

constexpr int kMpiMaxRanks = 32;       // ranks of one node that a barrier or signal addresses
constexpr int kMpiMaxFlagsPerOp = 16;  // flags one wait or signal kernel handles; more: more launches

// Per-process control words (device memory, exported to the peers).
struct MpiCtrl {
  unsigned long long epoch;    // 1 + iterations this process finished (bumped by the closing barrier)
  unsigned long long bar_gen;  // device barriers entered by this process
  unsigned long long pad[6];
  unsigned long long bar_slot[kMpiMaxRanks];  // bar_slot[p]: the last barrier generation rank p reached
};

// Written once, by the first wait that times out (mapped host memory, read by the host after a hang).
struct MpiErrWord {
  uint32_t code;    // 0: none, 1: a flag wait, 2: a device barrier
  int32_t rank;     // the waiting rank
  int32_t op;       // its op (flag waits), or -1
  int32_t peer;     // the rank waited for
  int32_t peer_op;  // the op waited for (flag waits), or -1
  int32_t pad;
  unsigned long long want, got;
};

struct MpiFlagWait {
  const unsigned long long* flag;  // local memory, written by `peer`
  int32_t peer, peer_op;
};

// Stores *epoch into each of `flags` (peer memory) after a system-scope fence.
void launch_mpi_signal(cudaStream_t s, const unsigned long long* epoch, unsigned long long* const* flags, int n);
// Spins until every flag holds at least *epoch; after timeout_ns reports in *err and returns.
void launch_mpi_wait(cudaStream_t s, const unsigned long long* epoch, const MpiFlagWait* waits, int n, int rank, int op,
                     MpiErrWord* err, uint64_t timeout_ns);
// All ranks: a device-side barrier through the ctrl words (ctrls[rank] is local, the others mapped).
// next_epoch: the barrier closes an iteration; once every rank arrived, ++ctrls[rank]->epoch (the
// next iteration's flags carry the new value, and no rank can still wait on an old one).
void launch_mpi_barrier(cudaStream_t s, MpiCtrl* const* ctrls, int nranks, int rank, bool next_epoch, MpiErrWord* err,
                        uint64_t timeout_ns);

}  // namespace cclab::exec
