// Microbenchmarks for the bidir all-reduce kernels' model and the NCCL baselines (sim/paths_bidir.cpp,
// sim/paths_nccl.cpp): the transfers and synchronisation those kernels make, timed the way the executor's
// harness times its records (exec/runtime/harness.cpp: one CUDA graph per GPU of 20 launches, replayed side by side
// between a fork from and a join to GPU0's origin stream), but never a collective: every kernel here only
// moves bytes (no reduction), and NCCL runs send/recv only.
//
//   bidir.pull    one-shot SM pull (flash's transfer): G CTAs of 512 threads, a start flag handshake with
//                 the peer's CTA, 16-byte loads of the peer's S bytes (4 per thread in flight, the next tile
//                 prefetched in registers) stored to local memory, a finish handshake; PDL launches;
//                 G = min(SMs, S / 32 KiB rounded up).
//   bidir.pull.u2 / .u8 / .u2.g66   the same with 2 or 8 vectors per thread (tiles of 16 / 64 KiB), and 2 with
//                 at most 66 CTAs: the flash variants scripts/measure.sh calibrates. 8 B .. 64 MiB.
//   bidir.push    one-shot SM push (push's transfer): G CTAs of 512 threads, half store 16 KiB tiles into
//                 the peer's receive buffer and release a flag per tile, half wait for the peer's flags and
//                 copy the tile out; PDL launches; G = min(2 x SMs, S / 16 KiB rounded up).
//   bidir.push.g132  the same with at most 132 CTAs (push_blocks=132). 8 B .. 64 MiB.
//   bidir.ll      LL exchange (ll's transfer): 8-byte words of 4 data + 4 flag bytes, 16-byte stores into
//                 the peer, each thread polls its own received words until their flags match; PDL launches;
//                 256 threads, G = min(SMs, pairs of words / 256 rounded up); the last CTA advances the epoch.
//   bidir.ll_plain  the same launched without PDL.
//   bidir.ring    persistent lanes (stream's transfer): L = min(SMs, S / 256 KiB) CTAs of 512 threads, each
//                 lane's 256 KiB units through a ring of 4 slots in the peer: half the threads wait for a free
//                 slot, store the unit into the peer's ring, fence (system scope) and release a flag; half wait
//                 for the peer's unit and copy it out, then release the slot; plain launches (as stream's).
//   bidir.lamport lamport's transfer: G = min(SMs, S / 16 KiB) CTAs of 512 threads, each thread stores tile k
//                 into the peer and polls tile k - 2 of its own buffer until no word is the sentinel (the data
//                 is the flag), resets it; PDL launches. 8 B .. 256 MiB. bidir.lamport.t256: 256 threads;
//                 bidir.lamport.split: half the threads send, half receive (lamport_split).
//   bidir.replay  empty PDL kernels in per-GPU graphs of N launches, N = 5, 10, 20, 40 (the "bytes" of a
//                 point are N): the per-replay fixed cost (fork, graph launches, join) is the slope in 1/N.
//   bidir.replay.body  PDL kernels that spin T ns after letting the next launch start, 100 per graph (the "bytes"
//                 of a point are T): per launch less T, what a launch costs behind a kernel that runs.
//   nccl.p2p.graph.uni / .bidir   ncclSend/ncclRecv (one way, both ways) captured in per-GPU graphs of 20
//                 group calls, replayed as the records of NCCL's collectives are (nccl-tests -G style).
//   *.n100        bidir.pull, .push, .ll, .ll_plain, .ring, .lamport.t256 and nccl.p2p.graph.bidir / .uni again with
//   100
//                 launches per graph (scripts/measure.sh's ITERS), 8 B .. 64 MiB.
//   bidir.pull.own.n100 / .push.own.n100 / .ring.own.n100   the same where each arrived vector is added
//                 (32-bit integer lanes) to the GPU's own input's, loaded where the flash / push / stream
//                 kernels' reductions load it: the reduction's own memory accesses. bidir.lamport.t256.own.n100:
//                 the lamport kernel's loop (every load of an iteration first, the own input read twice).
//                 bidir.ring.ownloop.n100 / .push.ownloop.n100: the stream / push kernels' reduction loops
//                 (the peers in an inner loop of a run-time count, no load before the last vector's store).
//   bidir.ll.args.n100 / .ll_plain.args.n100 / .pull.own.args.n100   the same kernels reading their pointers
//                 from a by-value block of per-rank pointer arrays indexed by rank at run time, as the bidir
//                 kernels' BidirArgs.
//
//   bidir.step.send.g24 / .copysend.g24 / .rrcs.g24 / .rrc.g24   NCCL's ring steps on 2 GPUs (a send; all-gather's
//                 copy-and-send; all-reduce's reduce-copy-and-send; reduce-scatter's reduce-copy) as byte streams
//                 without flags: 24 CTAs of 512 threads (the collectives' 24 channels), each a contiguous part.
//   bidir.step.p2p the same shape for send/recv: NCCL's p2p channel count for the size, half of each CTA sending,
//                 half copying a local buffer out. 256 KiB .. max bytes, 20 launches per graph. .g1: one CTA
//                 (send, copysend, rrcs, p2p; to 64 MiB): the steps' cost per channel without the link's limit.
//   nccl.p2p.ll.graph.{uni,bidir}.n100 / nccl.p2p.simple.graph.{uni,bidir}.n100   nccl.p2p.graph.*.n100 with the
//                 protocol pinned: LL at every size (NCCL_P2P_LL_THRESHOLD=1 GiB), Simple at every size (=0), each
//                 in a child process of this executable (NCCL reads the threshold once per process). 8 B .. 64 MiB.
//
// Both directions run at once in every bidir.* series (each GPU's kernel moves S bytes towards the other).
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <type_traits>

#include "exec/microbench/microbench.hpp"
#include "exec/nccl/nccl_workload.hpp"
#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/device_util.cuh"

