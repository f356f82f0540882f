// The Transport: what algorithms write to. It records a Schedule; it knows nothing of backends.
//
// Algorithms are written SPMD style: a loop over ranks, each rank saying what it does. Every call
// returns the id of the recorded op, which later calls name as a dependency.
#pragma once

#include <climits>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/schedule.hpp"

namespace cclab {

class Transport {
 public:
  explicit Transport(Schedule& schedule) : s_(schedule) {}

  int nranks() const { return s_.nranks; }
  int elem_size() const { return dtype_size(s_.dtype); }
  const Schedule& schedule() const { return s_; }
  // Takes a whole schedule made elsewhere (the copy-engine pipeline) as this one's ops and buffers, keeping
  // the name, collective and arguments this transport was made for.
  void adopt(Schedule made);

  // Buffer sizes must be set before ops that use them (validate() checks bounds).
  void set_buffers(int rank, BufferSizes sizes) { s_.buffers.at(rank) = sizes; }
  void set_all_buffers(BufferSizes sizes) { s_.buffers.assign(s_.nranks, sizes); }

  using Deps = std::span<const OpId>;
  using DepList = std::initializer_list<OpId>;

  // rank writes its local `src` into `dst` on dst.rank.
  OpId put(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel = 0);
  OpId put(int rank, Ref src, Ref dst, int64_t bytes, DepList deps = {}, int channel = 0) {
    return put(rank, src, dst, bytes, Deps(deps.begin(), deps.size()), channel);
  }
  // rank reads `src` on src.rank into its local `dst`.
  OpId get(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel = 0);
  OpId get(int rank, Ref src, Ref dst, int64_t bytes, DepList deps = {}, int channel = 0) {
    return get(rank, src, dst, bytes, Deps(deps.begin(), deps.size()), channel);
  }
  OpId copy(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel = 0);
  OpId copy(int rank, Ref src, Ref dst, int64_t bytes, DepList deps = {}, int channel = 0) {
    return copy(rank, src, dst, bytes, Deps(deps.begin(), deps.size()), channel);
  }
  // dst = a redop b (dst local; a or b may be on a peer). dst may alias a or b exactly.
  OpId reduce(int rank, Ref a, Ref b, Ref dst, int64_t bytes, Deps deps, int channel = 0);
  OpId reduce(int rank, Ref a, Ref b, Ref dst, int64_t bytes, DepList deps = {}, int channel = 0) {
    return reduce(rank, a, b, dst, bytes, Deps(deps.begin(), deps.size()), channel);
  }
  OpId compute(int rank, const Compute& c, Deps deps, int channel = 0);
  OpId compute(int rank, const Compute& c, DepList deps = {}, int channel = 0) {
    return compute(rank, c, Deps(deps.begin(), deps.size()), channel);
  }

  // The step number recorded on the following ops (for traces and per-step checks).
  void set_step(int step) { step_ = step; }

  // Schedule-level fields an algorithm may set while it builds (make_schedule fills them from the
  // AlgoArgs first): the kernel mode a forced variant asks for (allreduce.bidir.flash / .stream), the
  // element count when the algorithm derives it from other args (collective matmul: M*D*K of the
  // gathered A), and the phase number of a multi-phase algorithm (allreduce.sparse).
  void set_lowering(Lowering lowering) { s_.lowering = lowering; }
  void set_count(int64_t count) { s_.count = count; }
  void set_phase(int phase) { s_.phase = phase; }

  // Partial recording, for a simulator that folds ranks which behave alike by symmetry (sim/symmetric.*).
  // After set_rank_window(k, check_ops), only every op of ranks [0, k) (the ranks the caller needs) and
  // the first `check_ops` ops of ranks [k, 2k) (compared with [0, k) to check the symmetry) are
  // recorded. Any other op is dropped before it is built: its id is then an encoded reference to (rank,
  // index), index counting the rank's ops in emission order, kept or not; later calls accept it as a
  // dependency and store it as is in dep_pool (so a schedule recorded this way is for the folding
  // simulator only; validate() rejects it). Where (rank, index) does not fit an OpId (many ranks with
  // many ops each), the ops of the ranks that windowed loops (loop_ranks) reach around [0, k) are
  // recorded instead, and other ops get an id that reads back as unknown. Without a window (the
  // default) nothing changes.
  void set_rank_window(int k, int32_t check_ops);
  static constexpr int32_t kAllOps = INT32_MAX;  // check_ops: every op of ranks [k, 2k)
  // The ranks an algorithm's per-rank loop visits. Without a window: 0, 1, ..., n-1. With one: only the
  // ranks whose iterations matter to the recorded ones, in the same ascending order (so every rank's
  // ops keep their order). `reach` bounds, in ranks around the ring of ranks, how far from an
  // iteration's rank lie the ranks whose ops it emits and the ops it names as dependencies; the loop
  // then visits the ranks within 2 * reach of [0, 2k) (within reach: those whose every op is emitted,
  // and whose ids are therefore right). A reach too wide to gain anything gives every rank.
  std::vector<int> loop_ranks(int reach);
  static bool is_dropped(OpId id) { return id < kNoOp; }
  // (rank, index) of a dropped op's id; rank -1 for an op whose reference did not fit an OpId (a rank
  // far outside the window, on a machine of very many ranks).
  std::pair<int, int32_t> dropped(OpId id) const;
  // The index among its rank's ops (emission order, kept or not) of a recorded op, under a window.
  int32_t index_in_rank(OpId recorded) const { return index_[size_t(recorded)]; }
  // Whether every op of the schedule was recorded through the window (not so after adopt(), which takes
  // a whole schedule made elsewhere).
  bool windowed_whole() const { return window_ > 0 && !adopted_; }

 private:
  OpId add(Op op, Deps deps);
  OpId drop(int rank);
  Schedule& s_;
  int step_ = 0;
  // Partial recording (set_rank_window): window_ = k (0: record everything), halo_ = 2 * the widest
  // reach of the loops so far.
  int window_ = 0, halo_ = 0;
  int32_t check_ops_ = 0;
  bool adopted_ = false;
  std::vector<int32_t> per_rank_;  // ops emitted per rank
  std::vector<int32_t> index_;     // per recorded op: its index among its rank's ops
};

// Shorthands for refs.
inline Ref in(int rank, int64_t offset = 0) { return {rank, Buf::input, offset}; }
inline Ref out(int rank, int64_t offset = 0) { return {rank, Buf::output, offset}; }
inline Ref scratch(int rank, int64_t offset = 0) { return {rank, Buf::scratch, offset}; }
inline Ref operator+(Ref r, int64_t bytes) {
  r.offset += bytes;
  return r;
}

}  // namespace cclab
