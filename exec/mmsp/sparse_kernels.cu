#include <algorithm>
#include <climits>

#include "exec/mmsp/sparse_kernels.cuh"

namespace cclab::exec::detail {
namespace {

// Grid sizes: enough resident warps to cover an H200 (132 SMs x 64 warps) without a launch per row.
constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / 32;
int grid_for_warps(int64_t warps) {
  return int(std::clamp<int64_t>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock, 1, 132 * 8 * 4));
}
int grid_for_threads(int64_t n) { return int(std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, 132 * 8 * 4)); }

__global__ void gen_values_kernel(float* vals, const int32_t* rows, const uint8_t* copies, int64_t n, int64_t dim,
                                  uint64_t seed, int rank) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i / dim;
    vals[i] = raw_value_hd(seed, rank, rows[j], copies[j], i % dim);
  }
}

__global__ void iota_kernel(int32_t* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = int32_t(i);
}

// One warp per unique row; lanes walk the row's columns (16-byte accesses when VEC).
template <bool VEC>
__global__ void segment_sum_kernel(const int32_t* num_runs, const int32_t* offsets, const int32_t* counts,
                                   const int32_t* perm, const float* raw, int64_t dim, float* out) {
  const int64_t nr = *num_runs;
  const int lane = threadIdx.x & 31;
  const int64_t nwarps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; row < nr; row += nwarps) {
    const int32_t off = offsets[row], cnt = counts[row];
    if constexpr (VEC) {
      const int64_t d4 = dim / 4;
      for (int64_t c = lane; c < d4; c += 32) {
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int32_t j = 0; j < cnt; ++j) {
          float4 v = reinterpret_cast<const float4*>(raw + int64_t(perm[off + j]) * dim)[c];
          acc.x += v.x;
          acc.y += v.y;
          acc.z += v.z;
          acc.w += v.w;
        }
        reinterpret_cast<float4*>(out + row * dim)[c] = acc;
      }
    } else {
      for (int64_t c = lane; c < dim; c += 32) {
        float acc = 0.f;
        for (int32_t j = 0; j < cnt; ++j) acc += raw[int64_t(perm[off + j]) * dim + c];
        out[row * dim + c] = acc;
      }
    }
  }
}

template <bool VEC>
__global__ void fill_rows_kernel(const int32_t* inv, int64_t n_rows, const float* vals, int64_t dim, float* out) {
  const int lane = threadIdx.x & 31;
  const int64_t nwarps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; row < n_rows; row += nwarps) {
    const int32_t src = inv[row];
    if constexpr (VEC) {
      const int64_t d4 = dim / 4;
      float4* o = reinterpret_cast<float4*>(out + row * dim);
      if (src >= 0) {
        const float4* v = reinterpret_cast<const float4*>(vals + int64_t(src) * dim);
        for (int64_t c = lane; c < d4; c += 32) o[c] = v[c];
      } else {
        for (int64_t c = lane; c < d4; c += 32) o[c] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    } else {
      float* o = out + row * dim;
      if (src >= 0) {
        const float* v = vals + int64_t(src) * dim;
        for (int64_t c = lane; c < dim; c += 32) o[c] = v[c];
      } else {
        for (int64_t c = lane; c < dim; c += 32) o[c] = 0.f;
      }
    }
  }
}

__global__ void scatter_inv_kernel(const uint32_t* local, int n, int32_t* inv) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) inv[local[i]] = i;
}

// ---- index matching

constexpr int kMatchBlock = 256;
constexpr int kQuadChunk = 2048;  // global indices staged per round in the quadratic kernel (8 KiB)
constexpr int kWindow = 4096;     // global indices a block of the window kernel can stage (16 KiB)

