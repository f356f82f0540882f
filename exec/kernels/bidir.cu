#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/parse.hpp"
#include "exec/kernels/bidir.hpp"
#include "exec/kernels/bidir_kernels.cuh"
#include "exec/runtime/cuda_check.hpp"

namespace cclab::exec {

using namespace bidir;
using dev::Acc;
using dev::Elem;
using dev::has_sentinel;
using dev::mod_ranks;
using dev::unsentinel;
using dev::unsentinel_word;

namespace {

// ---------------------------------------------------------------------------------------------
// ll: 8-byte words = 4 data bytes (low) + 4-byte epoch flag (high), two per thread (16-byte stores).

__device__ __forceinline__ uint32_t load_word(const uint8_t* p, int64_t w, int64_t bytes) {
  const int64_t at = w * 4;
  if (at + 4 <= bytes) return *reinterpret_cast<const uint32_t*>(p + at);
  uint32_t v = 0;  // a partial last word (16-bit types with an odd count)
  for (int64_t i = at; i < bytes; ++i) v |= uint32_t(p[i]) << (8 * (i - at));
  return v;
}
__device__ __forceinline__ void store_word(uint8_t* p, int64_t w, int64_t bytes, uint32_t v) {
  const int64_t at = w * 4;
  if (at + 4 <= bytes) {
    *reinterpret_cast<uint32_t*>(p + at) = v;
    return;
  }
  for (int64_t i = at; i < bytes; ++i) p[i] = uint8_t(v >> (8 * (i - at)));
}

template <typename T, RedOp Op>
__device__ __forceinline__ uint32_t combine_word(uint32_t a, uint32_t b) {
  constexpr int N = 4 / sizeof(T);
  const T* pa = reinterpret_cast<const T*>(&a);
  const T* pb = reinterpret_cast<const T*>(&b);
  uint32_t r;
  T* pr = reinterpret_cast<T*>(&r);
#pragma unroll
  for (int i = 0; i < N; ++i) pr[i] = Elem<T>::from(dev::combine<Op>(Elem<T>::to(pa[i]), Elem<T>::to(pb[i])));
  return r;
}
template <typename T>
__device__ __forceinline__ uint32_t divide_word(uint32_t a, float d) {
  constexpr int N = 4 / sizeof(T);
  T* pa = reinterpret_cast<T*>(&a);
#pragma unroll
  for (int i = 0; i < N; ++i) pa[i] = Elem<T>::from(Elem<T>::to(pa[i]) / d);
  return a;
}

// Last CTA to finish advances the epoch (all CTAs read it at their start, before any finished).
__device__ __forceinline__ void finish_launch(uint32_t* done, uint32_t* epoch, uint32_t e, uint32_t arrivals) {
  if (arrivals == 1) {  // one CTA: nobody to count (the next launch sees the store: kernel boundary)
    *reinterpret_cast<volatile uint32_t*>(epoch) = e;
    return;
  }
  __threadfence();
  if (atomicAdd(done, 1u) == arrivals - 1) {
    *done = 0;
    *reinterpret_cast<volatile uint32_t*>(epoch) = e;
  }
}

// P: the most peers a launch has (1 for 2 ranks: the sweep below is then one load, as it was before it polled
// several peers at once; a wider sweep's guards cost ~0.1 us there).
template <typename T, RedOp Op, int P>
__global__ void __launch_bounds__(512) ll_kernel(BidirArgs a) {
  // Programmatic dependent launch: this grid may start while the previous kernel of the stream
  // runs; wait here until that kernel completed (memory visible), then let the next one start.
  // No-ops when launched without the attribute.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  Ctrl* me = a.ctrl[a.rank];
  // Every thread reads the epoch itself (no barrier), so the read overlaps its input loads; the
  // epoch moves only after every CTA reached finish_launch.
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(&me->ll_epoch) + 1;
  const uint64_t flag = uint64_t(e) << 32;
  const int parity = e & 1;
  const int n = a.nranks, r = a.rank;
  const int64_t words = (a.bytes + 3) / 4, pairs = (words + 1) / 2;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  bool ok = true;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < pairs && ok; q += stride) {
    const int64_t w0 = 2 * q;
    const uint32_t d0 = load_word(a.in[r], w0, a.bytes);
    const uint32_t d1 = w0 + 1 < words ? load_word(a.in[r], w0 + 1, a.bytes) : 0u;
    for (int j = 1; j < n; ++j) {
      const int p = mod_ranks(r + j, n);
      uint64_t* slot = a.ll[p] + (int64_t(parity) * kMaxRanks + r) * a.ll_words + w0;
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(slot), "l"(flag | d0), "l"(flag | d1) : "memory");
    }
    // Every peer's pair: a sweep issues the loads of all peers still awaited before testing any, so their
    // round trips overlap (polled in turn, each peer beyond the first cost one more: ~0.4 us per peer on
    // 4 x H200). Bit j - 1 of `awaited`: peer r + j. Combined in peer order, as before.
    uint64_t v0[P], v1[P];
    uint32_t awaited = (1u << (n - 1)) - 1;
    const uint64_t start = dev::globaltimer_ns();
    for (uint32_t it = 1; awaited != 0; ++it) {
#pragma unroll
      for (int j = 1; j <= P; ++j)
        if ((awaited >> (j - 1)) & 1u) {
          const uint64_t* slot = a.ll[r] + (int64_t(parity) * kMaxRanks + mod_ranks(r + j, n)) * a.ll_words + w0;
          asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                       : "=l"(v0[j - 1]), "=l"(v1[j - 1])
                       : "l"(slot)
                       : "memory");
        }
#pragma unroll
      for (int j = 1; j <= P; ++j)
        if (((awaited >> (j - 1)) & 1u) && (v0[j - 1] >> 32) == e && (v1[j - 1] >> 32) == e)
          awaited &= ~(1u << (j - 1));
      if (awaited != 0 && (it & 1023u) == 0 && dev::globaltimer_ns() - start > a.timeout_ns) {
        uint64_t seen = 0;
#pragma unroll
        for (int j = P; j >= 1; --j)
          if ((awaited >> (j - 1)) & 1u) seen = v0[j - 1] >> 32;  // the first peer still awaited
        report_timeout(a.err, a.rank, kWaitLL, int(blockIdx.x), int(w0), e, seen);
        ok = false;
        break;
      }
    }
    uint32_t acc0 = d0, acc1 = d1;
#pragma unroll
    for (int j = 1; j <= P; ++j)
      if (j < n) {
        acc0 = combine_word<T, Op>(acc0, uint32_t(v0[j - 1]));
        acc1 = combine_word<T, Op>(acc1, uint32_t(v1[j - 1]));
      }
    if (a.divisor != 1.f) {
      acc0 = divide_word<T>(acc0, a.divisor);
      acc1 = divide_word<T>(acc1, a.divisor);
    }
    store_word(a.out, w0, a.bytes, acc0);
    if (w0 + 1 < words) store_word(a.out, w0 + 1, a.bytes, acc1);
  }
  __syncthreads();
  if (threadIdx.x == 0) finish_launch(&me->ll_done, &me->ll_epoch, e, gridDim.x);
}

