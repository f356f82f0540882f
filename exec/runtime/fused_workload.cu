#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/parse.hpp"
#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/device_util.cuh"
#include "exec/runtime/fused_workload.hpp"
#include "lower/general.hpp"

namespace cclab::exec {

namespace fused {

// The lanes and the CTA -> lane map travel in the kernel's parameters (constant bank: no global load
// before the first op), which bounds GPUs and CTAs per launch (4 KiB of parameters).
constexpr int kMaxDevices = 8;
constexpr int kMaxCtas = lower::kFusedMaxCtas;
constexpr uint8_t kNoLane = 255;
constexpr int kThreads = lower::kFusedMaxThreads;  // launch bound; FusedParams::threads may be lower

// Device-side tables (one blob per GPU, written once by the host).
struct DevOp {
  const uint8_t* src;
  const uint8_t* src2;
  uint8_t* dst;
  int64_t bytes;
  uint32_t wait_begin, wait_count;
  int32_t slot;
  uint32_t publish_mask;
  uint32_t kind;    // FusedKind
  uint32_t sliced;  // FusedOp::sliced: CTA g publishes slot + g
};
struct DevLane {
  uint32_t op_begin, op_count;
  int32_t cta_begin, ctas;
  uint32_t wait_begin, wait_count;  // the waits of the lane's ops: one contiguous range
};
// Per-GPU control memory: this header, then uint64 flags[nslots] (written by producers on any GPU,
// polled locally), then uint32 arrivals[ops] (CTAs of a group count their finished shares of an op).
struct Ctrl {
  uint32_t epoch, done;
  uint32_t pad[14];
};
static_assert(sizeof(Ctrl) == 64);

// Written once by the first spin-wait that times out (mapped host memory).
struct Err {
  uint32_t code;  // 0 none, 1 an op's wait, 2 the launch's end wait
  int32_t device, cta, op, slot, pad;
  uint64_t want, got;
};

struct Args {
  const DevOp* ops;
  const int32_t* waits;
  const int32_t* finals;
  int nfinals, dev, ndev;
  Ctrl* ctrl;
  uint64_t* flags[kMaxDevices];  // every GPU's flag array (peer pointers)
  uint32_t* arrive;
  Err* err;
  uint64_t timeout_ns;
  float divisor;
  int sc_fence;                // FusedParams::sc_fence: a fence.sc.sys before every flag store
  uint8_t cta_lane[kMaxCtas];  // kNoLane: a CTA with no ops (it publishes the start flag)
  DevLane lanes[kMaxCtas];
};
static_assert(sizeof(Args) <= 4096, "kernel parameters are limited to 4 KiB");

__device__ __forceinline__ uint64_t ld_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Lighter than __threadfence_system() (fence.sc.sys): orders this thread's earlier accesses (and
// those made visible to it by a barrier) before its later ones, at system scope.
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

__device__ __noinline__ void report_timeout(Err* err, int dev, uint32_t code, int op, int slot, uint64_t want,
                                            uint64_t got) {
  if (atomicCAS(&err->code, 0u, code) == 0u) {
    err->device = dev;
    err->cta = int(blockIdx.x);
    err->op = op;
    err->slot = slot;
    err->want = want;
    err->got = got;
    __threadfence_system();
  }
}

// Spins until the local copy of `slot` holds epoch e or later; false after a timeout (recorded) or
// when another wait already failed. Scalar arguments: a reference to the kernel's Args would make
// every thread copy them to local memory.
__device__ bool wait_slot(const uint64_t* flags, int slot, uint64_t e, Err* err, uint64_t timeout_ns, int dev,
                          uint32_t code, int op) {
  const uint64_t* p = flags + slot;
  uint64_t v = ld_acquire(p);
  if (v >= e) return true;
  const uint64_t start = dev::globaltimer_ns();
  for (uint32_t it = 1;; ++it) {
    v = ld_acquire(p);
    if (v >= e) return true;
    if ((it & 255u) == 0) {
      if (dev::globaltimer_ns() - start > timeout_ns) {
        report_timeout(err, dev, code, op, slot, e, v);
        return false;
      }
      if (*static_cast<volatile uint32_t*>(&err->code) != 0) return false;
    }
  }
}

// This CTA's part [lo, hi) of `bytes`, split among k CTAs in whole 16-byte units whatever the alignment:
// lower::fused_share, which sliced waits rely on (CTA g of a consumer reads what CTA g of its producer wrote).
__device__ __forceinline__ void share(int64_t bytes, int g, int k, int64_t& lo, int64_t& hi) {
  const int64_t units = (bytes + 15) / 16, per = (units + k - 1) / k;
  lo = min(bytes, int64_t(g) * per * 16);
  hi = min(bytes, int64_t(g + 1) * per * 16);
}

template <typename T>
__device__ __forceinline__ T load_elem(const T* p) {
  T r;
  if constexpr (sizeof(T) == 4) {
    const unsigned v = __ldcg(reinterpret_cast<const unsigned*>(p));
    memcpy(&r, &v, 4);
  } else {
    const unsigned short v = __ldcg(reinterpret_cast<const unsigned short*>(p));
    memcpy(&r, &v, 2);
  }
  return r;
}
template <typename T>
__device__ __forceinline__ void store_elem(T* p, T x) {
  if constexpr (sizeof(T) == 4) {
    unsigned v;
    memcpy(&v, &x, 4);
    __stcg(reinterpret_cast<unsigned*>(p), v);
  } else {
    unsigned short v;
    memcpy(&v, &x, 2);
    __stcg(reinterpret_cast<unsigned short*>(p), v);
  }
}

// Data loads bypass L1 (ld.cg): slots are rewritten by peers within one launch, and L1 is not
// coherent with NVLink writes.
__device__ void copy_part(uint8_t* dst, const uint8_t* src, int64_t bytes, int g, int k) {
  const int t = threadIdx.x, nt = blockDim.x;
  const uintptr_t align = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  int64_t lo, hi;
  if ((align & 15) == 0) {
    share(bytes, g, k, lo, hi);
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
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
    for (int64_t i = v1 * 16 + t; i < hi; i += nt) dst[i] = __ldcg(src + i);  // the last part's tail
  } else if (((align | uintptr_t(bytes)) & 3) == 0) {
    share(bytes, g, k, lo, hi);
    const unsigned* s = reinterpret_cast<const unsigned*>(src);
    unsigned* d = reinterpret_cast<unsigned*>(dst);
    for (int64_t w = lo / 4 + t; w < hi / 4; w += nt) __stcg(d + w, __ldcg(s + w));
  } else {
    share(bytes, g, k, lo, hi);
    for (int64_t i = lo + t; i < hi; i += nt) dst[i] = __ldcg(src + i);
  }
}

template <typename T, RedOp Op>
__device__ void reduce_part(uint8_t* dst, const uint8_t* a, const uint8_t* b, int64_t bytes, int g, int k) {
  using dev::Elem;
  const int t = threadIdx.x, nt = blockDim.x;
  const uintptr_t align =
      reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  int64_t lo, hi;
  int64_t elem_lo;
  if ((align & 15) == 0) {
    share(bytes, g, k, lo, hi);
    const uint4* va = reinterpret_cast<const uint4*>(a);
    const uint4* vb = reinterpret_cast<const uint4*>(b);
    uint4* vd = reinterpret_cast<uint4*>(dst);
    const int64_t v1 = hi / 16;
    int64_t v = lo / 16 + t;
    for (; v + 3 * nt < v1; v += 4 * nt) {
      uint4 x[4], y[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = __ldcg(va + v + u * nt);
#pragma unroll
      for (int u = 0; u < 4; ++u) y[u] = __ldcg(vb + v + u * nt);
#pragma unroll
      for (int u = 0; u < 4; ++u) __stcg(vd + v + u * nt, dev::combine_vec<T, Op>(x[u], y[u]));
    }
    for (; v < v1; v += nt) __stcg(vd + v, dev::combine_vec<T, Op>(__ldcg(va + v), __ldcg(vb + v)));
    elem_lo = v1 * 16;  // the last part's tail, element by element
  } else {
    share(bytes, g, k, lo, hi);
    elem_lo = lo;
  }
  const T* ea = reinterpret_cast<const T*>(a);
  const T* eb = reinterpret_cast<const T*>(b);
  T* ed = reinterpret_cast<T*>(dst);
  for (int64_t i = elem_lo / int64_t(sizeof(T)) + t; i < hi / int64_t(sizeof(T)); i += nt)
    store_elem(ed + i, Elem<T>::from(dev::combine<Op>(Elem<T>::to(load_elem(ea + i)), Elem<T>::to(load_elem(eb + i)))));
}

template <typename T>
__device__ void scale_part(uint8_t* data, int64_t bytes, float divisor, int g, int k) {
  using dev::Elem;
  const int t = threadIdx.x, nt = blockDim.x;
  int64_t lo, hi, elem_lo;
  if ((reinterpret_cast<uintptr_t>(data) & 15) == 0) {
    share(bytes, g, k, lo, hi);
    uint4* v = reinterpret_cast<uint4*>(data);
    for (int64_t i = lo / 16 + t; i < hi / 16; i += nt) {
      uint4 x = __ldcg(v + i);
      T* e = reinterpret_cast<T*>(&x);
#pragma unroll
      for (int j = 0; j < int(16 / sizeof(T)); ++j) e[j] = Elem<T>::from(Elem<T>::to(e[j]) / divisor);
      __stcg(v + i, x);
    }
    elem_lo = hi / 16 * 16;
  } else {
    share(bytes, g, k, lo, hi);
    elem_lo = lo;
  }
  T* e = reinterpret_cast<T*>(data);
  for (int64_t i = elem_lo / int64_t(sizeof(T)) + t; i < hi / int64_t(sizeof(T)); i += nt)
    store_elem(e + i, Elem<T>::from(Elem<T>::to(load_elem(e + i)) / divisor));
}

// Ops and waits of a lane kept in shared memory (loaded once per launch, in parallel): the walk over
// the ops then never waits on a global-memory load. Longer lanes read the rest from global memory.
constexpr int kSmemOps = 64, kSmemWaits = 256;

template <typename T, RedOp Op>
__global__ void __launch_bounds__(kThreads) fused_kernel(const __grid_constant__ Args a) {
  __shared__ uint32_t e_s;
  __shared__ int abort_s;
  __shared__ DevOp s_ops[kSmemOps];
  __shared__ int32_t s_waits[kSmemWaits];
  // Programmatic dependent launch: the previous launch on this stream (the previous iteration) must
  // have completed, its memory visible, before this one reads the epoch; then the next may start.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int t = threadIdx.x, b = blockIdx.x, nt = blockDim.x;
  const int lane = a.cta_lane[b] == kNoLane ? -1 : a.cta_lane[b];
  // The epoch and the lane's tables are loaded at once (one global-memory latency).
  if (t == 0) {
    e_s = *reinterpret_cast<volatile uint32_t*>(&a.ctrl->epoch) + 1;
    abort_s = 0;
  }
  // This GPU's start flag, first thing: its previous launch (end waits included) is over (the kernel
  // boundary and griddepcontrol.wait made its memory visible; the release orders the rest). Thread d
  // releases peer d's: a system-scope release waits for its thread's earlier stores to another GPU to be
  // acknowledged, so one thread releasing every peer's in turn pays a round trip per peer after the first.
  if (b == 0 && t < a.ndev && t != a.dev)
    st_release(a.flags[t] + a.dev, *reinterpret_cast<volatile uint32_t*>(&a.ctrl->epoch) + 1);
  const DevLane ln = lane >= 0 ? a.lanes[lane] : DevLane{};
  const int cached = min(int(ln.op_count), kSmemOps);
  const uint32_t w0 = ln.wait_begin, nw = min(ln.wait_count, uint32_t(kSmemWaits));
  constexpr int kWords = sizeof(DevOp) / 8;
  static_assert(sizeof(DevOp) % 8 == 0);
  const uint64_t* src = reinterpret_cast<const uint64_t*>(a.ops + ln.op_begin);
  for (int i = t; i < cached * kWords; i += nt) reinterpret_cast<uint64_t*>(s_ops)[i] = src[i];
  for (uint32_t i = t; i < nw; i += nt) s_waits[i] = a.waits[w0 + i];
  __syncthreads();
  const uint64_t e = e_s;
  if (lane >= 0) {
    const int g = b - ln.cta_begin, k = ln.ctas;
    for (uint32_t i = 0; i < ln.op_count; ++i) {
      const int idx = int(ln.op_begin + i);
      const DevOp op = int(i) < cached ? s_ops[i] : a.ops[idx];
      if (op.wait_count) {
        // The CTA's threads poll the waits side by side: a whole-op wait on a sliced op is one wait per CTA part
        // of it, which one thread would poll one after another.
        for (uint32_t w = uint32_t(t); w < op.wait_count; w += uint32_t(nt)) {
          const uint32_t at = op.wait_begin + w;
          const int raw = at >= w0 && at - w0 < nw ? s_waits[at - w0] : a.waits[at];
          const int slot = raw & lower::kSliceWait ? (raw & ~lower::kSliceWait) + g : raw;
          if (!wait_slot(a.flags[a.dev], slot, e, a.err, a.timeout_ns, a.dev, 1, idx)) {
            abort_s = 1;
            break;
          }
        }
        __syncthreads();
        if (abort_s) return;
      }
      switch (op.kind) {
        case uint32_t(FusedKind::copy):
          copy_part(op.dst, op.src, op.bytes, g, k);
          break;
        case uint32_t(FusedKind::reduce):
          reduce_part<T, Op>(op.dst, op.src, op.src2, op.bytes, g, k);
          break;
        case uint32_t(FusedKind::scale):
          scale_part<T>(op.dst, op.bytes, a.divisor, g, k);
          break;
      }
      // Every thread's part is written before the flag (and before the next op of this CTA reads it).
      __syncthreads();
      // Publish: the barrier made the CTA's writes (local and peer) visible to every thread, whose release
      // store carries them (cumulativity) to whoever acquires the flag. A CTA group counts arrivals
      // first; the last one to arrive publishes for all (thread 0, one GPU after another).
      // A lone CTA, or a sliced op's CTA (its own part, in its own slot, no arrival count), releases each
      // GPU's flag from its own thread, side by side (as the start flags).
      if (op.slot >= 0 && k > 1 && !op.sliced) {
        if (t == 0) {
          fence_acq_rel_sys();
          const bool last = (atomicAdd(&a.arrive[idx], 1u) + 1u) % uint32_t(k) == 0;
          if (last) {
            fence_acq_rel_sys();  // the other CTAs' parts, ordered by their fences and the atomic
            if (a.sc_fence) __threadfence_system();
            for (int d = 0; d < a.ndev; ++d)
              if (op.publish_mask >> d & 1u) st_release(a.flags[d] + op.slot, e);
          }
        }
      } else if (op.slot >= 0 && t < a.ndev && (op.publish_mask >> t & 1u)) {
        if (a.sc_fence) __threadfence_system();
        st_release(a.flags[t] + op.slot + (op.sliced ? g : 0), e);
      }
    }
  }
  if (b == 0) {
    // End waits: peers' ops that read or write this GPU's memory are complete.
    for (int f = t; f < a.nfinals; f += nt)
      if (!wait_slot(a.flags[a.dev], a.finals[f], e, a.err, a.timeout_ns, a.dev, 2, -1)) {
        abort_s = 1;
        break;
      }
    __syncthreads();
    if (abort_s) return;
  }
  if (t == 0) {
    // The last CTA to finish advances the epoch (every CTA read it before any finished).
    if (gridDim.x == 1) {
      *reinterpret_cast<volatile uint32_t*>(&a.ctrl->epoch) = uint32_t(e);
    } else {
      __threadfence();
      if (atomicAdd(&a.ctrl->done, 1u) == gridDim.x - 1) {
        a.ctrl->done = 0;
        *reinterpret_cast<volatile uint32_t*>(&a.ctrl->epoch) = uint32_t(e);
      }
    }
  }
}

bool g_pdl_refused = false;  // set once when the driver rejects programmatic dependent launch

template <typename T, RedOp Op>
struct Launch {
  static void run(const Args& a, int blocks, int threads, bool pdl, cudaStream_t s) {
    if (pdl && !g_pdl_refused) {
      if (dev::launch_pdl(fused_kernel<T, Op>, blocks, threads, s, a) == cudaSuccess) return;
      cudaGetLastError();
      g_pdl_refused = true;
    }
    fused_kernel<T, Op><<<blocks, threads, 0, s>>>(a);
  }
};

}  // namespace fused

// ---------------------------------------------------------------------------------------------
// Host side.

struct FusedDeviceKernel::Impl {
  DeviceBuffer table;  // the device's ops, waits and final waits
  fused::Args args;
  int ctas = 0;
  int threads = 0;
};

FusedDeviceKernel::FusedDeviceKernel(const FusedProgram& program, int d, int cuda_device,
                                     const std::function<void*(Ref)>& ptr, const std::vector<void*>& ctrl, void* err,
                                     const FusedParams& params, float divisor)
    : impl_(std::make_unique<Impl>()) {
  const int ndev = program.ndevices();
  if (ndev > fused::kMaxDevices) throw_input("fused lowering: at most " + std::to_string(fused::kMaxDevices) + " GPUs");
  CCLAB_ASSERT(int(ctrl.size()) == ndev, "fused kernel: one control block per device");
  const FusedDevice& dv = program.devices[size_t(d)];
  DeviceGuard g(cuda_device);
  std::vector<fused::DevOp> ops;
  for (const FusedOp& f : dv.ops) {
    fused::DevOp o{};
    o.dst = static_cast<uint8_t*>(ptr(f.dst));
    o.src = static_cast<const uint8_t*>(ptr(f.src));
    o.src2 = f.kind == FusedKind::reduce ? static_cast<const uint8_t*>(ptr(f.src2)) : nullptr;
    o.bytes = f.bytes;
    o.wait_begin = f.wait_begin;
    o.wait_count = f.wait_count;
    o.slot = f.slot;
    o.publish_mask = f.publish_mask;
    o.kind = uint32_t(f.kind);
    o.sliced = f.sliced ? 1u : 0u;
    ops.push_back(o);
  }
  auto align16 = [](size_t x) { return (x + 15) & ~size_t(15); };
  const size_t o_ops = 0, o_waits = align16(ops.size() * sizeof(fused::DevOp)),
               o_finals = o_waits + align16(dv.waits.size() * 4),
               total = std::max<size_t>(o_finals + dv.finals.size() * 4, 16);
  std::vector<uint8_t> blob(total, 0);
  if (!ops.empty()) std::memcpy(blob.data() + o_ops, ops.data(), ops.size() * sizeof(fused::DevOp));
  if (!dv.waits.empty()) std::memcpy(blob.data() + o_waits, dv.waits.data(), dv.waits.size() * 4);
  if (!dv.finals.empty()) std::memcpy(blob.data() + o_finals, dv.finals.data(), dv.finals.size() * 4);
  impl_->table = DeviceBuffer(cuda_device, total);
  CCLAB_CUDA(cudaMemcpy(impl_->table.get(), blob.data(), total, cudaMemcpyHostToDevice));
  auto* base = static_cast<uint8_t*>(impl_->table.get());
  fused::Args& a = impl_->args;
  a = fused::Args{};
  a.ops = reinterpret_cast<const fused::DevOp*>(base + o_ops);
  a.waits = reinterpret_cast<const int32_t*>(base + o_waits);
  a.finals = reinterpret_cast<const int32_t*>(base + o_finals);
  // Lanes and the CTA -> lane map in the parameters (dv.ctas <= kMaxCtas: FusedOptions::max_ctas).
  CCLAB_ASSERT(dv.ctas <= fused::kMaxCtas && dv.lanes.size() <= size_t(fused::kMaxCtas), "fused launch too wide");
  std::memset(a.cta_lane, fused::kNoLane, sizeof a.cta_lane);
  for (size_t i = 0; i < dv.lanes.size(); ++i) {
    const FusedLane& fl = program.lanes[size_t(dv.lanes[i])];
    const uint32_t wb = fl.op_count ? dv.ops[fl.op_begin].wait_begin : 0;
    const uint32_t we = fl.op_count ? dv.ops[fl.op_begin + fl.op_count - 1].wait_begin +
                                          dv.ops[fl.op_begin + fl.op_count - 1].wait_count
                                    : 0;
    a.lanes[i] = {fl.op_begin, fl.op_count, fl.cta_begin, fl.ctas, wb, we - wb};
    for (int c = 0; c < fl.ctas; ++c) a.cta_lane[fl.cta_begin + c] = uint8_t(i);
  }
  a.nfinals = int(dv.finals.size());
  a.dev = d;
  a.ndev = ndev;
  const size_t flags_off = sizeof(fused::Ctrl);
  a.ctrl = static_cast<fused::Ctrl*>(ctrl[size_t(d)]);
  for (int q = 0; q < ndev; ++q)
    a.flags[q] = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(ctrl[size_t(q)]) + flags_off);
  a.arrive =
      reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(ctrl[size_t(d)]) + flags_off + size_t(program.nslots) * 8);
  a.err = static_cast<fused::Err*>(err);
  a.timeout_ns = uint64_t(params.timeout_s * 1e9);
  a.divisor = divisor;
  a.sc_fence = params.sc_fence ? 1 : 0;
  impl_->ctas = dv.ctas;
  impl_->threads = params.threads;
}

