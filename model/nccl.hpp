// A model of how NCCL runs a collective with NVLink SHARP off (NCCL_NVLS_ENABLE=0): which algorithm
// (ring, or tree for all-reduce) and protocol (LL / LL128 / Simple) it picks for a size, how many
// channels it uses and how large its chunks are. The choice follows NCCL's own tuning model
// (src/graph/tuning.cc: per-algorithm/protocol latency + size / bandwidth, minimum wins; src/enqueue.cc:
// channel reduction for small sizes and chunk sizes), read from NVIDIA/nccl, not copied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/params.hpp"

namespace cclab::model {

enum class NcclAlgo : uint8_t { ring, tree, p2p };
std::string_view nccl_algo_name(NcclAlgo a);

// What NCCL knows of the communicator when it tunes.
struct NcclComm {
  int nranks = 1;
  int nnodes = 1;
  bool nvlink = true;        // intra-node rings on NVLink (else PCIe)
  double bw_intra_GBps = 0;  // ring bandwidth per channel inside a node (graph->bwIntra)
  double bw_inter_GBps = 0;  // per channel across nodes (graph->bwInter)
  int channels = 1;          // comm->nChannels
};
// From a topology and the ranks used (first `nranks` GPUs, `node_size` per server).
NcclComm nccl_comm_for(const topo::Topology& t, const ModelParams& p, int nranks, int node_size);

struct NcclPlan {
  NcclAlgo algo = NcclAlgo::ring;
  Proto proto = Proto::simple;
  int channels = 1;             // channels used for this size
  int64_t chunk_bytes = 0;      // per channel per step (payload bytes)
  Seconds base_latency;         // NCCL's baseLat: charged once per collective
  Seconds step_latency;         // hwLat of a step inside a node (NVLink or PCIe)
  Seconds net_step_latency;     // hwLat of a step that crosses the network
  BytesPerSec per_channel_cap;  // per-channel ceiling (LL128, LL), 0: none
  Seconds tuned_time;           // NCCL's own estimate for the chosen pair (for reports and tests)
};

// NCCL's estimate for one (algorithm, protocol): latency + bytes / bandwidth (tuning.cc). Negative when
// the pair is not available for the collective.
Seconds nccl_tuning_time(const ModelParams& p, const NcclComm& c, std::string_view collective, NcclAlgo algo,
                         Proto proto, int64_t bytes);
// The pair NCCL would choose, with channels and chunking for the size.
NcclPlan nccl_plan(const ModelParams& p, const NcclComm& c, std::string_view collective, int64_t bytes);

}  // namespace cclab::model
