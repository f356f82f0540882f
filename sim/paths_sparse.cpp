#include "sim/paths_sparse.hpp"

#include <algorithm>
#include <cstdio>

#include "algorithms/adv_sparse.hpp"
#include "sim/paths_detail.hpp"

namespace cclab::sim {

namespace {

// The sparse all-reduce's raw input lists every selected row once and about half of them twice (one bit of a
// hash decides), so a rank coalesces 1.5 raw rows per row it holds.
constexpr double kRawPerRow = 1.5;

struct Tables {
  const model::PathTable *coal_wall, *coal_issue, *su_wall, *su_issue, *segment_sum, *match, *fill, *fill_issue,
      *copy_issue, *peer_copy, *local_copy;
};

std::optional<Tables> tables(const model::ModelParams& P) {
  Tables t{P.table("sparse.coalesce.wall"),
           P.table("sparse.coalesce.issue"),
           P.table("sparse.sort_unique.wall"),
           P.table("sparse.sort_unique.issue"),
           P.table("sparse.segment_sum"),
           P.table("sparse.match"),
           P.table("sparse.fill_rows"),
           P.table("sparse.fill.issue"),
           P.table("sparse.copy.issue"),
           P.table("p2p.ce.uni"),
           P.table("copy.local")};
  for (const model::PathTable* p : {t.coal_wall, t.coal_issue, t.su_wall, t.su_issue, t.segment_sum, t.match, t.fill,
                                    t.fill_issue, t.copy_issue, t.peer_copy, t.local_copy})
    if (!p) return std::nullopt;
  return t;
}

std::string us(Seconds s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s.us());
  return buf;
}

}  // namespace

std::optional<Prediction> predict_sparse_exec(Simulator& sim, const AlgoArgs& args, const SparseExecPath& path) {
  const model::ModelParams& P = sim.params();
  const auto T = tables(P);
  if (!T) return std::nullopt;
  const int D = args.nranks;
  const sparse::SparseSizes sz = sparse::model_sizes(args);
  const double k = double(sz.rows.at(0)), U = double(sz.union_rows), R = double(args.sparse.rows);
  const double row = double(args.sparse.dim) * 4;  // the executor reduces float32 rows
  const double raw = kRawPerRow * k;
  const double idx = 4;  // 32-bit indices on the GPU

  // Phase 1, coalescing: the host issues each rank's calls in turn and waits for them all, so the last rank
  // starts D-1 issues late; its wall time is the index pipeline (measured with no value columns) plus the
  // segment sum's row traffic (raw rows read, coalesced rows written).
  // Where the profile timed the phase on 2 GPUs as the host drives it (.wall2), that measures the offset and
  // whatever else issuing for two devices costs; further ranks add their issue.
  const model::PathTable* coal2 = P.table("sparse.coalesce.wall2");
  const Seconds coalesce =
      (coal2 && D >= 2 ? double(D - 2) * T->coal_issue->time(idx * raw) + coal2->time(idx * raw)
                       : double(D - 1) * T->coal_issue->time(idx * raw) + T->coal_wall->time(idx * raw)) +
      T->segment_sum->time((raw + k) * row);

  // Phase 2, the union (sparse path): every rank pulls every rank's index list (one local and D-1 peer
  // copies), sorts and de-duplicates them and copies the count to the host; gather_bcast does it on rank 0
  // only, then copies the union to the others (their next step waits for it).
  const double total = double(D) * k;
  const Seconds copies = std::max(T->copy_issue->time(idx * k), T->local_copy->time(idx * k)) +
                         double(D - 1) * std::max(T->copy_issue->time(idx * k), T->peer_copy->time(idx * k));
  const Seconds one_union = copies + T->su_wall->time(idx * total);
  const Seconds issue_union = double(D) * T->copy_issue->time(idx * k) + T->su_issue->time(idx * total);
  const model::PathTable* su2 = P.table("sparse.sort_unique.wall2");
  Seconds union_phase(0), bcast(0);
  if (!path.dense) {
    if (path.gather_bcast) {
      union_phase = one_union;
      if (D > 1) bcast = T->copy_issue->time(idx * U) + T->peer_copy->time(idx * U);
    } else {
      // Every rank's copies and sort, issued rank after rank, then a wait for each: the 2-GPU timing of the
      // sort where measured, with the copies' issue and time on top.
      union_phase = su2 && D >= 2
                        ? double(D - 2) * issue_union + double(D - 1) * double(D) * T->copy_issue->time(idx * k) +
                              copies + su2->time(idx * total)
                        : double(D - 1) * issue_union + one_union;
    }
  }

  // Phase 3, the buffer to reduce: sparse, the inverse map by matching and the union's rows filled (local
  // rows copied, zeros elsewhere); dense, the whole table the same way (an index scatter in place of the
  // matching: the same kind of step, costed by the matching series). Ranks start one issue apart.
  const double rows_out = path.dense ? R : U;
  const Seconds fill = T->match->time(idx * k) + T->fill->time((rows_out + k) * row);
  const Seconds fill_phase = double(D - 1) * T->fill_issue->time(rows_out * row) + bcast + fill;

  // Phase 4, the in-place all-reduce of the buffer through NCCL: NCCL's own model on 2 GPUs (its transport
  // moving the buffer each way once, sim/paths_nccl.cpp), the tuning model otherwise.
  const int64_t bytes = int64_t(rows_out * row);
  std::string nccl_how;
  Seconds reduce(0);
  if (auto t = nccl_two_gpus(P, sim.topology(), "allreduce", bytes, D, nccl_how)) {
    reduce = *t;
  } else {
    AlgoArgs a = args;
    a.count = bytes / 4;
    reduce = Seconds(predict(sim, find_algorithm("allreduce.nccl"), a).result.time.value);
    nccl_how = "NCCL tuning model";
  }

  const Seconds total_time = coalesce + union_phase + fill_phase + reduce;
  Prediction p;
  p.result.time = total_time;
  Record& r = p.record;
  r.algo = "allreduce.sparse";
  r.collective = "allreduce";
  r.backend = "sim";
  r.topology = sim.topology().name;
  r.ranks = D;
  r.count = args.sparse.rows * args.sparse.dim;
  r.bytes = r.count * 4;
  r.dtype = "float";
  r.redop = "sum";
  r.root = -1;
  r.time_us = total_time.us();
  r.wrong = -1;
  fill_bandwidths(r);
  r.note = std::string("executor sparse model, ") + (path.dense ? "dense" : "sparse") +
           (path.dense          ? ""
            : path.gather_bcast ? " gather_bcast"
                                : " allgather") +
           ": coalesce " + us(coalesce) + " + union " + us(union_phase) + " + match/fill " + us(fill_phase) +
           " + all-reduce " + us(reduce) + " (" + nccl_how + ") us";
  return p;
}

}  // namespace cclab::sim
