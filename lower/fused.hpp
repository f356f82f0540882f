// The fused small-message path: a whole schedule executed by ONE kernel launch per GPU.
// This header is the encoding, plain data with no CUDA in it (tested on the CPU): the schedule's ops
// are placed on lanes (one lane per (rank, channel), ops of a lane in emission order, run by a group
// of CTAs), and every dependency that the lane order does not already imply becomes a wait on a
// flag slot. Flags hold epochs: the producer's CTA group stores the current epoch into the slot, in
// the memory of every GPU that waits on it (consumers poll local memory), after the op's data is
// written; a consumer spins until the slot holds at least the current epoch. The epoch is a device
// counter the kernel bumps itself, so CUDA-graph replays need no host work and no flag reset.
//
// Safety between back-to-back launches (no host or graph edge orders the GPUs' launches):
//  - end waits: a GPU's launch does not finish before every op of other GPUs that reads or writes
//    its ranks' memory has completed (so, as with NCCL, a GPU's stream sees its buffers final and
//    free when the collective is done on that stream);
//  - start waits: before a lane first touches another GPU's memory it waits for that GPU's start
//    flag of this epoch (that GPU finished the previous launch, end waits included), so no write of
//    epoch e+1 lands in memory a peer still reads in epoch e.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace cclab::lower {

enum class FusedKind : uint8_t {
  copy,    // put, get, copy: dst = src (any of them may be on a peer GPU)
  reduce,  // dst = src redop src2, accumulated in float
  scale,   // dst = dst / nranks (RedOp::avg, after every op of every rank)
};

struct FusedOp {
  FusedKind kind = FusedKind::copy;
  OpId op = kNoOp;  // the schedule op (kNoOp for scale)
  int32_t rank = 0;
  Ref dst, src, src2;  // resolved (in-place alias applied)
  int64_t bytes = 0;
  uint32_t wait_begin = 0, wait_count = 0;  // slots to wait for (FusedDevice::waits)
  int32_t slot = -1;                        // flag slot published when the op is complete, or -1
  // Sliced (FusedOptions::slices): each CTA g of the lane publishes slot + g once its own part is written,
  // with no group arrival; the op owns the lane's `ctas` slots from `slot` on.
  bool sliced = false;
  uint32_t publish_mask = 0;  // devices (FusedProgram::devices indices) the flag goes to
  int32_t lane = 0;           // index into FusedProgram::lanes
  int32_t pos = 0;            // position within the lane
};

// A lane: the ops of one (rank, channel group), run in order by `ctas` CTAs that split each op's bytes.
struct FusedLane {
  int32_t rank = 0, channel = 0, device = 0;  // device: index into FusedProgram::devices
  uint32_t op_begin = 0, op_count = 0;        // into FusedDevice::ops of its device
  int32_t ctas = 1;
  int32_t cta_begin = 0;  // first CTA of the group within its device's launch
};

// A wait entry (FusedDevice::waits) with this bit set waits for slot (entry & ~kSliceWait) + g, g being the
// waiting CTA's index within its lane: the part of a sliced op that the same CTA index of its lane wrote.
constexpr int32_t kSliceWait = 1 << 30;

// Each op's bytes are split among its lane's CTAs in whole 16-byte units, whatever the pointers' alignment (the
// kernel and the slicing agree on it): CTA g of k takes [lo, hi).
inline void fused_share(int64_t bytes, int g, int k, int64_t& lo, int64_t& hi) {
  const int64_t units = (bytes + 15) / 16, per = (units + k - 1) / k;
  lo = std::min(bytes, int64_t(g) * per * 16);
  hi = std::min(bytes, int64_t(g + 1) * per * 16);
}

struct FusedDevice {
  int gpu = 0;                  // CUDA device id
  std::vector<int32_t> lanes;   // FusedProgram::lanes indices, in CTA order
  std::vector<FusedOp> ops;     // lane-major: each lane's ops contiguous, in lane order
  std::vector<int32_t> waits;   // slot ids
  std::vector<int32_t> finals;  // end waits: slots CTA 0 waits for before the launch completes
  int32_t ctas = 1;             // CTAs of the launch (at least 1: it publishes the start flag)
};

