// Device helpers shared by the executor's kernels: dtype vectors, redops, timed spin-waits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/dtype.hpp"

namespace cclab::exec::dev {

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// x mod n for -n <= x < 2n (ranks and their offsets): a compare instead of an integer division by the run-time
// rank count on each launch's critical path (the bidir kernels: ll, push and stream 2-8% faster per launch on
// one H100: docs/findings/2026-11-25-buffer-placement-rank-modulo.md).
__device__ __forceinline__ int mod_ranks(int x, int n) { return x < 0 ? x + n : x >= n ? x - n : x; }

// A 16-byte load that always reads memory (peers store into it while we poll).
__device__ __forceinline__ uint4 ld_volatile_v4(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

template <typename T>
struct Elem;
template <>
struct Elem<float> {
  static __device__ __forceinline__ float to(float v) { return v; }
  static __device__ __forceinline__ float from(float v) { return v; }
};
template <>
struct Elem<__half> {
  static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

// Same arithmetic as values.hpp combine(): the reference backend's float accumulation.
template <RedOp Op>
__device__ __forceinline__ float combine(float a, float b) {
  if constexpr (Op == RedOp::prod) return a * b;
  if constexpr (Op == RedOp::min) return a < b ? a : b;
  if constexpr (Op == RedOp::max) return a > b ? a : b;
  return a + b;
}

// Two 16-bit values per word, added in one packed instruction. For TWO operands this is the float
// path's result bit for bit: the exact sum rounded once (the float sum of two halves or bfloat16s is
// exact, or the smaller is too small to change the rounding), without 2 x 8 conversions per vector.
template <typename T>
__device__ __forceinline__ uint32_t add_packed(uint32_t a, uint32_t b) {
  uint32_t r;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 s = __hadd2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
    r = *reinterpret_cast<const uint32_t*>(&s);
  } else {
    const __nv_bfloat162 s =
        __hadd2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
    r = *reinterpret_cast<const uint32_t*>(&s);
  }
  return r;
}

// Elementwise on a 16-byte vector of T.
template <typename T, RedOp Op>
__device__ __forceinline__ uint4 combine_vec(uint4 a, uint4 b) {
  if constexpr (sizeof(T) == 2 && Op == RedOp::sum)
    return make_uint4(add_packed<T>(a.x, b.x), add_packed<T>(a.y, b.y), add_packed<T>(a.z, b.z),
                      add_packed<T>(a.w, b.w));
  constexpr int N = 16 / sizeof(T);
  const T* pa = reinterpret_cast<const T*>(&a);
  const T* pb = reinterpret_cast<const T*>(&b);
  uint4 r;
  T* pr = reinterpret_cast<T*>(&r);
#pragma unroll
  for (int i = 0; i < N; ++i) pr[i] = Elem<T>::from(combine<Op>(Elem<T>::to(pa[i]), Elem<T>::to(pb[i])));
  return r;
}

// Accumulate in float (used where several sources are folded before one store).
template <typename T>
struct Acc {
  static constexpr int N = 16 / sizeof(T);
  float v[N];
  __device__ __forceinline__ void load(uint4 x) {
    const T* p = reinterpret_cast<const T*>(&x);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = Elem<T>::to(p[i]);
  }
  template <RedOp Op>
  __device__ __forceinline__ void add(uint4 x) {
    const T* p = reinterpret_cast<const T*>(&x);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = combine<Op>(v[i], Elem<T>::to(p[i]));
  }
  __device__ __forceinline__ uint4 store(float divisor) const {
    uint4 r;
    T* p = reinterpret_cast<T*>(&r);
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = Elem<T>::from(divisor == 1.f ? v[i] : v[i] / divisor);
    return r;
  }
};

// Dispatch a functor templated on <T, Op> by runtime dtype and op.
template <template <typename, RedOp> class K, typename... Args>
void dispatch(DType dt, RedOp op, Args&&... args) {
  auto by_op = [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case RedOp::sum:
        return K<T, RedOp::sum>::run(args...);
      case RedOp::prod:
        return K<T, RedOp::prod>::run(args...);
      case RedOp::min:
        return K<T, RedOp::min>::run(args...);
      case RedOp::max:
        return K<T, RedOp::max>::run(args...);
      case RedOp::avg:
        return K<T, RedOp::avg>::run(args...);
    }
  };
  switch (dt) {
    case DType::f32:
      return by_op(float{});
    case DType::f16:
      return by_op(__half{});
    case DType::bf16:
      return by_op(__nv_bfloat16{});
  }
}

// Launches `kernel` with programmatic dependent launch: the next kernel of the stream may start
// while this one runs (griddepcontrol.wait in the kernel orders memory). Returns the launch's error.
template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), int blocks, int threads, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

// The lamport mode's sentinel (all bits set: a NaN in float, half and bfloat16), element by element: whether a
// received vector still holds it anywhere, and a sent value's NaN pattern made another NaN (sign bit cleared).
// Here so that calibration's lamport loop (exec/microbench/microbench_bidir.cu) runs the kernel's own checks.
template <typename T>
__device__ __forceinline__ bool has_sentinel(const uint4& v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  bool any = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4)
      any |= w[i] == 0xFFFFFFFFu;
    else
      any |= (w[i] & 0xFFFFu) == 0xFFFFu || (w[i] >> 16) == 0xFFFFu;
  }
  return any;
}
// The sentinel's NaN pattern becomes another NaN (sign bit cleared).
template <typename T>
__device__ __forceinline__ uint32_t unsentinel_word(uint32_t w) {
  if constexpr (sizeof(T) == 4) return w == 0xFFFFFFFFu ? 0x7FFFFFFFu : w;
  if ((w & 0xFFFFu) == 0xFFFFu) w = (w & 0xFFFF0000u) | 0x7FFFu;
  if ((w >> 16) == 0xFFFFu) w = (w & 0xFFFFu) | 0x7FFF0000u;
  return w;
}
template <typename T>
__device__ __forceinline__ uint4 unsentinel(uint4 v) {
  return make_uint4(unsentinel_word<T>(v.x), unsentinel_word<T>(v.y), unsentinel_word<T>(v.z), unsentinel_word<T>(v.w));
}
}  // namespace cclab::exec::dev