// ---------------------------------------------------------------------------------------------
// flash: one-shot pull through shared memory with cp.async, S stages deep.

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const uint32_t s = uint32_t(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

template <typename T, RedOp Op, int S>
__global__ void __launch_bounds__(512) flash_kernel(BidirArgs a, bool in_place) {
  extern __shared__ uint4 smem[];
  __shared__ uint32_t e_s;
  __shared__ int abort_s;
  const int t = threadIdx.x, nt = blockDim.x, b = blockIdx.x, G = gridDim.x;
  const int r = a.rank, n = a.nranks, npeers = n - 1;
  Ctrl* me = a.ctrl[r];
  if (t == 0) {
    e_s = *reinterpret_cast<volatile uint32_t*>(&me->flash_epoch) + 1;
    abort_s = 0;
  }
  __syncthreads();
  const uint32_t e = e_s;
  // Start: every peer's CTA b has begun, so its input (written before its launch) is ready.
  cta_handshake(a, &Ctrl::flash_start, e, kWaitFlashStart, b, -1, &abort_s);
  __syncthreads();
  if (abort_s) return;

  constexpr int N = 16 / sizeof(T);
  const int64_t nvec = a.bytes / 16;
  // Tail elements past the last full vector: block 0 reads them now, writes them after the finish
  // handshake (in place, a peer may still be reading them before that).
  const int64_t tail0 = nvec * N, tail_n = a.count - tail0;
  float tail_acc = 0.f;
  if (b == 0 && t < tail_n) {
    const T* mine = reinterpret_cast<const T*>(a.in[r]);
    tail_acc = Elem<T>::to(mine[tail0 + t]);
    for (int j = 1; j < n; ++j)
      tail_acc =
          dev::combine<Op>(tail_acc, Elem<T>::to(reinterpret_cast<const T*>(a.in[mod_ranks(r + j, n)])[tail0 + t]));
  }

  const int U = a.unroll;
  const int64_t tile_vecs = int64_t(U) * nt;
  const int64_t tiles = (nvec + tile_vecs - 1) / tile_vecs;
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4* own = reinterpret_cast<const uint4*>(a.in[r]);
  uint4* out = reinterpret_cast<uint4*>(a.out);
  auto stage_at = [&](int64_t j, int i, int u) -> uint4* {
    return smem + ((int64_t(j % S) * npeers + i) * U + u) * nt + t;
  };
  auto issue = [&](int64_t j) {
    if (j < J) {
      const int64_t base = (b + j * G) * tile_vecs;
      for (int i = 0; i < npeers; ++i) {
        const uint4* src = reinterpret_cast<const uint4*>(a.in[mod_ranks(r + 1 + i, n)]);
        for (int u = 0; u < U; ++u) {
          const int64_t v = base + int64_t(u) * nt + t;
          if (v < nvec) cp_async16(stage_at(j, i, u), src + v);
        }
      }
    }
    cp_async_commit();  // empty groups keep the group count aligned with j
  };
  for (int s = 0; s < S - 1; ++s) issue(s);
  const uint64_t E = uint64_t(e) << 32;
  for (int64_t j = 0; j < J; ++j) {
    issue(j + S - 1);
    cp_async_wait<S - 1>();  // tile j has landed (this thread's part)
    if (in_place) {
      // Tell peers tile j of ours... no: that we fetched their tile j; wait until they fetched ours
      // before overwriting it.
      __syncthreads();
      cta_handshake(a, &Ctrl::flash_prog, E | uint64_t(j + 1), kWaitFlashProgress, b, int(j), &abort_s);
      __syncthreads();
      if (abort_s) return;
    }
    const int64_t base = (b + j * G) * tile_vecs;
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + int64_t(u) * nt + t;
      if (v < nvec) {
        Acc<T> acc;
        acc.load(own[v]);
        for (int i = 0; i < npeers; ++i) acc.template add<Op>(*stage_at(j, i, u));
        out[v] = acc.store(a.divisor);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // Finish: every peer's CTA b is done reading our tiles (and the tail).
  cta_handshake(a, &Ctrl::flash_fin, e, kWaitFlashFinish, b, -1, &abort_s);
  __syncthreads();
  if (abort_s) return;
  if (b == 0 && t < tail_n)
    reinterpret_cast<T*>(a.out)[tail0 + t] = Elem<T>::from(a.divisor == 1.f ? tail_acc : tail_acc / a.divisor);
  if (t == 0) finish_launch(&me->flash_done, &me->flash_epoch, e, G);
}

// flash, register engine (2 ranks): the peer's tile is fetched with plain 16-byte loads into
// registers, U vectors per thread, the next tile's loads issued before the current tile is reduced
// (software pipelining in registers: the SM-load method that reaches the link's rate on NVLink).
template <typename T, RedOp Op, int U>
__global__ void __launch_bounds__(512) flash_ldg_kernel(BidirArgs a, bool in_place) {
  __shared__ uint32_t e_s;
  __shared__ int abort_s;
  // Programmatic dependent launch (as in ll): wait for the previous kernel of the stream here.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int t = threadIdx.x, nt = blockDim.x, b = blockIdx.x, G = gridDim.x;
  const int r = a.rank, p = 1 - r;
  Ctrl* me = a.ctrl[r];
  if (t == 0) {
    e_s = *reinterpret_cast<volatile uint32_t*>(&me->flash_epoch) + 1;
    abort_s = 0;
  }
  __syncthreads();
  const uint32_t e = e_s;
  if (t == 0) {
    st_release(&a.ctrl[p]->flash_start[b][r], e);
    if (!wait_ge(a, &me->flash_start[b][p], e, kWaitFlashStart, b, -1)) abort_s = 1;
  }
  __syncthreads();
  if (abort_s) return;
  constexpr int N = 16 / sizeof(T);
  const int64_t nvec = a.bytes / 16;
  const int64_t tail0 = nvec * N, tail_n = a.count - tail0;
  float tail_acc = 0.f;
  if (b == 0 && t < tail_n)
    tail_acc = dev::combine<Op>(Elem<T>::to(reinterpret_cast<const T*>(a.in[r])[tail0 + t]),
                                Elem<T>::to(reinterpret_cast<const T*>(a.in[p])[tail0 + t]));
  const int64_t tile_vecs = int64_t(U) * nt;
  const int64_t tiles = (nvec + tile_vecs - 1) / tile_vecs;
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4* own = reinterpret_cast<const uint4*>(a.in[r]);
  const uint4* peer = reinterpret_cast<const uint4*>(a.in[p]);
  uint4* out = reinterpret_cast<uint4*>(a.out);
  uint4 cur[U], nxt[U];
  auto fetch = [&](int64_t j, uint4(&dst)[U]) {
    const int64_t base = (b + j * G) * tile_vecs + t;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + int64_t(u) * nt;
      if (j < J && v < nvec) dst[u] = __ldcg(peer + v);
    }
  };
  fetch(0, cur);
  const uint64_t E = uint64_t(e) << 32;
  for (int64_t j = 0; j < J; ++j) {
    fetch(j + 1, nxt);
    const int64_t base = (b + j * G) * tile_vecs + t;
    uint4 res[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + int64_t(u) * nt;
      if (v < nvec) {
        Acc<T> acc;
        acc.load(own[v]);
        acc.template add<Op>(cur[u]);
        res[u] = acc.store(a.divisor);
      }
    }
    if (in_place) {  // the peer must have fetched our tile j before we overwrite it
      __syncthreads();
      if (t == 0) {
        st_release(&a.ctrl[p]->flash_prog[b][r], E | uint64_t(j + 1));
        if (!wait_ge(a, &me->flash_prog[b][p], E | uint64_t(j + 1), kWaitFlashProgress, b, int(j))) abort_s = 1;
      }
      __syncthreads();
      if (abort_s) return;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + int64_t(u) * nt;
      if (v < nvec) out[v] = res[u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = nxt[u];
  }
  __syncthreads();
  if (t == 0) {
    st_release(&a.ctrl[p]->flash_fin[b][r], e);
    if (!wait_ge(a, &me->flash_fin[b][p], e, kWaitFlashFinish, b, -1)) abort_s = 1;
  }
  __syncthreads();
  if (abort_s) return;
  if (b == 0 && t < tail_n)
    reinterpret_cast<T*>(a.out)[tail0 + t] = Elem<T>::from(a.divisor == 1.f ? tail_acc : tail_acc / a.divisor);
  if (t == 0) finish_launch(&me->flash_done, &me->flash_epoch, e, G);
}

// ---------------------------------------------------------------------------------------------
// push: one-shot push with per-tile progress flags. The first half of each CTA's threads
// (producers) load the CTA's tiles of the local input and store them into every peer's receive
// buffer, then publish "tiles done" in the peer's control words (fence, release); the second half
// (consumers) wait for every peer's count to pass a tile, then reduce it with the local input into
// the output. Stores over NVLink are posted (no round trip per load), the reduction of tile j
// overlaps the transfer of tile j+1, and the only cross-GPU synchronisation is the progress flags.
// Receive buffers are double-buffered by epoch parity: a peer's launch e+2 starts after its launch
// e+1 received our tiles of e+1, which we stored after our launch e (the one reading parity e&1)
// had finished, so no release handshake is needed.
// Two 512-thread CTAs per SM (<= 64 registers): a CTA waits for the same CTA of every peer, so the
// whole grid must be resident at once, and one wave of 2 per SM beats two waves of 1.
template <typename T, RedOp Op, int U>
__global__ void __launch_bounds__(512, 2) push_kernel(BidirArgs a) {
  __shared__ uint32_t e_s;
  __shared__ int abort_s;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int H = blockDim.x / 2, b = blockIdx.x, G = gridDim.x;
  const bool producer = threadIdx.x < H;
  const int t = producer ? threadIdx.x : threadIdx.x - H;
  const int n = a.nranks, r = a.rank;
  Ctrl* me = a.ctrl[r];
  if (threadIdx.x == 0) {
    e_s = *reinterpret_cast<volatile uint32_t*>(&me->push_epoch) + 1;
    abort_s = 0;
  }
  __syncthreads();
  const uint32_t e = e_s;
  const uint64_t E = uint64_t(e) << 32;
  const int parity = int(e & 1);
  constexpr int N = 16 / sizeof(T);
  const int64_t nvec = a.bytes / 16;
  const int64_t tail0 = nvec * N, tail_n = a.count - tail0;  // elements after the last whole vector
  const int64_t tile_vecs = int64_t(U) * H;
  const int64_t tiles = std::max<int64_t>(1, (nvec + tile_vecs - 1) / tile_vecs);
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4* own = reinterpret_cast<const uint4*>(a.in[r]);
  // What source (r + j) % n stored into us, and where we store into peer (r + j) % n.
  auto recv = [&](int j) { return a.push[r] + (int64_t(parity) * (n - 1) + (j - 1)) * a.push_stride; };
  auto send = [&](int j) {
    const int q = mod_ranks(r + j, n), jq = n - j;  // we are q's jq-th source ((r - q) mod n)
    return a.push[q] + (int64_t(parity) * (n - 1) + (jq - 1)) * a.push_stride;
  };
  if (producer) {
    for (int64_t j = 0; j < J; ++j) {
      const int64_t base = (b + j * G) * tile_vecs + t;
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + int64_t(u) * H < nvec) v[u] = __ldcg(own + base + int64_t(u) * H);
      for (int jj = 1; jj < n; ++jj) {
        uint4* dst = reinterpret_cast<uint4*>(send(jj));
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (base + int64_t(u) * H < nvec) __stcg(dst + base + int64_t(u) * H, v[u]);
        if (b == 0 && j == 0 && t < tail_n)
          reinterpret_cast<T*>(send(jj))[tail0 + t] = reinterpret_cast<const T*>(a.in[r])[tail0 + t];
      }
      // The producers' stores are ordered before thread 0's system-scope release by the barrier
      // (release is cumulative over what the barrier made visible to it): one release per tile, not a
      // fence per thread, so producers keep streaming while the flag goes out.
      named_barrier(1, H);
      // Every peer's slot [b][r] in its control words, and in place our own (read by our consumers): one
      // destination per thread (see cta_handshake).
      if (const int first = a.in_place ? 0 : 1; t < n - first)
        st_release(&a.ctrl[mod_ranks(r + first + t, n)]->push_prog[b][r], E | uint64_t(j + 1));
    }
  } else {
    uint4* out = reinterpret_cast<uint4*>(a.out);
    for (int64_t j = 0; j < J; ++j) {
      // Thread t waits for the flag of source r + first + t (one word per thread: in turn, each word beyond
      // the first cost a load's round trip). In place the output is our input: our producers must have read
      // tile j before we write it (their flag in our own control words, source 0; a global flag, not a
      // shared-memory spin).
      if (const int first = a.in_place ? 0 : 1; t < n - first)
        if (!wait_ge(a, &me->push_prog[b][mod_ranks(r + first + t, n)], E | uint64_t(j + 1), kWaitPush, b, int(j)))
          abort_s = 1;
      named_barrier(2, H);
      if (abort_s) break;
      const int64_t base = (b + j * G) * tile_vecs + t;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t v = base + int64_t(u) * H;
        if (v < nvec) {
          Acc<T> acc;
          acc.load(__ldcg(own + v));
          for (int jj = 1; jj < n; ++jj) acc.template add<Op>(__ldcg(reinterpret_cast<const uint4*>(recv(jj)) + v));
          out[v] = acc.store(a.divisor);
        }
      }
      if (b == 0 && j == 0 && t < tail_n) {
        float x = Elem<T>::to(reinterpret_cast<const T*>(a.in[r])[tail0 + t]);
        for (int jj = 1; jj < n; ++jj)
          x = dev::combine<Op>(x, Elem<T>::to(__ldcg(reinterpret_cast<const T*>(recv(jj)) + tail0 + t)));
        reinterpret_cast<T*>(a.out)[tail0 + t] = Elem<T>::from(a.divisor == 1.f ? x : x / a.divisor);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) finish_launch(&me->push_done, &me->push_epoch, e, G);
}

// ---------------------------------------------------------------------------------------------
// lamport: one-shot push where the data is its own flag. Every receive buffer holds the sentinel
// (all bits set: a NaN in float, half and bfloat16) until a peer's store lands; a sender rewrites
// that one NaN pattern to another NaN, so "no element is the sentinel" means "the whole vector has
// arrived", checked element by element (each element is stored atomically, so a vector that lands
// in pieces is simply polled again). No flag, no fence, no handshake: the cost is one one-way trip,
// as ll, with full 16-byte payloads, as push. The receiver resets what it read to the sentinel.
// Two buffers by epoch parity: a peer writes this launch's buffer again two launches later, which
// it cannot start before this launch is over (its next launch needs our data of the next launch).
// Peers never read our input: in place needs no more than each thread reading its vectors before
// writing them. Every CTA polls data the same CTA of each peer stores: the grid stays resident.

// Polls one received vector until no element is the sentinel; false (error recorded) on timeout.
template <typename T>
__device__ __forceinline__ bool receive_vec(const BidirArgs& a, const uint4* p, int block, int64_t at, uint4& v) {
  v = dev::ld_volatile_v4(p);
  if (!has_sentinel<T>(v)) return true;
  const uint64_t start = dev::globaltimer_ns();
  for (uint32_t it = 1;; ++it) {
    v = dev::ld_volatile_v4(p);
    if (!has_sentinel<T>(v)) return true;
    if ((it & 255u) == 0) {
      const uint64_t waited = dev::globaltimer_ns() - start;
      if (waited > a.timeout_ns) {
        report_timeout(a.err, a.rank, kWaitLamport, block, int(at), 0, 0);
        return false;
      }
      if (other_wait_failed(a.err, waited)) return false;
    }
  }
}

template <typename T>
__device__ __forceinline__ T unsentinel_elem(T v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t w;
    memcpy(&w, &v, 4);
    w = unsentinel_word<T>(w);
    memcpy(&v, &w, 4);
  } else {
    uint16_t h;
    memcpy(&h, &v, 2);
    if (h == 0xFFFFu) h = 0x7FFFu;
    memcpy(&v, &h, 2);
  }
  return v;
}

template <typename T, RedOp Op, int U>
__global__ void __launch_bounds__(512) lamport_kernel(BidirArgs a) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int t = threadIdx.x, nt = blockDim.x, b = blockIdx.x, G = gridDim.x;
  const int n = a.nranks, r = a.rank;
  Ctrl* me = a.ctrl[r];
  // Every thread reads the epoch itself (as ll): it moves only after every CTA reached finish_launch.
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(&me->lamport_epoch) + 1;
  const int phase = int(e & 1);
  auto region = [&](int q, int j) {  // what q receives from its j-th source in this launch
    return reinterpret_cast<uint4*>(a.lamport[q] + (int64_t(phase) * (n - 1) + (j - 1)) * a.lamport_stride);
  };
  auto send_to = [&](int j) {  // our slot in peer (r + j) % n
    const int q = mod_ranks(r + j, n);
    return region(q, n - j);  // we are q's (r - q) mod n = (n - j)-th source
  };
  constexpr int N = 16 / sizeof(T);
  constexpr uint32_t kSentinelElem = sizeof(T) == 4 ? 0xFFFFFFFFu : 0xFFFFu;
  const int64_t nvec = a.bytes / 16;
  const int64_t tail0 = nvec * N, tail_n = a.count - tail0;  // elements after the last whole vector
  // Out of place, `split` gives the first half of the threads the sending and the second half the
  // receiving (stores stream without waiting on polls); in place one thread must read its vectors
  // before it writes them, so every thread does both, receiving D tiles behind its sends.
  const bool split = a.split_roles && !a.in_place;
  const int W = split ? nt / 2 : nt;  // threads per role
  const int tt = split && t >= W ? t - W : t;
  const bool sends = !split || t < W, receives = !split || t >= W;
  const int D = split ? 0 : (a.ahead > 0 ? a.ahead : 1);
  const int64_t tile_vecs = int64_t(U) * W;
  const int64_t tiles = (nvec + tile_vecs - 1) / tile_vecs;
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4* own = reinterpret_cast<const uint4*>(a.in[r]);
  uint4* out = reinterpret_cast<uint4*>(a.out);
  const uint4 sentinel = make_uint4(~0u, ~0u, ~0u, ~0u);
  // The elements after the last whole vector: block 0 sends them first, receives them last.
  T tail_own = T();
  if (b == 0 && t < tail_n) {
    tail_own = reinterpret_cast<const T*>(a.in[r])[tail0 + t];
    for (int j = 1; j < n; ++j) reinterpret_cast<T*>(send_to(j))[tail0 + t] = unsentinel_elem(tail_own);
  }
  // A sender sends its vectors of tile k; a receiver then takes those of tile k - D, reduces them
  // with its own (read again, from L2) and resets what it read to the sentinel. Every load of an
  // iteration is issued before any is used, so their latencies overlap.
  for (int64_t k = 0; k < J + D; ++k) {
    const bool send = sends && k < J, recv = receives && k >= D;
    const int64_t sbase = (b + k * G) * tile_vecs + tt, rbase = (b + (k - D) * G) * tile_vecs + tt;
    uint4 mine[U], theirs[U], keep[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t vs = sbase + int64_t(u) * W, vr = rbase + int64_t(u) * W;
      if (send && vs < nvec) mine[u] = __ldcg(own + vs);
      if (recv && vr < nvec) keep[u] = __ldcg(own + vr);
      if (recv && vr < nvec) theirs[u] = dev::ld_volatile_v4(region(r, 1) + vr);
    }
    if (send) {
      for (int j = 1; j < n; ++j) {
        uint4* dst = send_to(j);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t v = sbase + int64_t(u) * W;
          if (v < nvec) __stcg(dst + v, unsentinel<T>(mine[u]));
        }
      }
    }
    if (recv) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t v = rbase + int64_t(u) * W;
        if (v >= nvec) continue;
        // Two ranks (one peer, no division): one rounded combine per element, in packed 16-bit
        // arithmetic where the type has it; more ranks accumulate in float.
        const bool pair = n == 2 && a.divisor == 1.f;
        Acc<T> acc;
        uint4 res = keep[u];
        if (!pair) acc.load(res);
        for (int j = 1; j < n; ++j) {
          uint4* src = region(r, j) + v;
          uint4 x = theirs[u];
          if (j > 1) x = dev::ld_volatile_v4(src);
          if (has_sentinel<T>(x) && !receive_vec<T>(a, src, b, v, x)) return;
          __stcg(src, sentinel);
          if (pair)
            res = dev::combine_vec<T, Op>(res, x);
          else
            acc.template add<Op>(x);
        }
        out[v] = pair ? res : acc.store(a.divisor);
      }
    }
  }
  if (b == 0 && t < tail_n) {
    float x = Elem<T>::to(tail_own);
    for (int j = 1; j < n; ++j) {
      T* p = reinterpret_cast<T*>(region(r, j)) + tail0 + t;
      const uint64_t start = dev::globaltimer_ns();
      for (;;) {
        const uint32_t bits =
            sizeof(T) == 4 ? *reinterpret_cast<volatile uint32_t*>(p) : *reinterpret_cast<volatile uint16_t*>(p);
        if (bits != kSentinelElem) {
          T got;
          memcpy(&got, &bits, sizeof(T));
          if constexpr (sizeof(T) == 4)
            *reinterpret_cast<uint32_t*>(p) = kSentinelElem;
          else
            *reinterpret_cast<uint16_t*>(p) = uint16_t(kSentinelElem);
          x = dev::combine<Op>(x, Elem<T>::to(got));
          break;
        }
        if (dev::globaltimer_ns() - start > a.timeout_ns) {
          report_timeout(a.err, a.rank, kWaitLamport, b, int(tail0 + t), 0, 0);
          return;
        }
      }
    }
    reinterpret_cast<T*>(a.out)[tail0 + t] = Elem<T>::from(a.divisor == 1.f ? x : x / a.divisor);
  }
  __syncthreads();
  if (t == 0) finish_launch(&me->lamport_done, &me->lamport_epoch, e, G);
}

