#include <string>

#include "sim/paths_detail.hpp"

namespace cclab::sim {

// ---- NCCL on two GPUs through its measured transport ----------------------------------------------------

// NCCL's collectives on 2 GPUs are its transport moving each direction's bytes once (a ring of 2: one step
// per phase, reductions fused into the receive): the time of NCCL's own send/recv of those bytes, one way
// (broadcast, reduce) or both ways at once (the rest), measured with NCCL's protocol choice (nccl.p2p.*).
// Larger rank counts, or a profile without those series, use the tuning model (sim/predict.cpp).
std::optional<Seconds> nccl_two_gpus(const model::ModelParams& P, std::string_view coll, int64_t bytes, int nranks,
                                     std::string& how) {
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
    how = "nccl 2 GPUs: " + uni_name + "(S)";
    return uni->time(S);
  }
  if (coll == "allgather" || coll == "reducescatter" || coll == "alltoall") {
    how = "nccl 2 GPUs: " + bi_name + "(S/2)";
    return bi->time(S / 2);
  }
  if (coll == "allreduce") {
    how = "nccl 2 GPUs: " + bi_name + "(S) (reduce-scatter + all-gather, S/2 each way per phase)";
    return bi->time(S);
  }
  return std::nullopt;
}

}  // namespace cclab::sim