FusedDeviceKernel::~FusedDeviceKernel() = default;
FusedDeviceKernel::FusedDeviceKernel(FusedDeviceKernel&&) noexcept = default;
FusedDeviceKernel& FusedDeviceKernel::operator=(FusedDeviceKernel&&) noexcept = default;

void FusedDeviceKernel::launch(DType dtype, RedOp op, bool pdl, cudaStream_t s) const {
  dev::dispatch<fused::Launch>(dtype, op, impl_->args, impl_->ctas, impl_->threads, pdl, s);
  CCLAB_CUDA_LAUNCHED();
}

size_t fused_control_bytes(const FusedProgram& program, int d) {
  return sizeof(fused::Ctrl) + size_t(program.nslots) * 8 +
         std::max<size_t>(program.devices[size_t(d)].ops.size(), 1) * 4;
}

size_t fused_error_bytes() { return sizeof(fused::Err); }

std::string fused_timeout_text(const FusedProgram& program, const Schedule& schedule, void* err_host) {
  auto* w = static_cast<volatile fused::Err*>(err_host);
  if (w->code == 0) return {};
  const int d = w->device;
  auto op_name = [&](int dev, int idx) {
    if (dev < 0 || dev >= program.ndevices() || idx < 0 || size_t(idx) >= program.devices[size_t(dev)].ops.size())
      return std::string("?");
    const FusedOp& f = program.devices[size_t(dev)].ops[size_t(idx)];
    std::string s = f.op == kNoOp ? std::string("the avg division") : "op " + std::to_string(f.op);
    if (f.op != kNoOp)
      s += " (" + std::string(op_kind_name(schedule.ops[size_t(f.op)].kind));
    else
      s += " (scale";
    return s + ", " + std::to_string(f.bytes) + " B) of rank " + std::to_string(f.rank) + " on lane " +
           std::to_string(f.lane);
  };
  std::string what;
  if (w->slot >= 0 && w->slot < program.nslots) {
    const auto& owner = program.slot_owner[size_t(w->slot)];
    what = owner.op < 0 ? "the start of GPU " + std::to_string(program.devices[size_t(owner.device)].gpu)
                        : op_name(owner.device, owner.op);
  }
  std::string msg = schedule.algo + " (fused): ";
  if (w->code == 1)
    msg += op_name(d, w->op) + " timed out waiting for " + what;
  else
    msg += "GPU " + std::to_string(d >= 0 && d < program.ndevices() ? program.devices[size_t(d)].gpu : d) +
           "'s end wait timed out waiting for " + what;
  msg += " (flag slot " + std::to_string(w->slot) + ": wanted epoch " + std::to_string(w->want) + ", saw " +
         std::to_string(w->got) + ")";
  std::memset(const_cast<fused::Err*>(w), 0, sizeof(fused::Err));
  return msg;
}

