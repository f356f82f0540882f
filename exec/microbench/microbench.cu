// Microbenchmarks for calibration (see microbench.hpp). Every number is a mean per operation over a
// batch of back-to-back operations timed with CUDA events, the median of three batches; batches are
// sized to last about a millisecond so event resolution (~0.5 µs) does not matter.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "exec/microbench/microbench.hpp"
#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/device_util.cuh"
#include "exec/runtime/kernels.hpp"
#include "exec/runtime/runner.hpp"

namespace cclab::exec {

namespace {

constexpr int kThreads = 512;               // per block for the bandwidth kernels
constexpr int kBlocksPerSm = 2;             // 264 blocks x 512 threads on H200 reached 374 GB/s (h200x2.md)
constexpr int kUnroll = 4;                  // independent 16-byte loads in flight per thread
constexpr int64_t kOneCtaMax = 16LL << 20;  // largest size of the one-CTA series (~1 ms at a single CTA's rate)
// The graph copy series reach 1 GiB (20 copies per replay: ~55 ms at the link's rate): on H200 (driver 580) a
// copy node of 512 MiB or 1 GiB runs at two thirds of the rate of one of 256 or 768 MiB, or of the same copy issued
// to a stream (docs/findings/2026-11-29-graph-copy-nodes-512mib.md), so no smaller series stands in for them.
constexpr int64_t kMaxGraphCopy = 1LL << 30;
constexpr int kTrials = 3;  // batches per point; the median is kept
// Graphs per size of the graph copy sweeps, each its own sample: an instantiated graph keeps one level for all its
// replays (2 x H200, 8 B to 1 MiB bidirectional copies at 7.1, 8.45 or 11.2 us per iteration), so one graph per size
// let that level decide the point (docs/findings/2026-11-29-two-shot-acknowledgment-kernel-mechanisms.md).
constexpr int kGraphInstances = 3;
constexpr double kBatchTarget_s = 1e-3;
constexpr int kMaxReps = 500;  // stays below the launch queue depth, so enqueueing never blocks
constexpr double kMaxGate_s = 0.1;
constexpr int kMatmulWarmup = 10, kMatmulIters = 50;  // as the executor times matmuls (cmatmul.cu)
constexpr int kRestMs = 200;                          // idle time before a rested matmul burst (matmul.<type>.rested)
constexpr unsigned long long kFlagTimeout_ns = 2'000'000'000ULL;  // a flag not seen in 2 s is a hang

#define CCLAB_CUBLAS(call)                                                                                           \
  do {                                                                                                               \
    cublasStatus_t st_ = (call);                                                                                     \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                                                \
      throw Error(ErrorKind::environment, std::string("cuBLAS error ") + cublasGetStatusName(st_) + " in " + #call); \
  } while (0)

// --- kernels -------------------------------------------------------------------------------------------

// dst = src over n16 16-byte vectors, kUnroll independent loads per thread (the loads may come from a peer GPU):
// this thread's share when `block` is its block's index among `blocks` blocks working on these vectors.
__device__ __forceinline__ void copy_vectors(const int4* __restrict__ src, int4* __restrict__ dst, int64_t n16,
                                             int64_t block, int64_t blocks) {
  const int64_t stride = blocks * blockDim.x * kUnroll;
  int64_t i = block * blockDim.x * kUnroll + threadIdx.x;
  for (; i + int64_t(kUnroll - 1) * blockDim.x < n16; i += stride) {
    int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * blockDim.x];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * blockDim.x] = v[u];
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t j = i + int64_t(u) * blockDim.x;
    if (j < n16) dst[j] = src[j];
  }
}

// dst = src: the vectors over the whole grid, the bytes past the last vector by one thread.
__global__ void k_copy(const int4* __restrict__ src, int4* __restrict__ dst, int64_t n16, const char* __restrict__ srcb,
                       char* __restrict__ dstb, int64_t tail_begin, int64_t tail_end) {
  copy_vectors(src, dst, n16, blockIdx.x, gridDim.x);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (int64_t b = tail_begin; b < tail_end; ++b) dstb[b] = srcb[b];
}

// One GPU's stores into each of its peers at once (p2p.sm_store.fanout): block b serves peer b % peers, the peer's
// blocks copy source slice `peer` into its destination.
constexpr int kMaxFanoutPeers = 7;
struct FanoutArgs {
  const int4* src;
  int4* dst[kMaxFanoutPeers];
  int64_t per16;  // vectors per peer
  int peers;
};
__global__ void k_copy_fanout(const __grid_constant__ FanoutArgs a) {
  const int peer = int(blockIdx.x) % a.peers;
  copy_vectors(a.src + int64_t(peer) * a.per16, a.dst[peer], a.per16, blockIdx.x / a.peers, gridDim.x / a.peers);
}

template <class T>
__device__ T add_elem(T a, T b) {
  return a + b;
}
template <>
__device__ __half add_elem<__half>(__half a, __half b) {
  return __hadd(a, b);
}
template <>
__device__ __nv_bfloat16 add_elem<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __hadd(a, b);
}

template <class T>
__device__ int4 add16(int4 a, int4 b) {
  constexpr int kN = 16 / sizeof(T);
  T x[kN], y[kN];
  memcpy(x, &a, 16);
  memcpy(y, &b, 16);
#pragma unroll
  for (int e = 0; e < kN; ++e) x[e] = add_elem(x[e], y[e]);
  int4 r;
  memcpy(&r, x, 16);
  return r;
}

// dst = a + b elementwise in T; `a` may live on a peer GPU. Elements past the last full vector are
// added one by one by thread 0.
template <class T>
__global__ void k_reduce(const int4* __restrict__ a, const int4* __restrict__ b, int4* __restrict__ dst, int64_t n16,
                         int64_t tail_elems) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x * kUnroll;
  int64_t i = int64_t(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
  for (; i + int64_t(kUnroll - 1) * blockDim.x < n16; i += stride) {
    int4 va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      va[u] = a[i + u * blockDim.x];
      vb[u] = b[i + u * blockDim.x];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * blockDim.x] = add16<T>(va[u], vb[u]);
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t j = i + int64_t(u) * blockDim.x;
    if (j < n16) dst[j] = add16<T>(a[j], b[j]);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const T* ta = reinterpret_cast<const T*>(a + n16);
    const T* tb = reinterpret_cast<const T*>(b + n16);
    T* td = reinterpret_cast<T*>(dst + n16);
    for (int64_t e = 0; e < tail_elems; ++e) td[e] = add_elem(ta[e], tb[e]);
  }
}

__global__ void k_empty() {}

// An empty kernel that may start while the previous one of its stream runs (programmatic dependent
// launch, as the executor's ll / flash / push kernels and fused path launch): it waits for that kernel
// at its first instruction, then lets the next one start.
__global__ void k_empty_pdl() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds a stream for `ns` nanoseconds (the gate of Bench::timed).
__global__ void k_spin(unsigned long long ns) {
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
}

// Fills n bytes with small values of type T in [-1, 1) (matmul inputs: no NaNs, no denormal storms).
// Values come from a 64-bit mix of the index and a seed (splitmix64's finaliser), so the two operands differ
// and every bit toggles as in real data: tensor-core power, hence the sustained clock, depends on it.
template <class T>
__global__ void k_fill(T* p, int64_t n, uint64_t seed) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t h = uint64_t(i) ^ seed;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    p[i] = T(float(h >> 40) / float(1 << 24) * 2.0f - 1.0f);
  }
}

// Flag round trip: ping stores i into the peer's `flag` and waits for the peer to store i into its own
// local `ack`; pong waits for `flag` (local to it) and answers. Flags live in the memory of the GPU that
// polls them (stores cross the fabric, polls stay local, as NCCL's LL flags do).
__global__ void k_ping(volatile unsigned* remote_flag, volatile unsigned* local_ack, int iters, int* err) {
  for (int i = 1; i <= iters; ++i) {
    *remote_flag = unsigned(i);
    __threadfence_system();
    const unsigned long long t0 = global_ns();
    while (*local_ack != unsigned(i))
      if (global_ns() - t0 > kFlagTimeout_ns) {
        *err = i;
        return;
      }
  }
}

__global__ void k_pong(volatile unsigned* local_flag, volatile unsigned* remote_ack, int iters, int* err) {
  for (int i = 1; i <= iters; ++i) {
    const unsigned long long t0 = global_ns();
    while (*local_flag != unsigned(i))
      if (global_ns() - t0 > kFlagTimeout_ns) {
        *err = -i;
        return;
      }
    *remote_ack = unsigned(i);
    __threadfence_system();
  }
}

// One launch of a flag chain between two GPUs, as the fused path's kernels synchronise (exec/runtime/fused_workload.*):
// a device-side epoch (no host work between graph replays), hops alternating GPU0 -> GPU1 -> GPU0 ...: the producer's
// CTA does __syncthreads and thread 0 an st.release.sys of the value into the consumer GPU's memory; the consumer's
// thread 0 polls its local copy with ld.acquire.sys. `role` 0 sends even hops, 1 odd hops, 2 every hop (both GPUs send,
// then wait: an exchange). state[0]: this GPU's epoch, state[1]: the flag polled here; a wait past 2 s records the hop
// in *err. With `words` > 0 every launch first loads that many 8-byte words of `table` into shared memory beside the
// epoch, as the fused kernel loads its lane's op table (the launch's fixed part with that load in it).
__global__ void k_flag_chain(unsigned long long* state, unsigned long long* peer_flag, int role, int hops, int* err,
                             const unsigned long long* table, int words) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ unsigned long long e_s;
  __shared__ unsigned long long s_table[512];
  if (threadIdx.x == 0) e_s = *reinterpret_cast<volatile unsigned long long*>(state) + 1;
  for (int i = threadIdx.x; i < words && i < 512; i += blockDim.x) s_table[i] = table[i];
  __syncthreads();
  if (words > 0 && threadIdx.x == 0 && s_table[words - 1] == ~0ULL) atomicCAS(err, 0, -1);  // keeps the load
  const unsigned long long e = e_s;
  for (int h = 0; h < hops; ++h) {
    const unsigned long long want = e * 64 + unsigned(h) + 1;
    // role 2: both GPUs send every hop, then wait for the peer's (an exchange, as two lanes that wait on
    // each other's start and data flags).
    const bool sends = role == 2 || h % 2 == role, waits = role == 2 || h % 2 != role;
    if (sends) {
      __syncthreads();
      // The barrier makes the CTA's writes visible to thread 0, whose system-scope release carries them.
      if (threadIdx.x == 0) asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(peer_flag), "l"(want) : "memory");
    }
    if (waits && threadIdx.x == 0) {
      const unsigned long long t0 = global_ns();
      for (;;) {
        unsigned long long v;
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(state + 1) : "memory");
        if (v >= want) break;
        if (global_ns() - t0 > kFlagTimeout_ns || *reinterpret_cast<volatile int*>(err) != 0) {
          atomicCAS(err, 0, h + 1);
          break;
        }
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *reinterpret_cast<volatile unsigned long long*>(state) = e;
}

// LL-style stores into the peer (the all-reduce ll mode's traffic): each thread reads 8 data bytes and
// stores them as two 8-byte words of 4 data bytes + a 4-byte flag (one volatile 16-byte store), so 2 bytes
// cross the link per data byte; `pairs` = data bytes / 8.
__global__ void k_ll_store(const uint2* __restrict__ src, ulonglong2* dst, int64_t pairs, unsigned flag) {
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < pairs; q += int64_t(gridDim.x) * blockDim.x) {
    const uint2 d = src[q];
    const unsigned long long f = (unsigned long long)flag << 32;
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst + q), "l"(f | d.x), "l"(f | d.y) : "memory");
  }
}

// The fused path's per-op cost (exec/runtime/fused_workload.cu): one kernel runs `steps` ops back to back on a
// lane of gridDim.x CTAs, each op as the fused kernel makes it: (with `wait_prev`) thread 0 of every CTA
// polls the local flag of the previous op (a group wait), the CTA's share of `bytes` is copied with
// 16-byte ld.cg / st.cg (4 in flight per thread), a barrier, and the publish: with several CTAs each
// counts its arrival (fence + atomic), the last one stores the op's flag with st.release.sys into
// `pub` (the peer's memory for the per-step series, local memory for the group waits; null: no flag, as
// for ops nothing waits for). Op i uses bytes
// [i * stride, i * stride + bytes) of src and dst (with `chain`, op i > 0 reads op i - 1's dst bytes). state[0]: the
// launch's epoch, state[1]: CTAs done.
__global__ void k_fused_steps(const uint8_t* src, uint8_t* dst, int64_t bytes, int64_t stride, int steps,
                              unsigned long long* state, unsigned long long* local_flags, unsigned long long* pub,
                              unsigned* arrive, int wait_prev, int* err, int chain = 0) {
  __shared__ unsigned long long e_s;
  const int t = threadIdx.x, nt = blockDim.x, g = blockIdx.x, k = gridDim.x;
  if (t == 0) e_s = *reinterpret_cast<volatile unsigned long long*>(state) + 1;
  __syncthreads();
  const unsigned long long e = e_s;
  for (int i = 0; i < steps; ++i) {
    if (wait_prev && i > 0) {
      if (t == 0) {
        const unsigned long long want = e * 64 + unsigned(i), t0 = global_ns();
        for (;;) {
          unsigned long long v;
          asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(local_flags + (i - 1)) : "memory");
          if (v >= want) break;
          if (global_ns() - t0 > kFlagTimeout_ns) {
            atomicCAS(err, 0, i);
            break;
          }
        }
      }
      __syncthreads();
    }
    const int64_t units = (bytes + 15) / 16, per = (units + k - 1) / k;
    const int64_t lo = min(bytes, int64_t(g) * per * 16), hi = min(bytes, int64_t(g + 1) * per * 16);
    // chain: op i copies what op i - 1 wrote (a lane's op reading its previous op's output).
    const uint4* s =
        reinterpret_cast<const uint4*>(chain && i > 0 ? dst + int64_t(i - 1) * stride : src + int64_t(i) * stride);
    uint4* d = reinterpret_cast<uint4*>(dst + int64_t(i) * stride);
    const int64_t v1 = hi / 16;
    int64_t v = lo / 16 + t;
    for (; v + 3 * nt < v1; v += 4 * nt) {
      uint4 x[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = __ldcg(s + v + u * nt);
#pragma unroll
      for (int u = 0; u < 4; ++u) __stcg(d + v + u * nt, x[u]);
    }
    for (; v < v1; v += nt) __stcg(d + v, __ldcg(s + v));
    for (int64_t b = v1 * 16 + t; b < hi; b += nt)
      reinterpret_cast<uint8_t*>(d)[b] = __ldcg(reinterpret_cast<const uint8_t*>(s) + b);
    __syncthreads();
    if (t == 0) {
      bool last = true;
      if (k > 1) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        last = (atomicAdd(&arrive[i], 1u) + 1u) % unsigned(k) == 0;
        if (last) asm volatile("fence.acq_rel.sys;" ::: "memory");
      }
      if (last && pub)
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(pub + i), "l"(e * 64 + unsigned(i) + 1) : "memory");
    }
  }
  if (t == 0) {
    // The last CTA to finish advances the epoch (every CTA read it before any finished).
    __threadfence();
    if (atomicAdd(reinterpret_cast<unsigned*>(state + 1), 1u) == unsigned(k) - 1) {
      *reinterpret_cast<volatile unsigned*>(state + 1) = 0;
      *reinterpret_cast<volatile unsigned long long*>(state) = e;
    }
  }
}

// --- host side -----------------------------------------------------------------------------------------

struct Gpu {
  int dev = 0;
  int sms = 0;
  cudaStream_t stream[2] = {nullptr, nullptr};
  char* buf[3] = {nullptr, nullptr, nullptr};  // max_bytes each: source, destination, second operand
  unsigned* flags = nullptr;                   // [0]: flag polled here, [1]: ack polled here
  int* err = nullptr;
};