// ---------------------------------------------------------------------------------------------
// stream: lane = CTA; first half of the threads produce (push into peers' rings), second half consume.

__device__ __forceinline__ void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t len, int t, int nt) {
  const int64_t nv = len / 16;
  const uint4* s = reinterpret_cast<const uint4*>(src);
  uint4* d = reinterpret_cast<uint4*>(dst);
  int64_t v = t;
  for (; v + 3 * nt < nv; v += 4 * nt) {
    uint4 x0 = s[v], x1 = s[v + nt], x2 = s[v + 2 * nt], x3 = s[v + 3 * nt];
    d[v] = x0;
    d[v + nt] = x1;
    d[v + 2 * nt] = x2;
    d[v + 3 * nt] = x3;
  }
  for (; v < nv; v += nt) d[v] = s[v];
  for (int64_t i = nv * 16 + t; i < len; i += nt) dst[i] = src[i];
}

// ---------------------------------------------------------------------------------------------
// twoshot: reduce-scatter and all-gather in one kernel. Rank r owns slice r of the message (whole
// 16-byte vectors, split n ways); each thread loads its vectors of that slice from every rank's input
// (all loads issued before the first add: n x U vectors in flight), reduces them in rank order (every
// rank gets the same bits), and stores the result into every rank's output over NVLink (posted stores).
// Per rank (n-1)/n of the message comes in as loads and (n-1)/n goes out as stores, against n-1 times
// the message for the one-shot modes. A start handshake per CTA pair (the peer's input is written and
// its output free) and a finish handshake (the peer's stores into our output have landed) are the only
// synchronisation. In place is safe without more: vector i of slice r is read, then written, by one
// thread only (peers read their own slices). The tail past the last whole vector is reduced by CTA 0
// of every rank at the start and written after the finish handshake (peers read it until then).
// R: the ranks the kernel instance holds registers for (>= nranks).
template <typename T, RedOp Op, int R, int U>
__global__ void __launch_bounds__(512) twoshot_kernel(BidirArgs a) {
  __shared__ uint32_t e_s;
  __shared__ int abort_s;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int t = threadIdx.x, nt = blockDim.x, b = blockIdx.x, G = gridDim.x;
  const int r = a.rank, n = a.nranks;
  Ctrl* me = a.ctrl[r];
  if (t == 0) {
    e_s = *reinterpret_cast<volatile uint32_t*>(&me->twoshot_epoch) + 1;
    abort_s = 0;
  }
  __syncthreads();
  const uint32_t e = e_s;
  cta_handshake(a, &Ctrl::twoshot_start, e, kWaitTwoshotStart, b, -1, &abort_s);
  __syncthreads();
  if (abort_s) return;
  constexpr int N = 16 / sizeof(T);
  const int64_t nvec = a.bytes / 16;
  const int64_t tail0 = nvec * N, tail_n = a.count - tail0;
  float tail_acc = 0.f;
  if (b == 0 && t < tail_n) {
    tail_acc = Elem<T>::to(reinterpret_cast<const T*>(a.in[0])[tail0 + t]);
    for (int q = 1; q < n; ++q)
      tail_acc = dev::combine<Op>(tail_acc, Elem<T>::to(reinterpret_cast<const T*>(a.in[q])[tail0 + t]));
  }
  const int64_t per = (nvec + n - 1) / n;
  const int64_t lo = std::min<int64_t>(nvec, int64_t(r) * per), hi = std::min<int64_t>(nvec, lo + per);
  const int64_t stride = int64_t(G) * nt;
  for (int64_t base = lo + int64_t(b) * nt + t; base < hi; base += U * stride) {
    uint4 v[R][U];
#pragma unroll
    for (int q = 0; q < R; ++q)
      if (q < n) {
        const uint4* src = reinterpret_cast<const uint4*>(a.in[q]);
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (base + u * stride < hi) v[q][u] = __ldcg(src + base + u * stride);
      }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * stride;
      if (i >= hi) break;
      Acc<T> acc;
      acc.load(v[0][u]);
#pragma unroll
      for (int q = 1; q < R; ++q)
        if (q < n) acc.template add<Op>(v[q][u]);
      const uint4 res = acc.store(a.divisor);
#pragma unroll
      for (int j = 0; j < R; ++j)
        if (j < n) __stcg(reinterpret_cast<uint4*>(a.outs[mod_ranks(r + j, n)]) + i, res);
    }
  }
  // The stores above are ordered before each releasing thread's system-scope release by the barrier (as in
  // push: release is cumulative over what the barrier made visible to the thread).
  __syncthreads();
  cta_handshake(a, &Ctrl::twoshot_fin, e, kWaitTwoshotFinish, b, -1, &abort_s);
  __syncthreads();
  if (abort_s) return;
  if (b == 0 && t < tail_n)
    reinterpret_cast<T*>(a.out)[tail0 + t] = Elem<T>::from(a.divisor == 1.f ? tail_acc : tail_acc / a.divisor);
  if (t == 0) finish_launch(&me->twoshot_done, &me->twoshot_epoch, e, G);
}