FusedWorkload::FusedWorkload(const Communicator& comm, Schedule schedule, const FusedParams& params)
    : FusedWorkload(comm, schedule, params,
                    encode_fused(schedule, params.options(comm.rank_device(), comm.sm_count()))) {}

FusedWorkload::FusedWorkload(const Communicator& comm, Schedule schedule, const FusedParams& params,
                             FusedProgram program)
    : comm_(comm),
      schedule_(std::move(schedule)),
      params_(params),
      program_(std::move(program)),
      err_(fused_error_bytes()) {
  if (schedule_.nranks != comm.nranks())
    throw_internal(__FILE__, __LINE__,
                   "schedule for " + std::to_string(schedule_.nranks) + " ranks on a communicator of " +
                       std::to_string(comm.nranks()));

  spec_ = spec_of(schedule_);
  buffers_ = std::make_unique<RankBuffers>(comm, schedule_.buffers);
  std::memset(err_.host(), 0, fused_error_bytes());

  const int ndev = program_.ndevices();
  std::vector<void*> ctrl;
  for (int d = 0; d < ndev; ++d) {
    const int gpu = program_.devices[size_t(d)].gpu;
    DeviceGuard g(gpu);
    const size_t bytes = fused_control_bytes(program_, d);
    ctrl_.emplace_back(gpu, bytes);
    CCLAB_CUDA(cudaMemset(ctrl_.back().get(), 0, bytes));
    ctrl.push_back(ctrl_.back().get());
  }
  const auto ptr = [this](Ref r) { return buffers_->ptr(r); };
  for (int d = 0; d < ndev; ++d) {
    const int gpu = program_.devices[size_t(d)].gpu;
    kernels_.emplace_back(program_, d, gpu, ptr, ctrl, err_.device(), params_, float(schedule_.nranks));
    streams_.emplace_back(gpu);
    raw_.push_back(streams_.back().get());
    joins_.emplace_back(gpu, false);
    raw_joins_.push_back(joins_.back().get());
  }
  fork_ = Event(comm.device_of(0), false);
}