namespace cclab::exec {

namespace {

constexpr int kIters = 20;  // launches per graph: the harness's default --iters
// Launches per graph of the ".n100" series: scripts/measure.sh's ITERS (the replay's
// fixed cost spread over 100 launches; docs/findings/2026-11-22-replay-launches-packed-sums.md), so the model reads the
// transfers timed as the records are.
constexpr int kRecordIters = 100;
constexpr int64_t kRecordItersMax = int64_t(64) << 20;  // their largest size (above, the replay's cost is noise)
constexpr int kReplays = 5;                             // timed replays per point; the median is kept
constexpr int kMaxCtas = 1024;                          // flag slots per GPU
constexpr int kPullThreads = 512;
constexpr int kPushThreads = 512, kPushUnroll = 4;
constexpr int kLLThreads = 256;
constexpr int64_t kLLMaxBytes = 1 << 20;  // ll mode's limit (BidirParams::ll_max_bytes)
constexpr unsigned long long kTimeoutNs = 2'000'000'000ULL;

#define CCLAB_NCCL_MB(call)                                                                                     \
  do {                                                                                                          \
    ncclResult_t r_ = (call);                                                                                   \
    if (r_ != ncclSuccess)                                                                                      \
      throw Error(ErrorKind::environment, std::string("NCCL error: ") + ncclGetErrorString(r_) + " in " #call); \
  } while (0)

// Control words in each GPU's memory: flags the peer stores into, counters only this GPU touches.
struct Ctl {
  unsigned long long start[kMaxCtas];  // peer CTA b began this launch (pull)
  unsigned long long fin[kMaxCtas];    // peer CTA b finished reading (pull)
  unsigned long long prog[kMaxCtas];   // peer CTA b's tiles stored (push): epoch << 32 | tiles
  unsigned long long epoch;            // pull, push: the launch's epoch (advanced by its last CTA)
  unsigned done;                       // pull, push: CTAs done with the launch
  unsigned long long prod[kMaxCtas];   // ring: units the peer's lane stored into our ring
  unsigned long long cons[kMaxCtas];   // ring: units of ours the peer's lane consumed
  unsigned long long seq[kMaxCtas];    // ring: units this lane moved in earlier launches
  unsigned ll_epoch, ll_done;          // ll: launch epoch, CTAs done with it
  int err;
};

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned long long ld_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void bar(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void pdl_enter() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
// Spins until *p >= want; false after kTimeoutNs, having called report().
template <typename Report>
__device__ __forceinline__ bool wait_ge_r(const unsigned long long* p, unsigned long long want, Report report) {
  const unsigned long long t0 = now_ns();
  for (uint32_t it = 0;; ++it) {
    if (ld_acquire(p) >= want) return true;
    if ((it & 255u) == 255u && now_ns() - t0 > kTimeoutNs) {
      report();
      return false;
    }
  }
}
// Spins until *p >= want; false (error recorded) after kTimeoutNs.
__device__ bool wait_ge(const unsigned long long* p, unsigned long long want, int* err) {
  const unsigned long long t0 = now_ns();
  for (uint32_t it = 0;; ++it) {
    if (ld_acquire(p) >= want) return true;
    if ((it & 255u) == 255u && now_ns() - t0 > kTimeoutNs) {
      atomicExch(err, 1);
      return false;
    }
  }
}

// The second operand a reduction would read (the `.own` variants): lane-wise integer sums, the memory
// accesses of the kernels' reductions without their arithmetic.
__device__ __forceinline__ uint4 add_lanes(uint4 x, uint4 y) {
  return make_uint4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

// The last CTA of a launch advances the epoch the next launch reads (as the bidir kernels' finish_launch).
__device__ void finish_launch(Ctl* me, unsigned long long e, unsigned ctas) {
  if (ctas == 1) {
    *reinterpret_cast<volatile unsigned long long*>(&me->epoch) = e;
    return;
  }
  __threadfence();
  if (atomicAdd(&me->done, 1u) == ctas - 1) {
    me->done = 0;
    *reinterpret_cast<volatile unsigned long long*>(&me->epoch) = e;
  }
}

// One-shot pull with start / finish handshakes (the flash kernel's transfer, no reduction).
// With `Own` (bidir.pull.own.n100), each arrived vector is added to this GPU's own vector (`own`, loaded as
// the flash kernel's reduction loads it: after the peer's vector, before the store).
template <int U, bool Own, typename Report>
__device__ __forceinline__ void pull_body(const uint4* __restrict__ peer, uint4* __restrict__ out, int64_t nvec,
                                          Ctl* me, Ctl* other, const uint4* __restrict__ own, Report report) {
  __shared__ unsigned long long e_s;
  __shared__ int abort_s;
  pdl_enter();
  const int t = threadIdx.x, nt = blockDim.x, b = blockIdx.x, G = gridDim.x;
  if (t == 0) e_s = *reinterpret_cast<volatile unsigned long long*>(&me->epoch) + 1;
  __syncthreads();
  const unsigned long long e = e_s;
  if (t == 0) {
    st_release(&other->start[b], e);
    abort_s = !wait_ge_r(&me->start[b], e, report);
  }
  __syncthreads();
  if (abort_s) return;
  const int64_t tile = int64_t(U) * nt, tiles = (nvec + tile - 1) / tile;
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  uint4 cur[U], nxt[U];
  auto fetch = [&](int64_t j, uint4(&dst)[U]) {
    const int64_t base = (b + j * G) * tile + t;
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (j < J && base + int64_t(u) * nt < nvec) dst[u] = __ldcg(peer + base + int64_t(u) * nt);
  };
  fetch(0, cur);
  for (int64_t j = 0; j < J; ++j) {
    fetch(j + 1, nxt);
    const int64_t base = (b + j * G) * tile + t;
    if constexpr (Own) {
      uint4 res[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * nt < nvec) res[u] = add_lanes(own[base + int64_t(u) * nt], cur[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * nt < nvec) out[base + int64_t(u) * nt] = res[u];
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * nt < nvec) out[base + int64_t(u) * nt] = cur[u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = nxt[u];
  }
  __syncthreads();
  if (t == 0) {
    st_release(&other->fin[b], e);
    wait_ge_r(&me->fin[b], e, report);
    finish_launch(me, e, G);
  }
}
template <int U, bool Own = false>
__global__ void __launch_bounds__(kPullThreads)
    k_pull(const uint4* __restrict__ peer, uint4* __restrict__ out, int64_t nvec, Ctl* me, Ctl* other,
           const uint4* __restrict__ own) {
  pull_body<U, Own>(peer, out, nvec, me, other, own, [me] { atomicExch(&me->err, 1); });
}

// The per-rank pointers in one by-value block indexed by rank at run time, as the bidir kernels receive
// theirs (BidirArgs: ~0.5 KB of arrays of kMaxRanks = 8 pointers): the `.args` variants.
struct RankArgs {
  const uint8_t* in[8];
  uint8_t* out;
  Ctl* ctl[8];
  uint8_t* buf[8];
  uint8_t* unused[3][8];  // the other modes' buffers (BidirArgs' size)
  int64_t nvec, words, ll_words;
  int rank, nranks;
  unsigned long long timeout_ns;
};

template <int U, bool Own>
__global__ void __launch_bounds__(kPullThreads) k_pull_args(RankArgs a) {
  const int r = a.rank, p = (r + 1) % a.nranks;
  Ctl* me = a.ctl[r];
  pull_body<U, Own>(reinterpret_cast<const uint4*>(a.in[p]), reinterpret_cast<uint4*>(a.out), a.nvec, me, a.ctl[p],
                    reinterpret_cast<const uint4*>(a.in[r]), [me] { atomicExch(&me->err, 1); });
}

// The push kernel's reduction of one tile as it runs (exec/kernels/bidir.cu push_kernel): per vector the own input and
// each arrived one widened to float and added (dev::Acc), narrowed back (bidir.push.kernelloop.<element>.n100).
template <typename T>
__device__ __forceinline__ void push_reduce_tile(const uint4* own_alias, const uint4* recv, uint4* out_alias,
                                                 int64_t base, int H, int64_t nvec, int sources) {
#pragma unroll
  for (int u = 0; u < kPushUnroll; ++u) {
    const int64_t v = base + int64_t(u) * H;
    if (v < nvec) {
      dev::Acc<T> acc;
      acc.load(__ldcg(own_alias + v));
      for (int jj = 1; jj < sources; ++jj) acc.template add<RedOp::sum>(__ldcg(recv + v));
      out_alias[v] = acc.store(1.f);
    }
  }
}

// One-shot push with a release flag per tile (the push kernel's transfer, no reduction). Receive buffers
// alternate by launch parity, as the push kernel's do.
// With `own_operand` (bidir.push.own.n100), the consumers add their own input's vector to each received one
// (loaded as the push kernel's reduction loads it, after the tile's flag).
__global__ void __launch_bounds__(kPushThreads, 2)
    k_push(const uint4* __restrict__ own, uint4* peer_recv, const uint4* my_recv, int64_t stride_vec,
           uint4* __restrict__ out, int64_t nvec, Ctl* me, Ctl* other, int own_operand, const uint4* own_alias,
           uint4* out_alias, int sources) {
  __shared__ unsigned long long e_s;
  __shared__ int abort_s;
  pdl_enter();
  const int H = blockDim.x / 2, b = blockIdx.x, G = gridDim.x;
  const bool producer = threadIdx.x < H;
  const int t = producer ? threadIdx.x : threadIdx.x - H;
  if (threadIdx.x == 0) {
    e_s = *reinterpret_cast<volatile unsigned long long*>(&me->epoch) + 1;
    abort_s = 0;
  }
  __syncthreads();
  const unsigned long long E = e_s << 32;
  const int64_t par = int64_t(e_s & 1) * stride_vec;
  constexpr int U = kPushUnroll;
  const int64_t tile = int64_t(U) * H, tiles = std::max<int64_t>(1, (nvec + tile - 1) / tile);
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  if (producer) {
    for (int64_t j = 0; j < J; ++j) {
      const int64_t base = (b + j * G) * tile + t;
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * H < nvec) v[u] = __ldcg(own + base + int64_t(u) * H);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * H < nvec) __stcg(peer_recv + par + base + int64_t(u) * H, v[u]);
      bar(1, H);
      if (t == 0) st_release(&other->prog[b], E | uint64_t(j + 1));
    }
  } else {
    for (int64_t j = 0; j < J; ++j) {
      if (t == 0 && !wait_ge(&me->prog[b], E | uint64_t(j + 1), &me->err)) abort_s = 1;
      bar(2, H);
      if (abort_s) break;
      const int64_t base = (b + j * G) * tile + t;
      if (own_operand >= 3) {  // 3: float, 4: bfloat16
        if (own_operand == 3)
          push_reduce_tile<float>(own_alias, my_recv + par, out_alias, base, H, nvec, sources);
        else
          push_reduce_tile<__nv_bfloat16>(own_alias, my_recv + par, out_alias, base, H, nvec, sources);
      } else if (own_operand == 2) {
        // bidir.push.ownloop.n100: the push kernel's reduction loop (the peers in an inner loop of a run-time
        // count, pointers not known to be distinct from the output: no load before the last vector's store).
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t v = base + int64_t(u) * H;
          if (v < nvec) {
            uint4 acc = __ldcg(own_alias + v);
            for (int jj = 1; jj < sources; ++jj) acc = add_lanes(acc, __ldcg(my_recv + par + v));
            out_alias[v] = acc;
          }
        }
      } else if (own_operand == 1) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (base + int64_t(u) * H < nvec)
            out[base + int64_t(u) * H] =
                add_lanes(__ldcg(own + base + int64_t(u) * H), __ldcg(my_recv + par + base + int64_t(u) * H));
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (base + int64_t(u) * H < nvec) out[base + int64_t(u) * H] = __ldcg(my_recv + par + base + int64_t(u) * H);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) finish_launch(me, e_s, G);
}

// LL exchange (the ll kernel's transfer, no reduction): words of 4 data bytes + the launch epoch, two per
// thread in one 16-byte store into the peer; each thread polls its own received pair. Buffers alternate by
// epoch parity; the last CTA to finish advances the epoch, as the ll kernel does.
template <typename Report>
__device__ __forceinline__ void ll_body(const uint32_t* __restrict__ own, unsigned long long* peer_ll,
                                        unsigned long long* my_ll, int64_t ll_words, uint32_t* __restrict__ out,
                                        int64_t words, Ctl* me, Report report) {
  pdl_enter();
  // Every thread reads the epoch itself (as the ll kernel): it moves only after every CTA finished.
  const unsigned e = *reinterpret_cast<volatile unsigned*>(&me->ll_epoch) + 1;
  const unsigned long long flag = (unsigned long long)e << 32;
  const int64_t par = int64_t(e & 1) * ll_words;
  const int64_t pairs = (words + 1) / 2, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < pairs; q += stride) {
    const int64_t w0 = 2 * q;
    const uint32_t d0 = own[w0], d1 = w0 + 1 < words ? own[w0 + 1] : 0u;
    unsigned long long* dst = peer_ll + par + w0;
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(flag | d0), "l"(flag | d1) : "memory");
    const unsigned long long* src = my_ll + par + w0;
    unsigned long long v0, v1;
    const unsigned long long t0 = now_ns();
    for (uint32_t it = 1;; ++it) {
      asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(v0), "=l"(v1) : "l"(src) : "memory");
      if ((v0 >> 32) == e && (v1 >> 32) == e) break;
      if ((it & 1023u) == 0 && now_ns() - t0 > kTimeoutNs) {
        report();
        break;
      }
    }
    out[w0] = uint32_t(v0);
    if (w0 + 1 < words) out[w0 + 1] = uint32_t(v1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) {
      *reinterpret_cast<volatile unsigned*>(&me->ll_epoch) = e;
    } else {
      __threadfence();
      if (atomicAdd(&me->ll_done, 1u) == gridDim.x - 1) {
        me->ll_done = 0;
        *reinterpret_cast<volatile unsigned*>(&me->ll_epoch) = e;
      }
    }
  }
}
__global__ void __launch_bounds__(kLLThreads)
    k_ll(const uint32_t* __restrict__ own, unsigned long long* peer_ll, unsigned long long* my_ll, int64_t ll_words,
         uint32_t* __restrict__ out, int64_t words, Ctl* me) {
  ll_body(own, peer_ll, my_ll, ll_words, out, words, me, [me] { atomicExch(&me->err, 1); });
}
__global__ void __launch_bounds__(kLLThreads) k_ll_args(RankArgs a) {
  const int r = a.rank, p = (r + 1) % a.nranks;
  Ctl* me = a.ctl[r];
  ll_body(reinterpret_cast<const uint32_t*>(a.in[r]), reinterpret_cast<unsigned long long*>(a.buf[p]),
          reinterpret_cast<unsigned long long*>(a.buf[r]), a.ll_words, reinterpret_cast<uint32_t*>(a.out), a.words, me,
          [me] { atomicExch(&me->err, 1); });
}

// The stream kernel's reduction loop (exec/kernels/bidir.cu stream_kernel), element type T: per vector and source, the
// slot's address computed as its ring_slot does (run-time rank, source count, slots), the own vector and the
// arrived ones converted to float, added, converted back (dev::Acc), then stored.
template <typename T>
__device__ __forceinline__ void stream_reduce_loop(const uint8_t* in_alias, uint8_t* out_alias, const uint8_t* my_ring,
                                                   int64_t off, int64_t len, int lane, int K, int64_t B,
                                                   unsigned long long seq, int r, int n, int t, int half,
                                                   float divisor) {
  auto ring_slot = [&](int src) {  // this lane's ring is laid out as k_ring's (one source, lane stride K)
    const int idx = dev::mod_ranks(src - r - 1, n);
    return my_ring + ((int64_t(idx) + lane) * K + int64_t(seq % uint64_t(K))) * B;
  };
  const uint4* own = reinterpret_cast<const uint4*>(in_alias + off);
  uint4* out = reinterpret_cast<uint4*>(out_alias + off);
  for (int64_t v = t; v < len / 16; v += half) {
    dev::Acc<T> acc;
    acc.load(own[v]);
    for (int j = 1; j < n; ++j)
      acc.template add<RedOp::sum>(__ldcg(reinterpret_cast<const uint4*>(ring_slot(dev::mod_ranks(r + j, n))) + v));
    out[v] = acc.store(divisor);
  }
}

// Persistent lanes through a ring of K slots of B bytes in the peer (the stream kernel's transfer, no
// reduction): the producer half stores a unit into the peer's ring once the peer's consumer freed the slot,
// fences at system scope and releases a flag; the consumer half waits for the peer's unit (and for its own
// producer to have read the same unit of the input, as stream does in place) and copies it out.
__global__ void __launch_bounds__(512)
    k_ring(const uint8_t* __restrict__ in, uint8_t* peer_ring, const uint8_t* my_ring, uint8_t* __restrict__ out,
           int64_t bytes, int64_t B, int K, Ctl* me, Ctl* other, int own_operand, const uint8_t* in_alias,
           uint8_t* out_alias, int sources, int rank, float divisor) {
  __shared__ unsigned long long base_s;
  __shared__ unsigned produced;
  __shared__ int abort_s;
  const int lane = blockIdx.x, L = gridDim.x, half = blockDim.x / 2;
  const bool producer = threadIdx.x < half;
  const int t = producer ? threadIdx.x : threadIdx.x - half;
  if (threadIdx.x == 0) {
    base_s = *reinterpret_cast<volatile unsigned long long*>(&me->seq[lane]);
    produced = 0;
    abort_s = 0;
  }
  __syncthreads();
  const unsigned long long base = base_s;
  const int64_t units = (bytes + B - 1) / B, mine = units > lane ? (units - lane + L - 1) / L : 0;
  auto slot = [&](const uint8_t* ring, unsigned long long seq) {
    return ring + (int64_t(lane) * K + int64_t(seq % unsigned(K))) * B;
  };
  if (producer) {
    for (int64_t u = 0; u < mine; ++u) {
      const unsigned long long seq = base + u;
      const int64_t off = (lane + u * L) * B, len = min(B, bytes - off);
      if (t == 0 && seq + 1 > unsigned(K) && !wait_ge(&me->cons[lane], seq + 1 - K, &me->err)) atomicExch(&abort_s, 1);
      bar(1, half);
      if (atomicAdd(&abort_s, 0)) break;
      const uint4* src = reinterpret_cast<const uint4*>(in + off);
      uint4* dst = reinterpret_cast<uint4*>(const_cast<uint8_t*>(slot(peer_ring, seq)));
      const int64_t nv = len / 16;
      int64_t v = t;
      for (; v + 3 * half < nv; v += 4 * half) {
        const uint4 x0 = src[v], x1 = src[v + half], x2 = src[v + 2 * half], x3 = src[v + 3 * half];
        dst[v] = x0;
        dst[v + half] = x1;
        dst[v + 2 * half] = x2;
        dst[v + 3 * half] = x3;
      }
      for (; v < nv; v += half) dst[v] = src[v];
      for (int64_t i = nv * 16 + t; i < len; i += half) reinterpret_cast<uint8_t*>(dst)[i] = in[off + i];
      __threadfence_system();
      bar(1, half);
      if (t == 0) {
        st_release(&other->prod[lane], seq + 1);
        atomicMax(&produced, unsigned(u + 1));
      }
    }
  } else {
    for (int64_t u = 0; u < mine; ++u) {
      const unsigned long long seq = base + u;
      const int64_t off = (lane + u * L) * B, len = min(B, bytes - off);
      if (t == 0) {
        if (!wait_ge(&me->prod[lane], seq + 1, &me->err)) atomicExch(&abort_s, 1);
        const unsigned long long t0 = now_ns();
        while (!atomicAdd(&abort_s, 0) && atomicAdd(&produced, 0u) < unsigned(u + 1))
          if (now_ns() - t0 > kTimeoutNs) atomicExch(&abort_s, 1);
      }
      bar(2, half);
      if (atomicAdd(&abort_s, 0)) break;
      const uint4* src = reinterpret_cast<const uint4*>(slot(my_ring, seq));
      uint4* dst = reinterpret_cast<uint4*>(out + off);
      // With `own_operand` 1 (bidir.ring.own.n100): the own input's unit added, as the stream kernel reduces.
      // 2 (bidir.ring.ownloop.n100): in the stream kernel's loop, one vector per iteration with the peers'
      // sources in an inner loop of a run-time count, through pointers the compiler cannot prove distinct from
      // the output (as the kernel's BidirArgs pointers): no load of a vector before the last one's store.
      const uint4* own_unit = reinterpret_cast<const uint4*>(in + off);
      if (own_operand >= 3) {  // 3: float, 4: bfloat16 (bidir.ring.kernelloop.*.n100)
        if (own_operand == 3)
          stream_reduce_loop<float>(in_alias, out_alias, my_ring, off, len, lane, K, B, seq, rank, sources, t, half,
                                    divisor);
        else
          stream_reduce_loop<__nv_bfloat16>(in_alias, out_alias, my_ring, off, len, lane, K, B, seq, rank, sources, t,
                                            half, divisor);
      } else if (own_operand == 2) {
        const uint4* own_a = reinterpret_cast<const uint4*>(in_alias + off);
        uint4* out_a = reinterpret_cast<uint4*>(out_alias + off);
        for (int64_t v = t; v < len / 16; v += half) {
          uint4 acc = own_a[v];
          for (int j = 1; j < sources; ++j) acc = add_lanes(acc, __ldcg(src + v));
          out_a[v] = acc;
        }
      } else if (own_operand == 1) {
        for (int64_t v = t; v < len / 16; v += half) dst[v] = add_lanes(own_unit[v], __ldcg(src + v));
      } else {
        for (int64_t v = t; v < len / 16; v += half) dst[v] = __ldcg(src + v);
      }
      for (int64_t i = len / 16 * 16 + t; i < len; i += half) out[off + i] = slot(my_ring, seq)[i];
      bar(2, half);
      if (t == 0) st_release(&other->cons[lane], seq + 1);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && !abort_s) me->seq[lane] = base + mine;
}

// Lamport exchange (the lamport kernel's transfer, no reduction): the data is its own flag. Receive buffers
// (by launch parity) hold all-ones words (the sentinel, a NaN) until the peer's 16-byte stores land; each
// thread stores its vectors of tile k into the peer, then polls those of tile k - D in its own buffer
// until no word is the sentinel, resets them to the sentinel and copies them out.
// With `split`, the first half of the threads only send and the second half only receive (D = 0), as the
// lamport kernel's lamport_split out of place.
template <int U>
__global__ void __launch_bounds__(512)
    k_lamport(const uint4* __restrict__ own, uint4* peer_buf, uint4* my_buf, int64_t stride_vec,
              uint4* __restrict__ out, int64_t nvec, int D, bool split, Ctl* me) {
  pdl_enter();
  const int t = threadIdx.x, nt = blockDim.x, b = blockIdx.x, G = gridDim.x;
  // Every thread reads the epoch itself (as the lamport kernel): it moves only after every CTA finished.
  const unsigned long long e = *reinterpret_cast<volatile unsigned long long*>(&me->epoch) + 1;
  const int64_t par = int64_t(e & 1) * stride_vec;
  const int W = split ? nt / 2 : nt;  // threads per role
  const int tt = split && t >= W ? t - W : t;
  const bool sends = !split || t < W, receives = !split || t >= W;
  if (split) D = 0;
  const int64_t tile = int64_t(U) * W, tiles = (nvec + tile - 1) / tile;
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4 sentinel = make_uint4(~0u, ~0u, ~0u, ~0u);
  for (int64_t k = 0; k < J + D; ++k) {
    if (sends && k < J) {
      const int64_t base = (b + k * G) * tile + tt;
      uint4 mine[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * W < nvec) mine[u] = __ldcg(own + base + int64_t(u) * W);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * W < nvec) __stcg(peer_buf + par + base + int64_t(u) * W, mine[u]);
    }
    if (receives && k >= D) {
      const int64_t base = (b + (k - D) * G) * tile + tt;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t v = base + int64_t(u) * W;
        if (v >= nvec) continue;
        uint4* src = my_buf + par + v;
        uint4 x;
        const unsigned long long t0 = now_ns();
        for (uint32_t it = 0;; ++it) {
          asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
                       : "l"(src)
                       : "memory");
          if (x.x != ~0u && x.y != ~0u && x.z != ~0u && x.w != ~0u) break;
          if ((it & 255u) == 255u && now_ns() - t0 > kTimeoutNs) {
            atomicExch(&me->err, 1);
            return;
          }
        }
        __stcg(src, sentinel);
        out[v] = x;
      }
    }
  }
  __syncthreads();
  if (t == 0) finish_launch(me, e, G);
}