// One stream's share of a timed batch: the device, the stream and what it enqueues per repetition.
struct Lane {
  int dev;
  cudaStream_t stream;
  std::function<void()> op;
};

// A timing-free event on `dev`, kept in `owned` for the caller to destroy.
cudaEvent_t new_event(int dev, std::vector<cudaEvent_t>& owned) {
  CCLAB_CUDA(cudaSetDevice(dev));
  cudaEvent_t e = nullptr;
  CCLAB_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  owned.push_back(e);
  return e;
}

// Destroys a captured graph and its instance (either may still be null) when the scope ends.
struct FreeGraph {
  cudaGraph_t* g;
  cudaGraphExec_t* e;
  ~FreeGraph() {
    if (*e) cudaGraphExecDestroy(*e);
    if (*g) cudaGraphDestroy(*g);
  }
};

// The fork shape graph.fork_kinds / held.fork_both time, enqueued on GPU0's origin stream `o`: c 8-byte peer
// copies and k empty kernels, each on a stream of its own on each of the two GPUs (extra[g][j]), joined back
// (joins[g][j]). Streams and events come as the callers hold them (vectors or arrays).
template <class Streams, class Events>
void enqueue_fork_kinds(cudaStream_t o, const std::vector<Gpu>& gpus, cudaEvent_t fork, Streams& extra, Events& joins,
                        int c, int k) {
  CCLAB_CUDA(cudaSetDevice(gpus[0].dev));
  CCLAB_CUDA(cudaEventRecord(fork, o));
  for (int g = 0; g < 2; ++g) {
    const Gpu& me = gpus[size_t(g)];
    const Gpu& peer = gpus[size_t(1 - g)];
    CCLAB_CUDA(cudaSetDevice(me.dev));
    for (int j = 0; j < c + k; ++j) {
      cudaStream_t x = extra[g][size_t(j)];
      CCLAB_CUDA(cudaStreamWaitEvent(x, fork, 0));
      if (j < c) {
        CCLAB_CUDA(cudaMemcpyAsync(peer.buf[1] + 64 * j, me.buf[0] + 64 * j, 8, cudaMemcpyDeviceToDevice, x));
      } else {
        k_empty<<<1, 32, 0, x>>>();
        CCLAB_CUDA_LAUNCHED();
      }
      CCLAB_CUDA(cudaEventRecord(joins[g][size_t(j)], x));
    }
  }
  CCLAB_CUDA(cudaSetDevice(gpus[0].dev));
  for (int g = 0; g < 2; ++g)
    for (int j = 0; j < c + k; ++j) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][size_t(j)], 0));
}

std::string read_driver_version() {
  // The kernel module's version ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ..."),
  // else the driver API's.
  if (std::string v = detail::driver_version(); !v.empty()) return v;
  int v = 0;
  cudaDriverGetVersion(&v);
  return "CUDA driver API " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string host_name() {
  char h[256] = {0};
  if (gethostname(h, sizeof h - 1) != 0) return "unknown";
  return h;
}

std::string fmt_bytes(int64_t b) {
  if (b >= (1LL << 30) && b % (1LL << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1LL << 20) && b % (1LL << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= (1LL << 10) && b % (1LL << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b) + "B";
}

class Bench {
 public:
  explicit Bench(const MicrobenchOptions& opt) : opt_(opt), start_(std::chrono::steady_clock::now()) {}
  ~Bench() { release(); }

  MicrobenchResult run();

 private:
  void log(const std::string& s) const {
    if (opt_.log) opt_.log(s);
  }
  double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  bool over_budget() const { return elapsed_s() > opt_.budget_s; }
  void setup();
  void release();
  double timed(int reps, const std::vector<Lane>& lanes, double gate_s = 0);
  double gated(int reps, const std::vector<Lane>& lanes);
  BenchPoint point(int64_t bytes, const std::vector<Lane>& lanes, double batch_s = kBatchTarget_s);
  std::vector<int64_t> sizes() const;
  void sweep(const std::string& name, const std::string& method,
             const std::function<std::vector<Lane>(int64_t)>& lanes_for, int64_t min_bytes = 0,
             int64_t max_bytes = INT64_MAX);
  void launch_copy(const Gpu& g, int stream, const char* src, char* dst, int64_t bytes, int max_blocks = 0,
                   int threads = kThreads) const;
  template <class T>
  void launch_reduce(const Gpu& g, const char* a, const char* b, char* dst, int64_t bytes, int max_blocks = 0,
                     int threads = kThreads) const;
  void bench_p2p();
  void bench_ce_pair();
  void bench_fanout();
  void bench_local();
  void bench_latency();
  void bench_graph();
  void bench_flag_chain();
  void bench_fused_steps();
  void bench_graph_copies();
  void bench_graph_local_copies();
  void bench_graph_unheld();
  void bench_graph_held();
  void bench_nccl_p2p();
  void bench_matmul();
  void bench_bidir() { run_bidir_microbenchmarks(opt_, res_.series, res_.warnings); }           // microbench_bidir.cu
  void bench_sparse() { run_sparse_microbenchmarks(opt_, res_.series, res_.warnings); }         // microbench_sparse.cu
  void bench_fused_programs() { run_fused_microbenchmarks(opt_, res_.series, res_.warnings); }  // microbench_fused.cpp
  double graph_time(const std::function<void(cudaStream_t)>& body);

  MicrobenchOptions opt_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Gpu> gpus_;
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr, done = nullptr;
  };
  std::vector<Events> ev_;     // per GPU (an event belongs to one device)
  double last_enqueue_s_ = 0;  // host time to enqueue one repetition in the last timed() call
  MicrobenchResult res_;
};

void Bench::setup() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw_env("no CUDA GPU found");
  if (opt_.gpus < 1) throw_input("-g must be at least 1");
  if (count < opt_.gpus) throw_env("asked for " + std::to_string(opt_.gpus) + " GPUs, found " + std::to_string(count));
  if (opt_.max_bytes < opt_.min_bytes) throw_input("max bytes below min bytes");
  gpus_.resize(opt_.gpus);
  for (int d = 0; d < opt_.gpus; ++d) {
    Gpu& g = gpus_[d];
    g.dev = d;
    CCLAB_CUDA(cudaSetDevice(d));
    cudaDeviceProp prop{};
    CCLAB_CUDA(cudaGetDeviceProperties(&prop, d));
    g.sms = prop.multiProcessorCount;
    if (d == 0) res_.gpu_name = prop.name;
    for (int o = 0; o < opt_.gpus; ++o) {
      if (o == d) continue;
      int can = 0;
      CCLAB_CUDA(cudaDeviceCanAccessPeer(&can, d, o));
      if (!can)
        throw_env("GPU " + std::to_string(d) + " cannot access GPU " + std::to_string(o) + "'s memory (peer access)");
      const cudaError_t e = cudaDeviceEnablePeerAccess(o, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else
        CCLAB_CUDA(e);
    }
    for (auto& s : g.stream) CCLAB_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto& b : g.buf) {
      if (cudaMalloc(&b, size_t(opt_.max_bytes) + 64) != cudaSuccess) {
        cudaGetLastError();
        throw_env("cannot allocate 3 x " + fmt_bytes(opt_.max_bytes) + " on GPU " + std::to_string(d) +
                  " (lower --max-bytes)");
      }
      CCLAB_CUDA(cudaMemset(b, 0, size_t(opt_.max_bytes)));
    }
    CCLAB_CUDA(cudaMalloc(&g.flags, 2 * sizeof(unsigned)));
    CCLAB_CUDA(cudaMalloc(&g.err, sizeof(int)));
    Events& e = ev_.emplace_back();
    CCLAB_CUDA(cudaEventCreate(&e.start));
    CCLAB_CUDA(cudaEventCreate(&e.stop));
    CCLAB_CUDA(cudaEventCreateWithFlags(&e.done, cudaEventDisableTiming));
  }
  for (auto& g : gpus_) {
    CCLAB_CUDA(cudaSetDevice(g.dev));
    CCLAB_CUDA(cudaDeviceSynchronize());
  }
}

void Bench::release() {
  // Best effort: a destructor must not throw, and a failed run still frees what it can.
  for (auto& g : gpus_) {
    cudaSetDevice(g.dev);
    cudaDeviceSynchronize();
    for (auto& b : g.buf) cudaFree(b);
    cudaFree(g.flags);
    cudaFree(g.err);
    for (auto& s : g.stream) cudaStreamDestroy(s);
  }
  for (size_t d = 0; d < ev_.size(); ++d) {
    cudaSetDevice(int(d));
    for (cudaEvent_t e : {ev_[d].start, ev_[d].stop, ev_[d].done})
      if (e) cudaEventDestroy(e);
  }
  gpus_.clear();
  ev_.clear();
}

// Enqueues `reps` repetitions of every lane's op, lanes interleaved, between a start event on lane 0's
// stream (which the other lanes wait for) and a stop event after all lanes finished. Seconds per rep.
// With a gate, lane 0's stream first spins that long on the GPU so that the whole batch is enqueued before
// the clock starts: the measurement is then the GPU's rate, not the host's launch rate (as under CUDA
// graph replay, which the executor uses).
double Bench::timed(int reps, const std::vector<Lane>& lanes, double gate_s) {
  const int d0 = lanes[0].dev;
  CCLAB_CUDA(cudaSetDevice(d0));
  if (gate_s > 0) {
    k_spin<<<1, 1, 0, lanes[0].stream>>>((unsigned long long)(gate_s * 1e9));
    CCLAB_CUDA_LAUNCHED();
  }
  CCLAB_CUDA(cudaEventRecord(ev_[d0].start, lanes[0].stream));
  for (size_t l = 1; l < lanes.size(); ++l) {
    for (size_t o = 1; o < l; ++o) CCLAB_ASSERT(lanes[o].dev != lanes[l].dev, "two helper lanes on one GPU");
    CCLAB_CUDA(cudaSetDevice(lanes[l].dev));
    CCLAB_CUDA(cudaStreamWaitEvent(lanes[l].stream, ev_[d0].start, 0));
  }
  const auto h0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r)
    for (const auto& lane : lanes) {
      CCLAB_CUDA(cudaSetDevice(lane.dev));
      lane.op();
    }
  last_enqueue_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count() / reps;
  for (size_t l = 1; l < lanes.size(); ++l) {
    cudaEvent_t done = ev_[lanes[l].dev].done;
    CCLAB_CUDA(cudaSetDevice(lanes[l].dev));
    CCLAB_CUDA(cudaEventRecord(done, lanes[l].stream));
    CCLAB_CUDA(cudaSetDevice(d0));
    CCLAB_CUDA(cudaStreamWaitEvent(lanes[0].stream, done, 0));
  }
  CCLAB_CUDA(cudaSetDevice(d0));
  CCLAB_CUDA(cudaEventRecord(ev_[d0].stop, lanes[0].stream));
  CCLAB_CUDA(cudaEventSynchronize(ev_[d0].stop));
  CCLAB_CUDA_LAUNCHED();
  float ms = 0;
  CCLAB_CUDA(cudaEventElapsedTime(&ms, ev_[d0].start, ev_[d0].stop));
  return double(ms) * 1e-3 / reps;
}

// A batch timed with a gate long enough to cover its enqueueing (measured on an ungated run first).
double Bench::gated(int reps, const std::vector<Lane>& lanes) {
  timed(std::min(reps, 4), lanes);
  const double gate = std::min(kMaxGate_s, 2.0 * last_enqueue_s_ * reps + 50e-6);
  return timed(reps, lanes, gate);
}

// Warm-up batches size the timed batches (about kBatchTarget_s each), then the median of kTrials.
BenchPoint Bench::point(int64_t bytes, const std::vector<Lane>& lanes, double batch_s) {
  timed(2, lanes);  // first touch, lazy initialisation
  const double est = timed(2, lanes);
  const int reps = int(std::clamp(batch_s / std::max(est, 1e-7), 3.0, double(kMaxReps)));
  const double gate = std::min(kMaxGate_s, 2.0 * last_enqueue_s_ * reps + 50e-6);
  std::vector<double> t;
  for (int i = 0; i < kTrials; ++i) t.push_back(timed(reps, lanes, gate));
  std::sort(t.begin(), t.end());
  return {bytes, t[kTrials / 2], reps};
}

std::vector<int64_t> Bench::sizes() const {
  std::vector<int64_t> v;
  for (int64_t b = opt_.min_bytes; b <= opt_.max_bytes; b *= 2) v.push_back(b);
  return v;
}

void Bench::sweep(const std::string& name, const std::string& method,
                  const std::function<std::vector<Lane>(int64_t)>& lanes_for, int64_t min_bytes, int64_t max_bytes) {
  BenchSeries s{name, method, {}};
  for (int64_t b : sizes()) {
    if (b < min_bytes || b > max_bytes) continue;
    if (over_budget()) {
      res_.warnings.push_back(name + ": stopped at " + fmt_bytes(b) + " (time budget of " +
                              std::to_string(int(opt_.budget_s)) + " s spent)");
      break;
    }
    s.points.push_back(point(b, lanes_for(b)));
  }
  if (!s.points.empty()) {
    const auto& last = s.points.back();
    std::ostringstream os;
    os.precision(4);
    os << "  " << name << ": " << s.points.size() << " sizes, " << fmt_bytes(last.bytes) << " at "
       << double(last.bytes) / last.seconds / 1e9 << " GB/s, " << fmt_bytes(s.points.front().bytes) << " in "
       << s.points.front().seconds * 1e6 << " us";
    log(os.str());
    res_.series.push_back(std::move(s));
  }
}

void Bench::launch_copy(const Gpu& g, int stream, const char* src, char* dst, int64_t bytes, int max_blocks,
                        int threads) const {
  const int64_t n16 = bytes / 16;
  const int64_t per_block = int64_t(threads) * kUnroll;
  const int64_t cap = max_blocks > 0 ? max_blocks : int64_t(kBlocksPerSm) * g.sms;
  const int blocks = int(std::clamp<int64_t>((n16 + per_block - 1) / per_block, 1, cap));
  k_copy<<<blocks, threads, 0, g.stream[stream]>>>(reinterpret_cast<const int4*>(src), reinterpret_cast<int4*>(dst),
                                                   n16, src, dst, n16 * 16, bytes);
}

template <class T>
void Bench::launch_reduce(const Gpu& g, const char* a, const char* b, char* dst, int64_t bytes, int max_blocks,
                          int threads) const {
  const int64_t n16 = bytes / 16;
  const int64_t per_block = int64_t(threads) * kUnroll;
  const int64_t cap = max_blocks > 0 ? max_blocks : int64_t(kBlocksPerSm) * g.sms;
  const int blocks = int(std::clamp<int64_t>((n16 + per_block - 1) / per_block, 1, cap));
  k_reduce<T><<<blocks, threads, 0, g.stream[0]>>>(reinterpret_cast<const int4*>(a), reinterpret_cast<const int4*>(b),
                                                   reinterpret_cast<int4*>(dst), n16,
                                                   (bytes - n16 * 16) / int64_t(sizeof(T)));
}

