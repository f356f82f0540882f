#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/device_util.cuh"
#include "exec/runtime/mpi_kernels.hpp"

namespace cclab::exec {

namespace {

using u64 = unsigned long long;

__device__ __forceinline__ u64 ld_acquire_sys(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ void report(MpiErrWord* err, uint32_t code, int rank, int op, int peer, int peer_op, u64 want, u64 got) {
  if (atomicCAS(&err->code, 0u, code) != 0u) return;  // keep the first report
  err->rank = rank;
  err->op = op;
  err->peer = peer;
  err->peer_op = peer_op;
  err->want = want;
  err->got = got;
  __threadfence_system();
}

// Spins on a flag with a deadline; false on timeout (then *got holds the last value seen).
__device__ bool spin_until(const u64* flag, u64 want, uint64_t start, uint64_t timeout_ns, u64* got) {
  for (;;) {
    const u64 v = ld_acquire_sys(flag);
    if (v >= want) return true;
    if (dev::globaltimer_ns() - start > timeout_ns) {
      *got = v;
      return false;
    }
  }
}

struct SignalArgs {
  const u64* epoch;
  u64* flags[kMpiMaxFlagsPerOp];
  int n;
};
__global__ void signal_kernel(SignalArgs a) {
  const u64 v = *a.epoch;
  // The step before this kernel in stream order (a copy-engine copy or a kernel) is complete; the
  // fence orders its writes before the flags for observers on other GPUs.
  __threadfence_system();
  for (int i = 0; i < a.n; ++i) st_release_sys(a.flags[i], v);
}

struct WaitArgs {
  const u64* epoch;
  MpiFlagWait waits[kMpiMaxFlagsPerOp];
  int n, rank, op;
  MpiErrWord* err;
  uint64_t timeout_ns;
};
__global__ void wait_kernel(WaitArgs a) {
  const u64 want = *a.epoch;
  const uint64_t start = dev::globaltimer_ns();
  for (int i = 0; i < a.n; ++i) {
    u64 got = 0;
    if (!spin_until(a.waits[i].flag, want, start, a.timeout_ns, &got)) {
      report(a.err, 1, a.rank, a.op, a.waits[i].peer, a.waits[i].peer_op, want, got);
      return;
    }
  }
}

struct BarrierArgs {
  MpiCtrl* ctrls[kMpiMaxRanks];
  int nranks, rank, next_epoch;
  MpiErrWord* err;
  uint64_t timeout_ns;
};
__global__ void barrier_kernel(BarrierArgs a) {
  MpiCtrl* mine = a.ctrls[a.rank];
  const u64 gen = mine->bar_gen + 1;
  mine->bar_gen = gen;
  __threadfence_system();  // this process's earlier work (joined into this stream) before the arrival
  for (int p = 0; p < a.nranks; ++p)
    if (p != a.rank) st_release_sys(&a.ctrls[p]->bar_slot[a.rank], gen);
  const uint64_t start = dev::globaltimer_ns();
  for (int p = 0; p < a.nranks; ++p) {
    if (p == a.rank) continue;
    u64 got = 0;
    if (!spin_until(&mine->bar_slot[p], gen, start, a.timeout_ns, &got)) {
      report(a.err, 2, a.rank, -1, p, -1, gen, got);
      return;
    }
  }
  if (a.next_epoch) mine->epoch += 1;  // local; the next iteration's kernels follow in stream order
}

}  // namespace

void launch_mpi_signal(cudaStream_t s, const unsigned long long* epoch, unsigned long long* const* flags, int n) {
  for (int first = 0; first < n; first += kMpiMaxFlagsPerOp) {
    SignalArgs a{};
    a.epoch = epoch;
    for (int i = first; i < n && i < first + kMpiMaxFlagsPerOp; ++i) a.flags[a.n++] = flags[i];
    signal_kernel<<<1, 1, 0, s>>>(a);
    CCLAB_CUDA_LAUNCHED();
  }
}

void launch_mpi_wait(cudaStream_t s, const unsigned long long* epoch, const MpiFlagWait* waits, int n, int rank, int op,
                     MpiErrWord* err, uint64_t timeout_ns) {
  for (int first = 0; first < n; first += kMpiMaxFlagsPerOp) {
    WaitArgs a{};
    a.epoch = epoch;
    for (int i = first; i < n && i < first + kMpiMaxFlagsPerOp; ++i) a.waits[a.n++] = waits[i];
    a.rank = rank;
    a.op = op;
    a.err = err;
    a.timeout_ns = timeout_ns;
    wait_kernel<<<1, 1, 0, s>>>(a);
    CCLAB_CUDA_LAUNCHED();
  }
}

void launch_mpi_barrier(cudaStream_t s, MpiCtrl* const* ctrls, int nranks, int rank, bool next_epoch, MpiErrWord* err,
                        uint64_t timeout_ns) {
  if (nranks > kMpiMaxRanks)
    throw_input("MPI mode: " + std::to_string(nranks) + " ranks on one node, the device barrier handles up to " +
                std::to_string(kMpiMaxRanks));
  BarrierArgs a{};
  for (int p = 0; p < nranks; ++p) a.ctrls[p] = ctrls[p];
  a.nranks = nranks;
  a.rank = rank;
  a.next_epoch = next_epoch ? 1 : 0;
  a.err = err;
  a.timeout_ns = timeout_ns;
  barrier_kernel<<<1, 1, 0, s>>>(a);
  CCLAB_CUDA_LAUNCHED();
}

}  // namespace cclab::exec
