// Device side of the fused all-reduce modes (bidir.hpp). Kernels receive one BidirArgs by value.
#pragma once

#include <cstdint>

#include "exec/runtime/device_util.cuh"
#include "lower/bidir.hpp"

namespace cclab::exec::bidir {

constexpr int kMaxRanks = lower::kBidirMaxRanks;
constexpr int kMaxBlocks = lower::kBidirMaxBlocks;  // flash, ll, push and lamport CTAs
constexpr int kMaxLanes = lower::kBidirMaxLanes;    // stream lanes

// Per-rank control words in device memory. Peers write the flag arrays (indexed by the writer's
// rank); the owner polls them locally. Epoch counters advance once per launch (the last CTA to
// finish bumps them), so graph replays see fresh values.
struct Ctrl {
  uint32_t ll_epoch, ll_done, flash_epoch, flash_done, stream_epoch, stream_done, push_epoch, push_done;
  uint32_t lamport_epoch, lamport_done, twoshot_epoch, twoshot_done;
  uint64_t flash_start[kMaxBlocks][kMaxRanks];
  uint64_t flash_fin[kMaxBlocks][kMaxRanks];
  uint64_t flash_prog[kMaxBlocks][kMaxRanks];
  // Twoshot: [block][src] = the epoch of src's launch whose CTA `block` has started / has stored its
  // slice into every rank's output (its own words: twoshot's epochs count apart from flash's).
  uint64_t twoshot_start[kMaxBlocks][kMaxRanks];
  uint64_t twoshot_fin[kMaxBlocks][kMaxRanks];
  // Twoshot's store-only variant: [block][src] = (epoch << 32) | tiles of our slice that CTA `block` of src
  // has stored into our scatter buffer.
  uint64_t twoshot_prog[kMaxBlocks][kMaxRanks];
  // Push mode: push_prog[block][src] = (epoch << 32) | tiles of that block src has stored here;
  // [block][own rank]: tiles our own producers have read (our consumers wait for it in place).
  uint64_t push_prog[kMaxBlocks][kMaxRanks];
  // Stream mode: absolute per-lane sequence numbers, continued across launches (both ranks run the
  // same launches, so each lane's count of units agrees); seq[lane] is local, the others peer-written.
  uint64_t seq[kMaxLanes];              // units this lane has carried in earlier launches
  uint64_t prod[kMaxRanks][kMaxLanes];  // prod[src][lane]: units published by producer src
  uint64_t cons[kMaxRanks][kMaxLanes];  // cons[dst][lane]: units released by consumer dst
};

// Written once by the first spin-wait that times out (mapped host memory).
struct ErrWord {
  uint32_t code;  // 0: none; else which wait (see wait codes)
  int32_t rank, block, slot;
  uint64_t want, got;
};
enum WaitCode : uint32_t {
  kWaitFlashStart = 1,
  kWaitFlashProgress,
  kWaitFlashFinish,
  kWaitStreamFreeSlot,
  kWaitStreamData,
  kWaitStreamLocal,
  kWaitLL,
  kWaitPush,
  kWaitLamport,
  kWaitTwoshotStart,
  kWaitTwoshotFinish,
  kWaitTwoshotPush,
};

struct BidirArgs {
  int rank = 0, nranks = 0;
  int64_t count = 0, bytes = 0;
  float divisor = 1.f;  // nranks for avg
  const uint8_t* in[kMaxRanks] = {};
  uint8_t* out = nullptr;
  uint8_t* outs[kMaxRanks] = {};  // every rank's output (twoshot stores its reduced slice into each)
  Ctrl* ctrl[kMaxRanks] = {};
  uint64_t* ll[kMaxRanks] = {};  // [2 parities][kMaxRanks sources][ll_words]
  int64_t ll_words = 0;
  uint8_t* ring[kMaxRanks] = {};  // [nranks-1 sources][lanes][slots][slot_bytes]
  int lanes = 0, slots = 0;       // lanes: the ring's lane stride (allocated lanes, >= gridDim.x)
  int64_t slot_bytes = 0;
  // Push mode receive buffers: push[q] + ((parity * (nranks - 1) + j - 1) * push_stride) holds what
  // rank (q + j) % nranks stored into q in a launch of that epoch parity.
  uint8_t* push[kMaxRanks] = {};
  int64_t push_stride = 0;
  // Lamport mode receive buffers: lamport[q] + ((phase * (nranks - 1) + j - 1) * lamport_stride), phase =
  // epoch parity, holds what rank (q + j) % nranks stored into q; the sentinel wherever not yet written.
  uint8_t* lamport[kMaxRanks] = {};
  int64_t lamport_stride = 0;
  // Twoshot store-only scatter buffers: scatter[q] + (j - 1) * scatter_stride holds what rank (q + j) % nranks
  // stored of slice q (one buffer: a peer's next launch waits for our finish handshake, after our reads).
  uint8_t* scatter[kMaxRanks] = {};
  int64_t scatter_stride = 0;
  int ahead = 1;             // lamport: tiles a thread sends before it receives the first
  bool split_roles = false;  // lamport out of place: half the threads send, half receive
  int unroll = 1;
  bool in_place = false;  // push: the output is the input (consumers wait for their own producers)
  ErrWord* err = nullptr;
  uint64_t timeout_ns = 0;
};

__device__ __forceinline__ uint64_t ld_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Out of line so the spin loops stay small. It takes the error word and the rank by value: taking the
// kernel's BidirArgs by reference made every thread copy the whole ~500-byte block to local memory on every
// launch (+0.6 us per launch with PDL, +1.8 us without: microbenchmarks bidir.ll.argref against bidir.ll on
// 2 x H200; docs/findings/2026-11-22-argument-block-crossovers-diagnostics.md).
__device__ __noinline__ void report_timeout(ErrWord* err, int rank, uint32_t code, int block, int slot, uint64_t want,
                                            uint64_t got) {
  if (atomicCAS(&err->code, 0u, code) == 0u) {
    err->rank = rank;
    err->block = block;
    err->slot = slot;
    err->want = want;
    err->got = got;
    __threadfence_system();
  }
}

// A wait that has lasted `waited_ns` ends early when another wait already timed out. The error word is in
// mapped host memory, so each look is a PCIe round trip: thousands of spinning threads looking every few
// hundred polls flood the GPU's PCIe link, which also carries its own command fetch, so the next launches
// come late, the ranks drift further apart and the waits grow (the shim with one process per GPU under
// PyTorch: lamport calls of ~20 us took ~1.2 ms each). So a wait looks only once it has outlasted any
// healthy skew between ranks.
constexpr uint64_t kAbortLookAfterNs = 1000000;
__device__ __forceinline__ bool other_wait_failed(const ErrWord* err, uint64_t waited_ns) {
  return waited_ns > kAbortLookAfterNs && *static_cast<const volatile uint32_t*>(&err->code) != 0;
}

// Spins until *p >= want; false (after recording the error) on timeout or when another wait failed.
__device__ __forceinline__ bool wait_ge(const BidirArgs& a, const uint64_t* p, uint64_t want, uint32_t code, int block,
                                        int slot) {
  uint64_t v = ld_acquire(p);
  if (v >= want) return true;
  const uint64_t start = dev::globaltimer_ns();
  for (uint32_t it = 1;; ++it) {
    v = ld_acquire(p);
    if (v >= want) return true;
    if ((it & 255u) == 0) {
      const uint64_t waited = dev::globaltimer_ns() - start;
      if (waited > a.timeout_ns) {
        report_timeout(a.err, a.rank, code, block, slot, want, v);
        return false;
      }
      if (other_wait_failed(a.err, waited)) return false;
    }
  }
}

// Flag words of one kind in every rank's Ctrl: [block][writer rank].
using CtaFlags = uint64_t[kMaxBlocks][kMaxRanks];

// CTA `block` of every peer has reached this point: thread t < n-1 releases `value` into peer (rank + 1 + t)'s
// word [block][rank] and waits until that peer's word in ours reaches it. One peer per thread: a system-scope
// release waits until the thread's earlier stores (an earlier release to another GPU included) have reached the
// system, so one thread releasing to n-1 peers in turn paid that round trip n-1 times (4 GPUs: twoshot and flash
// ~15 us at 8 B against ~5 with one peer); and one thread waiting for n-1 words in turn paid a load's round trip
// for each word beyond the first (~0.4 us per peer on 4 x H200). The caller's barrier before this orders the
// CTA's data stores before every release; its barrier after makes the waiting threads' verdict (`abort`) and
// their acquires known to all.
__device__ __forceinline__ void cta_handshake(const BidirArgs& a, CtaFlags Ctrl::*flags, uint64_t value, uint32_t code,
                                              int block, int slot, int* abort) {
  const int t = threadIdx.x, r = a.rank, n = a.nranks;
  if (t < n - 1) {
    const int peer = dev::mod_ranks(r + 1 + t, n);
    st_release(&(a.ctrl[peer]->*flags)[block][r], value);
    if (!wait_ge(a, &(a.ctrl[r]->*flags)[block][peer], value, code, block, slot)) *abort = 1;
  }
}

}  // namespace cclab::exec::bidir