void Bench::bench_p2p() {
  if (gpus_.size() < 2) {
    res_.warnings.push_back("one GPU: peer bandwidth and flag round trip not measured");
    return;
  }
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  log("peer bandwidth GPU0 <-> GPU1 (" + fmt_bytes(opt_.min_bytes) + " .. " + fmt_bytes(opt_.max_bytes) + ")");
  // Copy engine: pushed from the source GPU's stream, as the executor lowers puts.
  auto ce = [&](Gpu& src, Gpu& dst, int64_t b) {
    return Lane{src.dev, src.stream[0], [&src, &dst, b] {
                  CCLAB_CUDA(cudaMemcpyPeerAsync(dst.buf[1], dst.dev, src.buf[0], src.dev, size_t(b), src.stream[0]));
                }};
  };
  sweep("p2p.ce.uni", "cudaMemcpyPeerAsync GPU0->GPU1 on GPU0's stream, back to back, CUDA events",
        [&](int64_t b) { return std::vector<Lane>{ce(g0, g1, b)}; });
  sweep("p2p.ce.bidir", "cudaMemcpyPeerAsync GPU0->GPU1 and GPU1->GPU0 at once (bytes per direction), CUDA events",
        [&](int64_t b) {
          return std::vector<Lane>{ce(g0, g1, b), ce(g1, g0, b)};
        });
  // SM-driven: a kernel on the destination loads 16-byte vectors from the peer and stores locally.
  auto sm = [&](Gpu& src, Gpu& dst, int64_t b) {
    return Lane{dst.dev, dst.stream[0], [this, &src, &dst, b] {
                  launch_copy(dst, 0, src.buf[0], dst.buf[1], b);
                  CCLAB_CUDA_LAUNCHED();
                }};
  };
  const std::string grid = std::to_string(kBlocksPerSm * g0.sms) + "x" + std::to_string(kThreads);
  sweep("p2p.sm.uni", "kernel on GPU1 loading GPU0's memory (int4, up to " + grid + " threads), CUDA events",
        [&](int64_t b) { return std::vector<Lane>{sm(g0, g1, b)}; });
  sweep("p2p.sm.bidir", "kernels on both GPUs loading the other's memory at once (bytes per direction)",
        [&](int64_t b) {
          return std::vector<Lane>{sm(g0, g1, b), sm(g1, g0, b)};
        });
  // SM stores: a kernel on the source reads locally and stores 16-byte vectors into the peer's memory
  // (how the push and ll modes move data: no round trip per load, so latency hides differently).
  auto store = [&](Gpu& src, Gpu& dst, int64_t b) {
    return Lane{src.dev, src.stream[0], [this, &src, &dst, b] {
                  launch_copy(src, 0, src.buf[0], dst.buf[1], b);
                  CCLAB_CUDA_LAUNCHED();
                }};
  };
  sweep("p2p.sm_store.uni", "kernel on GPU0 storing into GPU1's memory (int4, up to " + grid + " threads), CUDA events",
        [&](int64_t b) { return std::vector<Lane>{store(g0, g1, b)}; });
  sweep("p2p.sm_store.bidir", "kernels on both GPUs storing into the other's memory at once (bytes per direction)",
        [&](int64_t b) {
          return std::vector<Lane>{store(g0, g1, b), store(g1, g0, b)};
        });
  // LL-style stores both ways at once, with the ll mode's grid: 256 threads, one 8-byte pair each, up to one
  // CTA per SM (exec/kernels/bidir.cu). Bytes are data bytes (twice that crosses the link).
  auto ll = [&](Gpu& src, Gpu& dst, int64_t b) {
    return Lane{src.dev, src.stream[0], [&src, &dst, b] {
                  const int64_t pairs = std::max<int64_t>(1, b / 8);
                  const int blocks = int(std::clamp<int64_t>((pairs + 255) / 256, 1, src.sms));
                  k_ll_store<<<blocks, 256, 0, src.stream[0]>>>(reinterpret_cast<const uint2*>(src.buf[0]),
                                                                reinterpret_cast<ulonglong2*>(dst.buf[1]), pairs, 1u);
                  CCLAB_CUDA_LAUNCHED();
                }};
  };
  sweep(
      "p2p.ll_store.bidir",
      "LL-style stores (8 data bytes as two flagged 8-byte words per thread, 256 threads, up to one CTA per SM) "
      "into the peer, both GPUs at once (data bytes per direction)",
      [&](int64_t b) {
        return std::vector<Lane>{ll(g0, g1, b), ll(g1, g0, b)};
      },
      8, opt_.max_bytes / 2);
  // One CTA (512 threads): the rate one block group of a fused kernel reaches, loads and stores; and with 256 and 128
  // threads (`cta256`, `cta128`): how the rate follows the vectors a CTA keeps in flight (the SM's own rate, or the
  // memory's latency at few vectors), for kernels whose CTAs split their threads.
  // A CTA on `me` loading `other`'s memory into its own, or storing its own into `other`'s.
  auto one_cta = [&](bool stores, Gpu& me, Gpu& other, int64_t b, int threads) {
    const char* src = stores ? me.buf[0] : other.buf[0];
    char* dst = stores ? other.buf[1] : me.buf[1];
    return Lane{me.dev, me.stream[0], [this, &me, src, dst, b, threads] {
                  launch_copy(me, 0, src, dst, b, 1, threads);
                  CCLAB_CUDA_LAUNCHED();
                }};
  };
  auto series = [](bool stores) { return std::string(stores ? "p2p.sm_store.cta" : "p2p.sm.cta"); };
  for (const int threads : {kThreads, kThreads / 2, kThreads / 4})
    for (const bool stores : {false, true})
      sweep(
          series(stores) + (threads == kThreads ? "" : std::to_string(threads)),
          "one CTA of " + std::to_string(threads) + " threads" +
              (stores ? " on GPU0 storing into GPU1's memory" : " on GPU1 loading GPU0's memory") + ", CUDA events",
          [&, stores, threads](int64_t b) {
            return std::vector<Lane>{stores ? one_cta(true, g0, g1, b, threads) : one_cta(false, g1, g0, b, threads)};
          },
          0, kOneCtaMax);
  // One CTA on each GPU at once, loading (storing into) the other's memory, as the all-reduce kernels move data: on
  // 2 x H200 within 7% of one way (docs/findings/2026-11-29-one-cta-depth.md); measured, not read by the model.
  for (const bool stores : {false, true})
    sweep(
        series(stores) + ".bidir",
        "one CTA of " + std::to_string(kThreads) + " threads on each GPU " + (stores ? "storing into" : "loading") +
            " the other's memory at once (bytes per direction), CUDA events",
        [&, stores](int64_t b) {
          return std::vector<Lane>{one_cta(stores, g1, g0, b, kThreads), one_cta(stores, g0, g1, b, kThreads)};
        },
        0, kOneCtaMax);
}

// Every GPU at once stores `bytes` split evenly over all its peers (an all-to-all's traffic; the fused path's and the
// two-shot's on more than 2 GPUs): what a GPU's NVLink port carries out, and in, with several peers on both ends,
// against one peer both ways (p2p.sm_store.bidir). Bytes per GPU and direction (whole 16-byte vectors per peer).
void Bench::bench_fanout() {
  const int n = int(gpus_.size());
  if (n < 3) return;
  if (n - 1 > kMaxFanoutPeers) {
    res_.warnings.push_back("p2p.sm_store.fanout: more than " + std::to_string(kMaxFanoutPeers) +
                            " peers, not measured");
    return;
  }
  log("stores fanned out to every peer, all " + std::to_string(n) + " GPUs at once");
  auto lane = [this, n](int me, int64_t b) {
    Gpu& g = gpus_[size_t(me)];
    return Lane{g.dev, g.stream[0], [this, n, me, b, &g] {
                  FanoutArgs a{};
                  a.src = reinterpret_cast<const int4*>(g.buf[0]);
                  a.per16 = std::max<int64_t>(1, b / 16 / (n - 1));
                  a.peers = n - 1;
                  for (int q = 0, k = 0; q < n; ++q)
                    if (q != me)  // my slot in q's destination: one per sender, (n - 1) x per16 vectors in all
                      a.dst[k++] = reinterpret_cast<int4*>(gpus_[size_t(q)].buf[1]) + (me < q ? me : me - 1) * a.per16;
                  const int64_t per_block = int64_t(kThreads) * kUnroll;
                  const int per_peer = int(std::clamp<int64_t>((a.per16 + per_block - 1) / per_block, 1,
                                                               std::max(1, kBlocksPerSm * g.sms / (n - 1))));
                  k_copy_fanout<<<per_peer*(n - 1), kThreads, 0, g.stream[0]>>>(a);
                  CCLAB_CUDA_LAUNCHED();
                }};
  };
  sweep(
      "p2p.sm_store.fanout",
      "a kernel on every GPU at once storing the bytes split evenly over all its peers (int4, up to " +
          std::to_string(kBlocksPerSm) + " CTAs per SM of " + std::to_string(kThreads) +
          " threads; bytes per GPU and direction), CUDA events",
      [&](int64_t b) {
        std::vector<Lane> v;
        for (int d = 0; d < n; ++d) v.push_back(lane(d, b));
        return v;
      },
      16 * int64_t(n - 1));
}

