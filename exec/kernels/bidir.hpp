// Fused all-reduce kernels for NVLink-connected GPUs (ALGORITHMS.md, "Bidirectional all-reduce"):
//  - ll:     small messages. One kernel per GPU pushes its data into every peer's receive buffer as
//            8-byte words of 4 data bytes + a 4-byte epoch flag, and reduces what arrives: one
//            one-way NVLink latency, no handshake, double-buffered by epoch parity; graph-safe.
//  - flash:  one-shot pull. Many CTAs stream the peers' buffers through shared memory with cp.async
//            (several stages in flight) and reduce with the local data; a start and a finish
//            handshake per CTA pair are the only cross-GPU synchronisation (plus, in place, a
//            per-tile progress flag so no rank overwrites a tile a peer has not fetched yet).
//  - stream: persistent lanes. Each lane owns a ring of slots in each peer's memory; producers wait
//            for a free slot, store, fence (system scope) and publish a sequence number; consumers
//            wait for it, reduce from local memory, and release the slot. Bounded scratch, any size.
//  - push:   one-shot push. Half of each CTA stores the local input into every peer's receive
//            buffer over NVLink (posted stores, no load round trips) and publishes per-tile
//            progress flags; the other half waits for the peers' flags and reduces tile by tile,
//            overlapping the transfer. Double-buffered by epoch parity; no handshake.
//  - lamport: one-shot push where the data is its own flag: receive buffers hold a NaN sentinel
//            until a peer's 16-byte stores land (senders rewrite that one NaN pattern), so a
//            receiver polls the data itself: one one-way trip and full payloads, no flag, no
//            fence, no handshake; receivers reset what they read; two buffers by epoch parity.
//  - twoshot: reduce-scatter + all-gather in one kernel for n GPUs: each rank reduces its 1/n slice
//            (peer loads) and stores it into every rank's output (peer stores); a start and a finish
//            handshake per CTA pair; or (twoshot_push) the reduce-scatter half stores each peer's slice into
//            its scratch with a flag per tile, so only stores cross NVLink.
//  - copy:   copy engines pull peer chunks into local scratch, pipelined with a local reduce kernel
//            (cross-GPU dependencies as CUDA events), for the largest sizes where copy engines reach
//            more of the link than SM loads do.
// Every spin-wait has a timeout that records rank, block/lane and slot in an error word the host
// reads after each synchronisation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/runtime/device.hpp"
#include "exec/runtime/workload.hpp"
#include "lower/bidir.hpp"

namespace cclab::exec {

using lower::BidirLaunch;
using lower::BidirMode;
using lower::BidirParams;

// The most CTAs of a mode's kernel (at `threads`, `unroll`) that fit on `device` at once: what
// lower::LaunchLimits::resident asks (0 for modes without such a limit).
int bidir_resident_ctas(BidirMode mode, int threads, int unroll, DType dtype, RedOp op, int device);

// Per-rank control words, receive buffers and rings: allocated once per communicator and kept
// across sizes, so epochs and sequence numbers stay monotonic (graph replays read them from device
// memory).
class BidirContext {
 public:
  BidirContext(const Communicator& comm, const BidirParams& params);
  ~BidirContext();
  const Communicator& comm() const { return comm_; }
  const BidirParams& params() const { return params_; }
  // Ring memory for the stream mode, (re)allocated when the layout grows; callers synchronise first.
  void ensure_ring(int lanes, int slots, int64_t slot_bytes);
  void* ctrl(int rank) const { return ctrl_[size_t(rank)].get(); }
  void* ll(int rank) const { return ll_[size_t(rank)].get(); }
  void* ring(int rank) const { return ring_[size_t(rank)].get(); }
  // Push-mode receive buffers: 2 parities x (nranks - 1) sources x stride bytes per rank, grown
  // (never shrunk) to the largest message; callers synchronise first.
  void ensure_push(int64_t stride);
  void* push(int rank) const { return push_[size_t(rank)].get(); }
  int64_t push_stride() const { return push_stride_; }
  // Lamport-mode receive buffers: 2 parities x (nranks - 1) sources x stride bytes per rank, all
  // sentinel when (re)allocated, grown (never shrunk) to the largest message; callers synchronise.
  void ensure_lamport(int64_t stride);
  void* lamport(int rank) const { return lamport_[size_t(rank)].get(); }
  int64_t lamport_stride() const { return lamport_stride_; }
  // Twoshot store-only scatter buffers: (nranks - 1) sources x stride bytes (one slice) per rank, grown
  // (never shrunk) to the largest message; callers synchronise first.
  void ensure_scatter(int64_t stride);
  void* scatter(int rank) const { return scatter_[size_t(rank)].get(); }
  int64_t scatter_stride() const { return scatter_stride_; }
  void* error_word() const { return err_.device(); }
  int ring_lanes() const { return ring_lanes_; }
  // Throws an environment error describing the first kernel timeout, if any (and clears it).
  void check_errors(const std::string& what);