// twoshot, store-only (twoshot_push): the reduce-scatter half stores instead of loading. Half of each CTA's
// threads (producers) load tile j of every peer's slice from the local input, store it into that peer's
// scatter buffer and release a per-tile flag to it; the other half (consumers) wait for every peer's flag for
// tile j of our own slice, reduce it from local memory in rank order (every rank gets the same bits) and store
// the result into every rank's output. Every byte crosses NVLink as a posted store: in twoshot_kernel half the
// traffic arrives as read responses, and the read requests travel against the stores. A peer's flag also says
// its launch has started (its output is free). The finish handshake per CTA pair says the peers' stores into
// our output have landed, and makes one scatter buffer enough: a peer's next launch starts after it, so after
// our consumers' reads. In place: a peer writes slice q of our output only after we stored that tile into it
// (its consumers waited for our flag), and our consumers read their own vectors before writing them.
// The tail past the last whole vector is reduced by CTA 0's consumers from every rank's input (after the first
// flags: the peers have started) and written after the finish handshake (peers read it until then).
// R: the ranks the kernel instance holds registers for (>= nranks).
template <typename T, RedOp Op, int R, int U>
__global__ void __launch_bounds__(512, 2) twoshot_push_kernel(BidirArgs a) {
  __shared__ uint32_t e_s;
  __shared__ int abort_s;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int H = blockDim.x / 2, b = blockIdx.x, G = gridDim.x;
  const bool producer = threadIdx.x < H;
  const int t = producer ? threadIdx.x : threadIdx.x - H;
  const int n = a.nranks, r = a.rank;
  Ctrl* me = a.ctrl[r];
  if (threadIdx.x == 0) {
    e_s = *reinterpret_cast<volatile uint32_t*>(&me->twoshot_epoch) + 1;
    abort_s = 0;
  }
  __syncthreads();
  const uint32_t e = e_s;
  const uint64_t E = uint64_t(e) << 32;
  constexpr int N = 16 / sizeof(T);
  const int64_t nvec = a.bytes / 16;
  const int64_t tail0 = nvec * N, tail_n = a.count - tail0;
  const int64_t per = (nvec + n - 1) / n;  // vectors of a slice (the last ones may be shorter or empty)
  auto slice_lo = [&](int q) { return std::min<int64_t>(nvec, int64_t(q) * per); };
  auto slice_len = [&](int q) { return std::min<int64_t>(nvec, slice_lo(q) + per) - slice_lo(q); };
  const int64_t tile_vecs = int64_t(U) * H;
  const int64_t tiles = std::max<int64_t>(1, (per + tile_vecs - 1) / tile_vecs);
  const int64_t J = tiles > b ? (tiles - b + G - 1) / G : 0;
  const uint4* own = reinterpret_cast<const uint4*>(a.in[r]);
  float tail_acc = 0.f;
  if (producer) {
    for (int64_t j = 0; j < J; ++j) {
      const int64_t base = (b + j * G) * tile_vecs + t;
      for (int jj = 1; jj < n; ++jj) {
        const int q = mod_ranks(r + jj, n);
        const int64_t lo = slice_lo(q), len = slice_len(q);
        // We are q's (n - jj)-th source.
        uint4* dst = reinterpret_cast<uint4*>(a.scatter[q] + int64_t(n - jj - 1) * a.scatter_stride);
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (base + int64_t(u) * H < len) v[u] = __ldcg(own + lo + base + int64_t(u) * H);
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (base + int64_t(u) * H < len) __stcg(dst + base + int64_t(u) * H, v[u]);
      }
      // The barrier orders the producers' stores before each releasing thread's release (as in push).
      named_barrier(1, H);
      if (t < n - 1) st_release(&a.ctrl[mod_ranks(r + 1 + t, n)]->twoshot_prog[b][r], E | uint64_t(j + 1));
    }
  } else {
    const int64_t lo = slice_lo(r), len = slice_len(r);
    for (int64_t j = 0; j < J; ++j) {
      if (t < n - 1)  // thread t waits for peer r + 1 + t's tile (one word per thread, as in push)
        if (!wait_ge(a, &me->twoshot_prog[b][mod_ranks(r + 1 + t, n)], E | uint64_t(j + 1), kWaitTwoshotPush, b,
                     int(j)))
          abort_s = 1;
      named_barrier(2, H);
      if (abort_s) break;
      if (b == 0 && j == 0 && t < tail_n) {
        tail_acc = Elem<T>::to(reinterpret_cast<const T*>(a.in[0])[tail0 + t]);
        for (int q = 1; q < n; ++q)
          tail_acc = dev::combine<Op>(tail_acc, Elem<T>::to(reinterpret_cast<const T*>(a.in[q])[tail0 + t]));
      }
      const int64_t base = (b + j * G) * tile_vecs + t;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t v = base + int64_t(u) * H;
        if (v >= len) break;
        uint4 x[R];
#pragma unroll
        for (int q = 0; q < R; ++q)
          if (q < n) {
            const int jq = mod_ranks(q - r + n, n);  // q is our jq-th source
            x[q] = jq == 0
                       ? __ldcg(own + lo + v)
                       : __ldcg(reinterpret_cast<const uint4*>(a.scatter[r] + int64_t(jq - 1) * a.scatter_stride) + v);
          }
        Acc<T> acc;
        acc.load(x[0]);
#pragma unroll
        for (int q = 1; q < R; ++q)
          if (q < n) acc.template add<Op>(x[q]);
        const uint4 res = acc.store(a.divisor);
#pragma unroll
        for (int jj = 0; jj < R; ++jj)
          if (jj < n) __stcg(reinterpret_cast<uint4*>(a.outs[mod_ranks(r + jj, n)]) + lo + v, res);
      }
    }
  }
  __syncthreads();
  cta_handshake(a, &Ctrl::twoshot_fin, e, kWaitTwoshotFinish, b, -1, &abort_s);
  __syncthreads();
  if (abort_s) return;
  if (b == 0 && !producer && t < tail_n)
    reinterpret_cast<T*>(a.out)[tail0 + t] = Elem<T>::from(a.divisor == 1.f ? tail_acc : tail_acc / a.divisor);
  if (threadIdx.x == 0) finish_launch(&me->twoshot_done, &me->twoshot_epoch, e, G);
}