__device__ inline int lower_bound_dev(const uint32_t* g, int lo, int hi, uint32_t key) {
  while (lo < hi) {
    int mid = lo + ((hi - lo) >> 1);
    if (g[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// First p in [0, n) with g[p] >= key (n if none), found by one warp with 32 probes per round:
// about log32(n) dependent loads instead of log2(n). Every lane returns the same value.
__device__ int warp_lower_bound(const uint32_t* g, int n, uint32_t key, int lane) {
  int a = 0, b = n;  // the answer lies in [a, b]; g[p] < key for p < a; b == n or g[b] >= key
  while (b - a > 32) {
    const long long step = ((long long)(b - a) + 31) / 32;
    const long long p = a + lane * step;
    const bool less = p < b && g[p] < key;  // a prefix of the lanes, since g is sorted
    const int c = __popc(__ballot_sync(0xffffffffu, less));
    if (c == 0) return a;
    const long long nb = a + c * step;
    a = int(a + (c - 1) * step + 1);
    if (nb < b) b = int(nb);
  }
  const int p = a + lane;
  const bool less = p < b && g[p] < key;
  return a + __popc(__ballot_sync(0xffffffffu, less));
}

__global__ void match_quadratic_kernel(const uint32_t* local, int n_local, const uint32_t* global, int n_global,
                                       int32_t* pos) {
  __shared__ uint32_t chunk[kQuadChunk];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool active = i < n_local;
  const uint32_t key = active ? local[i] : 0u;
  int found = active ? -1 : 0;
  for (int base = 0; base < n_global; base += kQuadChunk) {
    if (__syncthreads_and(found >= 0)) break;  // early exit: every index of the tile has matched
    const int len = min(kQuadChunk, n_global - base);
    for (int j = threadIdx.x; j < len; j += blockDim.x) chunk[j] = global[base + j];
    __syncthreads();
    if (found < 0) {
#pragma unroll 8
      for (int j = 0; j < len; ++j) found = (chunk[j] == key) ? base + j : found;
    }
  }
  if (active) pos[i] = found;
}

__global__ void match_binsearch_kernel(const uint32_t* local, int n_local, const uint32_t* global, int n_global,
                                       int32_t* pos) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_local) return;
  const uint32_t key = local[i];
  const int q = lower_bound_dev(global, 0, n_global, key);
  pos[i] = (q < n_global && global[q] == key) ? q : -1;
}

__global__ void match_window_kernel(const uint32_t* local, int n_local, const uint32_t* global, int n_global,
                                    int32_t* pos, int32_t* inv) {
  __shared__ uint32_t win[kWindow];
  __shared__ int range[2];
  const int tile = blockIdx.x * kMatchBlock;
  const int last = min(tile + kMatchBlock, n_local) - 1;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  // The block's local indices are sorted: they all lie in global[lo, hi).
  if (warp == 0) {
    const int lo = warp_lower_bound(global, n_global, local[tile], lane);
    if (lane == 0) range[0] = lo;
  } else if (warp == 1) {
    const uint32_t k = local[last];
    const int hi = k == 0xffffffffu ? n_global : warp_lower_bound(global, n_global, k + 1, lane);
    if (lane == 0) range[1] = hi;
  }
  __syncthreads();
  const int lo = range[0], len = range[1] - range[0];
  const int i = tile + threadIdx.x;
  const bool active = i < n_local;
  const uint32_t key = active ? local[i] : 0u;
  int found = -1;
  if (len <= kWindow) {  // uniform across the block
    for (int j = threadIdx.x; j < len; j += blockDim.x) win[j] = global[lo + j];
    __syncthreads();
    if (active) {
      int a = 0, b = len;
      while (a < b) {
        int mid = a + ((b - a) >> 1);
        if (win[mid] < key)
          a = mid + 1;
        else
          b = mid;
      }
      if (a < len && win[a] == key) found = lo + a;
    }
  } else if (active) {
    const int q = lower_bound_dev(global, lo, lo + len, key);
    if (q < lo + len && global[q] == key) found = q;
  }
  if (active) {
    if (pos) pos[i] = found;
    if (inv && found >= 0) inv[found] = i;
  }
}

__global__ void peer_reduce_kernel(PeerBufs bufs, int nranks, int self, int64_t begin, int64_t end) {
  for (int64_t i = begin + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < end;
       i += int64_t(gridDim.x) * blockDim.x) {
    float s = 0.f;
    for (int q = 0; q < nranks; ++q) s += bufs.p[q][i];  // fixed order: every rank would get the same sum
    bufs.p[self][i] = s;
  }
}

bool vec_ok(const void* a, const void* b, int64_t dim) {
  return dim % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

}  // namespace

void sparse_gen_values(float* vals, const int32_t* rows, const uint8_t* copies, int64_t n_raw, int64_t dim,
                       uint64_t seed, int rank, cudaStream_t s) {
  const int64_t n = n_raw * dim;
  if (n == 0) return;
  gen_values_kernel<<<grid_for_threads(n), kBlock, 0, s>>>(vals, rows, copies, n, dim, seed, rank);
  MMSP_LAUNCHED();
}

void sparse_iota(int32_t* p, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  iota_kernel<<<grid_for_threads(n), kBlock, 0, s>>>(p, n);
  MMSP_LAUNCHED();
}

void sparse_segment_sum(const int32_t* num_runs, const int32_t* offsets, const int32_t* counts, const int32_t* perm,
                        const float* raw, int64_t dim, float* out, int64_t max_rows, cudaStream_t s) {
  if (max_rows == 0) return;
  const int grid = grid_for_warps(max_rows);
  if (vec_ok(raw, out, dim))
    segment_sum_kernel<true><<<grid, kBlock, 0, s>>>(num_runs, offsets, counts, perm, raw, dim, out);
  else
    segment_sum_kernel<false><<<grid, kBlock, 0, s>>>(num_runs, offsets, counts, perm, raw, dim, out);
  MMSP_LAUNCHED();
}

void sparse_match(MatchKernel k, const uint32_t* local, int n_local, const uint32_t* global, int n_global, int32_t* pos,
                  int32_t* inv, cudaStream_t s) {
  if (n_local == 0) return;
  const int grid = (n_local + kMatchBlock - 1) / kMatchBlock;
  CCLAB_ASSERT(k == MatchKernel::window || inv == nullptr, "only the window kernel writes the inverse map");
  switch (k) {
    case MatchKernel::quadratic:
      match_quadratic_kernel<<<grid, kMatchBlock, 0, s>>>(local, n_local, global, n_global, pos);
      break;
    case MatchKernel::binsearch:
      match_binsearch_kernel<<<grid, kMatchBlock, 0, s>>>(local, n_local, global, n_global, pos);
      break;
    case MatchKernel::window:
      match_window_kernel<<<grid, kMatchBlock, 0, s>>>(local, n_local, global, n_global, pos, inv);
      break;
  }
  MMSP_LAUNCHED();
}

void sparse_scatter_inv(const uint32_t* local, int n, int32_t* inv, cudaStream_t s) {
  if (n == 0) return;
  scatter_inv_kernel<<<grid_for_threads(n), kBlock, 0, s>>>(local, n, inv);
  MMSP_LAUNCHED();
}

void sparse_fill_rows(const int32_t* inv, int64_t n_rows, const float* vals, int64_t dim, float* out, cudaStream_t s) {
  if (n_rows == 0 || dim == 0) return;
  const int grid = grid_for_warps(n_rows);
  if (vec_ok(vals, out, dim))
    fill_rows_kernel<true><<<grid, kBlock, 0, s>>>(inv, n_rows, vals, dim, out);
  else
    fill_rows_kernel<false><<<grid, kBlock, 0, s>>>(inv, n_rows, vals, dim, out);
  MMSP_LAUNCHED();
}

void sparse_peer_reduce_slice(PeerBufs bufs, int nranks, int self, int64_t begin, int64_t end, cudaStream_t s) {
  if (end <= begin) return;
  peer_reduce_kernel<<<grid_for_threads(end - begin), kBlock, 0, s>>>(bufs, nranks, self, begin, end);
  MMSP_LAUNCHED();
}

}  // namespace cclab::exec::detail
