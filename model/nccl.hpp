// A model of how NCCL (2.28) runs a collective: which algorithm (Ring, Tree, NVLS, NVLSTree, PAT), protocol
// (LL / LL128 / Simple) and channels it picks for a size, GPU architecture, node count and GPUs per node, and
// what the chosen plan costs on the machine's hardware.
//
// The choice follows NCCL's own tuning model (src/graph/tuning.cc: per-algorithm/protocol latency + size /
// bandwidth, the minimum wins; src/enqueue.cc: channels dropped for small sizes, chunk sizes; src/transport/nvls.cc:
// NVLS channels), read from NVIDIA/nccl and rewritten here, not copied: each constant names its source.
//
// The cost is priced from mechanisms. Rings and trees inside one node with peer access run as a schedule on the
// flow simulator (sim/predict.cpp). Three mechanisms the simulator's links do not express are priced here:
//  - NVLS (NVLink SHARP): the switch reads every GPU's share and reduces it (multimem.ld_reduce), then multicasts
//    the result (multimem.st); each GPU port carries S (n+1)/n per direction, bounded by the switch's reduction rate.
//  - NCCL's SHM transport (GPUs without peer access, e.g. GeForce parts): SM stores into pinned host memory and SM
//    loads out of it across PCIe, with the transaction overheads of posted writes and read completions, the PCIe
//    switch uplink shared by the GPUs behind it.
//  - Communicators across nodes: NICs per node (rails) at their line rate less packet headers, rings and trees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "model/params.hpp"

