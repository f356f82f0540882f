#include "model/nccl.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace cclab::model {

namespace {

int proto_index(Proto p) {
  switch (p) {
    case Proto::ll:
      return 0;
    case Proto::ll128:
      return 1;
    case Proto::simple:
      return 2;
    default:
      CCLAB_ASSERT(false, "not an NCCL protocol");
  }
  return 2;
}

int log2i(int n) {  // floor(log2 n), as NCCL's log2i
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

// tuning.cc's treeCorrectionFactor: trees run below the model at medium sizes (powers of two, 64 B..256 MB).
constexpr float kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// Threads per channel (device.h: NCCL_SIMPLE_MAX_NTHREADS 512, NCCL_LL_MAX_NTHREADS 512,
// NCCL_LL128_MAX_NTHREADS 640) and the per-thread work threshold below which NCCL drops channels
// (comm.h: LL 8 (x nranks for rings), LL128 8, Simple 64 bytes).
int max_threads(Proto p) { return p == Proto::ll128 ? 640 : 512; }
int64_t thread_threshold(NcclAlgo a, Proto p, int nranks) {
  if (p == Proto::ll) return a == NcclAlgo::ring ? 8LL * nranks : 8;
  if (p == Proto::ll128) return 8;
  return 64;
}

bool is_ring_family(std::string_view c) {
  return c == "allreduce" || c == "allgather" || c == "reducescatter" || c == "broadcast" || c == "reduce" ||
         c == "allgather_matmul" || c == "matmul_reducescatter";
}

}  // namespace

std::string_view nccl_algo_name(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::ring:
      return "ring";
    case NcclAlgo::tree:
      return "tree";
    case NcclAlgo::p2p:
      return "p2p";
  }
  return "?";
}

NcclComm nccl_comm_for(const topo::Topology& t, const ModelParams& p, int nranks, int node_size) {
  NcclComm c;
  c.nranks = nranks;
  node_size = node_size <= 0 ? nranks : std::min(node_size, nranks);
  c.nnodes = std::max(1, (nranks + node_size - 1) / node_size);
  c.channels = std::max(1, int(p.nccl.max_channels.value));
  bool nvlink = false;
  double intra = 0, inter = 0;
  if (nranks > 1 && node_size > 1) {
    const topo::Path path = t.route_gpus(0, 1);
    for (auto e : path.links)
      if (t.link(e).kind == topo::LinkKind::nvlink) nvlink = true;
    intra = path.bottleneck.gbps();
  }
  if (c.nnodes > 1) inter = t.route_gpus(0, node_size).bottleneck.gbps();
  c.nvlink = nvlink;
  c.bw_intra_GBps = intra / c.channels;
  c.bw_inter_GBps = (c.nnodes > 1 ? inter : intra) / c.channels;
  if (c.nnodes == 1 || node_size == 1) c.bw_intra_GBps = std::max(c.bw_intra_GBps, c.bw_inter_GBps);
  return c;
}

Seconds nccl_tuning_time(const ModelParams& p, const NcclComm& c, std::string_view coll, NcclAlgo algo, Proto proto,
                         int64_t bytes) {
  const NcclTuning& k = p.nccl;
  const int n = c.nranks, nodes = c.nnodes;
  if (n <= 1) return Seconds(0);
  const int pi = proto_index(proto);
  const bool allreduce = coll == "allreduce";
  if (algo == NcclAlgo::tree && !allreduce) return Seconds(-1);
  if (algo == NcclAlgo::p2p) return Seconds(-1);
  // LL128 only where the intra-node path is NVLink (tuning.cc: typeIntra <= PATH_NVB).
  if (proto == Proto::ll128 && !c.nvlink) return Seconds(-1);
  const bool rs_ag =
      coll == "reducescatter" || coll == "allgather" || coll == "allgather_matmul" || coll == "matmul_reducescatter";
  const int nsteps = allreduce ? 2 * (n - 1) : rs_ag ? n - 1 : n;
  const double bw = nodes <= 2 ? c.bw_intra_GBps : c.bw_inter_GBps;
  double busbw = c.channels * bw;
  if (algo == NcclAlgo::ring && proto == Proto::ll) busbw = std::min(k.ll_max_bw_GBps, busbw * .5);
  if (algo == NcclAlgo::ring && proto == Proto::ll128)
    busbw = std::min(busbw * 0.92, c.channels * k.per_ch_ring_ll128_GBps);
  if (algo == NcclAlgo::tree) busbw = std::min(busbw * .92, c.channels * k.per_ch_tree_GBps);
  if (algo == NcclAlgo::tree && proto == Proto::ll) busbw = std::min(busbw / 3.8, k.ll_max_bw_GBps);
  if (algo == NcclAlgo::tree && proto == Proto::ll128)
    busbw = std::min(busbw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), c.channels * k.per_ch_tree_ll128_GBps);
  busbw *= algo == NcclAlgo::ring ? double(n) / nsteps : 0.5;  // bus bandwidth to algorithm bandwidth

  const auto& ring_hw = c.nvlink ? k.ring_nvlink_us : k.ring_pci_us;
  const auto& tree_hw = c.nvlink ? k.tree_nvlink_us : k.tree_pci_us;
  double lat = algo == NcclAlgo::ring ? k.ring_base_us[pi] : k.tree_base_us[pi];
  const double ppn = double(n) / nodes;
  double intra_lat = algo == NcclAlgo::ring ? ring_hw[pi] : tree_hw[pi];
  double inter_lat = ppn == 1 ? k.tree_net_us[pi] : (algo == NcclAlgo::ring ? k.ring_net_us[pi] : k.tree_net_us[pi]);
  if (algo == NcclAlgo::ring) {
    if (coll == "broadcast" || coll == "reduce") {
      lat += nodes == 1 ? intra_lat : inter_lat;  // rings on the same channels: one step's latency
    } else {
      // Inter-node rings launch nsteps network operations (netOverhead 1 µs on Intel, x3 for Simple).
      double net_overhead = nodes > 1 ? (proto == Proto::simple ? 3.0 : 1.0) : 0.0;
      intra_lat = std::max(intra_lat, net_overhead);
      const int inter_steps = nodes == 1 ? 0 : allreduce ? 2 * (nodes - 1) : nodes - 1;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
  } else {
    lat += 2 * ((n / nodes - 1) * intra_lat + log2i(nodes) * inter_lat);
  }
  // ncclTopoGetAlgoTime refinements.
  const int log_size = log2i(int(std::min<int64_t>(bytes >> 6, INT32_MAX)));
  if (algo == NcclAlgo::tree && allreduce && (bytes >> 6) > 0 && log_size < 23) busbw *= kTreeCorrection[pi][log_size];
  if (algo == NcclAlgo::ring && proto == Proto::simple && nodes > 1 && allreduce &&
      bytes / (int64_t(c.channels) * n) >= 64)
    lat *= 1.4;  // "plateau effect of ring" (compute capability >= 8.0)
  if (busbw <= 0) return Seconds(-1);
  return microseconds(lat + double(bytes) / (1000.0 * busbw));
}

