// The shim's cclab path for one process that drives several GPUs (nccl-tests -g N; threads that each call
// ncclCommInitRank with one shared ncclUniqueId). The communicators of one ncclCommInitAll call, or of one
// unique id, form a clique; when every rank of a clique lives in this process, on its own GPU, with P2P
// access between every pair and at most 8 ranks, the clique gets allreduce.bidir's state (control words,
// ll and lamport receive buffers, an error word) and ncclAllReduce runs the rank-local modes (ll, lamport):
// each rank's kernel stores into its peers' receive buffers and reduces into its own output, so it is
// launched on the caller's stream as that rank's call arrives, in a group or not, captured or not.
// Ranks in other processes on one node (one process per GPU) take the multi-process path (mp.hpp): each process
// allocates its own rank's buffers, exports them with CUDA IPC, and the ranks agree collectively, through the
// real NCCL on the communicator itself, whether every rank can run cclab; otherwise every call forwards.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "lower/bidir.hpp"

namespace cclab::shim {

struct Clique;

// What the route needs to know about a communicator, and what the launch needs.
struct CommView {
  std::shared_ptr<Clique> clique;  // null: a communicator the shim did not see created
  int rank = -1;
  int nranks = 0;
  bool probed = false;      // the facts were established (ranks, devices, P2P)
  bool ready = false;       // every pair has P2P and the clique's buffers exist: the cclab path may run
  std::string note;         // why not probed
  int64_t lamport_cap = 0;  // ranks in other processes: the preallocated lamport bytes (0: they grow)
};

// The real NCCL's functions the multi-process setup calls (the handle exchange), resolved by nccl_shim.cpp.
struct RealNccl {
  ncclResult_t (*allgather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
};

// Once per process, before any other call here: CCLAB_DEBUG's setting, and CCLAB_TUNE (allreduce.bidir's
// settings as `cclab run --tune` takes them; a bad value is one line on stderr and leaves every
// communicator not probed).
void configure(bool debug, const RealNccl& real);
// The kernel mode allreduce.bidir's 2-rank table picks for `bytes` (lower::choose_bidir_mode); lamport (in chunks)
// where the table picks the copy-engine schedule, which the shim does not run.
lower::BidirMode size_mode(size_t bytes);

// After a successful ncclCommInitAll: its communicators are one clique (rank i on devlist[i], or GPU i).
void comms_created(const ncclComm_t* comms, int ndev, const int* devlist);

// Around a blocking ncclCommInitRank: `join` before the real call (the device is the current one, as NCCL's),
// `joined` after it. The real init returns only once every rank has entered it, so when the first rank
// returns, every rank of this process has joined: a clique with fewer than nranks joins has ranks in other
// processes.
struct Joining {
  std::shared_ptr<Clique> clique;
  int rank = -1;
};
// A clique with ranks in other processes runs the collective setup (mp.hpp) here, on the communicator: every
// rank of every process must get here, which the real NCCL's blocking init guarantees.
Joining join(const ncclUniqueId& id, int nranks, int rank);
void joined(const Joining& j, ncclResult_t result, ncclComm_t comm);
// The joins of one group (ncclCommInitRank inside ncclGroupStart/End, completed by the group's end), at once:
// their collective setups run together, since one thread drives all of them.
void joined_group(const std::vector<Joining>& js, ncclResult_t result, const std::vector<ncclComm_t>& comms);

CommView view(ncclComm_t comm);

// Enqueues `v.rank`'s kernel of `mode` (ll or lamport) on `stream`. An error returns an NCCL code with one
// line on stderr, and fails the clique: later calls on any of its ranks return an error too.
ncclResult_t run_allreduce(const CommView& v, lower::BidirMode mode, const void* send, void* recv, size_t count,
                           ncclDataType_t dtype, cudaStream_t stream);

// Whether the communicator's clique failed: a launch error, or a kernel spin-wait that timed out (the error
// word, read from host memory). The first failure of a clique is reported on stderr once, with `where`.
bool failed(ncclComm_t comm, const char* where);

// After a successful ncclCommDestroy / ncclCommAbort: the clique's state is freed with its last communicator.
void forget(ncclComm_t comm);

}  // namespace cclab::shim