// The lamport kernel's own loop with its reduction's loads (bidir.lamport.t256.own.n100): every load of an
// iteration issued before any is used (the own vectors of tile k to send, the own vectors of tile k - D read
// again to reduce, one load of each received vector), then the sends; a received vector still holding the
// sentinel is polled until it has arrived; then the slot is reset and the arrived vector added (integer
// lanes) to the own one and stored. With an element type T (bidir.lamport.t256.kernelloop.<element>.n100)
// as the kernel runs it for T: the sent vectors' sentinel patterns rewritten, arrival checked element by
// element, the reduction in float (dev::Acc).
template <int U, typename T = void>
__global__ void __launch_bounds__(512)
    k_lamport_own(const uint4* __restrict__ own, uint4* peer_buf, uint4* my_buf, int64_t stride_vec,
                  uint4* __restrict__ out, int64_t nvec, int D, Ctl* me) {
  pdl_enter();
  const int t = threadIdx.x, W = blockDim.x, b = blockIdx.x, G = gridDim.x;
  const unsigned long long e = *reinterpret_cast<volatile unsigned long long*>(&me->epoch) + 1;
  const int64_t par = int64_t(e & 1) * stride_vec;
  const int64_t tile = int64_t(U) * W, tiles = (nvec + tile - 1) / tile;
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4 sentinel = make_uint4(~0u, ~0u, ~0u, ~0u);
  auto on_the_wire = [](const uint4& x) {  // what the kernel for T stores: no sentinel pattern
    if constexpr (std::is_void_v<T>)
      return x;
    else
      return dev::unsentinel<T>(x);
  };
  auto arrived = [](const uint4& x) {
    if constexpr (std::is_void_v<T>)
      return x.x != ~0u && x.y != ~0u && x.z != ~0u && x.w != ~0u;
    else
      return !dev::has_sentinel<T>(x);
  };
  for (int64_t k = 0; k < J + D; ++k) {
    const bool send = k < J, recv = k >= D;
    const int64_t sbase = (b + k * G) * tile + t, rbase = (b + (k - D) * G) * tile + t;
    uint4 mine[U], keep[U], theirs[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t vs = sbase + int64_t(u) * W, vr = rbase + int64_t(u) * W;
      if (send && vs < nvec) mine[u] = __ldcg(own + vs);
      if (recv && vr < nvec) keep[u] = __ldcg(own + vr);
      if (recv && vr < nvec) theirs[u] = dev::ld_volatile_v4(my_buf + par + vr);
    }
    if (send) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t v = sbase + int64_t(u) * W;
        if (v < nvec) __stcg(peer_buf + par + v, on_the_wire(mine[u]));
      }
    }
    if (recv) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t v = rbase + int64_t(u) * W;
        if (v >= nvec) continue;
        uint4* src = my_buf + par + v;
        uint4 x = theirs[u];
        const unsigned long long t0 = now_ns();
        for (uint32_t it = 0; !arrived(x); ++it) {
          if ((it & 255u) == 255u && now_ns() - t0 > kTimeoutNs) {
            atomicExch(&me->err, 1);
            return;
          }
          x = dev::ld_volatile_v4(src);
        }
        __stcg(src, sentinel);
        if constexpr (std::is_void_v<T>) {
          out[v] = add_lanes(keep[u], x);
        } else {
          dev::Acc<T> acc;
          acc.load(keep[u]);
          acc.template add<RedOp::sum>(x);
          out[v] = acc.store(1.f);
        }
      }
    }
  }
  __syncthreads();
  if (t == 0) finish_launch(me, e, G);
}

