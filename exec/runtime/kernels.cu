#include <algorithm>

#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/device_util.cuh"
#include "exec/runtime/kernels.hpp"

namespace cclab::exec {

namespace {

using namespace dev;
constexpr int kThreads = 512;

int blocks_for(int64_t work_items, int max_blocks) {
  const int64_t b = (work_items + kThreads - 1) / kThreads;
  return int(std::max<int64_t>(1, std::min<int64_t>(b, max_blocks > 0 ? max_blocks : 1024)));
}

// Vector body: each thread handles 4 independent 16-byte vectors per iteration (more loads in
// flight hides peer-memory latency); scalar tail and unaligned case handled elementwise.
template <typename T, RedOp Op>
__global__ void reduce_kernel(T* dst, const T* a, const T* b, int64_t count, bool vec) {
  constexpr int N = 16 / sizeof(T);
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nvec = count / N;
    const uint4* va = reinterpret_cast<const uint4*>(a);
    const uint4* vb = reinterpret_cast<const uint4*>(b);
    uint4* vd = reinterpret_cast<uint4*>(dst);
    int64_t i = tid;
    for (; i + 3 * stride < nvec; i += 4 * stride) {
      uint4 x[4], y[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = va[i + u * stride];
#pragma unroll
      for (int u = 0; u < 4; ++u) y[u] = vb[i + u * stride];
#pragma unroll
      for (int u = 0; u < 4; ++u) vd[i + u * stride] = combine_vec<T, Op>(x[u], y[u]);
    }
    for (; i < nvec; i += stride) vd[i] = combine_vec<T, Op>(va[i], vb[i]);
    done = nvec * N;
  }
  for (int64_t i = done + tid; i < count; i += stride)
    dst[i] = Elem<T>::from(combine<Op>(Elem<T>::to(a[i]), Elem<T>::to(b[i])));
}

template <typename T, RedOp Op>
struct ReduceLaunch {
  static void run(cudaStream_t s, void* dst, const void* a, const void* b, int64_t count, int max_blocks) {
    const bool vec =
        ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) ==
        0;
    const int64_t items = vec ? (count * int64_t(sizeof(T)) / 16 + 3) / 4 : count;
    reduce_kernel<T, Op><<<blocks_for(items, max_blocks), kThreads, 0, s>>>(
        static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), count, vec);
  }
};

__global__ void copy_kernel(uint8_t* dst, const uint8_t* src, int64_t bytes, bool vec) {
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nvec = bytes / 16;
    const uint4* vs = reinterpret_cast<const uint4*>(src);
    uint4* vd = reinterpret_cast<uint4*>(dst);
    int64_t i = tid;
    for (; i + 3 * stride < nvec; i += 4 * stride) {
      uint4 x[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = vs[i + u * stride];
#pragma unroll
      for (int u = 0; u < 4; ++u) vd[i + u * stride] = x[u];
    }
    for (; i < nvec; i += stride) vd[i] = vs[i];
    done = nvec * 16;
  }
  for (int64_t i = done + tid; i < bytes; i += stride) dst[i] = src[i];
}

template <typename T>
__global__ void scale_kernel(T* data, int64_t count, float divisor) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = Elem<T>::from(Elem<T>::to(data[i]) / divisor);
}
template <typename T, RedOp>
struct ScaleLaunch {
  static void run(cudaStream_t s, void* data, int64_t count, int divisor) {
    scale_kernel<T><<<blocks_for(count, 1024), kThreads, 0, s>>>(static_cast<T*>(data), count, float(divisor));
  }
};

template <typename T, RedOp Op>
__global__ void fill_kernel(T* data, int rank, int64_t count) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = Elem<T>::from(input_value(Op, rank, i));
}
template <typename T, RedOp Op>
struct FillLaunch {
  static void run(cudaStream_t s, int rank, void* data, int64_t count) {
    fill_kernel<T, Op><<<blocks_for(count, 2048), kThreads, 0, s>>>(static_cast<T*>(data), rank, count);
  }
};

template <typename T>
__device__ __forceinline__ bool same_bits(T a, T b) {
  if constexpr (sizeof(T) == 4) {
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
  } else {
    uint16_t x, y;
    memcpy(&x, &a, 2);
    memcpy(&y, &b, 2);
    return x == y;
  }
}

template <typename T, RedOp Op>
__global__ void check_kernel(CheckSpec spec, const T* out, int64_t n, unsigned long long* wrong) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    const T expect = Elem<T>::from(expected_value(spec.coll, Op, spec.nranks, spec.count, spec.rank, spec.root, j));
    mine += same_bits(expect, out[j]) ? 0 : 1;
  }
  // Warp-reduce, then one atomic per warp.
  for (int o = 16; o > 0; o >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, o);
  if ((threadIdx.x & 31) == 0 && mine) atomicAdd(wrong, mine);
}
template <typename T, RedOp Op>
struct CheckLaunch {
  static void run(cudaStream_t s, const CheckSpec& spec, const void* out, int64_t n, unsigned long long* wrong) {
    check_kernel<T, Op><<<blocks_for(n, 2048), kThreads, 0, s>>>(spec, static_cast<const T*>(out), n, wrong);
  }
};

__global__ void hold_kernel(const volatile uint32_t* release, uint32_t* timed_out, uint64_t timeout_ns) {
  const uint64_t start = globaltimer_ns();
  while (*release == 0) {
    if (globaltimer_ns() - start > timeout_ns) {
      *timed_out = 1;
      break;
    }
    __nanosleep(1000);
  }
}

}  // namespace

void launch_reduce(cudaStream_t stream, DType dtype, RedOp op, void* dst, const void* a, const void* b, int64_t count,
                   int max_blocks) {
  if (count <= 0) return;
  dispatch<ReduceLaunch>(dtype, op, stream, dst, a, b, count, max_blocks);
  CCLAB_CUDA_LAUNCHED();
}

void launch_copy(cudaStream_t stream, void* dst, const void* src, int64_t bytes, int max_blocks) {
  if (bytes <= 0) return;
  const bool vec = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0;
  const int64_t items = vec ? (bytes / 16 + 3) / 4 : bytes;
  copy_kernel<<<blocks_for(items, max_blocks), kThreads, 0, stream>>>(static_cast<uint8_t*>(dst),
                                                                      static_cast<const uint8_t*>(src), bytes, vec);
  CCLAB_CUDA_LAUNCHED();
}

void launch_scale_avg(cudaStream_t stream, DType dtype, void* data, int64_t count, int divisor) {
  if (count <= 0) return;
  dispatch<ScaleLaunch>(dtype, RedOp::sum, stream, data, count, divisor);
  CCLAB_CUDA_LAUNCHED();
}

void launch_fill_input(cudaStream_t stream, DType dtype, RedOp op, int rank, void* data, int64_t count) {
  if (count <= 0) return;
  dispatch<FillLaunch>(dtype, op, stream, rank, data, count);
  CCLAB_CUDA_LAUNCHED();
}

void launch_check(cudaStream_t stream, const CheckSpec& spec, const void* out, int64_t out_elems,
                  unsigned long long* wrong) {
  if (out_elems <= 0) return;
  dispatch<CheckLaunch>(spec.dtype, spec.op, stream, spec, out, out_elems, wrong);
  CCLAB_CUDA_LAUNCHED();
}

void launch_hold(cudaStream_t stream, const volatile uint32_t* release, uint32_t* timed_out, uint64_t timeout_ns) {
  hold_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
  CCLAB_CUDA_LAUNCHED();
}

}  // namespace cclab::exec
