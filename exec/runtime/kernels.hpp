// Host entry points of the executor's basic kernels (kernels.cu). Arguments are plain pointers and
// small structs: kernels never see host objects.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.hpp"
#include "exec/runtime/values.hpp"

namespace cclab::exec {

// dst = a redop b elementwise over `count` elements of `dtype`, accumulated in float and stored in
// the dtype (RedOp::avg sums; the final division is scale_avg). Any pointer may be on a peer GPU.
// 16-byte vector loads when all three are 16-byte aligned.
void launch_reduce(cudaStream_t stream, DType dtype, RedOp op, void* dst, const void* a, const void* b, int64_t count,
                   int max_blocks);
// dst = src over `bytes` with 16-byte loads and stores where aligned (peer pointers allowed).
void launch_copy(cudaStream_t stream, void* dst, const void* src, int64_t bytes, int max_blocks);
// data[i] = T(float(data[i]) / divisor): the final step of RedOp::avg.
void launch_scale_avg(cudaStream_t stream, DType dtype, void* data, int64_t count, int divisor);

// Inputs: data[i] = input_value(op, rank, i) for i < count.
void launch_fill_input(cudaStream_t stream, DType dtype, RedOp op, int rank, void* data, int64_t count);

// What check_output compares against (values.hpp: expected_value).
struct CheckSpec {
  Coll coll = Coll::allreduce;
  DType dtype = DType::f32;
  RedOp op = RedOp::sum;
  int nranks = 1, rank = 0, root = 0;
  int64_t count = 0;  // the collective's total count
};
// Adds to *wrong (device memory) the number of the `out_elems` elements whose bits differ from the
// expected value's.
void launch_check(cudaStream_t stream, const CheckSpec& spec, const void* out, int64_t out_elems,
                  unsigned long long* wrong);

// Holds `stream` until the host writes a non-zero word to *release (mapped host memory), or
// `timeout_ns` passes (then writes 1 to *timed_out): queued work then starts back to back, so
// timings exclude host launch overhead (the blocking-kernel method of nvbench).
void launch_hold(cudaStream_t stream, const volatile uint32_t* release, uint32_t* timed_out, uint64_t timeout_ns);

}  // namespace cclab::exec
