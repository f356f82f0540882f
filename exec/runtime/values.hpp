// The data every executor run checks, as nccl-tests does: small integer inputs whose reduction is
// exact in every dtype and every order, so the expected result is one formula per element, computed
// on the GPU (host and device share this header) and compared bit for bit with what the run wrote.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/dtype.hpp"

#if defined(__CUDACC__)
#define CCLAB_HD __host__ __device__ __forceinline__
#else
#define CCLAB_HD inline
#endif

namespace cclab::exec {

// Collectives the executor checks. `exchange` is sol.bidir_copy: rank r receives rank r+1's input.
enum class Coll : uint8_t {
  allreduce,
  broadcast,
  reduce,
  allgather,
  reducescatter,
  alltoall,
  gather,
  scatter,
  exchange
};

// Throws an input error for a collective the executor cannot check (e.g. allgather_matmul).
Coll parse_coll(std::string_view collective);
// The collective the executor checks a registry entry's `collective` as (sol.bidir_copy's "sol": an exchange).
Coll checked_coll(std::string_view collective);
std::string_view coll_name(Coll c);
bool coll_reduces(Coll c);  // allreduce, reduce, reducescatter

// Input element of `rank` at `index`. The ranges keep every reduction exact in bf16 (8 significant
// bits, integers up to 256): sums of values in [-3, 3] over up to 64 ranks stay within +-192;
// products of {-2, -1, 1, 2} over up to 8 ranks are powers of two up to 256; min/max are exact.
CCLAB_HD float input_value(RedOp op, int rank, int64_t index) {
  const uint64_t h = uint64_t(index) * 2654435761u + uint64_t(rank) * 40503u + 17u;  // Knuth's multiplicative mix
  const int k = int((h >> 7) % 7u);                                                  // 0..6
  switch (op) {
    case RedOp::prod: {
      const float table[4] = {-2.f, -1.f, 1.f, 2.f};
      return table[k & 3];
    }
    case RedOp::min:
    case RedOp::max:
      return float(int((h >> 5) % 61u) - 30);
    default:
      return float(k - 3);  // sum, avg: [-3, 3]
  }
}

CCLAB_HD float combine(RedOp op, float a, float b) {
  switch (op) {
    case RedOp::prod:
      return a * b;
    case RedOp::min:
      return a < b ? a : b;
    case RedOp::max:
      return a > b ? a : b;
    default:
      return a + b;  // sum, avg (avg divides once at the end)
  }
}

// The reduction over all ranks of element `index` (avg: the float sum divided by nranks).
CCLAB_HD float reduced_value(RedOp op, int nranks, int64_t index) {
  float acc = input_value(op, 0, index);
  for (int p = 1; p < nranks; ++p) acc = combine(op, acc, input_value(op, p, index));
  if (op == RedOp::avg) acc = acc / float(nranks);
  return acc;
}

// Elements of each rank's input and output for a collective with nccl-tests' total `count`.
struct CollShape {
  int64_t in_elems = 0, out_elems = 0;
};
CCLAB_HD CollShape coll_shape(Coll c, int nranks, int64_t count, int rank, int root) {
  const int64_t per = nranks > 0 ? count / nranks : 0;
  switch (c) {
    case Coll::allgather:
      return {per, count};
    case Coll::gather:
      return {per, rank == root ? count : 0};
    case Coll::reducescatter:
      return {count, per};
    case Coll::scatter:
      return {rank == root ? count : 0, per};
    case Coll::reduce:
      return {count, rank == root ? count : 0};
    case Coll::broadcast:
      return {rank == root ? count : 0, count};
    default:
      return {count, count};  // allreduce, alltoall, exchange
  }
}

// Expected output element j of `rank`.
CCLAB_HD float expected_value(Coll c, RedOp op, int nranks, int64_t count, int rank, int root, int64_t j) {
  const int64_t per = nranks > 0 ? count / nranks : 0;
  switch (c) {
    case Coll::allreduce:
    case Coll::reduce:
      return reduced_value(op, nranks, j);
    case Coll::broadcast:
      return input_value(op, root, j);
    case Coll::allgather:
    case Coll::gather:
      return input_value(op, int(j / per), j % per);
    case Coll::reducescatter:
      return reduced_value(op, nranks, int64_t(rank) * per + j);
    case Coll::alltoall:
      return input_value(op, int(j / per), int64_t(rank) * per + j % per);
    case Coll::scatter:
      return input_value(op, root, int64_t(rank) * per + j);
    case Coll::exchange:
      return input_value(op, (rank + 1) % nranks, j);
  }
  return 0.f;
}

}  // namespace cclab::exec