struct FusedProgram {
  int nranks = 0;
  std::vector<FusedDevice> devices;  // one launch each, sorted by CUDA device id
  std::vector<FusedLane> lanes;
  std::vector<int32_t> rank_device;  // index into devices for each rank
  // Flag slots, the same numbering on every GPU: [0, devices) are the GPUs' start flags, then one
  // per op that something waits for.
  int32_t nslots = 0;
  // Who publishes each slot: (device index, op index within that device), or (device, -1) for a
  // start flag. For hang reports.
  struct SlotOwner {
    int32_t device = 0, op = -1;
  };
  std::vector<SlotOwner> slot_owner;
  int64_t waits = 0, start_waits = 0, publishes = 0;  // totals, for notes and tests
  int64_t sliced_waits = 0;                           // of `waits`: per-CTA waits on sliced ops
  int64_t op_waits = 0;  // waits of an op for a whole other op (each counted once, however many parts it has)
  // The longest chain of cross-GPU flag hops through the program (start waits, dependencies, end
  // waits; same-GPU waits count 0): with the launch, what the time of a small message is made of.
  int32_t critical_hops = 0;

  int ndevices() const { return int(devices.size()); }
};

struct FusedOptions {
  std::vector<int> rank_device;  // GPU of each rank (size = nranks); empty: rank r on GPU r
  int max_ctas = 132;            // CTAs one launch may use (all must be resident: H200 has 132 SMs)
  int max_lanes_per_rank = 16;   // channels beyond this share a lane (channel % max)
  // Bytes per CTA of a lane's largest op: a lane whose ops are larger gets more CTAs (up to its share
  // of max_ctas). One CTA of 512 threads keeps 32 KiB of 16-byte loads in flight (4 per thread).
  int64_t cta_bytes = 32 << 10;
  // A lane with several CTAs lets them drift apart by ops; an op that touches a region an earlier
  // op of the lane touched (read after write, write after read or write) waits for that op's flag.
  // Beyond this many ops back, it waits for the previous op instead of scanning further.
  int conflict_window = 64;
  // A lane gets several CTAs only when that saves more data time than its group synchronisations
  // cost (ops that touch what an earlier op of the lane touched make all its CTAs wait for a flag).
  // Estimated on 2 x H200 (docs/findings/2026-11-22-occupancy-push-fused-path.md): alltoall.hier on 2 ranks took
  // 12.9 us at 16 KiB (one CTA per lane) and 26 us at 64 KiB (2 CTAs, 4 such waits per lane): ~3 us per group
  // wait; one CTA moves 32 KiB in flight per ~1.3 us NVLink round: ~25 GB/s.
  double group_wait_s = 3e-6;
  double cta_bytes_per_s = 25e9;
  // Per-CTA flags between ops whose CTAs split the same bytes alike (same size, same CTA count, the bytes one
  // writes and the other reads or writes at the same offsets): CTA g of the consumer waits only for CTA g of the
  // producer, and a lane's CTAs run ahead of each other through such ops instead of meeting at every flag.
  // Unset: on where the program spans more than 2 GPUs (measured there; 2-GPU programs keep group flags).
  std::optional<bool> slices;
};

// Throws an input error for schedules this path does not run (compute ops, library lowering, more
// than 32 GPUs) and an internal error for forward dependencies.
FusedProgram encode_fused(const Schedule& s, const FusedOptions& options);

// One line per op, for `--dump-plan`-style diagnostics and test messages.
std::string describe(const Schedule& s, const FusedProgram& p);

// The fused kernel's launch bound (threads per CTA) and the CTAs its per-launch tables hold.
constexpr int kFusedMaxThreads = 512;
constexpr int kFusedMaxCtas = 144;  // >= the SMs of an H100/H200 (132)

enum class LoweringMode : uint8_t { plan, fused, automatic };