template <typename T, RedOp Op>
__global__ void __launch_bounds__(512) stream_kernel(BidirArgs a) {
  __shared__ uint64_t base_s;
  // Flags between the producer and consumer halves: shared-memory atomics (no barrier joins the
  // two halves inside the loop).
  __shared__ uint32_t produced;
  __shared__ int abort_s;
  auto aborted = [&] { return atomicAdd(&abort_s, 0) != 0; };
  auto set_abort = [&] { atomicExch(&abort_s, 1); };
  const int lane = blockIdx.x, L = gridDim.x, half = blockDim.x / 2;
  const bool producer = threadIdx.x < half;
  const int t = producer ? threadIdx.x : threadIdx.x - half;
  const int r = a.rank, n = a.nranks;
  Ctrl* me = a.ctrl[r];
  if (threadIdx.x == 0) {
    base_s = *reinterpret_cast<volatile uint64_t*>(&me->seq[lane]);
    produced = 0;
    abort_s = 0;
  }
  __syncthreads();
  const uint64_t base = base_s;
  const int64_t B = a.slot_bytes;
  const int K = a.slots;
  const int64_t units = (a.bytes + B - 1) / B;
  const int64_t mine = units > lane ? (units - lane + L - 1) / L : 0;
  // Ring of source `src` on rank `dst`, for this lane; the layout stride is the allocated lane
  // count, so launches with different grids never alias each other's slots.
  auto ring_slot = [&](int dst, int src, uint64_t seq) {
    const int idx = mod_ranks(src - dst - 1, n);  // 0 .. n-2
    return a.ring[dst] + ((int64_t(idx) * a.lanes + lane) * K + int64_t(seq % uint64_t(K))) * B;
  };
  if (producer) {
    for (int64_t s = 0; s < mine && !aborted(); ++s) {
      const uint64_t seq = base + uint64_t(s);
      const int64_t off = (lane + s * L) * B, len = min(B, a.bytes - off);
      for (int j = 1; j < n; ++j) {
        const int p = mod_ranks(r + j, n);
        // The slot is free once consumer p released unit seq - K.
        if (t == 0 && seq + 1 > uint64_t(K))
          if (!wait_ge(a, &me->cons[p][lane], seq + 1 - uint64_t(K), kWaitStreamFreeSlot, lane, int(seq % K)))
            set_abort();
        named_barrier(1, half);
        if (aborted()) break;
        copy_bytes(ring_slot(p, r, seq), a.in[r] + off, len, t, half);
        __threadfence_system();
        named_barrier(1, half);
        if (t == 0) st_release(&a.ctrl[p]->prod[r][lane], seq + 1);
      }
      if (t == 0) atomicMax(&produced, uint32_t(s + 1));
    }
  } else {
    constexpr int N = 16 / sizeof(T);
    for (int64_t s = 0; s < mine && !aborted(); ++s) {
      const uint64_t seq = base + uint64_t(s);
      const int64_t off = (lane + s * L) * B, len = min(B, a.bytes - off);
      if (t == 0) {
        for (int j = 1; j < n && !aborted(); ++j) {
          const int p = mod_ranks(r + j, n);
          if (!wait_ge(a, &me->prod[p][lane], seq + 1, kWaitStreamData, lane, int(seq % K))) set_abort();
        }
        // In place, our own producer must have pushed this unit before we overwrite it.
        const uint64_t start = dev::globaltimer_ns();
        while (!aborted() && atomicAdd(&produced, 0u) < uint32_t(s + 1)) {
          if (dev::globaltimer_ns() - start > a.timeout_ns) {
            report_timeout(a.err, a.rank, kWaitStreamLocal, lane, int(seq % K), uint64_t(s + 1),
                           atomicAdd(&produced, 0u));
            set_abort();
          }
        }
      }
      named_barrier(2, half);
      if (aborted()) break;
      const int64_t nv = len / 16;
      const uint4* own = reinterpret_cast<const uint4*>(a.in[r] + off);
      uint4* out = reinterpret_cast<uint4*>(a.out + off);
      // Peer j's slot for this unit: the rings of successive sources lie lanes x K slots apart.
      const uint4* slot = reinterpret_cast<const uint4*>(ring_slot(r, mod_ranks(r + 1, n), seq));
      const int64_t source_stride = int64_t(a.lanes) * K * B / 16;
      // U vectors of the own input and of the first peer's slot in flight per thread before the first add:
      // the loop waits on load latency, not on the adds.
      constexpr int U = 4;
      int64_t v = t;
      for (; v + int64_t(U - 1) * half < nv; v += int64_t(U) * half) {
        uint4 x[U], y[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          x[u] = own[v + u * half];
          // L2 only (.cg): this SM read the same slot K units ago, and L1 is not coherent.
          y[u] = __ldcg(slot + v + u * half);
        }
        Acc<T> acc[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          acc[u].load(x[u]);
          acc[u].template add<Op>(y[u]);
        }
        for (int j = 2; j < n; ++j) {
#pragma unroll
          for (int u = 0; u < U; ++u) y[u] = __ldcg(slot + (j - 1) * source_stride + v + u * half);
#pragma unroll
          for (int u = 0; u < U; ++u) acc[u].template add<Op>(y[u]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) out[v + u * half] = acc[u].store(a.divisor);
      }
      for (; v < nv; v += half) {
        Acc<T> acc;
        acc.load(own[v]);
        for (int j = 1; j < n; ++j) acc.template add<Op>(__ldcg(slot + (j - 1) * source_stride + v));
        out[v] = acc.store(a.divisor);
      }
      const int64_t elems = len / int64_t(sizeof(T));
      for (int64_t k = nv * N + t; k < elems; k += half) {
        float acc = Elem<T>::to(reinterpret_cast<const T*>(a.in[r] + off)[k]);
        for (int j = 1; j < n; ++j)
          acc = dev::combine<Op>(
              acc, Elem<T>::to(__ldcg(reinterpret_cast<const T*>(ring_slot(r, mod_ranks(r + j, n), seq)) + k)));
        reinterpret_cast<T*>(a.out + off)[k] = Elem<T>::from(a.divisor == 1.f ? acc : acc / a.divisor);
      }
      named_barrier(2, half);
      if (t == 0)
        for (int j = 1; j < n; ++j) st_release(&a.ctrl[mod_ranks(r + j, n)]->cons[r][lane], seq + 1);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && !aborted()) me->seq[lane] = base + uint64_t(mine);
}

// ---------------------------------------------------------------------------------------------
// Launchers by dtype and op.

// Set when a launch with programmatic dependent launch was refused: later launches go without.
bool g_pdl_refused = false;

template <typename T, RedOp Op>
struct LaunchFlash {
  static void run(const BidirArgs& a, int blocks, int threads, int stages, size_t smem, bool in_place, cudaStream_t s) {
    if (stages <= 2) {
      CCLAB_CUDA(cudaFuncSetAttribute(flash_kernel<T, Op, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      flash_kernel<T, Op, 2><<<blocks, threads, smem, s>>>(a, in_place);
    } else {
      CCLAB_CUDA(cudaFuncSetAttribute(flash_kernel<T, Op, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      flash_kernel<T, Op, 4><<<blocks, threads, smem, s>>>(a, in_place);
    }
  }
};
// Launches `kernel` with programmatic dependent launch when `pdl` (falls back to a plain launch,
// for good, if the driver refuses the attribute).
template <typename... Params, typename... Args>
void launch_maybe_pdl(void (*kernel)(Params...), int blocks, int threads, bool pdl, cudaStream_t s, Args... args) {
  if (pdl && !g_pdl_refused) {
    if (dev::launch_pdl(kernel, blocks, threads, s, args...) == cudaSuccess) return;
    cudaGetLastError();
    g_pdl_refused = true;
  }
  kernel<<<blocks, threads, 0, s>>>(args...);
}

template <typename T, RedOp Op>
struct LaunchLL {
  static void run(const BidirArgs& a, int blocks, int threads, bool pdl, cudaStream_t s) {
    if (a.nranks == 2)
      launch_maybe_pdl(ll_kernel<T, Op, 1>, blocks, threads, pdl, s, a);
    else
      launch_maybe_pdl(ll_kernel<T, Op, kMaxRanks - 1>, blocks, threads, pdl, s, a);
  }
};
template <typename T, RedOp Op>
struct LaunchFlashLdg {
  static void run(const BidirArgs& a, int blocks, int threads, int unroll, bool in_place, bool pdl, cudaStream_t s) {
    if (unroll <= 2)
      launch_maybe_pdl(flash_ldg_kernel<T, Op, 2>, blocks, threads, pdl, s, a, in_place);
    else if (unroll <= 4)
      launch_maybe_pdl(flash_ldg_kernel<T, Op, 4>, blocks, threads, pdl, s, a, in_place);
    else
      launch_maybe_pdl(flash_ldg_kernel<T, Op, 8>, blocks, threads, pdl, s, a, in_place);
  }
};
template <typename T, RedOp Op>
struct LaunchPush {
  static void run(const BidirArgs& a, int blocks, int threads, int unroll, bool pdl, cudaStream_t s) {
    if (unroll <= 1)
      launch_maybe_pdl(push_kernel<T, Op, 1>, blocks, threads, pdl, s, a);
    else if (unroll <= 2)
      launch_maybe_pdl(push_kernel<T, Op, 2>, blocks, threads, pdl, s, a);
    else
      launch_maybe_pdl(push_kernel<T, Op, 4>, blocks, threads, pdl, s, a);
  }
};
template <typename T, RedOp Op>
struct LaunchLamport {
  static void run(const BidirArgs& a, int blocks, int threads, int unroll, bool pdl, cudaStream_t s) {
    if (unroll <= 1)
      launch_maybe_pdl(lamport_kernel<T, Op, 1>, blocks, threads, pdl, s, a);
    else if (unroll <= 2)
      launch_maybe_pdl(lamport_kernel<T, Op, 2>, blocks, threads, pdl, s, a);
    else
      launch_maybe_pdl(lamport_kernel<T, Op, 4>, blocks, threads, pdl, s, a);
  }
};
template <typename T, RedOp Op>
struct LaunchTwoshot {
  // Instances: 4 ranks' registers at 1, 2 or 4 vectors per thread; 8 ranks at 1.
  static void run(const BidirArgs& a, int blocks, int threads, int unroll, bool pdl, cudaStream_t s) {
    if (a.nranks > 4)
      launch_maybe_pdl(twoshot_kernel<T, Op, 8, 1>, blocks, threads, pdl, s, a);
    else if (unroll <= 1)
      launch_maybe_pdl(twoshot_kernel<T, Op, 4, 1>, blocks, threads, pdl, s, a);
    else if (unroll <= 2)
      launch_maybe_pdl(twoshot_kernel<T, Op, 4, 2>, blocks, threads, pdl, s, a);
    else
      launch_maybe_pdl(twoshot_kernel<T, Op, 4, 4>, blocks, threads, pdl, s, a);
  }
};
template <typename T, RedOp Op>
struct LaunchTwoshotPush {
  // Instances: 4 ranks' registers at 1, 2 or 4 vectors per thread; 8 ranks at 1.
  static void run(const BidirArgs& a, int blocks, int threads, int unroll, bool pdl, cudaStream_t s) {
    if (a.nranks > 4)
      launch_maybe_pdl(twoshot_push_kernel<T, Op, 8, 1>, blocks, threads, pdl, s, a);
    else if (unroll <= 1)
      launch_maybe_pdl(twoshot_push_kernel<T, Op, 4, 1>, blocks, threads, pdl, s, a);
    else if (unroll <= 2)
      launch_maybe_pdl(twoshot_push_kernel<T, Op, 4, 2>, blocks, threads, pdl, s, a);
    else
      launch_maybe_pdl(twoshot_push_kernel<T, Op, 4, 4>, blocks, threads, pdl, s, a);
  }
};
template <typename T, RedOp Op>
struct LaunchStream {
  static void run(const BidirArgs& a, int blocks, int threads, cudaStream_t s) {
    stream_kernel<T, Op><<<blocks, threads, 0, s>>>(a);
  }
};

// CTAs of `kernel` (at `threads` per CTA) that fit on the GPU at once.
int resident_ctas(const void* kernel, int threads, int device) {
  DeviceGuard g(device);
  int per_sm = 0, sms = 0;
  CCLAB_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  CCLAB_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, per_sm) * sms;
}

// CTAs of the lamport kernel instance that will run (registers differ by type, op and unroll).
template <typename T, RedOp Op>
struct LamportResident {
  static void run(int unroll, int threads, int device, int& out) {
    const void* k = unroll <= 1   ? reinterpret_cast<const void*>(lamport_kernel<T, Op, 1>)
                    : unroll <= 2 ? reinterpret_cast<const void*>(lamport_kernel<T, Op, 2>)
                                  : reinterpret_cast<const void*>(lamport_kernel<T, Op, 4>);
    out = resident_ctas(k, threads, device);
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host side.

// The most CTAs of a mode's kernel that fit on `device` at once (lower::LaunchLimits::resident).
int bidir_resident_ctas(BidirMode mode, int threads, int unroll, DType dtype, RedOp op, int device) {
  switch (mode) {
    case BidirMode::push:
      return resident_ctas(reinterpret_cast<const void*>(push_kernel<float, RedOp::sum, 4>), threads, device);
    case BidirMode::flash:
      return resident_ctas(reinterpret_cast<const void*>(flash_ldg_kernel<float, RedOp::sum, 4>), threads, device);
    case BidirMode::twoshot:
      return resident_ctas(reinterpret_cast<const void*>(unroll <= 1   ? twoshot_kernel<float, RedOp::sum, 4, 1>
                                                         : unroll <= 2 ? twoshot_kernel<float, RedOp::sum, 4, 2>
                                                                       : twoshot_kernel<float, RedOp::sum, 4, 4>),
                           threads, device);
    case BidirMode::lamport: {
      int resident = 0;
      dev::dispatch<LamportResident>(dtype, op, unroll, threads, device, resident);
      return resident;
    }
    default:
      return 0;
  }
}

namespace {
// Words per (parity, source) of the ll receive buffer: even, so word pairs stay 16-byte aligned.
int64_t ll_words(const BidirParams& p) { return ((p.ll_max_bytes + 3) / 4 + 2) & ~int64_t(1); }
size_t ll_buffer_bytes(const BidirParams& p) { return size_t(2) * kMaxRanks * size_t(ll_words(p)) * 8; }
}  // namespace

BidirContext::BidirContext(const Communicator& comm, const BidirParams& params)
    : comm_(comm), params_(params), err_(sizeof(ErrWord)) {
  if (comm.nranks() > kMaxRanks)
    throw_input("the fused all-reduce kernels support at most " + std::to_string(kMaxRanks) + " ranks");
  auto init = std::make_unique<Ctrl>();
  std::memset(init.get(), 0, sizeof(Ctrl));
  for (int r = 0; r < comm.nranks(); ++r) {
    const int d = comm.device_of(r);
    DeviceGuard g(d);
    ctrl_.emplace_back(d, sizeof(Ctrl));
    CCLAB_CUDA(cudaMemcpy(ctrl_.back().get(), init.get(), sizeof(Ctrl), cudaMemcpyHostToDevice));
    ll_.emplace_back(d, ll_buffer_bytes(params));
    CCLAB_CUDA(cudaMemset(ll_.back().get(), 0, ll_buffer_bytes(params)));
    ring_.emplace_back();
    push_.emplace_back();
    lamport_.emplace_back();
    scatter_.emplace_back();
  }
}

BidirContext::~BidirContext() = default;

void BidirContext::ensure_ring(int lanes, int slots, int64_t slot_bytes) {
  if (lanes == ring_lanes_ && slots == ring_slots_ && slot_bytes == ring_slot_bytes_) return;
  const size_t bytes = size_t(std::max(comm_.nranks() - 1, 1)) * size_t(lanes) * size_t(slots) * size_t(slot_bytes);
  for (int r = 0; r < comm_.nranks(); ++r) {
    DeviceGuard g(comm_.device_of(r));
    CCLAB_CUDA(cudaDeviceSynchronize());  // no kernel may still use the old ring
    ring_[size_t(r)] = DeviceBuffer();
    ring_[size_t(r)] = DeviceBuffer(comm_.device_of(r), bytes);
  }
  ring_lanes_ = lanes;
  ring_slots_ = slots;
  ring_slot_bytes_ = slot_bytes;
}

void BidirContext::ensure_push(int64_t stride) {
  if (stride <= push_stride_) return;
  const size_t bytes = size_t(2) * size_t(std::max(comm_.nranks() - 1, 1)) * size_t(stride);
  for (int r = 0; r < comm_.nranks(); ++r) {
    DeviceGuard g(comm_.device_of(r));
    CCLAB_CUDA(cudaDeviceSynchronize());  // no kernel may still use the old buffers
    push_[size_t(r)] = DeviceBuffer();
    push_[size_t(r)] = DeviceBuffer(comm_.device_of(r), bytes);
  }
  push_stride_ = stride;
}

void BidirContext::ensure_scatter(int64_t stride) {
  if (stride <= scatter_stride_) return;
  const size_t bytes = size_t(std::max(comm_.nranks() - 1, 1)) * size_t(stride);
  for (int r = 0; r < comm_.nranks(); ++r) {
    DeviceGuard g(comm_.device_of(r));
    CCLAB_CUDA(cudaDeviceSynchronize());  // no kernel may still use the old buffers
    scatter_[size_t(r)] = DeviceBuffer();
    scatter_[size_t(r)] = DeviceBuffer(comm_.device_of(r), bytes);
  }
  scatter_stride_ = stride;
}

void BidirContext::ensure_lamport(int64_t stride) {
  if (stride <= lamport_stride_) return;
  const size_t bytes = size_t(2) * size_t(std::max(comm_.nranks() - 1, 1)) * size_t(stride);
  for (int r = 0; r < comm_.nranks(); ++r) {
    DeviceGuard g(comm_.device_of(r));
    CCLAB_CUDA(cudaDeviceSynchronize());  // no kernel may still use the old buffers
    lamport_[size_t(r)] = DeviceBuffer();
    lamport_[size_t(r)] = DeviceBuffer(comm_.device_of(r), bytes);
    CCLAB_CUDA(cudaMemset(lamport_[size_t(r)].get(), 0xFF, bytes));  // all sentinel
    CCLAB_CUDA(cudaDeviceSynchronize());
  }
  lamport_stride_ = stride;
}

void BidirContext::check_errors(const std::string& what) {
  auto* w = static_cast<volatile ErrWord*>(err_.host());
  if (w->code == 0) return;
  static const char* names[] = {"",
                                "flash start handshake",
                                "flash in-place progress flag",
                                "flash finish handshake",
                                "stream producer waiting for a free slot",
                                "stream consumer waiting for data",
                                "stream consumer waiting for its own producer",
                                "ll receive flag",
                                "push progress flag",
                                "lamport receive (data still the sentinel; slot = vector index)",
                                "twoshot start handshake",
                                "twoshot finish handshake",
                                "twoshot store-only progress flag"};
  const uint32_t code = w->code;
  std::string msg = what + ": kernel spin-wait timed out (" +
                    (code < sizeof(names) / sizeof(names[0]) ? names[code] : "?") + ") on rank " +
                    std::to_string(w->rank) + " block/lane " + std::to_string(w->block) + " slot " +
                    std::to_string(w->slot) + ": wanted " + std::to_string(w->want) + ", saw " + std::to_string(w->got);
  std::memset(const_cast<ErrWord*>(w), 0, sizeof(ErrWord));
  throw_env(msg);
}

BidirWorkload::BidirWorkload(BidirContext& ctx, const BidirLaunch& launch, CollSpec spec)
    : ctx_(ctx), spec_(std::move(spec)), launch_(launch) {
  if (spec_.coll != Coll::allreduce) throw_internal(__FILE__, __LINE__, "fused bidir kernels run all-reduce only");
  if (lower::runs_as_schedule(launch_.mode)) throw_internal(__FILE__, __LINE__, "copy and ring modes run as schedules");
  const auto& comm = ctx.comm();
  const int64_t bytes = spec_.count * dtype_size(spec_.dtype);
  std::vector<BufferSizes> sizes(size_t(spec_.nranks), BufferSizes{bytes, bytes, 0});
  buffers_ = std::make_unique<RankBuffers>(comm, sizes);
  for (int r = 0; r < spec_.nranks; ++r) {
    streams_.emplace_back(comm.device_of(r));
    raw_.push_back(streams_.back().get());
    joins_.emplace_back(comm.device_of(r), false);
    raw_joins_.push_back(joins_.back().get());
  }
  fork_ = Event(comm.device_of(0), false);
  const auto& p = ctx.params();
  const BidirRecvBuffer recv = bidir_recv_buffer(launch_, p, bytes, spec_.nranks);
  if (launch_.mode == BidirMode::stream) ctx.ensure_ring(launch_.ring_lanes, p.slots, p.slot_bytes);
  if (launch_.mode == BidirMode::push) ctx.ensure_push(recv.stride);
  if (launch_.mode == BidirMode::lamport) ctx.ensure_lamport(recv.stride);
  if (launch_.mode == BidirMode::twoshot && launch_.push) ctx.ensure_scatter(recv.stride);
}

void BidirWorkload::issue(cudaStream_t origin) {
  fork_streams(origin, fork_.get(), raw_);
  enqueue();
  join_streams(origin, raw_joins_, raw_);
}

std::unique_ptr<Replay> BidirWorkload::capture(cudaStream_t, int iters) {
  return capture_per_device(ctx_.comm(), raw_, iters, [this] { enqueue(); });
}

namespace {

// The kernel of `l` for one rank (a.rank), with its arguments filled in.
void dispatch_bidir(const BidirLaunch& l, DType dtype, RedOp op, bool in_place, const BidirArgs& a, cudaStream_t s) {
  switch (l.mode) {
    case BidirMode::ll:
      dev::dispatch<LaunchLL>(dtype, op, a, l.grid, l.threads, l.pdl, s);
      break;
    case BidirMode::flash:
      if (l.ldg)
        dev::dispatch<LaunchFlashLdg>(dtype, op, a, l.grid, l.threads, l.unroll, in_place, l.pdl, s);
      else
        dev::dispatch<LaunchFlash>(dtype, op, a, l.grid, l.threads, l.stages, l.smem, in_place, s);
      break;
    case BidirMode::stream:
      dev::dispatch<LaunchStream>(dtype, op, a, l.grid, l.threads, s);
      break;
    case BidirMode::push:
      dev::dispatch<LaunchPush>(dtype, op, a, l.grid, l.threads, l.unroll, l.pdl, s);
      break;
    case BidirMode::lamport:
      dev::dispatch<LaunchLamport>(dtype, op, a, l.grid, l.threads, l.unroll, l.pdl, s);
      break;
    case BidirMode::twoshot:
      if (l.push)
        dev::dispatch<LaunchTwoshotPush>(dtype, op, a, l.grid, l.threads, l.unroll, l.pdl, s);
      else
        dev::dispatch<LaunchTwoshot>(dtype, op, a, l.grid, l.threads, l.unroll, l.pdl, s);
      break;
    case BidirMode::copy:
    case BidirMode::ring:
      break;
  }
}

}  // namespace

void BidirWorkload::enqueue() {
  const auto& comm = ctx_.comm();
  const auto& p = ctx_.params();
  const int n = spec_.nranks;
  BidirArgs a;
  a.nranks = n;
  a.count = spec_.count;
  a.bytes = spec_.count * dtype_size(spec_.dtype);
  a.divisor = spec_.op == RedOp::avg ? float(n) : 1.f;
  for (int q = 0; q < n; ++q) {
    a.in[q] = static_cast<const uint8_t*>(buffers_->ptr(spec_.resolve(Ref{q, Buf::input, 0})));
    a.outs[q] = static_cast<uint8_t*>(buffers_->ptr(spec_.resolve(Ref{q, Buf::output, 0})));
    a.ctrl[q] = static_cast<Ctrl*>(ctx_.ctrl(q));
    a.ll[q] = static_cast<uint64_t*>(ctx_.ll(q));
    a.ring[q] = static_cast<uint8_t*>(ctx_.ring(q));
    a.push[q] = static_cast<uint8_t*>(ctx_.push(q));
    a.lamport[q] = static_cast<uint8_t*>(ctx_.lamport(q));
    a.scatter[q] = static_cast<uint8_t*>(ctx_.scatter(q));
  }
  a.scatter_stride = ctx_.scatter_stride();
  a.lamport_stride = ctx_.lamport_stride();
  a.ahead = p.lamport_ahead;
  a.split_roles = p.lamport_split;
  a.push_stride = ctx_.push_stride();
  a.in_place = spec_.in_place;
  a.ll_words = ll_words(p);
  a.lanes = ctx_.ring_lanes();
  a.slots = p.slots;
  a.slot_bytes = p.slot_bytes;
  a.unroll = launch_.unroll;
  a.err = static_cast<ErrWord*>(ctx_.error_word());
  const BidirLaunch& l = launch_;
  a.timeout_ns = uint64_t(p.kernel_timeout_s * 1e9);
  for (int r = 0; r < n; ++r) {
    DeviceGuard g(comm.device_of(r));
    a.rank = r;
    a.out = static_cast<uint8_t*>(buffers_->ptr(spec_.resolve(Ref{r, Buf::output, 0})));
    dispatch_bidir(l, spec_.dtype, spec_.op, spec_.in_place, a, raw_[size_t(r)]);
    CCLAB_CUDA_LAUNCHED();
  }
}

void BidirWorkload::check_device_errors() {
  ctx_.check_errors("allreduce." + std::string(bidir_mode_name(launch_.mode)));
}

std::string BidirWorkload::hang_report() {
  try {
    ctx_.check_errors("allreduce bidir");
  } catch (const Error& e) {
    return e.what();
  }
  return "fused " + std::string(bidir_mode_name(launch_.mode)) +
         " kernel still running (no spin-wait reported a timeout)";
}

// The note says when the driver refused programmatic dependent launch: the params still ask for it,
// but every launch since went plain, and the record must not claim what did not run.
std::string BidirWorkload::note() const {
  return ctx_.params().describe(launch_.mode) + " grid=" + std::to_string(launch_.grid) +
         (g_pdl_refused ? " pdl=refused" : "");
}

// ---------------------------------------------------------------------------------------------
// One rank's launch (bidir.hpp, launch_bidir_rank): the arguments BidirWorkload::enqueue builds, for one rank
// of a clique whose buffers the caller owns.

size_t bidir_ctrl_bytes() { return sizeof(Ctrl); }
size_t bidir_ll_bytes(const BidirParams& p) { return ll_buffer_bytes(p); }
size_t bidir_error_bytes() { return sizeof(ErrWord); }

BidirRecvBuffer bidir_recv_buffer(const BidirLaunch& l, const BidirParams& p, int64_t bytes, int nranks) {
  const int64_t sources = std::max(nranks - 1, 1);
  auto stride_of = [](int64_t b) { return std::max<int64_t>(256, (b + 255) / 256 * 256); };
  switch (l.mode) {
    case BidirMode::lamport:
    case BidirMode::push: {
      const int64_t stride = stride_of(bytes);
      return {stride, 2 * sources * stride};
    }
    case BidirMode::twoshot: {
      if (!l.push) return {};
      const int64_t stride = stride_of((bytes / 16 + nranks - 1) / nranks * 16);  // one rank's slice
      return {stride, sources * stride};
    }
    case BidirMode::stream:
      return {0, sources * l.ring_lanes * p.slots * p.slot_bytes};
    default:
      return {};
  }
}

cudaError_t launch_bidir_rank(const BidirLaunch& l, const BidirParams& p, const BidirRankPeers& peers, int rank,
                              const void* in, void* out, int64_t count, DType dtype, RedOp op, cudaStream_t stream) {
  const int n = peers.nranks;
  const int64_t bytes = count * dtype_size(dtype);
  if (n < 2 || n > kMaxRanks || rank < 0 || rank >= n || count <= 0 || peers.err == nullptr)
    return cudaErrorInvalidValue;
  auto every = [&](const auto& ptrs) {  // the peers' pointers of a buffer are all there
    for (int q = 0; q < n; ++q)
      if (q != rank && ptrs[q] == nullptr) return false;
    return true;
  };
  const BidirRecvBuffer recv = bidir_recv_buffer(l, p, bytes, n);
  bool fits = false;
  switch (l.mode) {
    case BidirMode::ll:
      fits = bytes <= p.ll_max_bytes;
      break;
    case BidirMode::lamport:
      fits = bytes <= peers.lamport_stride;
      break;
    case BidirMode::flash:
      fits = every(peers.in);
      break;
    case BidirMode::twoshot:
      fits = every(peers.in) && every(peers.out) &&
             (!l.push || (every(peers.scatter) && recv.stride <= peers.scatter_stride));
      break;
    case BidirMode::push:
      fits = every(peers.push) && recv.stride <= peers.push_stride;
      break;
    case BidirMode::stream:
      fits = every(peers.ring) && l.ring_lanes <= peers.ring_lanes && l.grid <= peers.ring_lanes;
      break;
    case BidirMode::copy:
    case BidirMode::ring:
      break;
  }
  if (!fits) return cudaErrorInvalidValue;
  BidirArgs a;
  a.rank = rank;
  a.nranks = n;
  a.count = count;
  a.bytes = bytes;
  a.divisor = op == RedOp::avg ? float(n) : 1.f;
  a.out = static_cast<uint8_t*>(out);
  for (int q = 0; q < n; ++q) {
    a.in[q] = static_cast<const uint8_t*>(q == rank ? in : peers.in[q]);
    a.outs[q] = static_cast<uint8_t*>(q == rank ? out : peers.out[q]);
    a.ctrl[q] = static_cast<Ctrl*>(peers.ctrl[q]);
    a.ll[q] = static_cast<uint64_t*>(peers.ll[q]);
    a.lamport[q] = static_cast<uint8_t*>(peers.lamport[q]);
    a.ring[q] = static_cast<uint8_t*>(peers.ring[q]);
    a.push[q] = static_cast<uint8_t*>(peers.push[q]);
    a.scatter[q] = static_cast<uint8_t*>(peers.scatter[q]);
  }
  a.ll_words = ll_words(p);
  a.lamport_stride = peers.lamport_stride;
  a.push_stride = peers.push_stride;
  a.scatter_stride = peers.scatter_stride;
  a.lanes = peers.ring_lanes;
  a.slots = p.slots;
  a.slot_bytes = p.slot_bytes;
  a.ahead = p.lamport_ahead;
  a.split_roles = p.lamport_split;
  a.in_place = in == out;
  a.unroll = l.unroll;
  a.err = static_cast<ErrWord*>(peers.err);
  a.timeout_ns = uint64_t(peers.timeout_s * 1e9);
  dispatch_bidir(l, dtype, op, in == out, a, stream);
  return cudaGetLastError();
}

std::string bidir_timeout_text(const void* err_host) {
  const auto* w = static_cast<const volatile ErrWord*>(err_host);
  if (w == nullptr || w->code == 0) return "";
  const uint32_t code = w->code;
  const std::string what = code == kWaitLL        ? "ll receive flag"
                           : code == kWaitLamport ? "lamport receive (data still the sentinel; slot = vector index)"
                                                  : "wait code " + std::to_string(code);
  return "kernel spin-wait timed out (" + what + ") on rank " + std::to_string(w->rank) + " block/lane " +
         std::to_string(w->block) + " slot " + std::to_string(w->slot) + ": wanted " + std::to_string(w->want) +
         ", saw " + std::to_string(w->got);
}

}  // namespace cclab::exec