NcclPlan nccl_plan(const ModelParams& p, const NcclComm& c, std::string_view coll, int64_t bytes) {
  NcclPlan plan;
  const NcclTuning& k = p.nccl;
  if (!is_ring_family(coll)) {
    // All-to-all, gather, scatter, send/recv: NCCL runs them as grouped point-to-point transfers, LL when
    // each peer's share is small (enqueue.cc: P2P_LL_THRESHOLD 16384 bytes per channel), else Simple.
    plan.algo = NcclAlgo::p2p;
    const int64_t per_peer = c.nranks > 0 ? bytes / c.nranks : bytes;
    plan.proto = per_peer <= 16384 ? Proto::ll : Proto::simple;
    plan.channels = 1;
    plan.chunk_bytes = k.simple_buff / k.steps;  // p2pChunkSize (512 KiB on NVLink)
    const int pi = proto_index(plan.proto);
    plan.base_latency = microseconds(k.ring_base_us[pi]);
    plan.step_latency = microseconds((c.nvlink ? k.ring_nvlink_us : k.ring_pci_us)[pi]);
    plan.net_step_latency = microseconds(k.ring_net_us[pi]);
    plan.tuned_time = Seconds(-1);
    return plan;
  }
  double best = -1;
  for (NcclAlgo a : {NcclAlgo::ring, NcclAlgo::tree})
    for (Proto pr : {Proto::ll, Proto::ll128, Proto::simple}) {
      const double t = nccl_tuning_time(p, c, coll, a, pr, bytes).value;
      if (t >= 0 && (best < 0 || t < best)) {
        best = t;
        plan.algo = a;
        plan.proto = pr;
      }
    }
  plan.tuned_time = Seconds(best);
  const int pi = proto_index(plan.proto);
  // Channels: drop channels while the size leaves too little work per thread (enqueue.cc topoGetAlgoInfo).
  int nc = c.channels;
  const int64_t nt = max_threads(plan.proto), thr = thread_threshold(plan.algo, plan.proto, c.nranks);
  while (nc > 1 && bytes < int64_t(nc) * nt * thr) --nc;
  plan.channels = nc;
  // Chunk: a buffer step (buffSize / NCCL_STEPS) times chunkSteps (rings on Simple: NCCL_STEPS/2 for
  // all-reduce, all-gather and reduce-scatter, 1 for broadcast); LL carries half data, LL128 120/128.
  const int64_t buff = plan.proto == Proto::ll ? k.ll_buff : plan.proto == Proto::ll128 ? k.ll128_buff : k.simple_buff;
  int64_t chunk = buff / k.steps;
  const bool bcast = coll == "broadcast" || coll == "reduce";
  if (plan.proto == Proto::simple && plan.algo == NcclAlgo::ring && !bcast) chunk *= k.steps / 2;
  if (plan.proto == Proto::ll) chunk /= 2;
  if (plan.proto == Proto::ll128) chunk = chunk / 128 * 120;
  plan.chunk_bytes = chunk;
  const auto& base = plan.algo == NcclAlgo::ring ? k.ring_base_us : k.tree_base_us;
  plan.base_latency = microseconds(base[pi]);
  const auto& hw = plan.algo == NcclAlgo::ring ? (c.nvlink ? k.ring_nvlink_us : k.ring_pci_us)
                                               : (c.nvlink ? k.tree_nvlink_us : k.tree_pci_us);
  plan.step_latency = microseconds(hw[pi]);
  plan.net_step_latency = microseconds((plan.algo == NcclAlgo::ring ? k.ring_net_us : k.tree_net_us)[pi]);
  if (plan.proto == Proto::ll128)
    plan.per_channel_cap = GBps(k.per_ch_ring_ll128_GBps);
  else if (plan.proto == Proto::ll)
    plan.per_channel_cap = GBps(k.ll_max_bw_GBps / std::max(1, nc));
  return plan;
}

}  // namespace cclab::model
