// The Schedule: what an algorithm emits and every backend consumes. Plain data.
//
// A schedule is a list of operations. Each operation belongs to one rank and one channel. Ops of the
// same (rank, channel) run in the order they were emitted (an implicit dependency on the previous
// op of that channel); anything else that must happen first is named in `deps`. A dependency on an
// op of another rank is a signal/wait pair: the backend lowers it (a flag in peer memory, an event,
// a synchronisation latency in the simulator). There are no separate signal/wait ops.
//
// Regions are (rank, buffer, byte offset). Every rank owns three buffers: input, output and scratch,
// with the sizes in `buffers`. `put` writes into a peer's buffer, `get` reads from one, `reduce` may
// read one of its sources from a peer; `copy` is local.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace cclab {

using OpId = int32_t;
constexpr OpId kNoOp = -1;  // accepted (and ignored) in dependency lists

enum class Buf : uint8_t { input, output, scratch };

struct Ref {
  int32_t rank = 0;
  Buf buf = Buf::input;
  int64_t offset = 0;  // bytes
};

enum class OpKind : uint8_t {
  put,      // src on this rank -> dst on a peer
  get,      // src on a peer -> dst on this rank
  copy,     // local -> local
  reduce,   // dst (local) = src redop src2, elementwise over bytes / dtype_size; src or src2 may be remote
  compute,  // a local computation described by schedule.computes[compute]
};

// Local computations. Each has a real implementation in the reference backend (small data), a cost
// in the model and a kernel or library call in the executor.
enum class ComputeKind : uint8_t {
  matmul,        // C (+)= A @ B, row-major, in the schedule's dtype, fp32 accumulate
  sort_unique,   // sparse: sorted unique indices of an index list (and summed duplicate rows)
  union_merge,   // sparse: sorted union of several sorted index lists
  index_match,   // sparse: position of each local index in the global sorted set
  scatter_rows,  // sparse: dense[pos[i]] += rows[i]
  gather_rows,   // sparse: rows[i] = dense[pos[i]]
};

struct Compute {
  ComputeKind kind = ComputeKind::matmul;
  // matmul: A is m x k (lda), B is k x n (ldb), C is m x n (ldc); element strides, row-major.
  int64_t m = 0, k = 0, n = 0, lda = 0, ldb = 0, ldc = 0;
  bool accumulate = false;  // C += A @ B instead of C = A @ B
  Ref a, b, c;
  // Sparse kinds give their operands in a, b, c and sizes in m, k, n; see allreduce_sparse.hpp.
};

struct Op {
  OpKind kind = OpKind::copy;
  uint8_t channel = 0;
  int32_t rank = 0;
  Ref dst, src, src2;  // src2 only for reduce
  int64_t bytes = 0;
  int32_t compute = -1;                   // index into Schedule::computes for OpKind::compute
  int32_t step = 0;                       // the algorithm's step number, for traces and closed-form checks
  uint32_t dep_begin = 0, dep_count = 0;  // into Schedule::dep_pool
};

struct BufferSizes {
  int64_t input = 0, output = 0, scratch = 0;  // bytes
};

// How the executor should lower the schedule (and which protocol the model charges). The algorithm
// says what moves; this says how, where a variant forces it.
enum class Lowering : uint8_t { automatic, copy_engine, kernel, flash, stream, library };

struct Schedule {
  std::string algo;        // e.g. "allreduce.ring"
  std::string collective;  // e.g. "allreduce"
  int nranks = 0;
  // Elements, as nccl-tests counts them for this collective (n = nranks):
  //   broadcast, reduce, allreduce: count elements in and out (rooted: the root's input / output);
  //   allgather: count = total output; each rank's input is count/n;  gather: the same at the root;
  //   reducescatter: count = total input; each rank's output is count/n;  scatter: the same from the root;
  //   alltoall: count = each rank's buffer, n blocks of count/n.
  // Collectives made of one block per rank need count % n == 0 (count_for_bytes rounds as nccl-tests).
  int64_t count = 0;
  DType dtype = DType::f32;
  RedOp redop = RedOp::sum;
  int root = 0;
  bool in_place = false;  // input aliases output at in_place_offset(rank) bytes
  Lowering lowering = Lowering::automatic;
  int phase = 0;                     // for multi-phase (data-dependent) algorithms
  std::vector<BufferSizes> buffers;  // per rank
  std::vector<Op> ops;
  std::vector<OpId> dep_pool;
  std::vector<Compute> computes;

