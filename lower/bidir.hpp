// allreduce.bidir's lowering choices (ALGORITHMS.md, "Bidirectional all-reduce"): which kernel mode runs a
// size, and each mode's launch (grid, threads, unroll, stages, PDL), from the message, the GPU's SM count and
// the tune settings. The executor launches what this says; the simulator prices the same launch.
//  - ll:      8-byte words of 4 data bytes + a 4-byte epoch flag pushed into every peer (small messages);
//  - flash:   one-shot pull of the peers' buffers (registers, or shared memory with cp.async);
//  - stream:  persistent lanes over bounded rings of slots in peer memory;
//  - push:    one-shot push with per-tile progress flags;
//  - lamport: one-shot push where a NaN sentinel marks what has not arrived;
//  - twoshot: reduce-scatter then all-gather in one kernel: rank r reduces slice r of every rank's input
//             (peer loads) and stores the result into every rank's output (peer stores), so each rank moves
//             2(n-1)/n of the message, where the one-shot modes move n-1 times it; or, with twoshot_push,
//             the reduce-scatter half stores into the owner's scratch so that only stores cross NVLink;
//  - copy:    copy engines reduce-scatter + all-gather (a schedule on the general lowering);
//  - ring:    allreduce.ring's schedule on the general lowering: each chunk travels the ring by copy engine
//             and is reduced on arrival, so each rank moves 2(n-1)/n of the message and no SM drives NVLink
//             (what NCCL runs at the largest sizes; on 4 x H200 its busbw passes the two-shot's from 512 MiB).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "algorithms/schedule.hpp"