FusedWorkload::~FusedWorkload() = default;

void FusedWorkload::enqueue() {
  for (size_t d = 0; d < program_.devices.size(); ++d) {
    DeviceGuard g(program_.devices[d].gpu);
    kernels_[d].launch(schedule_.dtype, schedule_.redop, params_.pdl, raw_[d]);
  }
}

void FusedWorkload::issue(cudaStream_t origin) {
  fork_streams(origin, fork_.get(), raw_);
  enqueue();
  join_streams(origin, raw_joins_, raw_);
}

std::unique_ptr<Replay> FusedWorkload::capture(cudaStream_t, int iters) {
  return capture_per_device(comm_, raw_, iters, [this] { enqueue(); });
}

void FusedWorkload::check_device_errors() {
  const std::string msg = fused_timeout_text(program_, schedule_, err_.host());
  if (!msg.empty()) throw_env(msg);
}

std::string FusedWorkload::hang_report() {
  const std::string msg = fused_timeout_text(program_, schedule_, err_.host());
  if (!msg.empty()) return msg;
  return schedule_.algo + " (fused): the kernels are still running and no spin-wait reported a timeout";
}

std::string FusedWorkload::note() const {
  int max_ctas = 0;
  size_t ops = 0;
  for (const auto& dv : program_.devices) {
    max_ctas = std::max(max_ctas, dv.ctas);
    ops += dv.ops.size();
  }
  return "lowering=fused: " + std::to_string(ops) + " ops in " + std::to_string(program_.lanes.size()) +
         " lanes, one launch per GPU of up to " + std::to_string(max_ctas) + " CTAs x " +
         std::to_string(params_.threads) + " threads, " + std::to_string(program_.waits) + " flag waits (" +
         std::to_string(program_.sliced_waits) + " per CTA part) + " + std::to_string(program_.start_waits) +
         " start waits, " + std::to_string(program_.critical_hops) + " cross-GPU hops on the critical path, " +
         std::to_string(program_.publishes) + " flag stores" + (params_.pdl ? ", pdl" : "");
}

}  // namespace cclab::exec