// Two copy-engine copies of S bytes each from GPU0 into GPU1, issued on two streams of GPU0 and released together
// (both wait behind one gate kernel), against one such copy alone: when the first of the two ends and when the
// second does. Served one after the other, the first ends at one copy's time and the second at two; sharing the
// link side by side, both end at two copies' time. This is how the rings' channels share a link (each channel's
// copy on its own stream): the simulator shares it max-min fairly (docs/findings/2026-11-27-four-gpus-ring-tier.md).
void Bench::bench_ce_pair() {
  if (gpus_.size() < 2) return;
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  const int d = g0.dev;
  cudaEvent_t a_done = nullptr, b_done = nullptr;
  CCLAB_CUDA(cudaSetDevice(d));
  CCLAB_CUDA(cudaEventCreate(&a_done));
  CCLAB_CUDA(cudaEventCreate(&b_done));
  constexpr double kGate_s = 100e-6;  // longer than enqueueing two copies and three events
  constexpr int kWarm = 2, kPairTrials = 7;
  auto once = [&](int64_t b, bool pair, double& first, double& last) {
    CCLAB_CUDA(cudaSetDevice(d));
    k_spin<<<1, 1, 0, g0.stream[0]>>>((unsigned long long)(kGate_s * 1e9));
    CCLAB_CUDA_LAUNCHED();
    CCLAB_CUDA(cudaEventRecord(ev_[d].start, g0.stream[0]));
    CCLAB_CUDA(cudaStreamWaitEvent(g0.stream[1], ev_[d].start, 0));
    CCLAB_CUDA(cudaMemcpyPeerAsync(g1.buf[1], g1.dev, g0.buf[0], d, size_t(b), g0.stream[0]));
    if (pair) CCLAB_CUDA(cudaMemcpyPeerAsync(g1.buf[2], g1.dev, g0.buf[2], d, size_t(b), g0.stream[1]));
    CCLAB_CUDA(cudaEventRecord(a_done, g0.stream[0]));
    CCLAB_CUDA(cudaEventRecord(b_done, g0.stream[1]));
    CCLAB_CUDA(cudaEventSynchronize(a_done));
    CCLAB_CUDA(cudaEventSynchronize(b_done));
    float ta = 0, tb = 0;
    CCLAB_CUDA(cudaEventElapsedTime(&ta, ev_[d].start, a_done));
    CCLAB_CUDA(cudaEventElapsedTime(&tb, ev_[d].start, b_done));
    if (!pair) tb = ta;
    first = std::min(ta, tb) * 1e-3;
    last = std::max(ta, tb) * 1e-3;
  };
  const std::string how =
      "cudaMemcpyPeerAsync GPU0->GPU1 of S bytes on each of two streams of GPU0, released together by a gate "
      "kernel, CUDA events (median of 7 after 2 warm-ups)";
  BenchSeries solo{"p2p.ce.pair.solo", "the same, one copy alone", {}},
      first{"p2p.ce.pair.first", how + ": the first to end", {}},
      last{"p2p.ce.pair.last", how + ": the second to end", {}};
  log("two copy-engine copies at once GPU0 -> GPU1 (1 MiB .. " + fmt_bytes(opt_.max_bytes / 2) + ")");
  for (int64_t b : sizes()) {
    if (b < (1 << 20) || b > opt_.max_bytes / 2) continue;
    if (over_budget()) {
      res_.warnings.push_back("p2p.ce.pair: stopped at " + fmt_bytes(b) + " (time budget spent)");
      break;
    }
    std::vector<double> t1, tf, tl;
    for (int i = 0; i < kWarm + kPairTrials; ++i) {
      double f = 0, l = 0, s1 = 0, unused = 0;
      once(b, false, s1, unused);
      once(b, true, f, l);
      if (i < kWarm) continue;
      t1.push_back(s1);
      tf.push_back(f);
      tl.push_back(l);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    solo.points.push_back({b, median(t1), 1});
    first.points.push_back({b, median(tf), 1});
    last.points.push_back({b, median(tl), 1});
  }
  CCLAB_CUDA(cudaEventDestroy(a_done));
  CCLAB_CUDA(cudaEventDestroy(b_done));
  for (BenchSeries* sr : {&solo, &first, &last}) {
    if (sr->points.empty()) continue;
    std::ostringstream os;
    os.precision(4);
    const BenchPoint& p = sr->points.back();
    os << "  " << sr->name << ": " << fmt_bytes(p.bytes) << " in " << p.seconds * 1e6 << " us";
    log(os.str());
    res_.series.push_back(std::move(*sr));
  }
}

void Bench::bench_local() {
  Gpu& g0 = gpus_[0];
  log("local copy and reduction bandwidth on GPU0");
  sweep("copy.local", "cudaMemcpyAsync device to device on GPU0 (bytes copied), CUDA events", [&](int64_t b) {
    return std::vector<Lane>{
        Lane{0, g0.stream[0], [&g0, b] {
               CCLAB_CUDA(cudaMemcpyAsync(g0.buf[1], g0.buf[0], size_t(b), cudaMemcpyDeviceToDevice, g0.stream[0]));
             }}};
  });
  auto local = [&](auto tag, const char* name) {
    using T = decltype(tag);
    sweep(
        std::string("reduce.local.") + name,
        std::string("kernel dst = a + b in ") + name + " on GPU0 (bytes per operand; 3 bytes of HBM traffic each)",
        [&](int64_t b) {
          return std::vector<Lane>{Lane{0, g0.stream[0], [this, &g0, b] {
                                          launch_reduce<T>(g0, g0.buf[0], g0.buf[2], g0.buf[1], b);
                                          CCLAB_CUDA_LAUNCHED();
                                        }}};
        },
        16);
  };
  local(float{}, "float");
  local(__half{}, "half");
  local(__nv_bfloat16{}, "bfloat16");
  // One CTA: the rate of a kernel whose reduction runs on few CTAs (a lane or a tile of a fused kernel), bound
  // by the SM or its latency rather than by HBM; with 256 and 128 threads too (`cta256`, `cta128`), as the peer
  // copies above.
  auto one_cta = [&](auto tag, const char* name, int threads) {
    using T = decltype(tag);
    sweep(
        "reduce.local.cta" + (threads == kThreads ? std::string() : std::to_string(threads)) + "." + name,
        std::string("one CTA of ") + std::to_string(threads) + " threads (" + std::to_string(kUnroll) +
            " vector pairs in flight each): dst = a + b in " + name + " on GPU0 (bytes per operand)",
        [&](int64_t b) {
          return std::vector<Lane>{Lane{0, g0.stream[0], [this, &g0, b, threads] {
                                          launch_reduce<T>(g0, g0.buf[0], g0.buf[2], g0.buf[1], b, 1, threads);
                                          CCLAB_CUDA_LAUNCHED();
                                        }}};
        },
        16, kOneCtaMax);
  };
  for (const int threads : {kThreads, kThreads / 2, kThreads / 4}) {
    one_cta(float{}, "float", threads);
    one_cta(__half{}, "half", threads);
    one_cta(__nv_bfloat16{}, "bfloat16", threads);
  }
  if (gpus_.size() < 2) return;
  Gpu& g1 = gpus_[1];
  auto peer = [&](auto tag, const char* name) {
    using T = decltype(tag);
    sweep(
        std::string("reduce.peer.") + name,
        std::string("kernel on GPU1: dst = peer(GPU0) + local in ") + name + " (bytes per operand)",
        [&](int64_t b) {
          return std::vector<Lane>{Lane{1, g1.stream[0], [this, &g0, &g1, b] {
                                          launch_reduce<T>(g1, g0.buf[0], g1.buf[2], g1.buf[1], b);
                                          CCLAB_CUDA_LAUNCHED();
                                        }}};
        },
        16);
  };
  peer(float{}, "float");
  peer(__half{}, "half");
  peer(__nv_bfloat16{}, "bfloat16");
}

void Bench::bench_latency() {
  Gpu& g0 = gpus_[0];
  log("latencies");
  auto series = [&](const std::string& name, const std::string& method, const std::function<double()>& one) {
    BenchSeries s{name, method, {}};
    for (int t = 0; t < 5; ++t) s.points.push_back({0, one(), 0});
    std::vector<double> v;
    for (const auto& p : s.points) v.push_back(p.seconds);
    std::sort(v.begin(), v.end());
    std::ostringstream os;
    os.precision(3);
    os << "  " << name << ": " << v[v.size() / 2] * 1e6 << " us (median of " << v.size() << ")";
    log(os.str());
    res_.series.push_back(std::move(s));
  };
  // GPU side: a gated batch (all launches queued before the clock starts), as under graph replay.
  const auto empty = std::vector<Lane>{Lane{0, g0.stream[0], [&g0] { k_empty<<<1, 32, 0, g0.stream[0]>>>(); }}};
  series("latency.launch", "empty kernels back to back on one stream, all queued before timing; per launch",
         [&] { return gated(kMaxReps, empty); });
  // Host side: what one launch call costs the CPU (bounds the rate of launches without graphs).
  series("latency.launch_host", "host time of one kernel launch call (steady_clock over 500 calls)", [&] {
    timed(kMaxReps, empty);
    return last_enqueue_s_;
  });

  // Event ping-pong: an empty kernel on one stream, an event, a wait on another stream, an empty kernel
  // there, and back. Per hop = dependent launch + event wait.
  auto ping_pong = [&](Gpu& a, Gpu& b, int sb) {
    constexpr int kHops = 200;
    cudaEvent_t ea, eb;
    CCLAB_CUDA(cudaSetDevice(a.dev));
    CCLAB_CUDA(cudaEventCreateWithFlags(&ea, cudaEventDisableTiming));
    CCLAB_CUDA(cudaSetDevice(b.dev));
    CCLAB_CUDA(cudaEventCreateWithFlags(&eb, cudaEventDisableTiming));
    const double per_round = gated(1, {Lane{a.dev, a.stream[0], [&] {
                                              for (int h = 0; h < kHops / 2; ++h) {
                                                CCLAB_CUDA(cudaSetDevice(a.dev));
                                                k_empty<<<1, 32, 0, a.stream[0]>>>();
                                                CCLAB_CUDA(cudaEventRecord(ea, a.stream[0]));
                                                CCLAB_CUDA(cudaSetDevice(b.dev));
                                                CCLAB_CUDA(cudaStreamWaitEvent(b.stream[sb], ea, 0));
                                                k_empty<<<1, 32, 0, b.stream[sb]>>>();
                                                CCLAB_CUDA(cudaEventRecord(eb, b.stream[sb]));
                                                CCLAB_CUDA(cudaSetDevice(a.dev));
                                                CCLAB_CUDA(cudaStreamWaitEvent(a.stream[0], eb, 0));
                                              }
                                            }}});
    CCLAB_CUDA(cudaSetDevice(a.dev));
    CCLAB_CUDA(cudaEventDestroy(ea));
    CCLAB_CUDA(cudaSetDevice(b.dev));
    CCLAB_CUDA(cudaEventDestroy(eb));
    return per_round / kHops;
  };
  series("latency.event", "empty kernel -> event -> wait on a second stream of GPU0 -> empty kernel, per hop",
         [&] { return ping_pong(g0, g0, 1); });
  if (gpus_.size() < 2) return;
  Gpu& g1 = gpus_[1];
  series("latency.event_peer", "empty kernel on GPU0 -> event -> wait on GPU1's stream -> empty kernel, per hop",
         [&] { return ping_pong(g0, g1, 0); });

  // Flag round trip inside two running kernels (no launch in the loop).
  constexpr int kRounds = 2000;
  auto flag_rtt = [&]() -> double {
    for (Gpu* g : {&g0, &g1}) {
      CCLAB_CUDA(cudaSetDevice(g->dev));
      CCLAB_CUDA(cudaMemsetAsync(g->flags, 0, 2 * sizeof(unsigned), g->stream[0]));
      CCLAB_CUDA(cudaMemsetAsync(g->err, 0, sizeof(int), g->stream[0]));
      CCLAB_CUDA(cudaStreamSynchronize(g->stream[0]));
    }
    // Start the answering kernel first so that it is resident before the first ping.
    CCLAB_CUDA(cudaSetDevice(g1.dev));
    k_pong<<<1, 1, 0, g1.stream[0]>>>(g1.flags + 0, g0.flags + 1, kRounds, g1.err);
    CCLAB_CUDA_LAUNCHED();
    const double t = timed(1, {Lane{0, g0.stream[0], [&] {
                                      k_ping<<<1, 1, 0, g0.stream[0]>>>(g1.flags + 0, g0.flags + 1, kRounds, g0.err);
                                    }}});
    int e0 = 0, e1 = 0;
    CCLAB_CUDA(cudaSetDevice(g1.dev));
    CCLAB_CUDA(cudaStreamSynchronize(g1.stream[0]));
    CCLAB_CUDA(cudaMemcpy(&e1, g1.err, sizeof(int), cudaMemcpyDeviceToHost));
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    CCLAB_CUDA(cudaMemcpy(&e0, g0.err, sizeof(int), cudaMemcpyDeviceToHost));
    if (e0 || e1)
      throw_env("flag round trip GPU0 <-> GPU1 timed out (round " + std::to_string(e0 ? e0 : -e1) +
                "): peer stores not visible");
    return t / kRounds;
  };
  series("latency.flag",
         "one thread on GPU0 stores a flag into GPU1's memory, one on GPU1 polls it and stores an ack into GPU0's; "
         "round trip, 2000 per kernel",
         flag_rtt);
}

// Times a CUDA graph of kGraphIters copies of `body`, captured on GPU0's origin stream, replayed once
// after a warm-up replay behind a spin gate (all of it queued before the clock starts): seconds per
// iteration, median of kTrials replays. This is how the executor's harness times a schedule's general
// lowering (exec/runtime/harness.cpp: 20 iterations per graph, graph replay), so these numbers are the per-node
// and per-edge costs that lowering pays, measured on nothing but tiny copies and empty kernels.
double Bench::graph_time(const std::function<void(cudaStream_t)>& body) {
  constexpr int kGraphIters = 20;
  Gpu& g0 = gpus_[0];
  CCLAB_CUDA(cudaSetDevice(g0.dev));
  cudaStream_t origin = g0.stream[0];
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CCLAB_CUDA(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kGraphIters; ++i) body(origin);
  CCLAB_CUDA(cudaStreamEndCapture(origin, &graph));
  CCLAB_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<double> t;
  for (int trial = 0; trial < kTrials + 1; ++trial) {
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    k_spin<<<1, 1, 0, origin>>>(1000000ULL);  // 1 ms gate: the whole replay is queued before the clock starts
    CCLAB_CUDA_LAUNCHED();
    CCLAB_CUDA(cudaEventRecord(ev_[0].start, origin));
    CCLAB_CUDA(cudaGraphLaunch(exec, origin));
    CCLAB_CUDA(cudaEventRecord(ev_[0].stop, origin));
    CCLAB_CUDA(cudaEventSynchronize(ev_[0].stop));
    float ms = 0;
    CCLAB_CUDA(cudaEventElapsedTime(&ms, ev_[0].start, ev_[0].stop));
    if (trial > 0) t.push_back(double(ms) * 1e-3 / kGraphIters);  // trial 0 uploads the graph
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The general lowering's building blocks inside a CUDA graph (see graph_time): a copy-engine copy node,
// a kernel node, a fork to a stream and join back (on the same GPU or the other one), and a dependency
// between streams of the two GPUs. Every copy is 8 bytes, every kernel empty.
void Bench::bench_graph() {
  if (gpus_.size() < 2) {
    res_.warnings.push_back("one GPU: graph fork/join and cross-GPU edges not measured");
    return;
  }
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  log("CUDA graph nodes and edges (20 iterations per graph, as the executor replays schedules)");
  std::vector<cudaEvent_t> evs;
  auto event = [&](int dev) { return new_event(dev, evs); };
  struct Free {
    std::vector<cudaEvent_t>& evs;
    ~Free() {
      for (cudaEvent_t e : evs) cudaEventDestroy(e);
    }
  } free_events{evs};
  const cudaEvent_t fork0 = event(g0.dev), join0 = event(g0.dev), join1 = event(g1.dev), hop0 = event(g0.dev),
                    hop1 = event(g1.dev);
  auto copy8 = [](cudaStream_t s, void* dst, const void* src) {
    CCLAB_CUDA(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDeviceToDevice, s));
  };
  auto series = [&](const std::string& name, const std::string& method, const std::function<void(cudaStream_t)>& body) {
    BenchSeries s{name, method, {}};
    for (int t = 0; t < 5; ++t) s.points.push_back({8, graph_time(body), 20});
    std::vector<double> v;
    for (const auto& p : s.points) v.push_back(p.seconds);
    std::sort(v.begin(), v.end());
    std::ostringstream os;
    os.precision(3);
    os << "  " << name << ": " << v[v.size() / 2] * 1e6 << " us per iteration (median of " << v.size() << ")";
    log(os.str());
    res_.series.push_back(std::move(s));
  };
  series("graph.copy", "per iteration one 8-byte peer copy (cudaMemcpyAsync GPU0->GPU1) on the origin stream",
         [&](cudaStream_t o) { copy8(o, g1.buf[1], g0.buf[0]); });
  series("graph.copy2", "per iteration two 8-byte peer copies GPU0->GPU1 one after the other on the origin stream",
         [&](cudaStream_t o) {
           copy8(o, g1.buf[1], g0.buf[0]);
           copy8(o, g1.buf[1] + 64, g0.buf[0] + 64);
         });
  series("graph.kernel", "per iteration one empty kernel on the origin stream", [&](cudaStream_t o) {
    k_empty<<<1, 32, 0, o>>>();
    CCLAB_CUDA_LAUNCHED();
  });
  series("graph.kernel_pdl",
         "per iteration one empty kernel launched with programmatic dependent launch (griddepcontrol.wait first)",
         [&](cudaStream_t o) { CCLAB_CUDA(dev::launch_pdl(k_empty_pdl, 1, 32, o)); });
  // Fork / join as exec/runtime/harness.cpp's fork_streams / join_streams do, around one copy on the forked stream.
  auto fork_join = [&](Gpu& g, cudaEvent_t join) {
    return [&g, &g0, &g1, fork0, join, copy8](cudaStream_t o) {
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaEventRecord(fork0, o));
      CCLAB_CUDA(cudaSetDevice(g.dev));
      CCLAB_CUDA(cudaStreamWaitEvent(g.stream[1], fork0, 0));
      // From this GPU to the other one, as a put of the schedule would go.
      Gpu& peer = &g == &g0 ? g1 : g0;
      copy8(g.stream[1], peer.buf[1], g.buf[0]);
      CCLAB_CUDA(cudaEventRecord(join, g.stream[1]));
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaStreamWaitEvent(o, join, 0));
    };
  };
  series("graph.fork_local", "per iteration: fork to a second stream of GPU0, one 8-byte peer copy there, join",
         fork_join(g0, join0));
  series("graph.fork_peer", "per iteration: fork to a stream of GPU1, one 8-byte peer copy there, join back to GPU0",
         fork_join(g1, join1));
  series("graph.copy_local", "per iteration one 8-byte device-to-device copy within GPU0 on the origin stream",
         [&](cudaStream_t o) { copy8(o, g0.buf[1], g0.buf[0]); });
  // Fork to k streams on each GPU at once, one 8-byte peer copy on each, join them all (the general
  // lowering opens one stream per (rank, channel)): how the fork/join grows with the streams.
  constexpr int kMaxForkStreams = 3;
  std::vector<cudaStream_t> extra[2];
  std::vector<cudaEvent_t> joins[2];
  struct FreeStreams {
    std::vector<cudaStream_t>* s;
    ~FreeStreams() {
      for (int g = 0; g < 2; ++g)
        for (cudaStream_t x : s[g]) cudaStreamDestroy(x);
    }
  } free_streams{extra};
  for (int g = 0; g < 2; ++g) {
    CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
    for (int k = 0; k < kMaxForkStreams; ++k) {
      cudaStream_t x = nullptr;
      CCLAB_CUDA(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
      extra[g].push_back(x);
      joins[g].push_back(event(gpus_[size_t(g)].dev));
    }
  }
  for (int k = 1; k <= kMaxForkStreams; ++k)
    series("graph.fork_both." + std::to_string(k),
           "per iteration: fork from GPU0's origin to " + std::to_string(k) +
               " streams on each of the 2 GPUs, one 8-byte peer copy on each, join all back",
           [&, k](cudaStream_t o) {
             CCLAB_CUDA(cudaSetDevice(g0.dev));
             CCLAB_CUDA(cudaEventRecord(fork0, o));
             for (int g = 0; g < 2; ++g) {
               Gpu& me = gpus_[size_t(g)];
               Gpu& peer = gpus_[size_t(1 - g)];
               CCLAB_CUDA(cudaSetDevice(me.dev));
               for (int j = 0; j < k; ++j) {
                 CCLAB_CUDA(cudaStreamWaitEvent(extra[g][size_t(j)], fork0, 0));
                 copy8(extra[g][size_t(j)], peer.buf[1] + 64 * j, me.buf[0] + 64 * j);
                 CCLAB_CUDA(cudaEventRecord(joins[g][size_t(j)], extra[g][size_t(j)]));
               }
             }
             CCLAB_CUDA(cudaSetDevice(g0.dev));
             for (int g = 0; g < 2; ++g)
               for (int j = 0; j < k; ++j) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][size_t(j)], 0));
           });
  // The same with empty kernels instead of copies on the forked streams, and mixed: one stream of copies
  // and one of kernels on each GPU (the general lowering puts reduce kernels and copies on streams of
  // their channels).
  auto fork_kinds = [&](int copies, int kernels) {
    return [&, copies, kernels](cudaStream_t o) { enqueue_fork_kinds(o, gpus_, fork0, extra, joins, copies, kernels); };
  };
  for (int k = 1; k <= kMaxForkStreams; ++k)
    series("graph.fork_kernels." + std::to_string(k),
           "per iteration: fork from GPU0's origin to " + std::to_string(k) +
               " streams on each of the 2 GPUs, one empty kernel on each, join all back",
           fork_kinds(0, k));
  series("graph.fork_mix.1",
         "per iteration: fork to 2 streams on each GPU, an 8-byte peer copy on one and an empty kernel on the other, "
         "join all back",
         fork_kinds(1, 1));
  // The copy-mode all-reduce's fork (lower/bidir.cpp's bidir_copy_schedule: 2 copy streams and 1 kernel stream per
  // GPU).
  series("graph.fork_mix.2_1",
         "per iteration: fork to 3 streams on each GPU, an 8-byte peer copy on two and an empty kernel on the third, "
         "join all back",
         fork_kinds(2, 1));
  // Two streams on each GPU where the copy waits for the kernel through an event (a 2-rank tree all-reduce
  // lowers so: a reduce kernel, then the put of its result on the copy stream): the same fork / join as
  // graph.fork_mix.1 with a dependency between the streams of each GPU.
  series("graph.fork_mix_chain.1",
         "per iteration: fork to 2 streams on each GPU, an empty kernel on one and an 8-byte peer copy on the "
         "other that waits for the kernel (event), join all back",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           for (int g = 0; g < 2; ++g) {
             Gpu& me = gpus_[size_t(g)];
             Gpu& peer = gpus_[size_t(1 - g)];
             cudaStream_t kx = extra[g][0], cx = extra[g][1];
             CCLAB_CUDA(cudaSetDevice(me.dev));
             CCLAB_CUDA(cudaStreamWaitEvent(kx, fork0, 0));
             CCLAB_CUDA(cudaStreamWaitEvent(cx, fork0, 0));
             k_empty<<<1, 32, 0, kx>>>();
             CCLAB_CUDA_LAUNCHED();
             CCLAB_CUDA(cudaEventRecord(joins[g][0], kx));
             CCLAB_CUDA(cudaStreamWaitEvent(cx, joins[g][0], 0));
             copy8(cx, peer.buf[1] + 512, me.buf[0] + 512);
             CCLAB_CUDA(cudaEventRecord(joins[g][1], cx));
           }
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           for (int g = 0; g < 2; ++g) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][1], 0));
         });
  // Two streams on each GPU where each GPU's kernel waits for the other GPU's copy through an event (a
  // 2-rank hierarchical reduce-scatter lowers so: a put into the peer, the peer's reduce kernel after it).
  series("graph.fork_mix_cross.1",
         "per iteration: fork to 2 streams on each GPU, an 8-byte peer copy on one, an empty kernel on the other "
         "that waits for the other GPU's copy (event), join all back",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           for (int g = 0; g < 2; ++g) {
             Gpu& me = gpus_[size_t(g)];
             Gpu& peer = gpus_[size_t(1 - g)];
             cudaStream_t cx = extra[g][1];
             CCLAB_CUDA(cudaSetDevice(me.dev));
             CCLAB_CUDA(cudaStreamWaitEvent(cx, fork0, 0));
             copy8(cx, peer.buf[1] + 576, me.buf[0] + 576);
             CCLAB_CUDA(cudaEventRecord(joins[g][1], cx));
           }
           for (int g = 0; g < 2; ++g) {
             Gpu& me = gpus_[size_t(g)];
             cudaStream_t kx = extra[g][0];
             CCLAB_CUDA(cudaSetDevice(me.dev));
             CCLAB_CUDA(cudaStreamWaitEvent(kx, fork0, 0));
             CCLAB_CUDA(cudaStreamWaitEvent(kx, joins[1 - g][1], 0));
             k_empty<<<1, 32, 0, kx>>>();
             CCLAB_CUDA_LAUNCHED();
             CCLAB_CUDA(cudaEventRecord(joins[g][0], kx));
           }
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           for (int g = 0; g < 2; ++g)
             for (int j = 0; j < 2; ++j) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][size_t(j)], 0));
         });
  // Plans that stay on GPU0 with two streams (a local copy beside a copy into the peer, as a 2-rank
  // broadcast lowers): fork to two streams of GPU0, one copy on each, join.
  series("graph.fork_local2",
         "per iteration: fork to 2 streams of GPU0, an 8-byte copy within GPU0 on one and an 8-byte copy into GPU1 "
         "on the other, join both",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           for (int j = 0; j < 2; ++j) {
             cudaStream_t x = extra[0][size_t(j)];
             CCLAB_CUDA(cudaStreamWaitEvent(x, fork0, 0));
             if (j == 0)
               copy8(x, g0.buf[1] + 128, g0.buf[0] + 128);
             else
               copy8(x, g1.buf[1] + 128, g0.buf[0] + 128);
             CCLAB_CUDA(cudaEventRecord(joins[0][size_t(j)], x));
           }
           for (int j = 0; j < 2; ++j) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[0][size_t(j)], 0));
         });
  // One forked stream of GPU0 with a copy within GPU0 and then a copy into GPU1 (a 2-rank scatter).
  series("graph.fork_local_mix",
         "per iteration: fork to a stream of GPU0, an 8-byte copy within GPU0 then an 8-byte copy into GPU1 on it, "
         "join",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           cudaStream_t x = extra[0][0];
           CCLAB_CUDA(cudaStreamWaitEvent(x, fork0, 0));
           copy8(x, g0.buf[1] + 256, g0.buf[0] + 256);
           copy8(x, g1.buf[1] + 256, g0.buf[0] + 256);
           CCLAB_CUDA(cudaEventRecord(joins[0][0], x));
           CCLAB_CUDA(cudaStreamWaitEvent(o, joins[0][0], 0));
         });
  // One stream on each GPU with a copy within that GPU and then a copy into the other (a 2-rank all-gather
  // or all-to-all lowers so: the rank's own part, then the peer's), all forked from and joined to GPU0.
  series("graph.fork_both_mix.1",
         "per iteration: fork from GPU0's origin to 1 stream on each of the 2 GPUs, an 8-byte copy within the GPU "
         "then an 8-byte copy into the other GPU on each, join all back",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           for (int g = 0; g < 2; ++g) {
             Gpu& me = gpus_[size_t(g)];
             Gpu& peer = gpus_[size_t(1 - g)];
             cudaStream_t x = extra[g][0];
             CCLAB_CUDA(cudaSetDevice(me.dev));
             CCLAB_CUDA(cudaStreamWaitEvent(x, fork0, 0));
             copy8(x, me.buf[1] + 384, me.buf[0] + 384);
             copy8(x, peer.buf[1] + 448, me.buf[0] + 448);
             CCLAB_CUDA(cudaEventRecord(joins[g][0], x));
           }
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           for (int g = 0; g < 2; ++g) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][0], 0));
         });
  // A reduce kernel that reads the peer, on a forked stream of GPU0 (a 2-rank reduce lowers to one): the
  // kernel node with the NVLink round trips of its loads, as the general lowering replays it.
  series("graph.fork_reduce_peer",
         "per iteration: fork to a stream of GPU0, one reduce kernel there (dst = GPU1's 16 float bytes + GPU0's, "
         "one CTA of 512 threads), join",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           cudaStream_t x = extra[0][0];
           CCLAB_CUDA(cudaStreamWaitEvent(x, fork0, 0));
           k_reduce<float><<<1, kThreads, 0, x>>>(reinterpret_cast<const int4*>(g1.buf[0]),
                                                  reinterpret_cast<const int4*>(g0.buf[2]),
                                                  reinterpret_cast<int4*>(g0.buf[1]), 1, 0);
           CCLAB_CUDA_LAUNCHED();
           CCLAB_CUDA(cudaEventRecord(joins[0][0], x));
           CCLAB_CUDA(cudaStreamWaitEvent(o, joins[0][0], 0));
         });
  // A chain of copies alternating between a stream of GPU0 and one of GPU1, each waiting for the last.
  constexpr int kHops = 4;
  series("graph.hop_peer",
         "per iteration: fork to GPU1, then " + std::to_string(kHops) +
             " 8-byte copies alternating GPU1 / GPU0 streams, each waiting on the previous (event), join; "
             "time per iteration",
         [&](cudaStream_t o) {
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaEventRecord(fork0, o));
           cudaEvent_t prev = fork0;
           for (int h = 0; h < kHops; ++h) {
             Gpu& g = h % 2 == 0 ? g1 : g0;
             Gpu& peer = h % 2 == 0 ? g0 : g1;
             cudaStream_t s = h % 2 == 0 ? g1.stream[1] : o;
             CCLAB_CUDA(cudaSetDevice(g.dev));
             CCLAB_CUDA(cudaStreamWaitEvent(s, prev, 0));
             copy8(s, peer.buf[1] + 64 * h, g.buf[0]);
             cudaEvent_t e = h % 2 == 0 ? hop1 : hop0;
             CCLAB_CUDA(cudaEventRecord(e, s));
             prev = e;
           }
           CCLAB_CUDA(cudaSetDevice(g0.dev));
           CCLAB_CUDA(cudaStreamWaitEvent(o, prev, 0));
         });
}