// NCCL's ring steps on two GPUs as streams of bytes, without their flags (bidir.step.*): G CTAs of 512 threads
// (a ring channel's shape), each CTA a contiguous part of the S bytes, 4 vectors per thread loaded before
// they are stored. send: own input into the peer; copysend: own input into the own output and the peer
// (all-gather's step); rrcs: own input plus a local buffer (the peer's data, float adds) into the own output
// and the peer (all-reduce's second step); rrc: the same into the own output only (reduce-scatter's last
// step); p2p: half the threads send into the peer, half copy a local buffer out (send/recv's two halves).
enum RingStep : int { kRingSend, kRingCopySend, kRingRrcs, kRingRrc, kRingP2p };

__device__ __forceinline__ uint4 add_floats(uint4 x, uint4 y) {
  return make_uint4(__float_as_uint(__uint_as_float(x.x) + __uint_as_float(y.x)),
                    __float_as_uint(__uint_as_float(x.y) + __uint_as_float(y.y)),
                    __float_as_uint(__uint_as_float(x.z) + __uint_as_float(y.z)),
                    __float_as_uint(__uint_as_float(x.w) + __uint_as_float(y.w)));
}

template <int Step>
__global__ void __launch_bounds__(512)
    k_ring_step(const uint4* __restrict__ src, const uint4* __restrict__ src2, uint4* __restrict__ dst_local,
                uint4* __restrict__ dst_remote, int64_t nvec) {
  constexpr int U = 4;
  const int64_t part = (nvec + gridDim.x - 1) / gridDim.x, lo = int64_t(blockIdx.x) * part,
                hi = std::min<int64_t>(nvec, lo + part);
  int T = blockDim.x, t = threadIdx.x;
  bool copier = false;
  if (Step == kRingP2p) {
    T /= 2;
    copier = t >= T;
    if (copier) t -= T;
  }
  for (int64_t base = lo + t; base < hi; base += int64_t(U) * T) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + int64_t(u) * T;
      if (i < hi) {
        v[u] = __ldcg((copier ? src2 : src) + i);
        if (Step == kRingRrcs || Step == kRingRrc) v[u] = add_floats(v[u], __ldcg(src2 + i));
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + int64_t(u) * T;
      if (i < hi) {
        if (Step == kRingCopySend || Step == kRingRrcs || Step == kRingRrc || copier) __stcg(dst_local + i, v[u]);
        if (Step == kRingSend || Step == kRingCopySend || Step == kRingRrcs || (Step == kRingP2p && !copier))
          __stcg(dst_remote + i, v[u]);
      }
    }
  }
}

__global__ void k_empty_pdl_b() { pdl_enter(); }

// A PDL kernel with a body: it lets its successor launch at its start, as the bidir kernels do, then spins `ns`.
__global__ void k_body_pdl_b(unsigned long long ns) {
  pdl_enter();
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
}

__global__ void k_gate(unsigned long long ns) {
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
}

template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), int blocks, int threads, cudaStream_t s, Args... args) {
  CCLAB_CUDA(dev::launch_pdl(kernel, blocks, threads, s, args...));
}

struct Side {
  int dev = 0, sms = 0;
  cudaStream_t origin = nullptr, work = nullptr;  // origin: GPU0's only (timing); work: the GPU's graph
  cudaEvent_t fork = nullptr, join = nullptr, start = nullptr, stop = nullptr;
  char* in = nullptr;    // max bytes
  char* out = nullptr;   // max bytes
  char* recv = nullptr;  // 2 x max bytes (push receive buffers, ll buffers)
  Ctl* ctl = nullptr;
};

class BidirBench {
 public:
  BidirBench(const MicrobenchOptions& opt, std::vector<BenchSeries>& out, std::vector<std::string>& warnings)
      : opt_(opt), out_(out), warnings_(warnings), t0_(std::chrono::steady_clock::now()) {}
  ~BidirBench() { release(); }
  void run();

 private:
  void log(const std::string& s) const {
    if (opt_.log) opt_.log(s);
  }
  bool over_budget() const {
    // Its own budget: these series come after the others, which may have spent the shared one.
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count() > 120;
  }
  void setup();
  void release();
  void check_errors(const std::string& what);
  // Seconds per launch of a replay of per-GPU graphs of `iters` launches of enqueue(g, stream), as the
  // harness replays the bidir kernels' and NCCL's records: median of kReplays timed replays.
  double replay(int iters, const std::function<void(int, cudaStream_t)>& enqueue);
  // A series over sizes, each point a replay of graphs of `iters_` launches (kIters, or kRecordIters for
  // the ".n100" series).
  void sweep(const std::string& name, const std::string& method, int64_t max_bytes,
             const std::function<void(int, cudaStream_t, int64_t)>& enqueue, int64_t min_bytes = 0);
  // NCCL send/recv series named prefix.graph.{uni,bidir}[.n100]; `only_n100`: the 100-launch ones only.
  void bench_nccl(const std::string& prefix = "nccl.p2p", bool only_n100 = false);
  void bench_ring_steps();

 public:
  void setup_only() { setup(); }
  void bench_nccl_public(const std::string& prefix) { bench_nccl(prefix, true); }

 private:
  MicrobenchOptions opt_;
  std::vector<BenchSeries>& out_;
  std::vector<std::string>& warnings_;
  std::chrono::steady_clock::time_point t0_;
  Side s_[2];
  int64_t max_ = 0;
  int iters_ = kIters;
};

void BidirBench::setup() {
  // ll's buffers (2 parities of ll_words 8-byte words) live in `recv` (2 x max_) too.
  max_ = std::max<int64_t>(opt_.max_bytes, 4 * kLLMaxBytes);
  for (int g = 0; g < 2; ++g) {
    Side& s = s_[g];
    s.dev = g;
    CCLAB_CUDA(cudaSetDevice(g));
    CCLAB_CUDA(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, g));
    const cudaError_t pe = cudaDeviceEnablePeerAccess(1 - g, 0);
    if (pe == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();
    else
      CCLAB_CUDA(pe);
    CCLAB_CUDA(cudaStreamCreateWithFlags(&s.work, cudaStreamNonBlocking));
    if (g == 0) CCLAB_CUDA(cudaStreamCreateWithFlags(&s.origin, cudaStreamNonBlocking));
    CCLAB_CUDA(cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming));
    CCLAB_CUDA(cudaEventCreateWithFlags(&s.join, cudaEventDisableTiming));
    CCLAB_CUDA(cudaEventCreate(&s.start));
    CCLAB_CUDA(cudaEventCreate(&s.stop));
    for (char** p : {&s.in, &s.out}) {
      CCLAB_CUDA(cudaMalloc(p, size_t(max_) + 64));
      CCLAB_CUDA(cudaMemset(*p, 0, size_t(max_)));
    }
    CCLAB_CUDA(cudaMalloc(&s.recv, 2 * size_t(max_) + 64));
    CCLAB_CUDA(cudaMemset(s.recv, 0, 2 * size_t(max_)));
    CCLAB_CUDA(cudaMalloc(&s.ctl, sizeof(Ctl)));
    CCLAB_CUDA(cudaMemset(s.ctl, 0, sizeof(Ctl)));
    CCLAB_CUDA(cudaDeviceSynchronize());
  }
}

