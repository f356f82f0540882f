#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "exec/mmsp/cmatmul_kernels.cuh"
#include "exec/mmsp/cmatmul_util.cuh"

namespace cclab::exec::detail {
namespace {

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__half v) { return __half2float(v); }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ inline T from_f(float v);
template <>
__device__ inline float from_f<float>(float v) {
  return v;
}
template <>
__device__ inline __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Enough blocks to fill the GPU (132 SMs on an H200) a few times over; grid-stride loops do the rest.
int grid_for(int64_t n, int block) { return int(std::clamp<int64_t>((n + block - 1) / block, 1, 132 * 16)); }

template <class T>
__global__ void fill_uniform_kernel(T* p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t h = mix64(seed ^ mix64(uint64_t(i)));
    // 24 random bits, centred: (x + 0.5) / 2^23 - 1 lies in (-1, 1) and is never 0.
    float u = (float(h >> 40) + 0.5f) * (1.0f / 8388608.0f) - 1.0f;
    p[i] = from_f<T>(u);
  }
}

template <class T>
__global__ void add_scalar_kernel(T* dst, const T* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f<T>(to_f(dst[i]) + to_f(src[i]));
}

// 16 bytes per access: n16 vectors of 16 / sizeof(T) elements.
template <class T>
__global__ void add_vec_kernel(uint4* dst, const uint4* src, int64_t n16) {
  constexpr int kPer = 16 / sizeof(T);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n16; i += int64_t(gridDim.x) * blockDim.x) {
    uint4 a = dst[i], b = src[i];
    T* ta = reinterpret_cast<T*>(&a);
    const T* tb = reinterpret_cast<const T*>(&b);
#pragma unroll
    for (int j = 0; j < kPer; ++j) ta[j] = from_f<T>(to_f(ta[j]) + to_f(tb[j]));
    dst[i] = a;
  }
}

__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__global__ void sum_squares_kernel(const float* ref, int64_t n, double* out) {
  double acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    acc += double(ref[i]) * ref[i];
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

template <class T>
__global__ void compare_kernel(const T* out, const float* ref, int64_t n, float rtol, float atol, CompareStats* stats) {
  double d2 = 0, r2 = 0;
  unsigned long long bad = 0, nonfinite = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float o = to_f(out[i]), r = ref[i];
    double d = double(o) - r;
    d2 += d * d;
    r2 += double(r) * r;
    bool finite = isfinite(o);
    nonfinite += !finite;
    // Written so that NaN counts as bad.
    bad += !(finite && fabs(d) <= double(rtol) * fabs(r) + atol);
  }
  d2 = warp_sum(d2);
  r2 = warp_sum(r2);
  bad = warp_sum(bad);
  nonfinite = warp_sum(nonfinite);
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&stats->diff2, d2);
    atomicAdd(&stats->ref2, r2);
    atomicAdd(&stats->bad, bad);
    atomicAdd(&stats->nonfinite, nonfinite);
  }
}

template <class T>
void add_typed(void* dst, const void* src, int64_t n, cudaStream_t s) {
  constexpr int kPer = 16 / sizeof(T);
  const int block = 256;
  bool aligned = (reinterpret_cast<uintptr_t>(dst) % 16 == 0) && (reinterpret_cast<uintptr_t>(src) % 16 == 0);
  int64_t n16 = aligned ? n / kPer : 0;
  if (n16 > 0) {
    add_vec_kernel<T>
        <<<grid_for(n16, block), block, 0, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16);
    MMSP_LAUNCHED();
  }
  int64_t done = n16 * kPer;
  if (done < n) {
    add_scalar_kernel<T><<<grid_for(n - done, block), block, 0, s>>>(static_cast<T*>(dst) + done,
                                                                     static_cast<const T*>(src) + done, n - done);
    MMSP_LAUNCHED();
  }
}

}  // namespace

void fill_uniform(void* p, DType t, int64_t n, uint64_t seed, cudaStream_t s) {
  const int block = 256;
  switch (t) {
    case DType::f32:
      fill_uniform_kernel<<<grid_for(n, block), block, 0, s>>>(static_cast<float*>(p), n, seed);
      break;
    case DType::f16:
      fill_uniform_kernel<<<grid_for(n, block), block, 0, s>>>(static_cast<__half*>(p), n, seed);
      break;
    case DType::bf16:
      fill_uniform_kernel<<<grid_for(n, block), block, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed);
      break;
  }
  MMSP_LAUNCHED();
}

void add_inplace(void* dst, const void* src, DType t, int64_t n, cudaStream_t s) {
  switch (t) {
    case DType::f32:
      add_typed<float>(dst, src, n, s);
      break;
    case DType::f16:
      add_typed<__half>(dst, src, n, s);
      break;
    case DType::bf16:
      add_typed<__nv_bfloat16>(dst, src, n, s);
      break;
  }
}

double sum_squares(const float* ref, int64_t n, cudaStream_t s) {
  DevBuf acc;
  int dev = 0;
  MMSP_CUDA(cudaGetDevice(&dev));
  acc = DevBuf(dev, sizeof(double));
  MMSP_CUDA(cudaMemsetAsync(acc.as(), 0, sizeof(double), s));
  sum_squares_kernel<<<grid_for(n, 256), 256, 0, s>>>(ref, n, acc.as<double>());
  MMSP_LAUNCHED();
  double h = 0;
  MMSP_CUDA(cudaMemcpyAsync(&h, acc.as(), sizeof h, cudaMemcpyDeviceToHost, s));
  MMSP_CUDA(cudaStreamSynchronize(s));
  return h;
}

CompareStats compare_to_ref(const void* out, DType t, const float* ref, int64_t n, float rtol, float atol,
                            void* scratch, cudaStream_t s) {
  static_assert(sizeof(CompareStats) <= 64, "scratch holds the stats");
  auto* stats = static_cast<CompareStats*>(scratch);
  MMSP_CUDA(cudaMemsetAsync(stats, 0, sizeof(CompareStats), s));
  const int block = 256;
  switch (t) {
    case DType::f32:
      compare_kernel<<<grid_for(n, block), block, 0, s>>>(static_cast<const float*>(out), ref, n, rtol, atol, stats);
      break;
    case DType::f16:
      compare_kernel<<<grid_for(n, block), block, 0, s>>>(static_cast<const __half*>(out), ref, n, rtol, atol, stats);
      break;
    case DType::bf16:
      compare_kernel<<<grid_for(n, block), block, 0, s>>>(static_cast<const __nv_bfloat16*>(out), ref, n, rtol, atol,
                                                          stats);
      break;
  }
  MMSP_LAUNCHED();
  CompareStats h;
  MMSP_CUDA(cudaMemcpyAsync(&h, stats, sizeof h, cudaMemcpyDeviceToHost, s));
  MMSP_CUDA(cudaStreamSynchronize(s));
  return h;
}

}  // namespace cclab::exec::detail