 private:
  const Communicator& comm_;
  BidirParams params_;
  std::vector<DeviceBuffer> ctrl_, ll_, ring_, push_, lamport_, scatter_;
  int64_t push_stride_ = 0, lamport_stride_ = 0, scatter_stride_ = 0;
  MappedHost err_;
  int ring_lanes_ = 0, ring_slots_ = 0;
  int64_t ring_slot_bytes_ = 0;
};

// allreduce through one of the fused modes (ll, flash, stream); `copy` goes through
// make_bidir_copy_workload (a schedule on the general path).
class BidirWorkload : public Workload {
 public:
  // Runs `launch` (lower::bidir_launch) on every rank's GPU.
  BidirWorkload(BidirContext& ctx, const BidirLaunch& launch, CollSpec spec);
  const CollSpec& spec() const override { return spec_; }
  const RankBuffers& buffers() const override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  // One graph per GPU: the kernels synchronise across GPUs themselves, so iterations need no
  // cross-GPU graph edges (as NCCL's).
  std::unique_ptr<Replay> capture(cudaStream_t origin, int iters) override;
  void check_device_errors() override;
  std::string hang_report() override;
  std::string note() const override;

 private:
  BidirContext& ctx_;
  CollSpec spec_;
  std::unique_ptr<RankBuffers> buffers_;
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
  void enqueue();  // one launch per rank on its stream
  BidirLaunch launch_;
};

// ---- One rank at a time, for callers that own the ranks' state themselves: the NCCL shim (shim/) and the MPI
// mode (one process per GPU). A rank's kernel is launched as that rank's own call arrives, on the caller's stream.
// ll and lamport are rank-local: they store into the peers' receive buffers and read no peer's user buffer. flash,
// stream, push and twoshot also read (or write) the peers' user buffers, so they run where the caller can map those
// (the MPI mode's buffers, exchanged through CUDA IPC once per size).

// Bytes of one rank's control words and ll receive buffer (both zeroed before first use), and of the
// error word (mapped host memory, zeroed), as BidirContext allocates them.
size_t bidir_ctrl_bytes();
size_t bidir_ll_bytes(const BidirParams& p);
size_t bidir_error_bytes();

// The receive buffer of one rank that a launch of `bytes` on `nranks` ranks needs beyond ll's, as BidirContext sizes
// it: lamport's and push's 2 parities x (nranks - 1) sources x stride, twoshot_push's (nranks - 1) slices x stride,
// stream's (nranks - 1) x lanes x slots x slot_bytes ring (stride 0); none for ll, flash and the loading twoshot.
struct BidirRecvBuffer {
  int64_t stride = 0, bytes = 0;
};
BidirRecvBuffer bidir_recv_buffer(const BidirLaunch& launch, const BidirParams& p, int64_t bytes, int nranks);

// Every rank's state as one rank's kernel sees it. lamport[q]: 2 parities x (nranks - 1) sources x
// lamport_stride bytes, all 0xFF when allocated (null and 0 while no lamport launch needs them). in, out, ring,
// push, scatter: only for the modes that need them (null elsewhere); a rank's own in and out are the call's.
struct BidirRankPeers {
  int nranks = 0;
  void* ctrl[lower::kBidirMaxRanks] = {};
  void* ll[lower::kBidirMaxRanks] = {};
  void* lamport[lower::kBidirMaxRanks] = {};
  int64_t lamport_stride = 0;
  const void* in[lower::kBidirMaxRanks] = {};  // flash, twoshot: the peers' inputs
  void* out[lower::kBidirMaxRanks] = {};       // twoshot: the peers' outputs
  void* ring[lower::kBidirMaxRanks] = {};      // stream
  int ring_lanes = 0;
  void* push[lower::kBidirMaxRanks] = {};  // push
  int64_t push_stride = 0;
  void* scatter[lower::kBidirMaxRanks] = {};  // twoshot_push
  int64_t scatter_stride = 0;
  void* err = nullptr;  // the error word as kernels address it
  double timeout_s = 10.0;
};

// Enqueues rank `rank`'s kernel of `launch` (from lower::bidir_launch; not copy or ring, which run as schedules) on
// `stream`, which belongs to the current device. `in` may equal `out`; both 16-byte aligned. Returns the launch's
// error, or cudaErrorInvalidValue for a mode whose buffers `peers` lacks, a size they cannot hold, or a bad rank.
cudaError_t launch_bidir_rank(const BidirLaunch& launch, const BidirParams& p, const BidirRankPeers& peers, int rank,
                              const void* in, void* out, int64_t count, DType dtype, RedOp op, cudaStream_t stream);

// The kernel timeout an error word (host address) records, in BidirContext::check_errors' words; "" if none.
// The word is left as it is.
std::string bidir_timeout_text(const void* err_host);

using lower::bidir_copy_schedule;
using lower::sol_bidir_copy_schedule;

}  // namespace cclab::exec