  std::span<const OpId> deps(const Op& op) const { return {dep_pool.data() + op.dep_begin, op.dep_count}; }
  // Where rank r's input starts inside its output buffer when in_place (nccl-tests layout:
  // allgather input = output + r * count/n elements, reducescatter output = input + r * recvcount, ...).
  int64_t in_place_offset(int rank) const;
  // Resolve the in-place alias: an input ref becomes an output ref when in_place.
  Ref resolve(Ref r) const;
};

// Structural checks: refs inside their buffers, peers in range, put/get/copy/reduce locality rules,
// dependencies on earlier ops only (so no cycles), and no op reading a region that no earlier op
// (or the input) wrote. Throws Error(internal) naming the op on the first violation.
// Transfers are one-sided (a put or get names both ends), so every send has its receive by construction.
// validate() does the structural checks in O(ops + deps) (the simulator runs it on millions of ops);
// validate_dataflow() adds the happens-before hazard check (see below) and is what tests and
// `cclab schedule` run.
void validate(const Schedule& s);

// Happens-before: op a happens before op b when a chain of dependencies and same-(rank, channel)
// emission order leads from a to b. validate_dataflow() checks, on every byte of every region (after
// resolving the in-place alias):
//  - read after write: the last op that wrote the bytes an op reads happens before it; bytes of the
//    input buffers count as written at the start, output and scratch bytes are written by no one;
//  - write after read / write: an op that writes bytes is preceded (happens-before) by every op that
//    read them since their last write and by that last write (so a peer's scratch slot is never
//    overwritten before the peer consumed it, and two writers never race).
// Compute ops take part through compute_footprint(); a kind with an unknown footprint marks the
// buffers of its rank as written (no false alarms, fewer checks). Throws Error(internal) naming the op.
void validate_dataflow(const Schedule& s);

// A byte region of one rank's buffer.
struct Region {
  Ref ref;
  int64_t bytes = 0;
};
// What a compute op reads and writes. known == false when the kind does not describe its operands.
struct ComputeFootprint {
  bool known = false;
  std::vector<Region> reads, writes;
};
ComputeFootprint compute_footprint(const Compute& c, DType dtype);

// The bytes of rank r's result, which start at resolve(out(r, 0)) (0 where the collective leaves rank
// r's output undefined, e.g. non-root ranks of reduce and gather). Per collective (count as in
// Schedule::count, E = dtype size): broadcast, allreduce, allgather, alltoall: count*E on every rank;
// reduce, gather: count*E on the root; reducescatter, scatter: count/n*E on every rank. Other
// collectives: the whole output buffer.
//
// RedOp::avg: reduce ops of the schedule compute the SUM (dst = T(float(a) + float(b))); after the
// last op the backend divides every element of each rank's result by nranks (float division, then
// stored in the dtype). For integer-valued inputs this is exact whenever the sum divides by nranks,
// and the same float operations in every backend otherwise. (NCCL's ncclAvg pre-multiplies each
// contribution by 1/n for floating types, which is not exact for n = 3; we chose the exact variant.)
int64_t result_bytes(const Schedule& s, int rank);

// Human-readable and JSON forms.
std::string to_json(const Schedule& s);
std::string_view op_kind_name(OpKind k);
std::string_view buf_name(Buf b);

// Per-rank totals used by structural tests and by `cclab schedule --summary`.
struct RankTraffic {
  int64_t sends = 0, send_bytes = 0;  // puts issued plus gets served (bytes leaving this rank)
  int64_t recvs = 0, recv_bytes = 0;  // bytes arriving at this rank
};
std::vector<RankTraffic> traffic(const Schedule& s);

}  // namespace cclab