// The fused path's synchronisation in its own setting: one graph per GPU (20 launches of k_flag_chain with
// programmatic dependent launch, 512 threads), the two replayed side by side with nothing but the flags
// between them (as exec/runtime/harness.cpp's per-device replay). graph.flag_chain.<h>: per iteration, GPU0's time
// with h hops per launch; the hop is the slope in h, the rest the launch.
void Bench::bench_flag_chain() {
  if (gpus_.size() < 2) return;
  if (const char* skip = std::getenv("CCLAB_CALIBRATE_SKIP_FLAGS"); skip && *skip && *skip != '0') {
    res_.warnings.push_back("flag chain not measured (CCLAB_CALIBRATE_SKIP_FLAGS set)");
    return;
  }
  constexpr int kIters = 20;
  // A lane's op table as the fused kernel loads it: 8 ops of 7 words (exec/runtime/fused_workload.cu DevOp).
  constexpr int kTableWords = 56;
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  unsigned long long* state[2] = {nullptr, nullptr};
  for (int g = 0; g < 2; ++g) {
    CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
    CCLAB_CUDA(cudaMalloc(&state[g], (2 + kTableWords) * sizeof(unsigned long long)));
  }
  struct FreeState {
    unsigned long long** s;
    ~FreeState() {
      for (int g = 0; g < 2; ++g) cudaFree(s[g]);
    }
  } free_state{state};
  log("flag chains between per-GPU graphs (the fused path's synchronisation)");
  // graph.flag_chain_table.2: the 2-hop chain whose launches first load a lane's op table.
  // graph.flag_exchange.<h> (config 100 + h): h exchanges per launch, both GPUs sending then waiting each
  // time, as the fused kernels of all-gather / all-to-all / reduce-scatter wait on each other's start and
  // data flags (against the chain, where one GPU waits at a time).
  for (int config : {2, 6, -2, 102, 106}) {
    const bool exchange = config > 100;
    const int hops = exchange ? config - 100 : config < 0 ? -config : config, words = config < 0 ? kTableWords : 0;
    BenchSeries series{
        std::string(exchange ? "graph.flag_exchange."
                    : words  ? "graph.flag_chain_table."
                             : "graph.flag_chain.") +
            std::to_string(hops),
        "per-GPU graphs of 20 PDL launches of one 512-thread kernel each, replayed side by side; per "
        "launch " +
            (words ? "a load of " + std::to_string(words) + " words of an op table into shared memory, " : "") +
            std::to_string(hops) +
            (exchange ? " flag exchanges (both GPUs: barrier + st.release.sys into the peer, then ld.acquire.sys "
                        "poll of local memory for the peer's)"
                      : " flag hops alternating GPU0 -> GPU1 -> ... (barrier + st.release.sys into the peer, "
                        "ld.acquire.sys poll of local memory)") +
            "; GPU0's time per launch",
        {}};
    for (int g = 0; g < 2; ++g) {
      CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
      CCLAB_CUDA(cudaMemset(state[g], 0, (2 + kTableWords) * sizeof(unsigned long long)));
      CCLAB_CUDA(cudaMemset(gpus_[size_t(g)].err, 0, sizeof(int)));
      CCLAB_CUDA(cudaDeviceSynchronize());
    }
    cudaGraphExec_t exec[2] = {nullptr, nullptr};
    cudaGraph_t graph[2] = {nullptr, nullptr};
    struct FreeGraphs {
      cudaGraphExec_t* e;
      cudaGraph_t* g;
      ~FreeGraphs() {
        for (int i = 0; i < 2; ++i) {
          if (e[i]) cudaGraphExecDestroy(e[i]);
          if (g[i]) cudaGraphDestroy(g[i]);
        }
      }
    } free_graphs{exec, graph};
    for (int g = 0; g < 2; ++g) {
      Gpu& me = gpus_[size_t(g)];
      CCLAB_CUDA(cudaSetDevice(me.dev));
      CCLAB_CUDA(cudaStreamBeginCapture(me.stream[1], cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kIters; ++i) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(1);
        cfg.blockDim = dim3(kThreads);
        cfg.stream = me.stream[1];
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        CCLAB_CUDA(cudaLaunchKernelEx(&cfg, k_flag_chain, state[g], state[1 - g] + 1, exchange ? 2 : g, hops, me.err,
                                      static_cast<const unsigned long long*>(state[g] + 2), words));
      }
      CCLAB_CUDA(cudaStreamEndCapture(me.stream[1], &graph[g]));
      CCLAB_CUDA(cudaGraphInstantiate(&exec[g], graph[g], 0));
    }
    std::vector<double> t;
    for (int trial = 0; trial < 6; ++trial) {
      // GPU1's replay first (it waits for GPU0's first flag), then GPU0's between the timing events.
      CCLAB_CUDA(cudaSetDevice(g1.dev));
      CCLAB_CUDA(cudaGraphLaunch(exec[1], g1.stream[1]));
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaEventRecord(ev_[0].start, g0.stream[1]));
      CCLAB_CUDA(cudaGraphLaunch(exec[0], g0.stream[1]));
      CCLAB_CUDA(cudaEventRecord(ev_[0].stop, g0.stream[1]));
      CCLAB_CUDA(cudaEventSynchronize(ev_[0].stop));
      CCLAB_CUDA(cudaSetDevice(g1.dev));
      CCLAB_CUDA(cudaStreamSynchronize(g1.stream[1]));
      int e0 = 0, e1 = 0;
      CCLAB_CUDA(cudaMemcpy(&e1, g1.err, sizeof(int), cudaMemcpyDeviceToHost));
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaMemcpy(&e0, g0.err, sizeof(int), cudaMemcpyDeviceToHost));
      if (e0 || e1) throw_env("flag chain GPU0 <-> GPU1 timed out at hop " + std::to_string(e0 ? e0 : e1));
      float ms = 0;
      CCLAB_CUDA(cudaEventElapsedTime(&ms, ev_[0].start, ev_[0].stop));
      if (trial > 0) series.points.push_back({8, double(ms) * 1e-3 / kIters, kIters});  // trial 0 uploads
    }
    std::vector<double> v;
    for (const auto& p : series.points) v.push_back(p.seconds);
    std::sort(v.begin(), v.end());
    std::ostringstream os;
    os.precision(3);
    os << "  " << series.name << ": " << v[v.size() / 2] * 1e6 << " us per launch (median of " << v.size() << ")";
    log(os.str());
    res_.series.push_back(std::move(series));
  }
}

// Copy-engine copies of every size as the general lowering replays them (graph_time: 20 iterations per
// graph): per iteration one peer copy GPU0 -> GPU1 on the origin stream (p2p.ce.graph.uni), or one each way
// at once, GPU1's on a stream of GPU1 forked from the origin and joined back (p2p.ce.graph.bidir, bytes per
// direction). What a copy node of that size costs in a replayed graph, its setup overlapped or not.
void Bench::bench_graph_copies() {
  if (gpus_.size() < 2) return;
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  cudaEvent_t fork = nullptr, join = nullptr;
  CCLAB_CUDA(cudaSetDevice(g0.dev));
  CCLAB_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CCLAB_CUDA(cudaSetDevice(g1.dev));
  CCLAB_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  struct FreeEvents {
    cudaEvent_t a, b;
    ~FreeEvents() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } free_events{fork, join};
  log("copy-engine copies in replayed graphs (" + fmt_bytes(opt_.min_bytes) + " .. " +
      fmt_bytes(std::min(opt_.max_bytes, kMaxGraphCopy)) + ")");
  for (bool both : {false, true}) {
    const std::string name = both ? "p2p.ce.graph.bidir" : "p2p.ce.graph.uni";
    BenchSeries s{name,
                  both ? "per iteration of a replayed graph (20 per replay): GPU0 -> GPU1 copy on the origin stream "
                         "and GPU1 -> GPU0 copy on a GPU1 stream forked from it and joined back (bytes per direction)"
                       : "per iteration of a replayed graph (20 per replay): one cudaMemcpyAsync GPU0 -> GPU1 on the "
                         "origin stream",
                  {}};
    for (int64_t b : sizes()) {
      if (b > kMaxGraphCopy) break;
      if (over_budget()) {
        res_.warnings.push_back(name + ": stopped at " + fmt_bytes(b) + " (time budget spent)");
        break;
      }
      for (int g = 0; g < kGraphInstances; ++g) {
        const double t = graph_time([&, b, both](cudaStream_t o) {
          if (both) {
            CCLAB_CUDA(cudaSetDevice(g0.dev));
            CCLAB_CUDA(cudaEventRecord(fork, o));
            CCLAB_CUDA(cudaSetDevice(g1.dev));
            CCLAB_CUDA(cudaStreamWaitEvent(g1.stream[1], fork, 0));
            CCLAB_CUDA(cudaMemcpyAsync(g0.buf[1], g1.buf[0], size_t(b), cudaMemcpyDeviceToDevice, g1.stream[1]));
            CCLAB_CUDA(cudaEventRecord(join, g1.stream[1]));
            CCLAB_CUDA(cudaSetDevice(g0.dev));
          }
          CCLAB_CUDA(cudaMemcpyAsync(g1.buf[1], g0.buf[0], size_t(b), cudaMemcpyDeviceToDevice, o));
          if (both) CCLAB_CUDA(cudaStreamWaitEvent(o, join, 0));
        });
        s.points.push_back({b, t, 20});
      }
    }
    if (s.points.empty()) continue;
    std::ostringstream os;
    os.precision(4);
    os << "  " << name << ": " << s.points.size() / kGraphInstances << " sizes, " << s.points.front().seconds * 1e6
       << " us at " << fmt_bytes(s.points.front().bytes) << ", "
       << double(s.points.back().bytes) / s.points.back().seconds / 1e9 << " GB/s at "
       << fmt_bytes(s.points.back().bytes);
    log(os.str());
    res_.series.push_back(std::move(s));
  }
}