namespace cclab::lower {

// Limits of the kernels' argument blocks and control words (exec/kernels/bidir_kernels.cuh sizes its arrays by them).
constexpr int kBidirMaxRanks = 8;
constexpr int kBidirMaxBlocks = 1024;  // flash, ll, push and lamport CTAs
constexpr int kBidirMaxLanes = 512;    // stream lanes

enum class BidirMode : uint8_t { ll, flash, stream, copy, push, lamport, twoshot, ring };
std::string_view bidir_mode_name(BidirMode m);
BidirMode parse_bidir_mode(std::string_view s);
// copy and ring run as schedules on the general lowering, not as a kernel of their own.
constexpr bool runs_as_schedule(BidirMode m) { return m == BidirMode::copy || m == BidirMode::ring; }

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
  // allreduce.bidir's choice by size: ll up to auto_ll_max bytes, auto_mid up to auto_flash_max, then
  // auto_large. The defaults are the crossovers scripts/measure.sh calibrates on 2 x H200
  // (results/h200x2/exec_calibration.csv); a run passes its own with --tune.
  int64_t auto_ll_max = 128 << 10;
  int64_t auto_flash_max = 256 << 20;
  BidirMode auto_mid = BidirMode::lamport;  // the mode between auto_ll_max and auto_flash_max
  BidirMode auto_large = BidirMode::copy;
  // The same choice on more than 2 ranks ("wide"), where one-shot modes move n-1 times the message per rank:
  // ll up to wide_ll_max, wide_mid up to wide_mid_max, then wide_large, and the ring schedule from wide_ring_min
  // (0: never). Defaults from 4 x H200 (results/h200x4/exec_allreduce_float.csv: ll fastest to 64 KiB, lamport
  // to 1 MiB); a run passes the crossovers scripts/measure.sh calibrates on its own GPU count, the ring's
  // among them (on 4 x H200 the ring's copy engines pass the two-shot's SMs from 512 MiB, by 1-5%). Never by
  // default, so that records made before the ring was a choice are priced as the plan they ran.
  int64_t wide_ll_max = 64 << 10;
  int64_t wide_mid_max = 1 << 20;
  BidirMode wide_mid = BidirMode::lamport;
  BidirMode wide_large = BidirMode::twoshot;
  int64_t wide_ring_min = 0;
  // twoshot
  int twoshot_blocks = 0;  // 0: one per SM (divided among ranks sharing a GPU)
  int twoshot_threads = 512;
  // 16-byte vectors per thread per round of the store-only variant (its best on 4 x H100 and 4 x H200: 2;
  // results/h100x4/probe_tp_*.csv, results/h200x4/exec_calibration.csv) and of the load variant (its best on
  // 4 x H200: 1, results/h200x4/probes/probe_ts_*.csv; 0: as twoshot_unroll). Two keys, so that a sweep runs each
  // variant at its own best where it loads to twoshot_load_max and stores above.
  int twoshot_unroll = 2;
  int twoshot_load_unroll = 0;
  bool twoshot_pdl = true;
  // The reduce-scatter half as stores: each rank stores every peer's slice of its input into that peer's
  // scratch (flag per tile) and reduces its own slice from local memory, so every byte crosses NVLink as a
  // posted store (the load variant's read requests travel against the stores). Half the threads store, half
  // reduce; 2 CTAs per SM. On 4 x H100: 355 GB/s busbw at 1 GiB against 323 for the load variant and 356 for
  // NCCL's ring; 1.1-1.4 x the load variant from 2 to 64 MiB.
  bool twoshot_push = true;
  // With twoshot_push, messages up to this size still take the load variant: there the store-only variant's
  // tile flags (a hop before the owner can reduce) cost more than the read requests do (4 x H200 calibration:
  // the load variant 7% faster at 1-2 MiB, the store-only 8% faster from 128 MiB). 0: store-only at every size.
  int64_t twoshot_load_max = 0;
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
  // Programmatic dependent launch: a kernel's launch overlaps the previous one on the stream
  // (griddepcontrol.wait orders the memory; the executor falls back to plain launches).
  bool ll_pdl = true;
  bool flash_pdl = true;  // the register engine
  // copy-engine pipeline
  int64_t ce_chunk = 32 << 20;
  // ce_pieces > 0: chunk = (bytes of a rank's part) / ce_pieces, clamped to [4 MiB, 64 MiB]
  // (copy engines reach ~366 GB/s on 16 MiB copies and ~389 on 64 MiB: shared/hardware/h200x2.md), so
  // large messages get large copies while the pipeline still has ce_pieces stages to overlap.
  int ce_pieces = 2;  // 0: fixed ce_chunk
  int ce_slots = 3;
  // CTAs of the copy pipeline's reduce kernels: few, so the copy engines keep their share of HBM
  // (2 x H200: 256 MiB went from 0.87 to 0.92 x sol.bidir_copy with 32 instead of 2 per SM).
  int ce_reduce_blocks = 32;
  bool ce_push = false;  // one-shot: copy engines push (put) instead of pull (get)
  // Reduce-scatter + all-gather on copy engines (each rank reduces 1/n of the data, then pushes it
  // to every peer), rather than the one-shot pull where every rank reduces everything.
  bool ce_split = true;
  int64_t ll_max_bytes = 256 << 10;  // the ll receive buffers hold this per peer and parity
  double kernel_timeout_s = 10.0;    // kernel spin-wait timeout

  // Applies the keys this path owns from "key=value,key=value" (cclab run --tune); keys of the other
  // lowering settings (lowering, fused_*, streams, launches, ...) and NCCL's (NCCL_*) are left to their readers.
  // Throws an input error naming a bad value.
  void apply(const std::string& tune);
  std::string describe(BidirMode m) const;
};

// allreduce.bidir's mode for a size.
BidirMode choose_bidir_mode(int64_t bytes, int nranks, const BidirParams& p);
// The mode an all-reduce of the bidir family runs: allreduce.bidir.<mode> forces its own; allreduce.bidir takes
// `tuned` (--tune mode=) where given, else choose_bidir_mode's.
BidirMode bidir_mode_for(std::string_view algo, int64_t bytes, int nranks, std::optional<BidirMode> tuned,
                         const BidirParams& p);
// The bytes of one lamport launch where its receive buffers hold `buffer_bytes` per peer and parity: a larger
// message runs as launches over consecutive chunks of this size (whole 256-byte vectors of lanes), every rank
// cutting the same chunks, each launch its own epoch.
int64_t lamport_chunk_bytes(int64_t buffer_bytes);

