#include <string>

#include "sim/paths_detail.hpp"

namespace cclab::sim {

// ---- NCCL on two GPUs through its measured transport ----------------------------------------------------

// NCCL's collectives on 2 GPUs are its transport moving each direction's bytes once (a ring of 2: one step
// per phase, reductions fused into the receive): the time of NCCL's own send/recv of those bytes, one way
// (broadcast, reduce) or both ways at once (the rest), measured with NCCL's protocol choice (nccl.p2p.*).
// Larger rank counts, or a profile without those series, use the tuning model (sim/predict.cpp).
namespace {

// The table that times `name` as a record of `iters` launches per replayed graph: the series measured at
// that count (name.n<iters>) where it reaches `bytes`, else the 20-launch one plus the replay's fixed cost
// spread over `iters` instead of 20 (bidir.replay; replay_correction). Only graph-timed series take it.
Seconds p2p_time(const model::ModelParams& P, const std::string& name, double bytes, int iters, bool graph,
                 std::string& how) {
  if (graph && iters > 0 && iters != 20) {
    const std::string at_iters = name + ".n" + std::to_string(iters);
    if (const model::PathTable* t = P.table(at_iters); t && !t->empty() && double(t->points.back().first) >= bytes) {
      how += at_iters;
      return t->time(bytes);
    }
  }
  how += name;
  const Seconds t = P.table(name)->time(bytes);
  return graph ? t + replay_correction(P, iters, how) : t;
}

}  // namespace

std::optional<Seconds> nccl_two_gpus(const model::ModelParams& P, std::string_view coll, int64_t bytes, int nranks,
                                     std::string& how, int iters) {
  if (nranks != 2) return std::nullopt;
  // Send/recv captured in per-GPU graphs and replayed (nccl.p2p.graph.*) is how the records of NCCL's
  // collectives are timed (graph nodes instead of back-to-back launches: smaller fixed cost); profiles
  // from before that series: send/recv launched back to back.
  const bool graph = P.table("nccl.p2p.graph.uni") && P.table("nccl.p2p.graph.bidir");
  const std::string uni_name = graph ? "nccl.p2p.graph.uni" : "nccl.p2p.uni";
  const std::string bi_name = graph ? "nccl.p2p.graph.bidir" : "nccl.p2p.bidir";
  const model::PathTable* uni = P.table(uni_name);
  const model::PathTable* bi = P.table(bi_name);
  if (!uni || !bi) return std::nullopt;
  const double S = double(bytes);
  if (coll == "broadcast" || coll == "reduce") {
    how = "nccl 2 GPUs: (S) of ";
    return p2p_time(P, uni_name, S, iters, graph, how);
  }
  if (coll == "allgather" || coll == "reducescatter" || coll == "alltoall") {
    how = "nccl 2 GPUs: (S/2) of ";
    return p2p_time(P, bi_name, S / 2, iters, graph, how);
  }
  if (coll == "allreduce") {
    how = "nccl 2 GPUs (reduce-scatter + all-gather, S/2 each way per phase): (S) of ";
    return p2p_time(P, bi_name, S, iters, graph, how);
  }
  return std::nullopt;
}

}  // namespace cclab::sim