namespace cclab::model {

enum class NcclAlgo : uint8_t { ring, tree, p2p, nvls, nvls_tree, pat };
std::string_view nccl_algo_name(NcclAlgo a);  // "ring", "tree", "p2p", "nvls", "nvls_tree", "pat"

// NCCL's settings as a record's `tune` column or `--tune` hold them. Understands NCCL's variables
// (NCCL_ALGO=Ring[,Tree...], NCCL_PROTO=Simple[,LL...], NCCL_NVLS_ENABLE=0|1, NCCL_P2P_DISABLE=1,
// NCCL_SHM_DISABLE=1) and the free text of published records ("NCCL 2.18.5 defaults (NVLS enabled)", "NVLS
// disabled", "P2P not supported by the GPUs"). Tokens it does not know are ignored (other settings in the same
// string belong to the lowering: lowering=fused, mode=ll, ...).
struct NcclSettings {
  uint8_t algos = 0;         // bit per NcclAlgo allowed by NCCL_ALGO (0: all)
  uint8_t protos = 0;        // bit per Proto (ll, ll128, simple) allowed by NCCL_PROTO (0: all)
  std::optional<bool> nvls;  // NCCL_NVLS_ENABLE or "NVLS enabled/disabled"; nullopt: NCCL's default
  bool p2p_disable = false;  // NCCL_P2P_DISABLE=1, "P2P not supported", "no P2P"
  bool shm_disable = false;  // NCCL_SHM_DISABLE=1
  std::string version;       // "2.18.5" from "NCCL 2.18.5 ...", for reports
  bool allows(NcclAlgo a) const { return algos == 0 || (algos >> int(a)) & 1; }
  bool allows(Proto p) const { return protos == 0 || (protos >> int(p)) & 1; }
  std::string describe() const;  // what was understood, e.g. "NCCL_NVLS_ENABLE=0 NCCL_PROTO=simple"; "" for none
};
NcclSettings parse_nccl_settings(std::string_view tune);

// How neighbouring ranks of one node exchange data.
enum class NcclTransport : uint8_t {
  nvlink,  // P2P over NVLink (through an NVSwitch or a bridge)
  pcie,    // P2P over PCIe
  shm,     // no peer access: staged through pinned host memory (NCCL's SHM transport)
};
std::string_view nccl_transport_name(NcclTransport t);

// What NCCL knows of the communicator when it tunes, and the hardware facts its cost depends on.
struct NcclComm {
  int nranks = 1;
  int nnodes = 1;
  int ppn = 1;         // ranks per node
  bool nvlink = true;  // intra-node rings on NVLink (else PCIe or host memory)
  NcclTransport transport = NcclTransport::nvlink;
  int compcap = 90;          // GPU compute capability x 10 (70 Volta, 75 Turing, 80 Ampere, 90 Hopper, 100 Blackwell)
  bool amd_cpu = false;      // NCCL's CPU vendor (llMaxBw across nodes, network overhead)
  bool nvswitch = false;     // the node's GPUs meet in an NVSwitch
  bool nvls = false;         // NVLS usable (NVSwitch, Hopper or later, enough GPUs per node, not disabled)
  double bw_intra_GBps = 0;  // ring bandwidth per channel inside a node, as NCCL's graph search sees it
  double bw_inter_GBps = 0;  // per channel across nodes
  int channels = 1;          // comm->nChannels (ring / tree): what a collective may spread over
  int graph_channels = 1;    // the ring graph's channels, which tuning.cc's bandwidths count (bw_* are per one)
  int nvls_channels = 0;     // comm->nvlsChannels
  // Hardware (datasheet rates per direction, GB/s).
  double nvlink_GBps = 0;  // a GPU's NVLink port(s), all lanes
  int nvlink_lanes = 0;
  double pcie_GBps = 0;            // a GPU's PCIe link
  double uplink_GBps = 0;          // the PCIe link from the GPU's switch to its CPU (= pcie_GBps without a switch)
  int gpus_per_uplink = 1;         // ranks of the communicator whose host traffic shares that uplink
  double host_mem_GBps = 0;        // DRAM of the GPU's socket
  double host_path_us = 0;         // latency of the path from a GPU to its socket's DRAM (per-hop sum)
  int nics = 0;                    // NICs per node the communicator's ranks use (rails)
  double nic_GBps = 0;             // line rate of one NIC
  double nic_pcie_GBps = 0;        // the PCIe link a NIC sits on
  int servers_per_leaf = 0;        // fat tree: servers under one leaf switch per rail (0: no fabric)
  int oversubscription = 1;        // leaf downlink : uplink bandwidth
  double switch_reduce_flops = 0;  // NVLS: in-switch reduction rate of the node's NVSwitch chips, in sum
  std::string switch_source;
  NcclSettings settings;
};
// From a topology and the ranks used (first `nranks` GPUs, `node_size` per server) under `settings`.
NcclComm nccl_comm_for(const topo::Topology& t, const ModelParams& p, int nranks, int node_size,
                       const NcclSettings& settings = {});

struct NcclPlan {
  NcclAlgo algo = NcclAlgo::ring;
  Proto proto = Proto::simple;
  int channels = 1;             // channels used for this size
  int64_t chunk_bytes = 0;      // per channel per step (payload bytes)
  Seconds base_latency;         // NCCL's baseLat: charged once per collective
  Seconds step_latency;         // hwLat of a step inside a node (NVLink or PCIe)
  Seconds net_step_latency;     // hwLat of a step that crosses the network
  BytesPerSec per_channel_cap;  // per-channel ceiling (LL128, LL, NCCL's NVLink rate), 0: none
  Seconds tuned_time;           // NCCL's own estimate for the chosen pair (for reports and tests)
  Seconds tuned_latency;        // its latency part
  Seconds latency;              // the latency the prediction charges: NCCL's, with per-step latencies no lower
                                // than the mechanisms' (a flag hop across NVLink, a poll of host memory)
  bool forced = false;          // NCCL_ALGO / NCCL_PROTO narrowed the choice
};

// NCCL's estimate for one (algorithm, protocol): latency + bytes / bandwidth (tuning.cc). Negative when the pair
// is not available for the collective on this communicator (or the settings rule it out).
Seconds nccl_tuning_time(const ModelParams& p, const NcclComm& c, std::string_view collective, NcclAlgo algo,
                         Proto proto, int64_t bytes);
// Its latency part alone (negative when unavailable).
Seconds nccl_tuning_latency(const ModelParams& p, const NcclComm& c, std::string_view collective, NcclAlgo algo,
                            Proto proto);
// The pair NCCL would choose, with channels and chunking for the size.
NcclPlan nccl_plan(const ModelParams& p, const NcclComm& c, std::string_view collective, int64_t bytes);

// The cost of a plan from the mechanisms the flow simulator does not express (NVLS, NVLSTree, SHM, across
// nodes): NCCL's latency for the plan plus the data's time on the busiest resource. nullopt: a ring or tree of
// one node with peer access, which the flow simulator prices from the plan.
struct NcclCost {
  Seconds time;
  std::string how;  // the mechanism and its bound, for the record's note
};
std::optional<NcclCost> nccl_mechanism_cost(const ModelParams& p, const NcclComm& c, const NcclPlan& plan,
                                            std::string_view collective, int64_t bytes, DType dtype);

// The channels a transfer to one peer may stripe over (graph/paths.cc, ncclTopoComputeP2pChannels): 2 per NVLink link
// to the peer, 2 over PCIe or a network, at most the communicator's channels, rounded up to a power of 2: 32 on
// H100/H200 (18 links, 24 channels; NCCL 2.28.3 logged "32 p2p channels per peer" on 2 and 4 x H200).
int nccl_p2p_channels_per_peer(const NcclComm& c);
// The channels one send (or receive) of `bytes` to a peer runs on at `proto` (enqueue.cc, addP2pToPlan and
// scheduleP2pTasksToPlan): parts of at least a protocol step / 8 inside a node, on at least the channels per peer
// halved until all the ranks' fit the communicator's (16 for 2 ranks on H200), doubled while parts exceed 32 steps.
int nccl_p2p_channels(const ModelParams& p, const NcclComm& c, Proto proto, int64_t bytes);

// NCCL's NVLink rate per link for a compute capability (topo.h SMxx_NVLINK_BW, GB/s): what its rings reach.
double nccl_nvlink_per_link_GBps(int compcap);
// Compute capability x 10 of a GPU by its model name ("H100 SXM5 80GB" -> 90); 0 when unknown.
int compcap_of_model(std::string_view model);

}  // namespace cclab::model
