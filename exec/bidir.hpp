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

#include "exec/device.hpp"
#include "exec/workload.hpp"

namespace cclab::exec {

enum class BidirMode : uint8_t { ll, flash, stream, copy, push, lamport };
std::string_view bidir_mode_name(BidirMode m);
BidirMode parse_bidir_mode(std::string_view s);

struct BidirParams {
  // flash
  int flash_blocks = 0;  // 0: 2 per SM (divided among ranks sharing a GPU)
  int flash_threads = 512;
  int flash_stages = 4;
  int flash_unroll = 2;  // 16-byte vectors per thread per tile (cp.async engine)
  // "ldg": peer tiles through registers with plain 16-byte loads (2 ranks); "cp.async": through
  // shared memory with cp.async, several stages deep (any rank count).
  std::string flash_engine = "ldg";
  int flash_ldg_unroll = 4;
  // allreduce.bidir's choice by size: ll up to auto_ll_max bytes, flash up to auto_flash_max, then
  // auto_large. Defaults: the choice scripts/measure.sh calibrated on 2 x H200 at commit 1da3bb7
  // (results/h200x2/exec_calibration.csv, with lamport_threads=256 and ce_pieces=2); measure.sh
  // refits them in every run.
  int64_t auto_ll_max = 32 << 10;
  int64_t auto_flash_max = 128 << 20;
  BidirMode auto_mid = BidirMode::lamport;  // the mode between auto_ll_max and auto_flash_max
  BidirMode auto_large = BidirMode::copy;
  // push
  int push_blocks = 0;     // 0: 2 per SM (divided among ranks sharing a GPU)
  int push_threads = 512;  // half producers, half consumers
  int push_unroll = 4;     // 16-byte vectors per producer thread per tile
  bool push_pdl = true;
  // lamport
  int lamport_blocks = 0;  // 0: one per SM (fewer when ranks share a GPU)
  int lamport_threads = 256;
  int lamport_unroll = 2;      // 16-byte vectors per thread per tile
  int lamport_ahead = 2;       // tiles a thread sends before it receives the first
  bool lamport_split = false;  // out of place: half the threads send, half receive
  bool lamport_pdl = true;
  int64_t lamport_max_bytes = 256 << 20;  // 2 receive buffers of this per peer, allocated as used
  // stream
  int lanes = 0;  // 0: one per SM
  int slots = 4;
  int64_t slot_bytes = 256 << 10;
  int stream_threads = 512;  // half producers, half consumers
  // ll
  int ll_blocks = 0;  // 0: enough for one word pair per thread
  int ll_threads = 256;
  // Launch ll kernels with programmatic dependent launch, so a kernel's launch overlaps the previous
  // one on the stream (griddepcontrol.wait orders the memory; falls back to plain launches).
  bool ll_pdl = true;
  bool flash_pdl = true;  // same for the flash register engine
  // copy-engine pipeline
  int64_t ce_chunk = 32 << 20;  // the calibrated best (exec_calibration.csv): 32 MiB copies
  // ce_pieces > 0: chunk = (bytes of a rank's part) / ce_pieces, clamped to [4 MiB, 64 MiB]
  // (copy engines reach ~366 GB/s on 16 MiB copies and ~389 on 64 MiB: hardware/h200x2.md), so
  // large messages get large copies while the pipeline still has ce_pieces stages to overlap.
  int ce_pieces = 2;  // 0: fixed ce_chunk
  int ce_slots = 3;
  // CTAs of the copy pipeline's reduce kernels: few, so the copy engines keep their share of HBM
  // (2 x H200, session 2 call 1: 256 MiB went from 0.87 to 0.92 x sol.bidir_copy with 32 instead of
  // 2 per SM). `--tune reduce_blocks=` overrides it.
  int ce_reduce_blocks = 32;
  bool ce_push = false;  // one-shot: copy engines push (put) instead of pull (get)
  // Reduce-scatter + all-gather on copy engines (each rank reduces 1/n of the data, then pushes it
  // to every peer), rather than the one-shot pull where every rank reduces everything.
  bool ce_split = true;
  int64_t ll_max_bytes = 256 << 10;
  // Kernel spin-wait timeout.
  double kernel_timeout_s = 10.0;
  // Applies "key=value,key=value" overrides (cclab run --tune); throws an input error naming an
  // unknown key or bad value.
  void apply(const std::string& tune);
  std::string describe(BidirMode m) const;
};

// allreduce.bidir's choice by size (measured crossovers on 2 x H200: see exec/bidir.cpp).
BidirMode choose_bidir_mode(int64_t bytes, DType dtype, int nranks, const BidirParams& p);

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
  void* error_word() const { return err_.device(); }
  int ring_lanes() const { return ring_lanes_; }
  // Throws an environment error describing the first kernel timeout, if any (and clears it).
  void check_errors(const std::string& what);

 private:
  const Communicator& comm_;
  BidirParams params_;
  std::vector<DeviceBuffer> ctrl_, ll_, ring_, push_, lamport_;
  int64_t push_stride_ = 0, lamport_stride_ = 0;
  MappedHost err_;
  int ring_lanes_ = 0, ring_slots_ = 0;
  int64_t ring_slot_bytes_ = 0;
};

// allreduce through one of the fused modes (ll, flash, stream); `copy` goes through
// make_bidir_copy_workload (a schedule on the general path).
class BidirWorkload : public Workload {
 public:
  BidirWorkload(BidirContext& ctx, BidirMode mode, CollSpec spec);
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
  BidirMode mode_;
  CollSpec spec_;
  std::unique_ptr<RankBuffers> buffers_;
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
  void enqueue();  // one launch per rank on its stream
  int grid_ = 0;
  bool ldg_ = false;
  int threads_ = 0, stages_ = 0, unroll_ = 1;  // flash, after fitting shared memory
  bool pdl_ok_ = true;                         // false when ranks share a GPU
  size_t smem_ = 0;
};

// The copy-engine pipeline (algorithms/copy_pipeline.hpp) with the ce_* parameters, run by the general
// lowering.
Schedule bidir_copy_schedule(int nranks, int64_t count, DType dtype, RedOp op, bool in_place, const BidirParams& p);

// sol.bidir_copy: rank r's copy engine pushes its input into rank r-1's output, all at once
// (S bytes each way for 2 GPUs): the speed of light of the link in both directions.
Schedule sol_bidir_copy_schedule(int nranks, int64_t count, DType dtype, int chunks);

}  // namespace cclab::exec