void BidirBench::release() {
  for (Side& s : s_) {
    cudaSetDevice(s.dev);
    cudaDeviceSynchronize();
    for (char* p : {s.in, s.out, s.recv}) cudaFree(p);
    cudaFree(s.ctl);
    for (cudaStream_t st : {s.origin, s.work})
      if (st) cudaStreamDestroy(st);
    for (cudaEvent_t e : {s.fork, s.join, s.start, s.stop})
      if (e) cudaEventDestroy(e);
    s = Side{};
  }
}

void BidirBench::check_errors(const std::string& what) {
  for (Side& s : s_) {
    int err = 0;
    CCLAB_CUDA(cudaSetDevice(s.dev));
    CCLAB_CUDA(cudaMemcpy(&err, &s.ctl->err, sizeof(int), cudaMemcpyDeviceToHost));
    if (err) throw_env(what + ": a flag from the peer never arrived (GPU " + std::to_string(s.dev) + ")");
  }
}

double BidirBench::replay(int iters, const std::function<void(int, cudaStream_t)>& enqueue) {
  cudaGraph_t graph[2] = {nullptr, nullptr};
  cudaGraphExec_t exec[2] = {nullptr, nullptr};
  struct Free {
    cudaGraph_t* g;
    cudaGraphExec_t* e;
    ~Free() {
      for (int i = 0; i < 2; ++i) {
        if (e[i]) cudaGraphExecDestroy(e[i]);
        if (g[i]) cudaGraphDestroy(g[i]);
      }
    }
  } free_graphs{graph, exec};
  // Both GPUs' captures are open at once (NCCL's group call spans the two streams), as capture_per_device.
  for (Side& s : s_) {
    CCLAB_CUDA(cudaSetDevice(s.dev));
    CCLAB_CUDA(cudaStreamBeginCapture(s.work, cudaStreamCaptureModeThreadLocal));
  }
  try {
    for (int i = 0; i < iters; ++i)
      for (int g = 0; g < 2; ++g) {
        CCLAB_CUDA(cudaSetDevice(s_[g].dev));
        enqueue(g, s_[g].work);
      }
  } catch (...) {
    for (int g = 0; g < 2; ++g) {  // close both captures before the error goes on
      cudaSetDevice(s_[g].dev);
      cudaStreamEndCapture(s_[g].work, &graph[g]);
    }
    cudaGetLastError();
    throw;
  }
  // Every capture of this thread ends before any graph is instantiated (instantiating is not permitted
  // while a capture is open, as exec/runtime/harness.cpp's capture_per_device does it).
  for (int g = 0; g < 2; ++g) {
    CCLAB_CUDA(cudaSetDevice(s_[g].dev));
    CCLAB_CUDA(cudaStreamEndCapture(s_[g].work, &graph[g]));
  }
  for (int g = 0; g < 2; ++g) {
    CCLAB_CUDA(cudaSetDevice(s_[g].dev));
    CCLAB_CUDA(cudaGraphInstantiate(&exec[g], graph[g], 0));
  }
  Side& o = s_[0];
  std::vector<double> t;
  for (int r = 0; r < kReplays + 1; ++r) {  // replay 0 uploads the graphs (not timed)
    CCLAB_CUDA(cudaSetDevice(o.dev));
    k_gate<<<1, 1, 0, o.origin>>>(200000ULL);  // the whole replay is enqueued before the clock starts
    CCLAB_CUDA(cudaGetLastError());
    CCLAB_CUDA(cudaEventRecord(o.start, o.origin));
    CCLAB_CUDA(cudaEventRecord(o.fork, o.origin));  // fork_streams / graph launches / join_streams
    for (Side& s : s_) {
      CCLAB_CUDA(cudaSetDevice(s.dev));
      CCLAB_CUDA(cudaStreamWaitEvent(s.work, o.fork, 0));
      CCLAB_CUDA(cudaGraphLaunch(exec[s.dev], s.work));
    }
    for (Side& s : s_) {
      CCLAB_CUDA(cudaSetDevice(s.dev));
      CCLAB_CUDA(cudaEventRecord(s.join, s.work));
      CCLAB_CUDA(cudaSetDevice(o.dev));
      CCLAB_CUDA(cudaStreamWaitEvent(o.origin, s.join, 0));
    }
    CCLAB_CUDA(cudaSetDevice(o.dev));
    CCLAB_CUDA(cudaEventRecord(o.stop, o.origin));
    CCLAB_CUDA(cudaEventSynchronize(o.stop));
    float ms = 0;
    CCLAB_CUDA(cudaEventElapsedTime(&ms, o.start, o.stop));
    if (r > 0) t.push_back(double(ms) * 1e-3 / iters);
    if (r == 0) check_errors("the first replay");  // a lost flag: stop before timing more replays of it
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void BidirBench::sweep(const std::string& name, const std::string& method, int64_t max_bytes,
                       const std::function<void(int, cudaStream_t, int64_t)>& enqueue, int64_t min_bytes) {
  BenchSeries s{name, method, {}};
  if (iters_ != kIters) s.method += " [" + std::to_string(iters_) + " launches per graph, not 20]";
  for (int64_t b = std::max<int64_t>({opt_.min_bytes, min_bytes, 8}); b <= std::min(max_bytes, max_); b *= 2) {
    if (over_budget()) {
      warnings_.push_back(name + ": stopped at " + std::to_string(b) + " bytes (time budget spent)");
      break;
    }
    s.points.push_back({b, replay(iters_, [&](int g, cudaStream_t st) { enqueue(g, st, b); }), iters_});
    check_errors(name);
  }
  if (s.points.empty()) return;
  std::ostringstream os;
  os.precision(4);
  os << "  " << name << ": " << s.points.size() << " sizes, " << s.points.front().seconds * 1e6 << " us at "
     << s.points.front().bytes << " B, " << s.points.back().seconds * 1e6 << " us at " << s.points.back().bytes << " B";
  log(os.str());
  out_.push_back(std::move(s));
}

void BidirBench::bench_nccl(const std::string& prefix, bool only_n100) {
  if (const char* skip = std::getenv("CCLAB_CALIBRATE_SKIP_NCCL"); skip && *skip && *skip != '0') return;
  apply_nccl_environment(NcclOptions{});
  ncclComm_t comms[2] = {nullptr, nullptr};
  const int devs[2] = {s_[0].dev, s_[1].dev};
  CCLAB_NCCL_MB(ncclCommInitAll(comms, 2, devs));
  struct FreeComms {
    ncclComm_t* c;
    ~FreeComms() {
      for (int i = 0; i < 2; ++i)
        if (c[i]) ncclCommDestroy(c[i]);
    }
  } free_comms{comms};
  // One send/recv both ways outside any capture, small and large, so that NCCL's lazy connection setup
  // and buffers happen here rather than during the first capture.
  for (const int64_t warm : {int64_t(8), opt_.max_bytes}) {
    CCLAB_NCCL_MB(ncclGroupStart());
    for (int r = 0; r < 2; ++r) {
      CCLAB_NCCL_MB(ncclSend(s_[r].in, size_t(warm), ncclChar, 1 - r, comms[r], s_[r].work));
      CCLAB_NCCL_MB(ncclRecv(s_[r].out, size_t(warm), ncclChar, 1 - r, comms[r], s_[r].work));
    }
    CCLAB_NCCL_MB(ncclGroupEnd());
    for (Side& sd : s_) {
      CCLAB_CUDA(cudaSetDevice(sd.dev));
      CCLAB_CUDA(cudaStreamSynchronize(sd.work));
    }
  }
  for (const bool both : {false, true}) {
    // One group call per iteration covering both GPUs' streams (captured on both at once).
    int64_t bytes = 0;
    auto group = [&](int g, cudaStream_t) {
      if (g != 1) return;  // the group call issues on both streams at once
      CCLAB_NCCL_MB(ncclGroupStart());
      for (int r = 0; r < 2; ++r) {
        const int peer = 1 - r;
        if (r == 0 || both) CCLAB_NCCL_MB(ncclSend(s_[r].in, size_t(bytes), ncclChar, peer, comms[r], s_[r].work));
        if (r == 1 || both) CCLAB_NCCL_MB(ncclRecv(s_[r].out, size_t(bytes), ncclChar, peer, comms[r], s_[r].work));
      }
      CCLAB_NCCL_MB(ncclGroupEnd());
    };
    const std::string method = std::string(both ? "ncclSend/ncclRecv both ways at once (bytes per direction)"
                                                : "ncclSend GPU0 -> ncclRecv GPU1") +
                               " in one group call per iteration, captured in per-GPU graphs of 20 iterations, "
                               "replayed between a fork from and a join to GPU0's origin stream (as the harness "
                               "times NCCL's collectives)";
    auto enqueue = [&](int g, cudaStream_t st, int64_t b) {
      bytes = b;
      group(g, st);
    };
    const std::string name = prefix + (both ? ".graph.bidir" : ".graph.uni");
    if (!only_n100) sweep(name, method, opt_.max_bytes, enqueue);
    {  // as the records are timed (kRecordIters per graph)
      iters_ = kRecordIters;
      sweep(name + ".n100", method, std::min(opt_.max_bytes, kRecordItersMax), enqueue);
      iters_ = kIters;
    }
  }
}

void BidirBench::bench_ring_steps() {
  t0_ = std::chrono::steady_clock::now();  // their own time budget: they come after every other series
  log("NCCL's ring steps as byte streams (24 CTAs, a ring channel each) and send/recv's two halves");
  // NCCL 2.28's send/recv channels for S bytes to one peer of two (enqueue.cc addP2pToPlan, 32 p2p channels
  // per peer): min(16, S / 64 KiB) parts, doubled while a part is over 16 MiB.
  auto p2p_channels = [](int64_t b) {
    int nc = int(std::clamp<int64_t>((b + (64 << 10) - 1) / (64 << 10), 1, 16));
    while ((b + nc - 1) / nc > (int64_t(16) << 20) && nc <= 16) nc *= 2;
    return nc;
  };
  struct Variant {
    const char* name;
    int step;
    const char* what;
    int ctas = 24;  // 0: NCCL's p2p channel count for the size
  };
  const Variant variants[] = {
      {"bidir.step.send.g24", kRingSend, "own input stored into the peer"},
      {"bidir.step.copysend.g24", kRingCopySend, "own input stored into the own output and into the peer"},
      {"bidir.step.rrcs.g24", kRingRrcs,
       "own input plus a local buffer (float adds) stored into the own output and into the peer"},
      {"bidir.step.rrc.g24", kRingRrc, "own input plus a local buffer (float adds) stored into the own output"},
      {"bidir.step.p2p", kRingP2p,
       "G = NCCL's send/recv channels for S bytes (16 up to 256 MiB, then 32); half the threads store the own "
       "input into the peer, half copy a local buffer into the own output",
       0},
      // one channel alone (no link limit): the steps' cost per CTA
      {"bidir.step.send.g1", kRingSend, "own input stored into the peer", 1},
      {"bidir.step.copysend.g1", kRingCopySend, "own input stored into the own output and into the peer", 1},
      {"bidir.step.rrcs.g1", kRingRrcs,
       "own input plus a local buffer (float adds) stored into the own output and into the peer", 1},
      {"bidir.step.p2p.g1", kRingP2p,
       "half the threads store the own input into the peer, half copy a local buffer out", 1}};
  for (const Variant& v : variants) {
    const int step = v.step, ctas = v.ctas;
    sweep(
        v.name,
        std::string("both GPUs at once, no flags: ") +
            (ctas == 0 ? "" : std::to_string(ctas) + " CTA(s) of 512 threads; ") + v.what +
            "; each CTA a contiguous part, 4 16-byte vectors per thread loaded then stored; plain launches in "
            "per-GPU graphs of 20, replayed as the harness does (bytes per direction)",
        ctas == 1 ? std::min<int64_t>(max_, int64_t(64) << 20) : max_,
        [&, step, ctas](int g, cudaStream_t st, int64_t b) {
          const int64_t nvec = std::max<int64_t>(1, b / 16);
          const int G = ctas == 0 ? p2p_channels(b) : ctas;
          auto* src = reinterpret_cast<const uint4*>(s_[g].in);
          auto* src2 = reinterpret_cast<const uint4*>(s_[g].recv + max_);
          auto* local = reinterpret_cast<uint4*>(s_[g].out);
          auto* remote = reinterpret_cast<uint4*>(s_[1 - g].recv);
          // Indexed by RingStep.
          constexpr decltype(&k_ring_step<kRingSend>) kernels[] = {k_ring_step<kRingSend>, k_ring_step<kRingCopySend>,
                                                                   k_ring_step<kRingRrcs>, k_ring_step<kRingRrc>,
                                                                   k_ring_step<kRingP2p>};
          kernels[step]<<<G, 512, 0, st>>>(src, src2, local, remote, nvec);
          CCLAB_CUDA(cudaGetLastError());
        },
        int64_t(256) << 10);
  }
}

void BidirBench::run() {
  setup();
  log("bidir kernels' transfers and NCCL send/recv under per-GPU graph replay (20 launches per graph)");
  const int sms = s_[0].sms;
  // Per-replay fixed cost: empty PDL kernels, N launches per graph.
  {
    BenchSeries s{"bidir.replay",
                  "empty PDL kernels (1 CTA) in per-GPU graphs of N launches replayed between a fork from and a join "
                  "to GPU0's origin stream; a point's 'bytes' is N, its time the time per launch",
                  {}};
    for (int n : {5, 10, 20, 40, kRecordIters, 300})
      s.points.push_back({n, replay(n, [](int, cudaStream_t st) { launch_pdl(k_empty_pdl_b, 1, 32, st); }), n});
    out_.push_back(std::move(s));
  }
  // The same launches behind a kernel that runs: an empty kernel leaves the next launch nothing to hide behind
  // (on one H200 a body of 250 ns or more took 0.15-0.19 us off each launch;
  // docs/findings/2026-11-29-pdl-launch-behind-a-body.md). A diagnostic: per launch less the body.
  {
    BenchSeries s{
        "bidir.replay.body",
        "PDL kernels (1 CTA) that let the next launch start at their start, then spin T ns, in per-GPU graphs "
        "of " +
            std::to_string(kRecordIters) +
            " launches replayed as bidir.replay; a point's 'bytes' is T, its time the time per launch less T",
        {}};
    for (int ns : {100, 250, 500, 1000, 2000, 4000}) {  // T = 0 is bidir.replay at the same launches
      const double t = replay(
          kRecordIters, [ns](int, cudaStream_t st) { launch_pdl(k_body_pdl_b, 1, 32, st, (unsigned long long)ns); });
      s.points.push_back({ns, t - ns * 1e-9, kRecordIters});
    }
    out_.push_back(std::move(s));
  }
  // Pull at flash's default (4 vectors per thread) and at the variants scripts/measure.sh calibrates
  // (flash_ldg_unroll 2 and 8; 2 with flash_blocks=66): G = min(cap, S / tile).
  // own: each arrived vector added to the GPU's own one (a reduction's loads, integer adds).
  const std::string own_note =
      "; the arrived bytes added (32-bit integer lanes) to the GPU's own input's as a "
      "reduction reads them, then stored";
  auto pull = [&](const std::string& name, int unroll, int cap, int64_t max_bytes, bool own = false) {
    const int64_t tile_bytes = int64_t(kPullThreads) * 16 * unroll;
    std::ostringstream m;
    m << "both GPUs at once: G = min(" << (cap > 0 ? std::to_string(cap) : std::string("SMs")) << ", S / "
      << tile_bytes / 1024 << " KiB) CTAs of 512 threads, start flag handshake with the peer's CTA, 16-byte loads "
      << "of the peer's S bytes (" << unroll << " per thread in flight, next tile prefetched) stored locally, "
      << "finish handshake; PDL launches in per-GPU graphs of 20, replayed as the harness does (bytes per direction)"
      << (own ? own_note : "");
    sweep(name, m.str(), max_bytes, [&, unroll, cap, own](int g, cudaStream_t st, int64_t b) {
      // Sizes below a vector move one (the kernels' tail: a peer access all the same).
      const int64_t nvec = (b + 15) / 16, tile = int64_t(kPullThreads) * unroll;
      const int G = int(std::clamp<int64_t>((nvec + tile - 1) / tile, 1, std::min(cap > 0 ? cap : sms, kMaxCtas)));
      auto* peer = reinterpret_cast<const uint4*>(s_[1 - g].in);
      auto* out = reinterpret_cast<uint4*>(s_[g].out);
      const uint4* no_own = nullptr;
      if (own)
        launch_pdl(k_pull<4, true>, G, kPullThreads, st, peer, out, nvec, s_[g].ctl, s_[1 - g].ctl,
                   reinterpret_cast<const uint4*>(s_[g].in));
      else if (unroll == 2)
        launch_pdl(k_pull<2>, G, kPullThreads, st, peer, out, nvec, s_[g].ctl, s_[1 - g].ctl, no_own);
      else if (unroll == 8)
        launch_pdl(k_pull<8>, G, kPullThreads, st, peer, out, nvec, s_[g].ctl, s_[1 - g].ctl, no_own);
      else
        launch_pdl(k_pull<4>, G, kPullThreads, st, peer, out, nvec, s_[g].ctl, s_[1 - g].ctl, no_own);
    });
  };
  pull("bidir.pull", 4, 0, opt_.max_bytes);
  const int64_t variants_max = std::min<int64_t>(opt_.max_bytes, int64_t(64) << 20);
  pull("bidir.pull.u2", 2, 0, variants_max);
  pull("bidir.pull.u8", 8, 0, variants_max);
  pull("bidir.pull.u2.g66", 2, 66, variants_max);
  // Push at its default grid (2 CTAs per SM) and with push_blocks=132 (scripts/measure.sh's variant).
  const std::string push_loop_note =
      "; the arrived bytes added (32-bit integer lanes) to the GPU's own input's in the push kernel's loop (the "
      "peers in an inner loop of a run-time count, pointers not known to be distinct from the output)";
  auto push = [&](const std::string& name, int cap, int64_t max_bytes, int own = 0) {
    sweep(name,
          "both GPUs at once: G = min(" + (cap > 0 ? std::to_string(cap) : std::string("2 x SMs")) +
              ", S / 16 KiB) CTAs of 512 threads; half store 16 KiB tiles into the peer's receive buffer (by launch "
              "parity) and release a flag per tile, half wait for the peer's flag and copy the tile out; PDL launches "
              "in per-GPU graphs of 20, replayed as the harness does (bytes per direction)" +
              (own == 1   ? own_note
               : own == 2 ? push_loop_note
               : own >= 3 ? std::string("; the arrived bytes reduced with the GPU's own input's in the push kernel's "
                                        "loop (float conversion and add, as dev::Acc): ") +
                                (own == 3 ? "float" : "bfloat16") + " elements"
                          : std::string()),
          max_bytes, [&, cap, own](int g, cudaStream_t st, int64_t b) {
            const int64_t nvec = std::max<int64_t>(1, b / 16), tile = int64_t(kPushThreads / 2) * kPushUnroll;
            const int G =
                int(std::clamp<int64_t>((nvec + tile - 1) / tile, 1, std::min(cap > 0 ? cap : 2 * sms, kMaxCtas)));
            const int64_t stride = max_ / 16;
            // The same buffers again, unrestricted, for the kernel loop of own == 2 (only used there).
            const uintptr_t in_alias = reinterpret_cast<uintptr_t>(s_[g].in),
                            out_alias = reinterpret_cast<uintptr_t>(s_[g].out);
            launch_pdl(k_push, G, kPushThreads, st, reinterpret_cast<const uint4*>(s_[g].in),
                       reinterpret_cast<uint4*>(s_[1 - g].recv), reinterpret_cast<const uint4*>(s_[g].recv), stride,
                       reinterpret_cast<uint4*>(s_[g].out), nvec, s_[g].ctl, s_[1 - g].ctl, own,
                       reinterpret_cast<const uint4*>(in_alias), reinterpret_cast<uint4*>(out_alias), 2);
          });
  };
  push("bidir.push", 0, opt_.max_bytes);
  push("bidir.push.g132", 132, variants_max);
  auto ll = [&](const std::string& name, bool pdl) {
    sweep(name,
          std::string("both GPUs at once: LL words (4 data + 4 flag bytes), two per thread in a 16-byte store into the "
                      "peer, each thread polling its own received pair; 256 threads, G = min(SMs, pairs / 256) CTAs; "
                      "the last CTA advances the epoch; ") +
              (pdl ? "PDL launches" : "plain launches (no PDL)") +
              " in per-GPU graphs of 20, replayed as the harness does (data bytes per direction)",
          kLLMaxBytes, [&](int g, cudaStream_t st, int64_t b) {
            const int64_t words = (b + 3) / 4, pairs = (words + 1) / 2;
            const int G = int(std::clamp<int64_t>((pairs + kLLThreads - 1) / kLLThreads, 1, std::min(sms, kMaxCtas)));
            const int64_t ll_words = (kLLMaxBytes / 4 + 2) & ~int64_t(1);
            auto* own = reinterpret_cast<const uint32_t*>(s_[g].in);
            auto* peer_ll = reinterpret_cast<unsigned long long*>(s_[1 - g].recv);
            auto* my_ll = reinterpret_cast<unsigned long long*>(s_[g].recv);
            auto* out = reinterpret_cast<uint32_t*>(s_[g].out);
            if (pdl) {
              launch_pdl(k_ll, G, kLLThreads, st, own, peer_ll, my_ll, ll_words, out, words, s_[g].ctl);
            } else {
              k_ll<<<G, kLLThreads, 0, st>>>(own, peer_ll, my_ll, ll_words, out, words, s_[g].ctl);
              CCLAB_CUDA(cudaGetLastError());
            }
          });
  };
  ll("bidir.ll", true);
  ll("bidir.ll_plain", false);
  // The stream mode's defaults: 256 KiB slots, 4 per lane (BidirParams slot_bytes, slots).
  constexpr int64_t kSlot = 256 << 10;
  constexpr int kSlots = 4;
  const bool ring_fits = 2 * max_ >= int64_t(std::min(sms, kMaxCtas)) * kSlots * kSlot;
  const std::string ownloop_note =
      "; the arrived bytes added (32-bit integer lanes) to the GPU's own input's in the stream kernel's loop (one "
      "vector per iteration, the peers in an inner loop of a run-time count, pointers not known to be distinct "
      "from the output)";
  const std::string kernelloop_note =
      "; the arrived bytes reduced with the GPU's own input's in the stream kernel's loop (per vector and source the "
      "slot's address computed from run-time rank, source count and slots; float conversion and add, as dev::Acc): ";
  auto ring = [&](const std::string& name, int64_t max_bytes, int own = 0) {
    sweep(name,
          "both GPUs at once: L = min(SMs, S / 256 KiB) lanes of 512 threads, 256 KiB units through a ring of 4 "
          "slots in the peer (producer half: wait for a free slot, 16-byte stores, fence.sys, release; consumer "
          "half: wait for the peer's unit, copy it out, release the slot); plain launches in per-GPU graphs of 20, "
          "replayed as the harness does (bytes per direction)" +
              (own == 1   ? own_note
               : own == 2 ? ownloop_note
               : own >= 3 ? kernelloop_note + (own == 3 ? "float" : "bfloat16") + " elements"
                          : std::string()),
          max_bytes, [&, own](int g, cudaStream_t st, int64_t b) {
            const int L = int(std::clamp<int64_t>((b + kSlot - 1) / kSlot, 1, std::min(sms, kMaxCtas)));
            // The same buffers again, unrestricted, for the kernel loop of own == 2 (only used there).
            const uintptr_t in_alias = reinterpret_cast<uintptr_t>(s_[g].in),
                            out_alias = reinterpret_cast<uintptr_t>(s_[g].out);
            k_ring<<<L, 512, 0, st>>>(
                reinterpret_cast<const uint8_t*>(s_[g].in), reinterpret_cast<uint8_t*>(s_[1 - g].recv),
                reinterpret_cast<const uint8_t*>(s_[g].recv), reinterpret_cast<uint8_t*>(s_[g].out), b, kSlot, kSlots,
                s_[g].ctl, s_[1 - g].ctl, own, reinterpret_cast<const uint8_t*>(in_alias),
                reinterpret_cast<uint8_t*>(out_alias), 2, g, 1.f);
            CCLAB_CUDA(cudaGetLastError());
          });
  };
  if (ring_fits)
    ring("bidir.ring", opt_.max_bytes);
  else
    warnings_.push_back("bidir.ring: not measured (the ring needs more than twice --max-bytes)");
  // The default of every mode again with kRecordIters launches per graph, as the records are timed.
  const int64_t record_max = std::min(opt_.max_bytes, kRecordItersMax);
  iters_ = kRecordIters;
  pull("bidir.pull.n100", 4, 0, record_max);
  push("bidir.push.n100", 0, record_max);
  ll("bidir.ll.n100", true);
  ll("bidir.ll_plain.n100", false);
  if (ring_fits) ring("bidir.ring.n100", record_max);
  // The same adding the own input's bytes (the memory accesses of the kernels' reductions).
  pull("bidir.pull.own.n100", 4, 0, record_max, true);
  push("bidir.push.own.n100", 0, record_max, 1);
  if (ring_fits) ring("bidir.ring.own.n100", record_max, 1);
  // The stream kernel's own reduction loop by element type (its address arithmetic and conversions).
  if (ring_fits) ring("bidir.ring.kernelloop.float.n100", record_max, 3);
  if (ring_fits) ring("bidir.ring.kernelloop.bfloat16.n100", record_max, 4);
  // ll, and pull adding the own input, with their pointers in one by-value block indexed by rank (as the bidir
  // kernels' BidirArgs): what reading the pointers from such a block adds to each launch.
  auto rank_args = [&](int g) {
    RankArgs a{};
    for (int q = 0; q < 2; ++q) {
      a.in[q] = reinterpret_cast<const uint8_t*>(s_[q].in);
      a.ctl[q] = s_[q].ctl;
      a.buf[q] = reinterpret_cast<uint8_t*>(s_[q].recv);
    }
    a.out = reinterpret_cast<uint8_t*>(s_[g].out);
    a.rank = g;
    a.nranks = 2;
    return a;
  };
  const std::string args_note =
      "; the kernel reads its pointers from a by-value block of per-rank pointer arrays indexed by rank at run "
      "time (as the bidir kernels' BidirArgs)";
  for (const bool pdl : {true, false})
    sweep(std::string(pdl ? "bidir.ll" : "bidir.ll_plain") + ".args.n100",
          std::string("both GPUs at once: LL words (4 data + 4 flag bytes), two per thread in a 16-byte store into "
                      "the peer, each thread polling its own received pair; 256 threads, G = min(SMs, pairs / 256) "
                      "CTAs; ") +
              (pdl ? "PDL launches" : "plain launches (no PDL)") +
              " in per-GPU graphs, replayed as the harness does (data bytes per direction)" + args_note,
          kLLMaxBytes, [&, pdl](int g, cudaStream_t st, int64_t b) {
            RankArgs a = rank_args(g);
            a.words = (b + 3) / 4;
            a.ll_words = (kLLMaxBytes / 4 + 2) & ~int64_t(1);
            const int64_t pairs = (a.words + 1) / 2;
            const int G = int(std::clamp<int64_t>((pairs + kLLThreads - 1) / kLLThreads, 1, std::min(sms, kMaxCtas)));
            if (pdl) {
              launch_pdl(k_ll_args, G, kLLThreads, st, a);
            } else {
              k_ll_args<<<G, kLLThreads, 0, st>>>(a);
              CCLAB_CUDA(cudaGetLastError());
            }
          });
  sweep("bidir.pull.own.args.n100",
        "both GPUs at once: G = min(SMs, S / 32 KiB) CTAs of 512 threads, start flag handshake with the peer's CTA, "
        "16-byte loads of the peer's S bytes (4 per thread in flight, next tile prefetched), finish handshake; PDL "
        "launches in per-GPU graphs, replayed as the harness does (bytes per direction)" +
            own_note + args_note,
        record_max, [&](int g, cudaStream_t st, int64_t b) {
          RankArgs a = rank_args(g);
          a.nvec = (b + 15) / 16;
          const int64_t tile = int64_t(kPullThreads) * 4;
          const int G = int(std::clamp<int64_t>((a.nvec + tile - 1) / tile, 1, std::min(sms, kMaxCtas)));
          launch_pdl(k_pull_args<4, true>, G, kPullThreads, st, a);
        });
  iters_ = kIters;
  // lamport: its defaults (512 threads, 2 vectors per thread per tile, 2 tiles ahead) and the variants
  // scripts/measure.sh calibrates (lamport_threads=256; lamport_split=1: half the threads send, half
  // receive); receive buffers of up to 256 MiB (BidirParams lamport_max_bytes); they start as the sentinel.
  constexpr int64_t kLamportMax = int64_t(256) << 20;
  constexpr int kLamportAhead = 2;
  for (Side& sd : s_) {
    CCLAB_CUDA(cudaSetDevice(sd.dev));
    CCLAB_CUDA(cudaMemset(sd.recv, 0xFF, 2 * size_t(max_)));
    CCLAB_CUDA(cudaDeviceSynchronize());
  }
  auto lamport = [&](const std::string& name, int threads, bool split, int64_t max_bytes) {
    const int W = split ? threads / 2 : threads;
    sweep(name,
          "both GPUs at once: G = min(SMs, S / " + std::to_string(W * 32 / 1024) + " KiB) CTAs of " +
              std::to_string(threads) + " threads; " +
              (split ? std::string("half the threads store their 2 vectors of tile k into the peer's receive buffer "
                                   "(by launch parity), the other half poll tile k in their own")
                     : std::string("each thread stores its 2 vectors of tile k into the peer's receive buffer (by "
                                   "launch parity), then polls those of tile k - 2 in its own")) +
              " until no word is the all-ones sentinel, resets them and copies them out; PDL launches in per-GPU "
              "graphs of 20, replayed as the harness does (bytes per direction)",
          std::min(max_bytes, kLamportMax), [&, threads, split, W](int g, cudaStream_t st, int64_t b) {
            const int64_t nvec = (b + 15) / 16, tile = int64_t(W) * 2;
            const int G = int(std::clamp<int64_t>((nvec + tile - 1) / tile, 1, std::min(sms, kMaxCtas)));
            launch_pdl(k_lamport<2>, G, threads, st, reinterpret_cast<const uint4*>(s_[g].in),
                       reinterpret_cast<uint4*>(s_[1 - g].recv), reinterpret_cast<uint4*>(s_[g].recv), max_ / 16,
                       reinterpret_cast<uint4*>(s_[g].out), nvec, kLamportAhead, split, s_[g].ctl);
          });
  };
  lamport("bidir.lamport", 512, false, opt_.max_bytes);
  lamport("bidir.lamport.t256", 256, false, opt_.max_bytes);
  lamport("bidir.lamport.split", 512, true, opt_.max_bytes);
  iters_ = kRecordIters;
  lamport("bidir.lamport.t256.n100", 256, false, record_max);
  auto lamport_own = [&] {
    sweep("bidir.lamport.t256.own.n100",
          "both GPUs at once: G = min(SMs, S / 8 KiB) CTAs of 256 threads; per tile, every load issued before any is "
          "used (the own vectors of tile k to send, the own vectors of tile k - 2 again, one load of each received "
          "vector of tile k - 2), tile k stored into the peer's receive buffer (by launch parity), a received vector "
          "still the all-ones sentinel polled until it arrives, reset, added (32-bit integer lanes) to the own one "
          "and stored (the lamport kernel's loop); PDL launches in per-GPU graphs, replayed as the harness does "
          "(bytes per direction)",
          record_max, [&](int g, cudaStream_t st, int64_t b) {
            const int64_t nvec = (b + 15) / 16, tile = int64_t(256) * 2;
            const int G = int(std::clamp<int64_t>((nvec + tile - 1) / tile, 1, std::min(sms, kMaxCtas)));
            launch_pdl(k_lamport_own<2>, G, 256, st, reinterpret_cast<const uint4*>(s_[g].in),
                       reinterpret_cast<uint4*>(s_[1 - g].recv), reinterpret_cast<uint4*>(s_[g].recv), max_ / 16,
                       reinterpret_cast<uint4*>(s_[g].out), nvec, kLamportAhead, s_[g].ctl);
          });
    // The same loop as the kernel runs it by element type: the records' half / bfloat16 rows run 0.2-0.4 us
    // slower than float at 2-32 KiB (2 x H200), which integer lanes cannot show.
    for (const char* el : {"float", "bfloat16"}) {
      const bool f32 = std::string(el) == "float";
      sweep(std::string("bidir.lamport.t256.kernelloop.") + el + ".n100",
            std::string("the bidir.lamport.t256.own.n100 loop as the lamport kernel runs it for ") + el +
                " elements: the sent vectors' sentinel patterns rewritten, arrival checked element by element, the "
                "reduction in float (dev::Acc); PDL launches in per-GPU graphs, replayed as the harness does (bytes "
                "per direction)",
            record_max, [&, f32](int g, cudaStream_t st, int64_t b) {
              const int64_t nvec = (b + 15) / 16, tile = int64_t(256) * 2;
              const int G = int(std::clamp<int64_t>((nvec + tile - 1) / tile, 1, std::min(sms, kMaxCtas)));
              auto k = f32 ? k_lamport_own<2, float> : k_lamport_own<2, __nv_bfloat16>;
              launch_pdl(k, G, 256, st, reinterpret_cast<const uint4*>(s_[g].in),
                         reinterpret_cast<uint4*>(s_[1 - g].recv), reinterpret_cast<uint4*>(s_[g].recv), max_ / 16,
                         reinterpret_cast<uint4*>(s_[g].out), nvec, kLamportAhead, s_[g].ctl);
            });
    }
  };
  iters_ = kIters;
  bench_nccl();
  // The newest variants last, so that a failure among them costs no other series: the push and stream kernels'
  // reduction loops, then lamport's loop on receive buffers reset to the sentinel.
  iters_ = kRecordIters;
  push("bidir.push.ownloop.n100", 0, record_max, 2);
  // The push kernel's loop by element type: the records' half / bfloat16 rows run 0.9 us slower than float from
  // 32 KiB (2 x H200), which integer adds cannot show.
  push("bidir.push.kernelloop.float.n100", 0, record_max, 3);
  push("bidir.push.kernelloop.bfloat16.n100", 0, record_max, 4);
  if (ring_fits) ring("bidir.ring.ownloop.n100", record_max, 2);
  for (Side& sd : s_) {
    CCLAB_CUDA(cudaSetDevice(sd.dev));
    CCLAB_CUDA(cudaMemset(sd.recv, 0xFF, 2 * size_t(max_)));
    CCLAB_CUDA(cudaDeviceSynchronize());
  }
  lamport_own();
  iters_ = kIters;
  bench_ring_steps();
}

}  // namespace

// NCCL reads NCCL_P2P_LL_THRESHOLD once per process (an NCCL_PARAM), so send/recv with the protocol pinned
// runs in a child process of this executable (nccl_p2p_probe_main), one per protocol: LL at every size
// (threshold 1 GiB per channel) and Simple at every size (threshold 0). Its series come back on its stdout.
namespace {
constexpr const char* kProbeTag = "@cclab-probe ";
}

int nccl_p2p_probe_main(const std::string& prefix, int64_t max_bytes) {
  MicrobenchOptions opt;
  opt.max_bytes = max_bytes;
  std::vector<BenchSeries> out;
  std::vector<std::string> warnings;
  {
    BidirBench b(opt, out, warnings);
    b.setup_only();
    b.bench_nccl_public(prefix);
  }
  std::ostringstream os;
  os.precision(9);
  for (const BenchSeries& s : out) {
    os << kProbeTag << "series " << s.name << "\n" << kProbeTag << "method " << s.method << "\n";
    for (const BenchPoint& p : s.points)
      os << kProbeTag << "point " << p.bytes << " " << p.seconds << " " << p.reps << "\n";
  }
  for (const std::string& w : warnings) os << kProbeTag << "warning " << w << "\n";
  std::fputs(os.str().c_str(), stdout);
  std::fflush(stdout);
  return 0;
}

namespace {
void run_nccl_probe_child(const char* env, const std::string& prefix, const std::string& what,
                          const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                          std::vector<std::string>& warnings) {
  if (const char* skip = std::getenv("CCLAB_CALIBRATE_SKIP_NCCL"); skip && *skip && *skip != '0') return;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    warnings.push_back(prefix + ": not measured (no /proc/self/exe)");
    return;
  }
  exe[n] = 0;
  const int64_t max_bytes = std::min(opt.max_bytes, kRecordItersMax);
  // At most 3 minutes (a hung NCCL init must not hang the calibration).
  const std::string limit = access("/usr/bin/timeout", X_OK) == 0 ? "/usr/bin/timeout 180 " : "";
  const std::string cmd = limit + "env " + env + " '" + exe + "' __nccl-p2p-probe " + prefix + " " +
                          std::to_string(max_bytes) + " 2>/dev/null";
  if (opt.log) opt.log("NCCL send/recv with " + what + " (a child process: " + env + ")");
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) {
    warnings.push_back(prefix + ": not measured (the child process did not start)");
    return;
  }
  std::vector<BenchSeries> got;
  char line[8192];
  const std::string tag = kProbeTag;
  while (std::fgets(line, sizeof(line), f)) {
    std::string l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    if (l.compare(0, tag.size(), tag) != 0) continue;  // NCCL's own lines
    std::istringstream is(l.substr(tag.size()));
    std::string kind;
    is >> kind;
    if (kind == "series") {
      got.push_back({});
      is >> got.back().name;
    } else if (kind == "method" && !got.empty()) {
      std::getline(is >> std::ws, got.back().method);
      got.back().method += " [" + what + ": " + env + ", in a child process]";
    } else if (kind == "point" && !got.empty()) {
      BenchPoint p;
      is >> p.bytes >> p.seconds >> p.reps;
      if (is && p.seconds > 0) got.back().points.push_back(p);
    } else if (kind == "warning") {
      std::string w;
      std::getline(is >> std::ws, w);
      warnings.push_back(w);
    }
  }
  const int rc = pclose(f);
  if (rc != 0) warnings.push_back(prefix + ": the child process exited with status " + std::to_string(rc));
  for (BenchSeries& s : got) {
    if (s.points.empty()) continue;
    if (opt.log)
      opt.log("  " + s.name + ": " + std::to_string(s.points.size()) + " sizes, " +
              std::to_string(s.points.front().seconds * 1e6) + " us at " + std::to_string(s.points.front().bytes) +
              " B");
    out.push_back(std::move(s));
  }
}
}  // namespace

void run_bidir_microbenchmarks(const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                               std::vector<std::string>& warnings) {
  if (opt.gpus < 2) return;
  {
    BidirBench b(opt, out, warnings);
    b.run();
  }
  // After every other series (a failure here costs none of them): send/recv with NCCL's protocol pinned.
  run_nccl_probe_child("NCCL_P2P_LL_THRESHOLD=1073741824", "nccl.p2p.ll", "LL at every size", opt, out, warnings);
  run_nccl_probe_child("NCCL_P2P_LL_THRESHOLD=0", "nccl.p2p.simple", "Simple at every size", opt, out, warnings);
}

}  // namespace cclab::exec