// What a mode's kernel launch looks like on one GPU.
struct BidirLaunch {
  BidirMode mode = BidirMode::ll;
  int grid = 1;        // CTAs per GPU (stream: lanes)
  int threads = 0;     // per CTA
  int unroll = 1;      // 16-byte vectors per thread per tile (the kernel instance)
  int stages = 0;      // flash cp.async engine: pipeline stages
  size_t smem = 0;     // flash cp.async engine: dynamic shared memory per CTA
  bool ldg = false;    // flash: the register engine
  bool push = false;   // twoshot: the store-only variant (BidirParams::twoshot_push, twoshot_load_max)
  bool pdl = false;    // launched with programmatic dependent launch
  int ring_lanes = 0;  // stream: lanes the ring is laid out for
};

// The GPU facts a launch depends on.
struct LaunchLimits {
  int sms = 0;    // SMs per GPU
  int share = 1;  // ranks per GPU (tests run several ranks on one GPU)
  // CTAs of a mode's kernel (at `threads`, `unroll`) that fit on the GPU at once; 0 or empty: no limit
  // beyond the grid the mode asks for (the executor asks CUDA's occupancy calculator).
  std::function<int(BidirMode mode, int threads, int unroll)> resident;
};

// The launch of `mode` for an all-reduce of `bytes` on `nranks` ranks. Throws an input error where the
// mode cannot run that size (ll beyond ll_max_bytes, lamport beyond lamport_max_bytes).
BidirLaunch bidir_launch(BidirMode mode, int64_t bytes, int nranks, bool in_place, const BidirParams& p,
                         const LaunchLimits& gpu);

// A kernel launch as the mechanisms it is made of: what the simulator prices (sim/paths_bidir.cpp), without
// knowing which mode it runs. Per GPU, for a message of `bytes` on `nranks` ranks.
struct KernelMechanisms {
  // What carries the bytes across the link: the SMs' loads from the peers, their stores into them, or LL stores
  // (a flag beside every 4 data bytes).
  enum class Link : uint8_t { loads, stores, ll_stores };
  Link link = Link::loads;
  int64_t port_bytes = 0;  // what each GPU's port carries each way: (n-1) S one-shot, 2(n-1)/n S two-shot
  int peers = 1;
  int grid = 1;                      // CTAs per GPU (persistent lanes: one each)
  double vectors = 0;                // 16-byte vectors (or 8-byte pairs) each CTA keeps in flight across the link
  int round_trips = 0;               // round trips in series: the loads' return, stores landing, flags after stores
  std::string_view waits;            // what those round trips wait for, in words
  int handshakes = 0;                // start / finish handshakes with the same CTA of every peer
  bool stores_acknowledged = false;  // a further batch of stores into the peers acknowledged before a release
  // The reduction of what landed: within the transfer (every byte reduced as it is loaded), or beside it (the
  // slower of the two, then the last CTA's share at all SMs' rate or at one CTA's).
  enum class Reduce : uint8_t { within, beside, beside_one_cta };
  Reduce reduce = Reduce::within;
  int64_t wave_bytes = 0;  // > 0: the grid moves this much per wave, each further wave after a round trip
  int64_t tile_bytes = 0;  // > 0: a CTA stores this much per flag, each further tile after a round trip
  // > 0: persistent lanes pass units of this size through rings, half of a lane's threads storing one unit to
  // each peer in turn (a fenced flag per unit and peer) while the other half reduce what the peers stored.
  int64_t unit_bytes = 0;
  bool pdl = false;  // launched with programmatic dependent launch
  int launches = 0;  // launches per replay
};
KernelMechanisms kernel_mechanisms(const BidirLaunch& l, int64_t bytes, int nranks, bool in_place,
                                   const BidirParams& p);

// The copy-engine pipeline (algorithms/copy_pipeline.hpp) with the ce_* parameters, run by the general
// lowering.
Schedule bidir_copy_schedule(int nranks, int64_t count, DType dtype, RedOp op, bool in_place, const BidirParams& p);

// sol.bidir_copy: rank r's copy engine pushes its input into rank r-1's output, all at once
// (S bytes each way for 2 GPUs): the speed of light of the link in both directions.
Schedule sol_bidir_copy_schedule(int nranks, int64_t count, DType dtype, int chunks);

}  // namespace cclab::lower
