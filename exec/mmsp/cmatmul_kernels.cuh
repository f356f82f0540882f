// Small element-wise kernels of the collective-matmul runner: random fill, in-place add of a partial
// product (matmul_reducescatter), and the comparison against an fp32 reference.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.hpp"

namespace cclab::exec::detail {

// p[i] = uniform in (-1, 1), never exactly 0, a function of (seed, i) only.
void fill_uniform(void* p, DType t, int64_t n, uint64_t seed, cudaStream_t s);
// dst[i] = dst[i] + src[i] (fp32 arithmetic, one rounding to t). 16-byte accesses when aligned.
void add_inplace(void* dst, const void* src, DType t, int64_t n, cudaStream_t s);

struct CompareStats {
  double diff2 = 0;                  // sum of (out - ref)^2
  double ref2 = 0;                   // sum of ref^2
  unsigned long long bad = 0;        // |out - ref| > rtol |ref| + atol, or not finite
  unsigned long long nonfinite = 0;  // NaN or inf in out (unwritten poisoned elements)
};

// Sum of squares of an fp32 array (for the rms that scales the absolute tolerance). Synchronous.
double sum_squares(const float* ref, int64_t n, cudaStream_t s);
// Compares out (type t) with ref (fp32). Synchronous; `scratch` is 64 bytes of device memory.
CompareStats compare_to_ref(const void* out, DType t, const float* ref, int64_t n, float rtol, float atol,
                            void* scratch, cudaStream_t s);

}  // namespace cclab::exec::detail