struct FusedParams {
  LoweringMode lowering = LoweringMode::automatic;
  // lowering=auto: fused up to this many bytes (the collective's nccl-tests size), the general
  // lowering above. On 2 x H200 (scripts/gpu_fused.sh) the fused path was faster than the
  // general lowering at every size up to 1 MiB for every 2-rank schedule except the kernel-only
  // reduces (see use_fused below) and broadcast at >= 64 KiB (within 25%).
  int64_t fused_max = 1 << 20;
  // The same crossover on more than 2 ranks. On 4 x H200 (docs/findings/2026-11-26-four-gpus-twoshot.md) the
  // general lowering's cross-GPU graph edges cost ~8 us each against ~3 on 2 GPUs, and a general plan of 2-64 MiB
  // stalls on them (reducescatter.hier ~650 us flat from 2 MiB), while the fused path reached 0.6-0.9 x NCCL there;
  // the general lowering is ahead again from 64 MiB for some schedules (allgather.ring, allreduce.ring).
  int64_t wide_fused_max = 16 << 20;
  // Above it, on more than 2 GPUs, a one-round schedule (no op waits for another, and every GPU sends
  // to its peers) stays fused up to this size: its SM stores drive every NVLink port at once, where the
  // general lowering's copy-engine copies into one peer run in turn. On 4 x H200 and 4 x H100
  // (results/*/probes_mid/) alltoall.direct ran 1.04-1.30 x NCCL fused at 32-128 MiB, 0.88-0.99 x general.
  int64_t wide_round_fused_max = 128 << 20;
  // Above wide_fused_max, on more than 2 GPUs, a schedule whose every wait for another op is per CTA
  // (every_wait_per_cta) stays fused up to this size: its lanes' CTAs never meet. On 4 x H200 and 4 x H100
  // (docs/findings/2026-11-28-per-cta-flags-four-gpus.md) the rings ran 0.80-1.08 x NCCL's time so
  // at 16-256 MiB, against 0.96-1.82 x under the general lowering (0.92-1.09 x either way at 512 MiB-1 GiB); the
  // trees, whose steps differ in size and wait for whole ops, ran 1.2-2.4 x slower fused than general at 32-128 MiB.
  int64_t wide_sliced_fused_max = 256 << 20;
  // ... where its ops move at least this much on average: each op pays a flag hop and a publish (a few us), which
  // the pipelines' 512 KiB chunks do not amortise (the pipeline broadcast: 2.0-2.8 x NCCL's time fused with per-CTA
  // flags at 32-128 MiB, 1.25-1.5 x general).
  int64_t sliced_op_min = 1 << 20;
  int threads = kFusedMaxThreads;  // per CTA (at most the kernel's launch bound)
  int64_t cta_bytes = 32 << 10;    // FusedOptions::cta_bytes
  int max_ctas = 0;                // per launch; 0: one per SM
  bool pdl = true;                 // programmatic dependent launch (overlap with the previous kernel)
  // fused_fence=sc: a fence.sc.sys (__threadfence_system) before every flag store, on top of the
  // release store (the first GPU run's version: zero wrong, ~2 us per flag hop); default "release":
  // the barrier + st.release.sys alone, which the PTX memory model makes sufficient.
  bool sc_fence = false;
  std::optional<bool> slices;  // FusedOptions::slices (fused_slices=1 or 0)
  double timeout_s = 10.0;     // kernel spin-wait timeout

  // Reads the keys this path owns from "key=value,..." (lowering, fused_max, wide_fused_max, wide_round_fused_max,
  // wide_sliced_fused_max, sliced_op_min, fused_threads, fused_cta_bytes, fused_ctas, fused_pdl, fused_fence,
  // fused_slices, fused_timeout; kernel_timeout is read and kept) and returns the string without them; throws an input
  // error naming a bad value.
  std::string apply(const std::string& tune);
  // Whether `bytes` on `nranks` ranks runs fused under this mode (by size only).
  bool use_fused(int64_t bytes, int nranks = 2) const {
    return lowering == LoweringMode::fused ||
           (lowering == LoweringMode::automatic && bytes <= (nranks > 2 ? wide_fused_max : fused_max));
  }
  // The choice for a schedule: wide_round_fused_max for one-round schedules; auto also keeps the general lowering when
  // its plan has no cross-GPU waits and no copy-engine copies (e.g. a 2-rank reduce whose root's kernel reads its
  // peer): that plan needs no GPU-to-GPU handshake, while the fused kernels always pay a start and an end flag hop (2 x
  // H200: reduce.direct 2.9 us general vs 6.1 us fused at 16 B).
  // `sms`: the GPUs' SMs, the CTA budget of the program that would run (options()).
  bool use_fused(const Schedule& s, const std::vector<int>& rank_device, int sms = kFusedMaxCtas) const;
  // Whether a program on `gpus` GPUs gets per-CTA flags (FusedOptions::slices).
  bool sliced_on(int gpus) const { return slices.value_or(gpus > 2); }
  bool every_wait_per_cta(const Schedule& s, const std::vector<int>& rank_device, int sms) const;
  // The encoding's options on GPUs of `sms` SMs (every CTA of a launch must be resident: one per SM).
  FusedOptions options(const std::vector<int>& rank_device, int sms) const;
};
std::string_view lowering_mode_name(LoweringMode m);

}  // namespace cclab::lower