// The same for a copy within GPU0 (the local copies of the general lowering's plans): one GPU is enough.
void Bench::bench_graph_local_copies() {
  Gpu& g0 = gpus_[0];
  CCLAB_CUDA(cudaSetDevice(g0.dev));
  log("local copies in replayed graphs (" + fmt_bytes(opt_.min_bytes) + " .. " +
      fmt_bytes(std::min(opt_.max_bytes, kMaxGraphCopy)) + ")");
  BenchSeries local{"copy.local.graph",
                    "per iteration of a replayed graph (20 per replay): one cudaMemcpyAsync within GPU0 on the "
                    "origin stream (bytes copied)",
                    {}};
  for (int64_t b : sizes()) {
    if (b > kMaxGraphCopy) break;
    if (over_budget()) {
      res_.warnings.push_back("copy.local.graph: stopped at " + fmt_bytes(b) + " (time budget spent)");
      break;
    }
    for (int g = 0; g < kGraphInstances; ++g) {
      const double t = graph_time([&, b](cudaStream_t o) {
        CCLAB_CUDA(cudaMemcpyAsync(g0.buf[1], g0.buf[0], size_t(b), cudaMemcpyDeviceToDevice, o));
      });
      local.points.push_back({b, t, 20});
    }
  }
  if (!local.points.empty()) {
    std::ostringstream os;
    os.precision(4);
    os << "  copy.local.graph: " << local.points.size() / kGraphInstances << " sizes, "
       << local.points.front().seconds * 1e6 << " us at " << fmt_bytes(local.points.front().bytes);
    log(os.str());
    res_.series.push_back(std::move(local));
  }
  // The same with each of the 20 iterations copying its own part of the buffers (as a collective's plan
  // touches fresh data each copy): copy.local.graph repeats one source and destination, which up to ~16 MiB
  // stay in L2 (50 MB) across the replay.
  BenchSeries cold{"copy.local.graph.cold",
                   "per iteration of a replayed graph (20 per replay): one cudaMemcpyAsync within GPU0 on the origin "
                   "stream, each iteration at its own offset of the buffers (up to 1 GiB apart; bytes copied)",
                   {}};
  for (int64_t b : sizes()) {
    if (b < (64 << 10)) continue;
    if (b > kMaxGraphCopy) break;
    if (over_budget()) {
      res_.warnings.push_back("copy.local.graph.cold: stopped at " + fmt_bytes(b) + " (time budget spent)");
      break;
    }
    const int64_t stride = (b + 255) / 256 * 256;
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(20, opt_.max_bytes / stride));
    for (int g = 0; g < kGraphInstances; ++g) {
      int64_t i = 0;
      const double t = graph_time([&, b, stride, parts](cudaStream_t o) {
        const int64_t off = (i++ % parts) * stride;
        CCLAB_CUDA(cudaMemcpyAsync(g0.buf[1] + off, g0.buf[0] + off, size_t(b), cudaMemcpyDeviceToDevice, o));
      });
      cold.points.push_back({b, t, 20});
    }
  }
  if (!cold.points.empty()) {
    std::ostringstream os;
    os.precision(4);
    for (const auto& p : cold.points)
      if (p.bytes == (16 << 20)) {
        os << "  copy.local.graph.cold: " << p.seconds * 1e6 << " us at 16 MiB (first graph)";
        break;
      }
    log(os.str());
    res_.series.push_back(std::move(cold));
  }
}

// The general lowering's fork / join shapes timed as exec/runtime/harness.cpp times a replay: the graph's launch
// behind the harness's hold kernel (released once cudaGraphLaunch has returned), so that the host's launch
// of the multi-GPU graph is never in the time, whatever its length (graph_time's fixed 1 ms gate does not
// cover a launch longer than that). graph.held.<shape>: per iteration of a 20-iteration replay, 9 replays,
// each its own point (the graph.fork_* samples moved 1.5x between calls while the records they price did
// not). graph.launch.<shape>: the host's cudaGraphLaunch call, per replay. Sized shapes (tables against
// S, one copy of S per node, S = 1, 4, 16 MiB): held.fork_copy (fork to a stream of GPU0, a peer copy,
// join), held.fork_local_mix (a local copy then a peer copy on that stream: a 2-rank scatter's plan),
// held.fork_local2 (the local and the peer copy on two streams: a 2-rank broadcast's plan), held.copy
// (the peer copy on the origin stream, no fork).
void Bench::bench_graph_held() {
  if (gpus_.size() < 2) return;
  constexpr int kIters = 20;
  constexpr int kSamples = 9;
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  log("graph forks behind the harness's hold (20 iterations per replay)");
  CCLAB_CUDA(cudaSetDevice(g0.dev));
  MappedHost control(64);
  auto* ctl = static_cast<volatile uint32_t*>(control.host());
  auto* dev_ctl = static_cast<uint32_t*>(control.device());
  constexpr int kStreams = 3;
  std::vector<cudaEvent_t> evs;
  cudaStream_t extra[2][kStreams] = {};
  cudaEvent_t joins[2][kStreams] = {};
  struct Free {
    std::vector<cudaEvent_t>& evs;
    cudaStream_t (&st)[2][kStreams];
    ~Free() {
      for (cudaEvent_t e : evs) cudaEventDestroy(e);
      for (auto& row : st)
        for (cudaStream_t x : row)
          if (x) cudaStreamDestroy(x);
    }
  } free_all{evs, extra};
  auto event = [&](int dev) { return new_event(dev, evs); };
  const cudaEvent_t fork0 = event(g0.dev);
  for (int g = 0; g < 2; ++g)
    for (int j = 0; j < kStreams; ++j) {
      CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
      CCLAB_CUDA(cudaStreamCreateWithFlags(&extra[g][j], cudaStreamNonBlocking));
      joins[g][j] = event(gpus_[size_t(g)].dev);
    }
  const cudaStream_t origin = g0.stream[0];
  // One graph of kIters bodies; per replay: seconds per iteration (held) and the host's launch call.
  auto held = [&](const std::function<void(cudaStream_t)>& body, int samples, std::vector<double>& per_iter,
                  std::vector<double>& launch_s, int& blocked, bool hold = true) {
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    const FreeGraph free_graph{&graph, &exec};
    CCLAB_CUDA(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kIters; ++i) body(origin);
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    CCLAB_CUDA(cudaStreamEndCapture(origin, &graph));
    CCLAB_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CCLAB_CUDA(cudaGraphLaunch(exec, origin));  // warm-up: uploads the graph
    CCLAB_CUDA(cudaStreamSynchronize(origin));
    for (int t = 0; t < samples; ++t) {
      ctl[0] = 0;
      ctl[1] = 0;
      CCLAB_CUDA(cudaStreamSynchronize(origin));
      // 20 ms: a launch that blocks behind the hold shows. Unheld: as the harness times a graph over 512 nodes.
      if (hold) launch_hold(origin, dev_ctl, dev_ctl + 1, 20000000ULL);
      CCLAB_CUDA(cudaEventRecord(ev_[0].start, origin));
      const auto t0 = std::chrono::steady_clock::now();
      CCLAB_CUDA(cudaGraphLaunch(exec, origin));
      const auto t1 = std::chrono::steady_clock::now();
      CCLAB_CUDA(cudaEventRecord(ev_[0].stop, origin));
      ctl[0] = 1;
      CCLAB_CUDA(cudaEventSynchronize(ev_[0].stop));
      if (ctl[1]) ++blocked;
      float ms = 0;
      CCLAB_CUDA(cudaEventElapsedTime(&ms, ev_[0].start, ev_[0].stop));
      per_iter.push_back(double(ms) * 1e-3 / kIters);
      launch_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
  };
  auto median_us = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] * 1e6;
  };
  auto shape = [&](const std::string& name, const std::string& what, int64_t bytes,
                   const std::function<void(cudaStream_t)>& body, BenchSeries* sized, int samples) {
    std::vector<double> per_iter, launch_s;
    int blocked = 0;
    held(body, samples, per_iter, launch_s, blocked);
    std::ostringstream os;
    os.precision(3);
    os << "  " << (sized ? "held." : "graph.held.") << name << " (" << bytes << " B): " << median_us(per_iter)
       << " us per iteration, launch " << median_us(launch_s) << " us (median of " << samples << ")";
    if (blocked) os << ", " << blocked << " launches blocked behind the hold";
    log(os.str());
    if (blocked) res_.warnings.push_back(name + ": a launch blocked behind the hold");
    if (sized) {
      for (double v : per_iter) sized->points.push_back({bytes, v, kIters});
      return;
    }
    BenchSeries s{"graph.held." + name, "held replay (as exec/runtime/harness.cpp), per iteration: " + what, {}};
    BenchSeries l{
        "graph.launch." + name, "host time of cudaGraphLaunch of the 20-iteration graph, per replay: " + what, {}};
    for (size_t i = 0; i < per_iter.size(); ++i) {
      s.points.push_back({bytes, per_iter[i], kIters});
      l.points.push_back({bytes, launch_s[i], kIters});
    }
    res_.series.push_back(std::move(s));
    res_.series.push_back(std::move(l));
  };
  auto copy = [](cudaStream_t s, void* dst, const void* src, int64_t bytes) {
    CCLAB_CUDA(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice, s));
  };
  auto join_all = [&](cudaStream_t o, int per_gpu, int gpus) {
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    for (int g = 0; g < gpus; ++g)
      for (int j = 0; j < per_gpu; ++j) CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][j], 0));
  };
  // c 8-byte peer copies and k empty kernels on streams of their own on each GPU (as graph.fork_kinds).
  auto fork_kinds = [&](int c, int k) {
    return [&, c, k](cudaStream_t o) { enqueue_fork_kinds(o, gpus_, fork0, extra, joins, c, k); };
  };
  for (int k = 1; k <= kStreams; ++k)
    shape("fork_both." + std::to_string(k),
          "fork to " + std::to_string(k) + " streams on each GPU, an 8-byte peer copy on each, join", 8,
          fork_kinds(k, 0), nullptr, kSamples);
  for (int k = 1; k <= kStreams; ++k)
    shape("fork_kernels." + std::to_string(k),
          "fork to " + std::to_string(k) + " streams on each GPU, an empty kernel on each, join", 8, fork_kinds(0, k),
          nullptr, kSamples);
  shape("fork_mix.1", "fork to 2 streams on each GPU, an 8-byte peer copy on one, an empty kernel on the other, join",
        8, fork_kinds(1, 1), nullptr, kSamples);
  shape("fork_mix.2_1",
        "fork to 3 streams on each GPU, an 8-byte peer copy on two, an empty kernel on the third, join (the copy-mode "
        "all-reduce's streams)",
        8, fork_kinds(2, 1), nullptr, kSamples);
  // GPU0-only plans: a local then a peer copy on one forked stream (scatter), or the two on two streams
  // (broadcast), or the peer copy alone on a forked stream / on the origin stream.
  // Forks GPU0's origin stream to n streams of GPU0, enqueues body(j, stream) on each, joins them back.
  auto on_gpu0_streams = [&](cudaStream_t o, int n, const std::function<void(int, cudaStream_t)>& body) {
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    CCLAB_CUDA(cudaEventRecord(fork0, o));
    for (int j = 0; j < n; ++j) {
      cudaStream_t x = extra[0][j];
      CCLAB_CUDA(cudaStreamWaitEvent(x, fork0, 0));
      body(j, x);
      CCLAB_CUDA(cudaEventRecord(joins[0][j], x));
    }
    join_all(o, n, 1);
  };
  auto local_mix = [&](int64_t bytes) {
    return [&, bytes](cudaStream_t o) {
      on_gpu0_streams(o, 1, [&](int, cudaStream_t x) {
        copy(x, g0.buf[1], g0.buf[0], bytes);
        copy(x, g1.buf[1], g0.buf[2], bytes);
      });
    };
  };
  auto local2 = [&](int64_t bytes) {
    return [&, bytes](cudaStream_t o) {
      on_gpu0_streams(o, 2, [&](int j, cudaStream_t x) { copy(x, j == 0 ? g0.buf[1] : g1.buf[1], g0.buf[0], bytes); });
    };
  };
  auto fork_copy = [&](int64_t bytes) {
    return [&, bytes](cudaStream_t o) {
      on_gpu0_streams(o, 1, [&](int, cudaStream_t x) { copy(x, g1.buf[1], g0.buf[0], bytes); });
    };
  };
  auto plain_copy = [&](int64_t bytes) { return [&, bytes](cudaStream_t o) { copy(o, g1.buf[1], g0.buf[0], bytes); }; };
  shape("fork_local_mix", "fork to a stream of GPU0, an 8-byte copy within GPU0 then an 8-byte copy into GPU1, join", 8,
        local_mix(8), nullptr, kSamples);
  shape("fork_local2", "fork to 2 streams of GPU0, an 8-byte copy within GPU0 on one, into GPU1 on the other, join", 8,
        local2(8), nullptr, kSamples);
  struct Sized {
    const char* name;
    const char* what;
    std::function<std::function<void(cudaStream_t)>(int64_t)> make;
  };
  const Sized sized[] = {
      {"copy", "one peer copy GPU0 -> GPU1 of S bytes on the origin stream", plain_copy},
      {"fork_copy", "fork to a stream of GPU0, a peer copy of S bytes there, join", fork_copy},
      {"fork_local_mix", "fork to a stream of GPU0, a copy of S bytes within GPU0 then one of S into GPU1, join",
       local_mix},
      {"fork_local2",
       "fork to 2 streams of GPU0, a copy of S bytes within GPU0 on one, one of S into GPU1 on the other, join",
       local2},
  };
  for (const Sized& z : sized) {
    if (over_budget()) {
      res_.warnings.push_back(std::string("held.") + z.name + ": skipped (time budget)");
      continue;
    }
    BenchSeries s{std::string("held.") + z.name,
                  std::string("held replay (as exec/runtime/harness.cpp), per iteration: ") + z.what,
                  {}};
    for (int64_t bytes : {int64_t(1) << 20, int64_t(4) << 20, int64_t(16) << 20})
      if (bytes <= opt_.max_bytes) shape(z.name, z.what, bytes, z.make(bytes), &s, 5);
    if (!s.points.empty()) res_.series.push_back(std::move(s));
  }
  // Graphs of 20 iterations, each a fork to a stream on each GPU with k/2 nodes on each (8-byte peer copies
  // and empty kernels alternating, as replay.unheld), joined back: held (k <= 24, 480 nodes: within the
  // harness's 512-node hold limit), unheld (start event, launch, stop event: as the harness times a larger
  // graph), and the host's launch call. What the missing hold adds against the launch's own length.
  // One graph timed held or unheld, 5 replays each, as tables against the graph's nodes per replay (20 k):
  // <shape>.held / <shape>.unheld per iteration, <shape>.launch / <shape>.launch_unheld the host's
  // cudaGraphLaunch call per replay.
  std::map<std::string, BenchSeries> tables;
  auto graph_pair = [&](const std::string& shape, int k, const std::function<void(cudaStream_t)>& body, bool hold,
                        const std::string& what) {
    std::vector<double> per_iter, launch_s;
    int blocked = 0;
    held(body, 5, per_iter, launch_s, blocked, hold);
    const std::string tn = shape + (hold ? ".held" : ".unheld"), ln = shape + (hold ? ".launch" : ".launch_unheld");
    BenchSeries& t = tables[tn];
    BenchSeries& l = tables[ln];
    t.name = tn;
    t.method = std::string(hold ? "held replay" : "unheld replay (start event, launch, stop event)") +
               ", per iteration: " + what + "; bytes = nodes per replay";
    l.name = ln;
    l.method = "host time of cudaGraphLaunch, per replay: " + what + "; bytes = nodes per replay";
    for (size_t i = 0; i < per_iter.size(); ++i) {
      t.points.push_back({int64_t(kIters) * k, per_iter[i], kIters});
      l.points.push_back({int64_t(kIters) * k, launch_s[i], kIters});
    }
    std::ostringstream os;
    os.precision(4);
    os << "  " << tn << " (" << kIters * k << " nodes): " << median_us(per_iter) << " us per iteration, launch "
       << median_us(launch_s) << " us per replay";
    if (blocked) os << ", " << blocked << " launches blocked behind the hold";
    log(os.str());
  };
  // The fork of both chains: GPU0's origin stream to the first `streams` extra streams of each GPU.
  auto fork_both = [&](cudaStream_t o, int streams) {
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    CCLAB_CUDA(cudaEventRecord(fork0, o));
    for (int g = 0; g < 2; ++g) {
      CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
      for (int x = 0; x < streams; ++x) CCLAB_CUDA(cudaStreamWaitEvent(extra[g][x], fork0, 0));
    }
  };
  for (int k : {16, 24, 32, 64}) {
    if (over_budget()) break;
    auto chain = [&, k](cudaStream_t o) {
      fork_both(o, 1);
      for (int j = 0; j < k / 2; ++j)
        for (int g = 0; g < 2; ++g) {
          Gpu& me = gpus_[size_t(g)];
          Gpu& peer = gpus_[size_t(1 - g)];
          CCLAB_CUDA(cudaSetDevice(me.dev));
          if (j % 2 == 0) {
            copy(extra[g][0], peer.buf[1] + 64 * (j % 64), me.buf[0], 8);
          } else {
            k_empty<<<1, 32, 0, extra[g][0]>>>();
            CCLAB_CUDA_LAUNCHED();
          }
        }
      for (int g = 0; g < 2; ++g) {
        CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
        CCLAB_CUDA(cudaEventRecord(joins[g][0], extra[g][0]));
      }
      join_all(o, 1, 2);
    };
    for (bool hold : {true, false}) {
      if (hold && k > 24) continue;
      graph_pair("chain", k, chain, hold,
                 "20 iterations of a fork to a stream on each GPU with k/2 nodes on each (8-byte peer copies and "
                 "empty kernels alternating), join");
    }
  }
  // The same node counts with a copy and a kernel stream per GPU: per round and GPU an empty kernel, then an
  // 8-byte peer copy on the copy stream waiting for it. xchain: each round's kernel also waits for the other
  // GPU's last copy (plans whose ops wait on the other GPU's, as the copy-mode all-reduce's). lchain: no wait
  // across the GPUs (a 2-rank tree all-reduce's plan: 32 ops on 4 streams at 8 MiB, each put waiting for its
  // own GPU's reduction), unheld only, at 640 and 1280 nodes: on 2 x H200 xchain's 1280 nodes launched in 4.2 ms
  // where the tree's own 1280-node replay took 2.9 ms
  // (docs/findings/2026-11-23-nccl-rings-unheld-launch-small-sizes.md).
  for (const bool cross : {true, false})
    for (int k : {16, 24, 32, 64}) {
      if (over_budget()) break;
      if (!cross && k < 32) continue;
      cudaEvent_t ek[2] = {joins[0][1], joins[1][1]}, ec[2] = {joins[0][2], joins[1][2]};
      auto rounds = [&, k, cross](cudaStream_t o) {
        fork_both(o, 2);
        for (int r = 0; r < k / 4; ++r)
          for (int g = 0; g < 2; ++g) {
            Gpu& me = gpus_[size_t(g)];
            Gpu& peer = gpus_[size_t(1 - g)];
            CCLAB_CUDA(cudaSetDevice(me.dev));
            if (cross && r > 0) CCLAB_CUDA(cudaStreamWaitEvent(extra[g][1], ec[1 - g], 0));
            k_empty<<<1, 32, 0, extra[g][1]>>>();
            CCLAB_CUDA_LAUNCHED();
            CCLAB_CUDA(cudaEventRecord(ek[g], extra[g][1]));
            CCLAB_CUDA(cudaStreamWaitEvent(extra[g][0], ek[g], 0));
            copy(extra[g][0], peer.buf[1] + 64 * (r % 64), me.buf[0], 8);
            CCLAB_CUDA(cudaEventRecord(ec[g], extra[g][0]));
          }
        for (int g = 0; g < 2; ++g) {
          CCLAB_CUDA(cudaSetDevice(gpus_[size_t(g)].dev));
          CCLAB_CUDA(cudaEventRecord(joins[g][0], extra[g][0]));
          CCLAB_CUDA(cudaEventRecord(ek[g], extra[g][1]));
        }
        CCLAB_CUDA(cudaSetDevice(g0.dev));
        for (int g = 0; g < 2; ++g) {
          CCLAB_CUDA(cudaStreamWaitEvent(o, joins[g][0], 0));
          CCLAB_CUDA(cudaStreamWaitEvent(o, ek[g], 0));
        }
      };
      for (bool hold : {true, false}) {
        if (hold && (k > 24 || !cross)) continue;
        graph_pair(cross ? "xchain" : "lchain", k, rounds, hold,
                   std::string("20 iterations of a fork to a copy and a kernel stream on each GPU, k/4 rounds of (per "
                               "GPU) an empty kernel") +
                       (cross ? " waiting for the other GPU's last copy" : "") +
                       ", then an 8-byte peer copy waiting for it, join");
      }
    }
  for (auto& [name, t] : tables) res_.series.push_back(std::move(t));
}

