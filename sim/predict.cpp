#include "sim/predict.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "lower/lowering.hpp"
#include "sim/paths.hpp"
#include "sim/paths_detail.hpp"
#include "sim/symmetric.hpp"

namespace cclab::sim {

Schedule build_schedule(const Algorithm& algo, const AlgoArgs& args) {
  Schedule s = record_schedule(algo, args);  // validate() only where it is affordable
  if (s.ops.size() <= kValidateMaxOps) validate(s);
  return s;
}

int64_t count_for_bytes(const Algorithm& algo, int64_t bytes, DType dtype, int nranks) {
  return cclab::count_for_bytes(algo.collective, bytes, dtype, nranks);
}

namespace {

bool is_nccl_model(const Algorithm& a) { return a.library; }

// Two calls of `s` back to back, as one GPU stream runs them: a rank's ops of the second call start once the rank
// has ended the first, i.e. once every op it issues and every transfer into it is done (NCCL runs one kernel per GPU
// and call, and the next waits for that GPU's kernel), not once every rank has. A transfer need not wait for its
// receiver's next kernel: NCCL's connections keep their FIFO of NCCL_STEPS slots and its step counters across calls
// (src/device/prims_simple.h), so a sender runs ahead into the slots while the receiver finishes the previous call.
// A 0-byte local copy per rank stands for that end.
Schedule back_to_back(const Schedule& s) {
  Schedule t = s;
  const OpId n1 = OpId(s.ops.size());
  auto peer_of = [](const Op& op) {
    return op.kind == OpKind::put ? op.dst.rank : op.kind == OpKind::get ? op.src.rank : op.rank;
  };
  std::vector<std::vector<OpId>> touching(size_t(s.nranks));
  for (OpId i = 0; i < n1; ++i) {
    const Op& op = s.ops[size_t(i)];
    touching[size_t(op.rank)].push_back(i);
    if (peer_of(op) != op.rank) touching[size_t(peer_of(op))].push_back(i);
  }
  std::vector<OpId> ended(size_t(s.nranks), kNoOp);
  for (int r = 0; r < s.nranks; ++r) {
    if (touching[size_t(r)].empty()) continue;
    Op end;
    end.kind = OpKind::copy;
    end.rank = r;
    end.dst = end.src = Ref{r, Buf::scratch, 0};
    end.dep_begin = uint32_t(t.dep_pool.size());
    end.dep_count = uint32_t(touching[size_t(r)].size());
    t.dep_pool.insert(t.dep_pool.end(), touching[size_t(r)].begin(), touching[size_t(r)].end());
    ended[size_t(r)] = OpId(t.ops.size());
    t.ops.push_back(end);
  }
  const OpId shift = OpId(t.ops.size());
  for (OpId i = 0; i < n1; ++i) {
    Op op = s.ops[size_t(i)];
    const auto deps = s.deps(s.ops[size_t(i)]);
    op.dep_begin = uint32_t(t.dep_pool.size());
    for (OpId d : deps) t.dep_pool.push_back(d + shift);
    t.dep_pool.push_back(ended[size_t(op.rank)]);
    op.dep_count = uint32_t(t.dep_pool.size() - op.dep_begin);
    t.ops.push_back(op);
  }
  return t;
}

// Local work inside NCCL's fused steps: its memory traffic weighs nothing beside the link transfer it overlaps.
const model::ProtocolParams& fused_local_work() {
  static const model::ProtocolParams p = [] {
    model::ProtocolParams q;
    q.efficiency = {1e6,
                    "NCCL fuses reductions and copies into its steps (recvReduceSend, recvCopySend): their HBM "
                    "traffic overlaps the transfer"};
    return q;
  }();
  return p;
}

// The collective whose NCCL tuning decides the protocol (the communication part of a fused baseline).
std::string nccl_collective(const Algorithm& a) {
  if (a.collective == "allgather_matmul") return "allgather";
  if (a.collective == "matmul_reducescatter") return "reducescatter";
  return a.collective;
}

}  // namespace

Prediction predict(Simulator& sim, const Algorithm& algo, AlgoArgs args, const PredictOptions& opt) {
  // With a calibrated profile: the plan the executor would run, priced by its mechanisms (sim/paths.hpp).
  std::vector<std::pair<std::string, std::string>> plan_columns;  // a plan the executor's models cannot price
  if (!opt.keep_schedule && !opt.record_ops)
    if (auto e = predict_executor(sim, algo, args, &plan_columns)) return std::move(*e);
  Prediction p;
  RunOptions ro;
  ro.record_ops = opt.record_ops || opt.keep_schedule;
  ro.record_timeline = opt.record_timeline;
  const Algorithm* builder = &algo;
  std::optional<model::NcclCost> mechanism;  // NCCL plans the flow simulator does not price (NVLS, SHM, nodes)
  std::string nccl_how;
  if (is_nccl_model(algo)) {
    const auto& topo = sim.topology();
    int node_size = args.node_size > 0 ? args.node_size : topo.gpus_per_server();
    // NCCL's settings from the record's or the command line's tune (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE,
    // NCCL_P2P_DISABLE, or a published record's free text).
    const model::NcclSettings settings = model::parse_nccl_settings(args.tune);
    const model::NcclComm comm = model::nccl_comm_for(topo, sim.params(), args.nranks, node_size, settings);
    // NCCL tunes on the bytes of the collective: the gathered A for a fused baseline.
    int64_t bytes = args.count * dtype_size(args.dtype);
    if (algo.needs_shape) bytes = args.shape.m * args.nranks * args.shape.k * dtype_size(args.dtype);
    const model::NcclPlan plan = model::nccl_plan(sim.params(), comm, nccl_collective(algo), bytes);
    p.nccl = plan;
    nccl_how = std::string(model::nccl_transport_name(comm.transport));
    if (comm.nnodes > 1)
      nccl_how += ", " + std::to_string(comm.nnodes) + " nodes x " + std::to_string(comm.ppn) + " ranks";
    if (plan.forced || !settings.describe().empty()) nccl_how += ", settings: " + settings.describe();
    if (!algo.needs_shape)
      mechanism = model::nccl_mechanism_cost(sim.params(), comm, plan, nccl_collective(algo), bytes, args.dtype);
    args.channels = plan.channels;
    args.chunk_bytes = plan.chunk_bytes;
    // Broadcast and reduce run one pipeline per channel over the channel's share of the buffer: each loop
    // moves nChannels x chunkSize, and a loop with less left splits it evenly, realChunkSize =
    // min(chunkSize, divUp(size - offset, nChannels)) (NVIDIA/nccl src/device/broadcast.h, reduce.h). Below
    // channels x chunk every channel moves S / channels; whole chunks there left most channels idle (2 MiB on 16
    // channels of 512 KiB chunks: 4 busy, each at its per-channel cap). Above it every channel moves the same
    // bytes too (the last loop's split): equal chunks of whole elements over as many loops as NCCL takes stand for
    // that.
    if ((algo.collective == "broadcast" || algo.collective == "reduce") && plan.channels > 1 && args.chunk_bytes > 0) {
      const int64_t loop = int64_t(plan.channels) * args.chunk_bytes,
                    loops = std::max<int64_t>(1, (bytes + loop - 1) / loop);
      const int64_t e = dtype_size(args.dtype), share = (bytes + plan.channels * loops - 1) / (plan.channels * loops);
      args.chunk_bytes = (share + e - 1) / e * e;  // whole elements, rounded up: no chunk beyond channels x loops
    }
    if (plan.algo == model::NcclAlgo::tree && algo.collective == "allreduce")
      builder = &find_algorithm("allreduce.tree");
    ro.proto = plan.proto;
    ro.start_latency = plan.base_latency;
    // NCCL's baseLat is its own estimate of the launch; where the profile measured NCCL's launch on this
    // machine (on 2 of its GPUs), that stands for it on one node's NVLink, the steps' hops priced apart.
    if (comm.nnodes == 1 && comm.transport == model::NcclTransport::nvlink)
      if (auto launch = nccl_measured_launch(sim.params(), plan.proto)) {
        ro.start_latency = *launch;
        nccl_how += ", launch as measured (nccl.p2p." + std::string(model::proto_name(plan.proto)) + ")";
      }
    ro.step_latency = plan.step_latency;
    ro.net_step_latency = plan.net_step_latency;
    if (plan.per_channel_cap.value > 0) ro.per_flow_cap = plan.per_channel_cap;
    // NCCL's per-step hwLat already covers the flag wait between ring neighbours.
    ro.sync_latency = Seconds(0);
    ro.step_covers_route = true;
    // Reductions are fused into NCCL's steps (recvReduceSend): no separate local-op cost, and their HBM traffic
    // (two reads and a write per element, at 3.3-8 TB/s) overlaps the step's transfer over the link (0.05-0.9
    // TB/s) instead of following it: a reduce-scatter runs at an all-gather's ring rate, as NCCL's do. The same
    // for the copies of recvCopySend.
    ro.local_op_latency = Seconds(0);
    ro.local_reduce_proto = &fused_local_work();
    ro.local_copy_proto = &fused_local_work();
  }
  Schedule s;
  std::optional<SimResult> folded;
  if (mechanism) {
    // Priced from its mechanisms (model/nccl.hpp). A trace asks for per-op times: the schedule of NCCL's
    // algorithm family runs on the simulator for its shape, its timeline stretched to the mechanism's time.
    if (ro.record_ops || ro.record_timeline || opt.keep_schedule) {
      s = build_schedule(*builder, args);
      if (builder != &algo) s.lowering = Lowering::library;
      p.result = sim.run(s, ro);
      const double scale = p.result.time.value > 0 ? mechanism->time.value / p.result.time.value : 1.0;
      for (auto& t : p.result.ops) {
        t.start *= scale;
        t.end *= scale;
      }
      for (auto& l : p.result.timeline) {
        l.t *= scale;
        l.load /= scale;
      }
      mechanism->how += "; trace: the schedule's timeline stretched to this time";
    }
    p.result.time = mechanism->time;
    s.count = args.count;
    s.dtype = args.dtype;
    s.redop = args.redop;
  } else if (opt.symmetry != Symmetry::off && !ro.record_ops && !ro.record_timeline) {
    folded = run_symmetric(sim, *builder, args, ro, &s, &p.fold_period);
  }
  if (!folded && opt.symmetry == Symmetry::require)
    throw_input(algo.name + ": no symmetry to fold on '" + sim.topology().name + "'");
  if (mechanism) {
  } else if (folded) {
    p.result = std::move(*folded);
  } else {
    s = build_schedule(*builder, args);
    if (builder != &algo) s.lowering = Lowering::library;
    if (p.nccl && (algo.collective == "broadcast" || algo.collective == "reduce") && p.nccl->channels > 1) {
      // NCCL splits the buffer over its channels, each a pipeline of its own (enqueue.cc); the chain
      // builders emit one pipeline on channel 0, so the k-th op of each rank goes to channel k mod C.
      std::vector<int> next(size_t(s.nranks), 0);
      for (Op& op : s.ops) op.channel = uint8_t(next[size_t(op.rank)]++ % std::min(p.nccl->channels, 255));
    }
    p.result = sim.run(s, ro);
    // The records replay L calls per graph. On more than 2 ranks a rank of NCCL's chains (broadcast, reduce)
    // starts the next call while ranks further along still finish this one, so the chain's fill is paid about
    // once per replay: one call as simulated, then L - 1 at what a second call back to back adds, each with its
    // launch (4 x H100, broadcast at 8 MiB: 106 us alone, 39 us per call among 100;
    // docs/findings/2026-11-27-four-gpus-large-sizes-held-graphs.md). Where every rank ends with the call (the
    // rings, folded above, and all-to-all), a second call adds a whole one and nothing changes.
    const int launches =
        p.nccl ? lower::replay_launches(lower::Path::library, lower::parse_settings(args.tune, /*lenient=*/true)) : 1;
    if (s.nranks > 2 && launches > 1 && !ro.record_ops && !ro.record_timeline && ro.start_latency) {
      const double start = ro.start_latency->value, one = p.result.time.value;
      const double next = sim.run(back_to_back(s), ro).time.value - one;
      if (next > 0 && next < one - start) {
        p.result.time = Seconds(start + ((one - start) + (launches - 1) * next) / launches);
        nccl_how += ", " + std::to_string(launches) + " calls back to back (the next call " +
                    std::to_string(int(std::lround(next * 1e6))) + " us after the first)";
      }
    }
  }
  if (builder != &algo) s.algo = algo.name;

  Record& r = p.record;
  r.algo = algo.name;
  r.collective = algo.collective;
  r.backend = "sim";
  r.topology = sim.topology().name;
  r.ranks = args.nranks;
  r.count = s.count;
  r.bytes = s.count * dtype_size(s.dtype);
  r.dtype = std::string(dtype_name(s.dtype));
  r.redop = std::string(redop_name(s.redop));
  r.root = algo.rooted ? args.root : -1;
  r.in_place = args.in_place;
  r.time_us = p.result.time.us();
  r.wrong = -1;  // the simulator moves no data
  if (algo.needs_shape) {
    r.shape = std::to_string(args.shape.m) + "," + std::to_string(args.shape.k) + "," + std::to_string(args.shape.n);
    // Matmul rate per device: each computes (m D) x k x n, as the shard products or one big product.
    const double flops = 2.0 * double(args.shape.m) * args.nranks * double(args.shape.k) * double(args.shape.n);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", flops / p.result.time.value / 1e12);
    r.extra.push_back({"tflops", buf});
  }
  fill_bandwidths(r);
  if (p.nccl) {
    r.note = "nccl " + std::string(model::nccl_algo_name(p.nccl->algo)) + "/" +
             std::string(model::proto_name(p.nccl->proto)) + " " + std::to_string(p.nccl->channels) + "ch (" +
             nccl_how + ")";
    if (mechanism) r.note += "; " + mechanism->how;
  }
  if (p.fold_period > 0)
    r.note += std::string(r.note.empty() ? "" : "; ") + "folded: " + std::to_string(p.fold_period) + " of " +
              std::to_string(args.nranks) + " ranks simulated (symmetry)";
  if (!p.result.bottleneck.empty()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", p.result.bottleneck_utilisation);
    r.extra.push_back({"bottleneck", p.result.bottleneck});
    r.extra.push_back({"bottleneck_util", buf});
  }
  if (!plan_columns.empty()) {
    r.note += std::string(r.note.empty() ? "" : "; ") +
              "the executor's plan, priced by the flow model (no measurement "
              "of its path on " +
              std::to_string(args.nranks) + " ranks)";
    for (auto& c : plan_columns) r.extra.push_back(std::move(c));
  }
  if (opt.keep_schedule) p.schedule = std::move(s);
  return p;
}

}  // namespace cclab::sim
