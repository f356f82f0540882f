#include <algorithm>
#include <string>

#include "model/nccl.hpp"
#include "sim/paths_detail.hpp"

namespace cclab::sim {

// ---- NCCL on two GPUs through its measured transport ----------------------------------------------------

// NCCL's collectives on 2 GPUs are its transport moving each direction's bytes once (a ring of 2: one step
// per phase, reductions fused into the receive): the time of NCCL's own send/recv of those bytes, one way
// (broadcast, reduce) or both ways at once (the rest), measured with NCCL's protocol choice (nccl.p2p.*).
// Larger rank counts, or a profile without those series, use the tuning model (sim/predict.cpp).
namespace {

// The table that times `name` as a plan of `launches` launches per replayed graph: the series at its own count plus
// the replay's fixed cost spread over the plan's launches instead (bidir.replay; replay_shift). Only graph-timed
// series take it.
Seconds p2p_time(const model::ModelParams& P, const std::string& name, double bytes, int launches, bool graph,
                 std::string& how) {
  const model::PathTable* own = P.table(name);
  const int n = plan_launches(launches);
  how += name;
  const Seconds t = own->time(bytes);
  return graph ? t + replay_shift(P, own->launches_per_replay, n, how) : t;
}

// What NCCL's ring steps on the collective's 24 channels cost beyond send/recv moving the same bytes per
// direction, from cclab's byte-stream kernels (bidir.step.*, no flags). All-gather and reduce-scatter: one
// step of S/2 each way with one local stream of S/2 beside the send (all-gather's copy of its own chunk into
// the output; reduce-scatter's reduction of the received chunk): send/recv's time scaled by copy-and-send
// over send, two kernels of the same shape. On 2 x H200 this is within 3% of both
// from 32 MiB, where summing a send and a reduce-copy as if serial priced reduce-scatter +16..+38%
// (docs/findings/2026-11-23-nccl-rings-unheld-launch-small-sizes.md). Why the rings run ~1.18x send/recv's
// time is not established: the ratio may stand for fewer channels as much as for the copy (broadcast's copy
// beside its send costs nothing measurable at 512 MiB). All-reduce: a send, then a reduce-copy-and-send, of
// S/2, beyond send/recv's S (both halves of its channels at once): an additive extra. Returns the factor
// (ag/rs) or the added seconds (ar); nullopt without the series.
struct RingStepExtra {
  double factor = 1.0;
  double add_s = 0.0;
};
std::optional<RingStepExtra> ring_step_extra(const model::ModelParams& P, std::string_view coll, double S,
                                             std::string& how) {
  auto tab = [&](const char* name) {
    const model::PathTable* t = P.table(name);
    return t && !t->empty() ? t : nullptr;
  };
  if (coll == "allgather" || coll == "reducescatter") {
    const auto *cs = tab("bidir.step.copysend.g24"), *sd = tab("bidir.step.send.g24");
    if (!cs || !sd || sd->time(S / 2).value <= 0) return std::nullopt;
    how += " x bidir.step.copysend.g24(S/2) / bidir.step.send.g24(S/2)";
    return RingStepExtra{std::max(1.0, cs->time(S / 2).value / sd->time(S / 2).value), 0.0};
  }
  if (coll == "allreduce") {
    const auto *send = tab("bidir.step.send.g24"), *rrcs = tab("bidir.step.rrcs.g24"), *p2p = tab("bidir.step.p2p");
    if (!send || !rrcs || !p2p) return std::nullopt;
    how += " + (bidir.step.send.g24(S/2) + bidir.step.rrcs.g24(S/2) - bidir.step.p2p(S))";
    const double extra = send->size_part(S / 2).value + rrcs->size_part(S / 2).value - p2p->size_part(S).value;
    return RingStepExtra{1.0, std::max(0.0, extra)};
  }
  return RingStepExtra{};
}

// With NCCL's send/recv timed at each protocol pinned (nccl.p2p.ll.* / nccl.p2p.simple.*): the collective at
// the protocol NCCL's tuner picks for it (model::nccl_plan), as send/recv of that protocol moving its bytes
// (the rings' channels against send/recv's: bidir.step.* for Simple), all-reduce's second step waiting one
// more flight of the peer's data (sync_latency). nullopt without those series.
std::optional<Seconds> nccl_two_gpus_pinned(const model::ModelParams& P, const topo::Topology& topology,
                                            std::string_view coll, double S, int launches, std::string& how) {
  const bool ring =
      coll == "allreduce" || coll == "allgather" || coll == "reducescatter" || coll == "broadcast" || coll == "reduce";
  if (!ring) return std::nullopt;
  for (const char* n :
       {"nccl.p2p.ll.graph.uni", "nccl.p2p.ll.graph.bidir", "nccl.p2p.simple.graph.uni", "nccl.p2p.simple.graph.bidir"})
    if (!P.table(n) || P.table(n)->empty()) return std::nullopt;
  const model::NcclComm comm = model::nccl_comm_for(topology, P, 2, 2);
  const model::NcclPlan plan = model::nccl_plan(P, comm, coll, int64_t(S));
  const bool ll = plan.proto == model::Proto::ll;
  // NCCL's ring all-reduce gives each rank one chunk, rounded up to 16 bytes (all_reduce.h: chunkCount =
  // alignUp(divUp(count, nranks), 16 / sizeof(T))), and a step on an empty chunk moves nothing (prims_ll.h,
  // LLGenericOp: no line stored or polled for nelem <= 0). Up to 16 bytes the second rank's chunk is empty: each
  // step's data crosses one way only, as send/recv one way.
  const bool one_chunk = coll == "allreduce" && S <= 16;
  const bool one_way = coll == "broadcast" || coll == "reduce" || one_chunk;
  const double b = one_way || coll == "allreduce" ? S : S / 2;  // bytes per direction
  const std::string proto = ll ? "ll" : "simple";
  // The pinned tables (at the launches per replay their table names) reach 64 MiB; beyond, send/recv runs Simple by
  // itself: the default tables (to 1 GiB) are the same protocol there.
  const std::string base = std::string("nccl.p2p.") + proto + ".graph." + (one_way ? "uni" : "bidir");
  const model::PathTable* pinned = P.table(base);
  how = std::string("nccl 2 GPUs, NCCL's tuner picks ") + (ll ? "LL" : "Simple") + " (" +
        (one_chunk             ? "S, two steps one way: the second rank's 16-byte chunk is empty"
         : one_way             ? "S"
         : coll == "allreduce" ? "S, two steps of S/2"
                               : "S/2") +
        " per direction): ";
  double t;
  if (double(pinned->points.back().first) >= b && (launches == pinned->launches_per_replay || launches <= 0)) {
    how += base;
    t = pinned->time(b).value;
    std::string unused;
    if (launches <= 0) t += replay_shift(P, pinned->launches_per_replay, plan_launches(0), unused).value;
  } else if (!ll && P.table(std::string("nccl.p2p.graph.") + (one_way ? "uni" : "bidir"))) {
    t = p2p_time(P, std::string("nccl.p2p.graph.") + (one_way ? "uni" : "bidir"), b, launches, true, how).value;
  } else {
    how += base;
    t = pinned->time(b).value;
  }
  // A ring step that reduces on LL (all-reduce, reduce-scatter) is bound by its channel's CTA, which loads the
  // peer's flagged lines, checks them, reduces and stores: its rate goes with the channels, the collective's
  // (nccl_plan: 24 from 512 KiB) against those NCCL stripes the pinned send/recv over (at most 16 per peer between
  // 2 ranks), on what the size adds to the smallest send/recv. Copies (all-gather, broadcast) are not: scaled the
  // same way they moved from within 4% to -11% and -19% on 2 x H200.
  if (ll && (coll == "allreduce" || coll == "reducescatter")) {
    const int sr = model::nccl_p2p_channels(P, comm, model::Proto::ll, int64_t(b));
    if (plan.channels > 0 && sr != plan.channels) {
      const double size_part = std::max(0.0, pinned->time(b).value - pinned->points.front().second);
      t -= size_part * (1.0 - double(sr) / double(plan.channels));
      how += " (its size part x " + std::to_string(sr) + "/" + std::to_string(plan.channels) + " channels)";
    }
  }
  if (!ll) {
    std::string h;
    if (auto extra = ring_step_extra(P, coll, S, h)) {
      t = t * extra->factor + extra->add_s;
      how += h;
    }
  }
  if (coll == "allreduce") {
    t += P.sync_latency.value.value;
    how += " + sync_latency (the reduce-copy-send waits for the peer's send)";
  }
  return Seconds(t);
}

}  // namespace

std::optional<Seconds> nccl_measured_launch(const model::ModelParams& P, model::Proto proto) {
  using model::Proto;
  if (proto != Proto::ll && proto != Proto::simple) return std::nullopt;
  const model::PathTable* t = P.table(std::string("nccl.p2p.") + (proto == Proto::ll ? "ll" : "simple") + ".graph.uni");
  if (!t || t->empty() || !(P.sync_latency.value.value > 0)) return std::nullopt;
  std::string unused;
  const double first =
      t->points.front().second + replay_shift(P, t->launches_per_replay, plan_launches(0), unused).value;
  return Seconds(std::max(0.0, first - P.sync_latency.value.value));
}

std::optional<Seconds> nccl_two_gpus(const model::ModelParams& P, const topo::Topology& topology, std::string_view coll,
                                     int64_t bytes, int nranks, std::string& how, int launches) {
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
  if (auto t = nccl_two_gpus_pinned(P, topology, coll, S, launches, how)) return t;
  if (coll == "broadcast" || coll == "reduce") {
    how = "nccl 2 GPUs: (S) of ";
    return p2p_time(P, uni_name, S, launches, graph, how);
  }
  if (coll == "allgather" || coll == "reducescatter" || coll == "alltoall") {
    how = "nccl 2 GPUs: (S/2) of ";
    return p2p_time(P, bi_name, S / 2, launches, graph, how);
  }
  if (coll == "allreduce") {
    how = "nccl 2 GPUs (reduce-scatter + all-gather, S/2 each way per phase): (S) of ";
    return p2p_time(P, bi_name, S, launches, graph, how);
  }
  return std::nullopt;
}

}  // namespace cclab::sim