// Replayed graphs too large for the harness's hold kernel (exec/runtime/harness.cpp: more than 512 nodes): the timed
// replay starts when its launch call is made, so the host's launch of the whole multi-GPU graph is in the
// time. graph_unheld: a graph of 20 iterations, each forking to a stream on each GPU with k/2 nodes on each
// (8-byte peer copies and empty kernels alternating), joined back; timed as the harness times it (start
// event, launch, stop event, no gate), after a warm-up replay. Per replay, against its node count (the
// `bytes` field holds 20 * k).
void Bench::bench_graph_unheld() {
  if (gpus_.size() < 2) return;
  constexpr int kIters = 20;
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  cudaEvent_t fork = nullptr, join = nullptr;
  CCLAB_CUDA(cudaSetDevice(g0.dev));
  CCLAB_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CCLAB_CUDA(cudaSetDevice(g1.dev));
  CCLAB_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  struct FreeEvents {
    cudaEvent_t a, b;
    ~FreeEvents() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } free_events{fork, join};
  log("replayed graphs of more than 512 nodes, timed without a gate (the harness's unheld replays)");
  BenchSeries s{"replay.unheld",
                "per replay of a 20-iteration graph, each iteration a fork to a stream on each GPU with k/2 nodes "
                "(8-byte peer copies and empty kernels alternating) and a join; start event, cudaGraphLaunch, stop "
                "event, no gate; bytes = nodes (20 k)",
                {}};
  for (int k : {32, 64, 128, 256}) {
    if (over_budget()) {
      res_.warnings.push_back("replay.unheld: stopped at " + std::to_string(k) + " nodes per iteration (time budget)");
      break;
    }
    cudaStream_t origin = g0.stream[0];
    CCLAB_CUDA(cudaSetDevice(g0.dev));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CCLAB_CUDA(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kIters; ++i) {
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaEventRecord(fork, origin));
      CCLAB_CUDA(cudaSetDevice(g1.dev));
      CCLAB_CUDA(cudaStreamWaitEvent(g1.stream[1], fork, 0));
      for (int j = 0; j < k / 2; ++j) {
        for (int g = 0; g < 2; ++g) {
          Gpu& me = gpus_[size_t(g)];
          Gpu& peer = gpus_[size_t(1 - g)];
          cudaStream_t x = g == 0 ? origin : g1.stream[1];
          CCLAB_CUDA(cudaSetDevice(me.dev));
          if (j % 2 == 0) {
            CCLAB_CUDA(cudaMemcpyAsync(peer.buf[1] + 64 * (j % 64), me.buf[0], 8, cudaMemcpyDeviceToDevice, x));
          } else {
            k_empty<<<1, 32, 0, x>>>();
            CCLAB_CUDA_LAUNCHED();
          }
        }
      }
      CCLAB_CUDA(cudaSetDevice(g1.dev));
      CCLAB_CUDA(cudaEventRecord(join, g1.stream[1]));
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaStreamWaitEvent(origin, join, 0));
    }
    CCLAB_CUDA(cudaStreamEndCapture(origin, &graph));
    const FreeGraph free_graph{&graph, &exec};
    CCLAB_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    CCLAB_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::vector<double> t;
    for (int trial = 0; trial < kTrials + 1; ++trial) {
      CCLAB_CUDA(cudaSetDevice(g0.dev));
      CCLAB_CUDA(cudaEventRecord(ev_[0].start, origin));
      CCLAB_CUDA(cudaGraphLaunch(exec, origin));
      CCLAB_CUDA(cudaEventRecord(ev_[0].stop, origin));
      CCLAB_CUDA(cudaEventSynchronize(ev_[0].stop));
      float ms = 0;
      CCLAB_CUDA(cudaEventElapsedTime(&ms, ev_[0].start, ev_[0].stop));
      if (trial > 0) t.push_back(double(ms) * 1e-3);  // trial 0 uploads the graph
    }
    std::sort(t.begin(), t.end());
    s.points.push_back({int64_t(nodes), t[t.size() / 2], kIters});
  }
  if (s.points.empty()) return;
  std::ostringstream os;
  os.precision(4);
  for (const auto& p : s.points) os << "  replay.unheld: " << p.bytes << " nodes in " << p.seconds * 1e6 << " us\n";
  log(os.str().substr(0, os.str().size() - 1));
  res_.series.push_back(std::move(s));
}

// The fused path's cost per op (k_fused_steps), as the time of a launch of 9 ops less that of a launch of
// 1 op, over 8 (the launch and its epoch update cancel). fused.step.<kind>: a lane of one CTA (the fused
// kernel's lanes whose ops are at most cta_bytes), each op published into GPU1's memory. fused.group.<kind>:
// ceil(bytes / 32 KiB) CTAs (FusedOptions::cta_bytes: the executor's CTAs for a lane of ops that size, up to
// 32), each op waiting for the previous op's flag (a group wait: it touches what that op wrote) and
// publishing it locally. Kinds: put (GPU0 stores into GPU1), get (GPU0 loads from GPU1), local (in GPU0).
void Bench::bench_fused_steps() {
  if (gpus_.size() < 2) return;
  constexpr int kSteps = 9;
  constexpr int64_t kCtaBytes = 32 << 10;
  constexpr int kMaxGroup = 32;
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  // GPU0: state (2 words), 64 flags, 64 arrival counters; GPU1: 64 flags the single-CTA ops publish into.
  unsigned long long* ctl = nullptr;
  unsigned long long* peer_flags = nullptr;
  CCLAB_CUDA(cudaSetDevice(g1.dev));
  CCLAB_CUDA(cudaMalloc(&peer_flags, 64 * sizeof(unsigned long long)));
  CCLAB_CUDA(cudaMemset(peer_flags, 0, 64 * sizeof(unsigned long long)));
  CCLAB_CUDA(cudaSetDevice(g0.dev));
  struct FreeCtl {
    unsigned long long **a, **b;
    ~FreeCtl() {
      cudaFree(*a);
      cudaFree(*b);
    }
  } free_ctl{&ctl, &peer_flags};
  constexpr size_t kCtlBytes = (2 + 64) * sizeof(unsigned long long) + 64 * sizeof(unsigned);
  CCLAB_CUDA(cudaMalloc(&ctl, kCtlBytes));
  CCLAB_CUDA(cudaMemset(ctl, 0, kCtlBytes));
  CCLAB_CUDA(cudaMemset(g0.err, 0, sizeof(int)));
  CCLAB_CUDA(cudaDeviceSynchronize());
  unsigned long long* local_flags = ctl + 2;
  unsigned* arrive = reinterpret_cast<unsigned*>(ctl + 2 + 64);
  log("fused path ops (one kernel, ops back to back, flags as exec/runtime/fused_workload.cu)");
  struct Kind {
    const char* name;
    const char* what;
    const char* src;
    char* dst;
  };
  const Kind kinds[] = {{"put", "GPU0 storing into GPU1's memory", g0.buf[0], g1.buf[1]},
                        {"get", "GPU0 loading GPU1's memory", g1.buf[0], g0.buf[1]},
                        {"local", "a copy within GPU0", g0.buf[0], g0.buf[1]}};
  // 0: one CTA; 1: a CTA group whose ops each wait for the previous one; 2: a CTA group without waits;
  // 3: one CTA whose ops publish no flag; 4: as 3, each op copying what the previous one wrote (local only).
  for (int variant : {0, 1, 2, 3, 4})
    for (const Kind& kind : kinds) {
      if (variant == 4 && std::string(kind.name) != "local") continue;
      const bool group = variant == 1 || variant == 2, wait = variant == 1;
      const char* prefix[] = {"fused.step.", "fused.group.", "fused.group_free.", "fused.step_quiet.",
                              "fused.step_chain."};
      const std::string name = std::string(prefix[variant]) + kind.name;
      BenchSeries s{
          name,
          std::string("per op of one kernel on GPU0, ") + kind.what +
              (variant == 1   ? ": ceil(bytes / 32 KiB) CTAs of 512 threads, each op waits for the previous "
                                "op's local flag, arrival count, the last CTA publishes locally"
               : variant == 2 ? ": ceil(bytes / 32 KiB) CTAs of 512 threads, no waits, arrival count, the last CTA "
                                "publishes the op's flag into GPU1"
               : variant == 3 ? ": one CTA of 512 threads, barrier, no flag"
               : variant == 4 ? ": one CTA of 512 threads, each op copying what the previous op wrote, barrier, no flag"
                              : ": one CTA of 512 threads, barrier + st.release.sys of the op's flag into GPU1") +
              "; (launch of 9 ops - launch of 1 op) / 8",
          {}};
      for (int64_t b = 8; b <= (int64_t(1) << 20); b *= group || b >= 4096 ? 2 : 4) {
        if (b < opt_.min_bytes || kSteps * (b + 256) > opt_.max_bytes) continue;
        if (group && b <= kCtaBytes) continue;
        if (over_budget()) {
          res_.warnings.push_back(name + ": stopped at " + fmt_bytes(b) + " (time budget spent)");
          break;
        }
        const int ctas = group ? int(std::min<int64_t>(kMaxGroup, (b + kCtaBytes - 1) / kCtaBytes)) : 1;
        const int64_t stride = (b + 255) / 256 * 256;
        unsigned long long* pub = variant >= 3 ? nullptr : wait ? local_flags : peer_flags;
        const int chain = variant == 4 ? 1 : 0;
        CCLAB_CUDA(cudaSetDevice(g0.dev));
        CCLAB_CUDA(cudaMemset(arrive, 0, 64 * sizeof(unsigned)));  // counts are modulo the CTAs of the launch
        CCLAB_CUDA(cudaDeviceSynchronize());
        auto lanes = [&, b, ctas, stride, pub, chain](int steps) {
          return std::vector<Lane>{Lane{g0.dev, g0.stream[0], [=, &g0, &kind] {
                                          k_fused_steps<<<ctas, kThreads, 0, g0.stream[0]>>>(
                                              reinterpret_cast<const uint8_t*>(kind.src),
                                              reinterpret_cast<uint8_t*>(kind.dst), b, stride, steps, ctl, local_flags,
                                              pub, arrive, wait ? 1 : 0, g0.err, chain);
                                          CCLAB_CUDA_LAUNCHED();
                                        }}};
        };
        const BenchPoint one = point(b, lanes(1));
        const BenchPoint many = point(b, lanes(kSteps));
        int e = 0;
        CCLAB_CUDA(cudaMemcpy(&e, g0.err, sizeof(int), cudaMemcpyDeviceToHost));
        if (e) throw_env(name + ": a group wait timed out at op " + std::to_string(e));
        const double per_op = (many.seconds - one.seconds) / (kSteps - 1);
        if (!(per_op > 0)) {
          res_.warnings.push_back(name + ": no time per op at " + fmt_bytes(b) + " (noise), point dropped");
          continue;
        }
        s.points.push_back({b, per_op, many.reps});
      }
      if (s.points.empty()) continue;
      std::ostringstream os;
      os.precision(3);
      os << "  " << name << ": " << s.points.front().seconds * 1e6 << " us per op at "
         << fmt_bytes(s.points.front().bytes) << ", " << s.points.back().seconds * 1e6 << " us at "
         << fmt_bytes(s.points.back().bytes);
      log(os.str());
      res_.series.push_back(std::move(s));
    }
}

