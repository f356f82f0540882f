// The CUB parts of the sparse all-reduce, in their own translation unit (CUB's sort templates are
// the slowest code of exec/ to compile; alone they build in parallel with the rest).
#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include "exec/mmsp/sparse_kernels.cuh"

namespace cclab::exec::detail {

size_t sparse_coalesce_temp_bytes(int n_raw, int end_bit) {
  size_t sort = 0, rle = 0, scan = 0;
  MMSP_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sort, static_cast<const uint32_t*>(nullptr),
                                            static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                            static_cast<int32_t*>(nullptr), n_raw, 0, end_bit));
  MMSP_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, rle, static_cast<const uint32_t*>(nullptr),
                                               static_cast<uint32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), n_raw));
  MMSP_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<const int32_t*>(nullptr),
                                          static_cast<int32_t*>(nullptr), n_raw));
  return std::max({sort, rle, scan, size_t(256)});
}

void sparse_coalesce(const CoalesceBuffers& b, int n_raw, int64_t dim, int end_bit, void* temp, size_t temp_bytes,
                     cudaStream_t s) {
  if (n_raw == 0) {
    MMSP_CUDA(cudaMemsetAsync(b.num_runs, 0, sizeof(int32_t), s));
    return;
  }
  size_t bytes = temp_bytes;
  MMSP_CUDA(cub::DeviceRadixSort::SortPairs(temp, bytes, b.raw_idx, b.keys_sorted, b.perm_in, b.perm_sorted, n_raw, 0,
                                            end_bit, s));
  // Run lengths past *num_runs are left untouched by the encoder: zero them so the scan reads defined values.
  MMSP_CUDA(cudaMemsetAsync(b.counts, 0, size_t(n_raw) * sizeof(int32_t), s));
  bytes = temp_bytes;
  MMSP_CUDA(cub::DeviceRunLengthEncode::Encode(temp, bytes, b.keys_sorted, b.uniq, b.counts, b.num_runs, n_raw, s));
  bytes = temp_bytes;
  // The scan runs over all n_raw slots (the run count is on the device); only the first *num_runs matter.
  MMSP_CUDA(cub::DeviceScan::ExclusiveSum(temp, bytes, b.counts, b.offsets, n_raw, s));
  sparse_segment_sum(b.num_runs, b.offsets, b.counts, b.perm_sorted, b.raw_vals, dim, b.vals_out, n_raw, s);
}

size_t sparse_sort_unique_temp_bytes(int n, int end_bit) {
  size_t sort = 0, uniq = 0;
  MMSP_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, sort, static_cast<const uint32_t*>(nullptr),
                                           static_cast<uint32_t*>(nullptr), n, 0, end_bit));
  MMSP_CUDA(cub::DeviceSelect::Unique(nullptr, uniq, static_cast<const uint32_t*>(nullptr),
                                      static_cast<uint32_t*>(nullptr), static_cast<int32_t*>(nullptr), n));
  return std::max({sort, uniq, size_t(256)});
}

void sparse_sort_unique(const uint32_t* in, uint32_t* sorted, uint32_t* out, int32_t* num_out, int n, int end_bit,
                        void* temp, size_t temp_bytes, cudaStream_t s) {
  if (n == 0) {
    MMSP_CUDA(cudaMemsetAsync(num_out, 0, sizeof(int32_t), s));
    return;
  }
  size_t bytes = temp_bytes;
  MMSP_CUDA(cub::DeviceRadixSort::SortKeys(temp, bytes, in, sorted, n, 0, end_bit, s));
  bytes = temp_bytes;
  MMSP_CUDA(cub::DeviceSelect::Unique(temp, bytes, sorted, out, num_out, n, s));
}

}  // namespace cclab::exec::detail