// NCCL point-to-point (ncclSend on GPU0, ncclRecv on GPU1, and both ways at once) against size, with
// NCCL's own protocol choice. Not a collective: it measures the transport NCCL's rings are built on,
// so the NCCL model takes its per-channel bandwidth and latency from here rather than from a datasheet.
void Bench::bench_nccl_p2p() {
  if (gpus_.size() < 2) return;
  if (const char* skip = std::getenv("CCLAB_CALIBRATE_SKIP_NCCL"); skip && *skip && *skip != '0') {
    res_.warnings.push_back("NCCL send/recv not measured (CCLAB_CALIBRATE_SKIP_NCCL set)");
    return;
  }
  Gpu& g0 = gpus_[0];
  Gpu& g1 = gpus_[1];
  ncclComm_t comms[2] = {nullptr, nullptr};
  const int devs[2] = {g0.dev, g1.dev};
  CCLAB_NCCL(ncclCommInitAll(comms, 2, devs));
  struct Guard {
    ncclComm_t* c;
    ~Guard() {
      for (int i = 0; i < 2; ++i)
        if (c[i]) ncclCommDestroy(c[i]);
    }
  } guard{comms};
  log("NCCL send/recv GPU0 <-> GPU1 (NCCL's protocol choice)");
  auto p2p = [&](int64_t b, bool both) {
    // One lane issues the group for both GPUs; the second lane (GPU1's stream) only joins the timing.
    return std::vector<Lane>{Lane{g0.dev, g0.stream[0],
                                  [&, b, both] {
                                    CCLAB_NCCL(ncclGroupStart());
                                    CCLAB_NCCL(ncclSend(g0.buf[0], size_t(b), ncclChar, 1, comms[0], g0.stream[0]));
                                    CCLAB_NCCL(ncclRecv(g1.buf[1], size_t(b), ncclChar, 0, comms[1], g1.stream[0]));
                                    if (both) {
                                      CCLAB_NCCL(ncclSend(g1.buf[0], size_t(b), ncclChar, 0, comms[1], g1.stream[0]));
                                      CCLAB_NCCL(ncclRecv(g0.buf[1], size_t(b), ncclChar, 1, comms[0], g0.stream[0]));
                                    }
                                    CCLAB_NCCL(ncclGroupEnd());
                                  }},
                             Lane{g1.dev, g1.stream[0], [] {}}};
  };
  sweep("nccl.p2p.uni", "ncclSend GPU0 -> ncclRecv GPU1 in one group, back to back, CUDA events",
        [&](int64_t b) { return p2p(b, false); });
  sweep("nccl.p2p.bidir", "ncclSend/ncclRecv both ways at once in one group (bytes per direction), CUDA events",
        [&](int64_t b) { return p2p(b, true); });
}

void Bench::bench_matmul() {
  Gpu& g0 = gpus_[0];
  CCLAB_CUDA(cudaSetDevice(0));
  cublasHandle_t h = nullptr;
  CCLAB_CUBLAS(cublasCreate(&h));
  struct Guard {
    cublasHandle_t h;
    ~Guard() { cublasDestroy(h); }
  } guard{h};
  CCLAB_CUBLAS(cublasSetStream(h, g0.stream[0]));
  struct Shape {
    int64_t m, k, n;
  };
  // Squares from launch-bound to saturated, the shape of h200x2.md's published fp16 figure, and the collective
  // matmul's products on 2 GPUs (shards 1024x4096x4096 and 4096x8192x8192, ring_bidir's halves 2048x8192x8192).
  // The table is keyed by FLOPs: no two shapes here have the same 2mkn.
  const std::vector<Shape> shapes = {{256, 256, 256},    {512, 512, 512},    {1024, 1024, 1024}, {2048, 2048, 2048},
                                     {1024, 4096, 4096}, {2048, 4096, 4096}, {4096, 4096, 4096}, {2048, 8192, 8192},
                                     {4096, 8192, 8192}, {8192, 8192, 8192}};
  struct Type {
    const char* name;
    cudaDataType_t dt;
    cublasComputeType_t compute;
    int bytes;
  };
  // fp32 runs in true fp32 (no TF32), as cuBLAS does by default; 16-bit types accumulate in fp32.
  const Type types[] = {{"half", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
                        {"bfloat16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
                        {"float", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4}};
  log("cuBLAS matmul rates on GPU0");
  for (const Type& ty : types) {
    // Inputs: small finite values (the tensor cores' power, hence speed, depends a little on the data).
    const int64_t elems = opt_.max_bytes / ty.bytes;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (char* b : {g0.buf[0], g0.buf[2]}) {
      seed += 0x9e3779b97f4a7c15ULL;
      if (ty.dt == CUDA_R_16F)
        k_fill<<<1024, 256, 0, g0.stream[0]>>>(reinterpret_cast<__half*>(b), elems, seed);
      else if (ty.dt == CUDA_R_16BF)
        k_fill<<<1024, 256, 0, g0.stream[0]>>>(reinterpret_cast<__nv_bfloat16*>(b), elems, seed);
      else
        k_fill<<<1024, 256, 0, g0.stream[0]>>>(reinterpret_cast<float*>(b), elems, seed);
    }
    CCLAB_CUDA_LAUNCHED();
    BenchSeries overlap{std::string("matmul.") + ty.name + ".ce_both",
                        std::string("as matmul.") + ty.name +
                            " (collective matmul shard shapes) while back-to-back 128 MiB copy-engine copies run "
                            "GPU0 -> GPU1 and GPU1 -> GPU0 (cudaMemcpyPeerAsync, other streams)",
                        {}};
    BenchSeries rested{std::string("matmul.") + ty.name + ".rested",
                       std::string("as matmul.") + ty.name + " (products of 1e11 FLOPs and more), each burst after " +
                           std::to_string(kRestMs) + " ms with the GPU idle",
                       {}};
    BenchSeries s{
        std::string("matmul.") + ty.name,
        std::string("cublasGemmEx C(m x n) = A(m x k) B(k x n) in ") + ty.name + ", fp32 accumulate, GPU0, CUDA events",
        {}};
    for (const Shape& sh : shapes) {
      const int64_t need = std::max({sh.m * sh.k, sh.k * sh.n, sh.m * sh.n}) * ty.bytes;
      if (need > opt_.max_bytes) continue;
      if (over_budget()) {
        res_.warnings.push_back(s.name + ": stopped before " + std::to_string(sh.m) + "x" + std::to_string(sh.k) + "x" +
                                std::to_string(sh.n) + " (time budget spent)");
        break;
      }
      const float one = 1.0f, zero = 0.0f;
      const std::vector<Lane> lanes = {
          Lane{0, g0.stream[0], [&] {
                 // Column-major C^T = B^T A^T: the executor's row-major product.
                 CCLAB_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(sh.n), int(sh.m), int(sh.k), &one,
                                           g0.buf[2], ty.dt, int(sh.n), g0.buf[0], ty.dt, int(sh.k), &zero, g0.buf[1],
                                           ty.dt, int(sh.n), ty.compute, CUBLAS_GEMM_DEFAULT));
               }}};
      // Timed as the executor times its matmuls (exec/mmsp/cmatmul.cu: 10 warm-up products, then the mean of 50
      // back to back): a short burst keeps clocks that ~20 ms of sustained products lose to the power limit
      // (2048x4096x4096 half: 88.9 us in the executor's burst, 98.7 us in 20 ms batches), while a long
      // product's 50 run long enough to reach the sustained rate anyway. Median of kTrials bursts.
      timed(2, lanes);  // first touch, lazy initialisation
      std::vector<double> trials;
      for (int i = 0; i < kTrials; ++i) {
        timed(kMatmulWarmup, lanes);
        const double gate = std::min(kMaxGate_s, 2.0 * last_enqueue_s_ * kMatmulIters + 50e-6);
        trials.push_back(timed(kMatmulIters, lanes, gate));
      }
      std::sort(trials.begin(), trials.end());
      BenchPoint p{0, trials[kTrials / 2], kMatmulIters};
      p.m = sh.m;
      p.k = sh.k;
      p.n = sh.n;
      s.points.push_back(p);
      // The executor times the collective matmul's full product first (exec/mmsp/cmatmul.cu), after no
      // tensor-core burst: its clocks are not yet lowered by the power limit, which the back-to-back trials
      // above reach for long products (2 x H200: 8192^3 half at 720 TFLOP/s in the executor, 654 here;
      // docs/findings/2026-11-23-pdl-unheld-replays-l2-copies.md). The same burst after the GPU rested
      // kRestMs.
      if (ty.bytes == 2 && 2.0 * double(sh.m) * double(sh.k) * double(sh.n) >= 1e11) {
        std::vector<double> rested_trials;
        for (int i = 0; i < kTrials; ++i) {
          CCLAB_CUDA(cudaDeviceSynchronize());
          std::this_thread::sleep_for(std::chrono::milliseconds(kRestMs));
          timed(kMatmulWarmup, lanes);
          const double gate = std::min(kMaxGate_s, 2.0 * last_enqueue_s_ * kMatmulIters + 50e-6);
          rested_trials.push_back(timed(kMatmulIters, lanes, gate));
        }
        std::sort(rested_trials.begin(), rested_trials.end());
        BenchPoint r = p;
        r.seconds = rested_trials[kTrials / 2];
        rested.points.push_back(r);
      }
      // The collective matmul's shard products while copy engines move data both ways between the GPUs (the
      // ring's copies run beside its matmuls: they share HBM and the power budget).
      const bool shard = (sh.m == 1024 && sh.k == 4096 && sh.n == 4096) || (sh.m == 4096 && sh.k == 8192);
      if (shard && ty.bytes == 2 && gpus_.size() >= 2) {
        Gpu& g1 = gpus_[1];
        const int64_t chunk = std::min<int64_t>(int64_t(128) << 20, opt_.max_bytes / 2);
        // Copies enough to outlast the warm-up, the gate and the timed products (at ~400 GB/s, 1.5x over).
        const double span = (kMatmulWarmup + kMatmulIters) * p.seconds + 2e-3;
        const int copies = int(std::clamp(1.5 * span * 400e9 / double(chunk), 4.0, 300.0));
        std::vector<double> busy;
        for (int i = 0; i < kTrials; ++i) {
          for (int c = 0; c < copies; ++c) {
            CCLAB_CUDA(cudaSetDevice(0));
            CCLAB_CUDA(cudaMemcpyPeerAsync(g1.buf[1], 1, g0.buf[0], 0, size_t(chunk), g0.stream[1]));
            CCLAB_CUDA(cudaSetDevice(1));
            CCLAB_CUDA(
                cudaMemcpyPeerAsync(g0.buf[1] + opt_.max_bytes / 2, 0, g1.buf[0], 1, size_t(chunk), g1.stream[1]));
          }
          timed(kMatmulWarmup, lanes);
          const double gate = std::min(kMaxGate_s, 2.0 * last_enqueue_s_ * kMatmulIters + 50e-6);
          busy.push_back(timed(kMatmulIters, lanes, gate));
          for (Gpu* g : {&g0, &g1}) {
            CCLAB_CUDA(cudaSetDevice(g->dev));
            CCLAB_CUDA(cudaStreamSynchronize(g->stream[1]));
          }
        }
        CCLAB_CUDA(cudaSetDevice(0));
        std::sort(busy.begin(), busy.end());
        BenchPoint q = p;
        q.seconds = busy[kTrials / 2];
        overlap.points.push_back(q);
      }
    }
    if (!overlap.points.empty()) res_.series.push_back(std::move(overlap));
    if (!rested.points.empty()) res_.series.push_back(std::move(rested));
    if (!s.points.empty()) {
      const auto& last = s.points.back();
      std::ostringstream os;
      os.precision(4);
      os << "  " << s.name << ": " << last.m << "x" << last.k << "x" << last.n << " at "
         << 2.0 * last.m * last.k * last.n / last.seconds / 1e12 << " TFLOP/s";
      log(os.str());
      res_.series.push_back(std::move(s));
    }
  }
}

MicrobenchResult Bench::run() {
  setup();
  res_.machine = host_name();
  res_.driver = read_driver_version();
  int rt = 0;
  CCLAB_CUDA(cudaRuntimeGetVersion(&rt));
  res_.cuda_runtime = std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
  int nv = 0;
  CCLAB_NCCL(ncclGetVersion(&nv));  // NCCL collectives are never timed here (send/recv only)
  res_.nccl_version =
      std::to_string(nv / 10000) + "." + std::to_string((nv % 10000) / 100) + "." + std::to_string(nv % 100);
  res_.gpus = opt_.gpus;
  log("calibrate: " + std::to_string(opt_.gpus) + " x " + res_.gpu_name + ", driver " + res_.driver + ", CUDA " +
      res_.cuda_runtime);
  // A group that fails (a cuBLAS error, a flag that never arrives) is reported and the others still run:
  // the profile then keeps the model's defaults for what is missing, and says so.
  auto group = [&](const char* what, void (Bench::*fn)()) {
    try {
      (this->*fn)();
    } catch (const Error& e) {
      res_.warnings.push_back(std::string(what) + " failed: " + e.what());
      for (auto& g : gpus_) {
        cudaSetDevice(g.dev);
        cudaDeviceSynchronize();
      }
      cudaGetLastError();
    }
  };
  group("latencies", &Bench::bench_latency);
  group("graph nodes", &Bench::bench_graph);
  group("graph forks held", &Bench::bench_graph_held);
  group("graph copies", &Bench::bench_graph_copies);
  group("graph local copies", &Bench::bench_graph_local_copies);
  group("unheld replays", &Bench::bench_graph_unheld);
  group("flag chain", &Bench::bench_flag_chain);
  group("fused steps", &Bench::bench_fused_steps);
  group("fused programs", &Bench::bench_fused_programs);
  group("peer bandwidth", &Bench::bench_p2p);
  group("two copies on one link", &Bench::bench_ce_pair);
  group("stores to every peer", &Bench::bench_fanout);
  group("NCCL send/recv", &Bench::bench_nccl_p2p);
  group("local bandwidth", &Bench::bench_local);
  group("matmul", &Bench::bench_matmul);
  group("bidir transfers", &Bench::bench_bidir);
  group("sparse pieces", &Bench::bench_sparse);
  if (res_.series.empty()) throw_env("every microbenchmark failed: " + res_.warnings.front());
  for (const auto& w : res_.warnings) log("warning: " + w);
  std::ostringstream os;
  os.precision(3);
  os << "calibrate: measured in " << elapsed_s() << " s";
  log(os.str());
  return res_;
}

}  // namespace

MicrobenchResult run_microbenchmarks(const MicrobenchOptions& opt) {
  Bench b(opt);
  return b.run();
}

}  // namespace cclab::exec
