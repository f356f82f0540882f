// The cost parameters of the simulator (the "profile"): everything that is not a link of the topology.
//
// Links (per-hop latency α and per-direction bandwidth 1/β) come from the topology; this struct holds
// what sits on top of them: per-protocol latencies and efficiencies (NCCL's LL / LL128 / Simple, copy
// engines, SM-driven peer loads/stores, our flash / stream kernels), kernel launch and synchronisation
// latencies, local memory and matmul rates, and the NCCL tuning constants the library-baseline model uses.
//
// Every number carries its source. A profile file (see load_profile) may override any of them by name,
// which is how the calibration (model/calibrate*, model/profile*) feeds measured values in.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/schedule.hpp"
#include "core/units.hpp"
#include "topology/topology.hpp"

namespace cclab::model {

// A number and where it came from (datasheet, measurement with machine and date, NCCL source file).
template <class T>
struct Sourced {
  T value{};
  std::string source;
};

// How a transfer is carried out. The first three are NCCL's protocols; the others are the executor's
// lowerings of our own algorithms.
enum class Proto : uint8_t {
  ll,           // NCCL LL: 8-byte stores of 4 data bytes + 4 flag bytes; lowest latency, half the bandwidth
  ll128,        // NCCL LL128: 128-byte lines carrying 120 data bytes
  simple,       // NCCL Simple: bulk copies with a flag per step
  copy_engine,  // cudaMemcpyPeerAsync / DMA copy engines
  sm_peer,      // a kernel loading from / storing to peer memory (also remote-source reductions)
  flash,        // our flash kernel (cp.async prefetch of peer chunks, no cross-GPU sync inside)
  stream,       // our stream kernel (persistent lanes, ring buffer with sequence flow control)
};
constexpr int kNumProtos = 7;
std::string_view proto_name(Proto p);
Proto parse_proto(std::string_view name);  // throws input error

// One point of a size-dependent efficiency curve: at `bytes` per transfer, this factor multiplies the
// protocol's efficiency. Points are interpolated linearly in log2(bytes) and clamped at the ends.
struct EffPoint {
  int64_t bytes = 0;
  double factor = 1;
};

struct ProtocolParams {
  // Fixed cost per transfer op on top of the path's hop latencies (issue, completion flag, per-step
  // handshake). NCCL: the per-step hwLat of src/graph/tuning.cc.
  Sourced<Seconds> latency;
  // Fraction of a link's bandwidth that carries payload (the rest: flags, protocol overhead). A flow of
  // S bytes puts S / efficiency bytes on each link of its path.
  Sourced<double> efficiency{1.0, "ideal"};
  // Upper bound on one flow's payload rate whatever the links offer (0: none), e.g. NCCL's per-channel
  // LL128 ceiling or what one copy engine can drive.
  Sourced<BytesPerSec> max_rate;
  // Optional size-dependent factor (empty: 1 at every size). Filled by calibration.
  std::vector<EffPoint> curve;
  std::string curve_source;

  double efficiency_at(int64_t bytes) const;
};

// NCCL's tuning model (src/graph/tuning.cc, NCCL 2.28, NVIDIA/nccl master read 2026-11): the constants
// it uses to choose algorithm and protocol by size, and the buffer sizes that set its chunking.
struct NcclTuning {
  // baseLatencies[algo][proto] (µs): ring and tree, protocols LL, LL128, Simple.
  std::array<double, 3> ring_base_us{6.6, 14.0, 8.4};
  std::array<double, 3> tree_base_us{6.8, 14.0, 8.4};
  // hwLatencies[hw][algo][proto] (µs): per step.
  std::array<double, 3> ring_nvlink_us{0.6, 1.9, 3.4};
  std::array<double, 3> tree_nvlink_us{0.6, 1.25, 4.0};
  std::array<double, 3> ring_pci_us{1.0, 2.5, 5.7};
  std::array<double, 3> tree_pci_us{1.0, 1.9, 4.0};
  std::array<double, 3> ring_net_us{2.7, 4.0, 14.0};
  std::array<double, 3> tree_net_us{5.0, 8.5, 14.0};
  // Bandwidth ceilings (GB/s): llMaxBws (single node, by architecture), per-channel LL128 ring ceiling,
  // per-channel tree ceiling. Set per architecture by defaults_for().
  double ll_max_bw_GBps = 141.0;
  double per_ch_ring_ll128_GBps = 36.7;
  double per_ch_tree_GBps = 38.7;
  double per_ch_tree_ll128_GBps = 36.7;
  // Channels NCCL opens for collectives (NVLS off) where its ring search is not emulated (PCIe, direct NVLink,
  // across nodes); one NVSwitch node takes the search's own count (model/nccl.cpp, nccl_ring_graph). The sim lowers
  // it for small sizes as NCCL does (enqueue.cc: while nBytes < nc * nthreads * threadThreshold, nc--).
  Sourced<double> max_channels{16, "NCCL on NVSwitch systems: 16 ring channels, graph search (src/graph/search.cc)"};
  // Buffer sizes (bytes per channel, src/init.cc defaults): Simple 4 MiB, LL 512 KiB, LL128 ~4.7 MiB;
  // NCCL_STEPS = 8 steps per buffer.
  int64_t simple_buff = 4 << 20;
  int64_t ll_buff = 8 * 512 * 8 * 16;      // NCCL_LL_LINES_PER_THREAD * NCCL_LL_MAX_NTHREADS * NCCL_STEPS * 16
  int64_t ll128_buff = 120 * 640 * 8 * 8;  // NCCL_LL128_ELEMS_PER_THREAD * MAX_NTHREADS * NCCL_STEPS * 8
  int steps = 8;
  std::string source = "NVIDIA/nccl src/graph/tuning.cc, src/enqueue.cc, src/init.cc (2.28)";
};

// Measured time against size of one microbenchmark (a calibration table, e.g. "p2p.ce.bidir"): the
// points as measured, interpolated piecewise linearly in log(bytes) / log(time); past the last point the
// last rate continues, below the first the first time holds. This is the "efficiency curve per path"
// in its most direct form: no functional shape is imposed on the executor's transfers.
struct PathTable {
  std::vector<std::pair<int64_t, double>> points;  // (bytes, seconds), ascending bytes
  std::string source;
  // How the series was measured, where pricing a plan from it needs to know (0: not recorded): kernels launched
  // per replayed CUDA graph (the graph's fixed cost is spread over them).
  int launches_per_replay = 0;

  bool empty() const { return points.empty(); }
  Seconds time(double bytes) const;
  // time(bytes) - time(smallest point): what the size adds on top of the fixed cost of one operation.
  Seconds size_part(double bytes) const;
};

// The costs of the lowered plans' pieces (lower/lowering.hpp: graphs, fused kernels, flags). Every number is set by
// the calibration from a microbenchmark (graph.*, latency.*); the defaults are estimates that say so.
struct ExecutorParams {
  // General plans: a CUDA graph of copy-engine copies and kernels on streams (lower/general.hpp), replayed.
  Sourced<Seconds> copy_node;        // one copy-engine copy node in a replayed graph (fixed part)
  Sourced<Seconds> kernel_node;      // one kernel node in a replayed graph (fixed part)
  Sourced<Seconds> kernel_pdl;       // the same launched with programmatic dependent launch
  Sourced<Seconds> fork_local;       // fork to a second stream of the origin GPU and join back (two edges)
  Sourced<Seconds> fork_local2;      // fork to two streams of the origin GPU (copies on both) and join back
  Sourced<Seconds> fork_local_mix;   // one local stream with a local then a peer copy: beyond the two nodes
  Sourced<Seconds> event_peer;       // one dependency between streams of two GPUs inside the graph
  Sourced<Seconds> copy_local_node;  // one device-to-device copy node within a GPU
  // Fork from GPU0's origin to k streams on each of two GPUs and join back, k = 1, 2, 3 (more: the last
  // step continues).
  std::array<Sourced<Seconds>, 3> fork_streams;
  // The same with an empty kernel on each stream instead of a copy, and with one stream of each kind.
  std::array<Sourced<Seconds>, 3> fork_kernel_streams;
  Sourced<Seconds> fork_mix;
  Seconds fork_for_streams(int k) const;
  // Fork / join of `copy_streams` streams that issue copies and `kernel_streams` that issue only kernels, per
  // GPU: the measured curves where they apply, else the copy streams' fork plus the kernel streams'.
  Seconds fork_for(int copy_streams, int kernel_streams) const;
  // Kernels that synchronise through flags in peer memory (bidir modes, fused path).
  Sourced<Seconds> flag_rtt;  // flag store into the peer + answer, round trip
  // The fused path's synchronisation (per-GPU graphs, PDL launches, fence.sc.sys + release / acquire flags).
  Sourced<Seconds> flag_hop;     // one flag hop between the GPUs' kernels
  Sourced<Seconds> flag_launch;  // one launch of such a kernel, its flags aside
  // Measured only by newer calibrations (0: not measured; the models then compose the older pieces).
  // Fork to a stream on each GPU running a local then a peer copy, join back: beyond the two copy nodes.
  Sourced<Seconds> fork_both_mix;
  // A kernel node that reads the peer (a reduce of 16 bytes), on a forked stream of GPU0, fork aside.
  Sourced<Seconds> reduce_peer_node;
  // A dependency between two streams of one GPU (kernel -> copy) while streams of both GPUs run.
  Sourced<Seconds> local_edge_busy;
  // A dependency from a copy on one GPU to a kernel on the other, with a copy and a kernel stream per GPU.
  Sourced<Seconds> event_peer_mix;
  // One launch of a flag-synchronised kernel that first loads a lane's op table (the fused kernel's prologue).
  Sourced<Seconds> flag_launch_table;
  // Fork to 2 copy streams and 1 kernel stream on each GPU and join back (the copy-mode all-reduce's streams),
  // beyond one copy node.
  Sourced<Seconds> fork_mix21;
  // One flag exchange between kernels of two GPUs: both store into the peer, then wait for the peer's store
  // (two lanes waiting on each other), against flag_hop where one GPU waits at a time.
};

struct ModelParams {
  std::string name;  // profile or preset it was made for
  // Transfer protocols, indexed by Proto.
  std::array<ProtocolParams, kNumProtos> proto;

  // Launching the first kernel (or copy) of a collective on each rank: every rank's first op starts
  // this late.
  Sourced<Seconds> launch_latency;
  // A dependency on another rank's op (the signal/wait pair): flag store across the fabric, seen by a
  // polling peer.
  Sourced<Seconds> sync_latency;
  // A dependency between two channels (streams / block groups) of the same rank.
  Sourced<Seconds> local_dep_latency;
  // Fixed cost of a local copy / reduction / compute op (a kernel or a step inside one).
  Sourced<Seconds> local_op_latency;
  // Local memory traffic (bytes read + written) runs at the GPU's HBM bandwidth × this.
  Sourced<double> mem_efficiency{1.0, "ideal"};
  // Matmuls run at the GPU's dense 16-bit tensor-core peak × this (fp32: the fp32 rate below).
  Sourced<double> matmul_efficiency{1.0, "ideal"};
  // fp32 matmul (no tensor cores, or TF32 off) as a fraction of the 16-bit peak.
  Sourced<double> fp32_matmul_ratio{1.0, "ideal"};
  // Used when a GPU node of the topology has no mem_bw / flops.
  Sourced<BytesPerSec> default_mem_bw;
  Sourced<double> default_flops{0, ""};

  // Per link kind: replace the topology's bandwidth / per-hop latency (calibration measures paths).
  struct LinkOverride {
    std::optional<Sourced<BytesPerSec>> bw;
    std::optional<Sourced<Seconds>> latency;
  };
  std::array<LinkOverride, 5> link;  // indexed by topo::LinkKind

  // The textbook model: local copies, reductions and matmuls take no time whatever the GPUs' rates.
  bool free_local_work = false;

  NcclTuning nccl;
  enum class Arch : uint8_t { ampere, hopper } arch = Arch::hopper;

  ExecutorParams exec;
  // Calibration tables by microbenchmark series name (bench_names() of model/calibrate.hpp).
  std::map<std::string, PathTable, std::less<>> tables;
  const PathTable* table(std::string_view series) const {
    auto it = tables.find(series);
    return it == tables.end() || it->second.empty() ? nullptr : &it->second;
  }

  // True: no latencies, efficiencies 1, local work free: the textbook α-β model that ALGORITHMS.md's
  // closed forms describe (the network's α and β still come from the topology).
  static ModelParams ideal();

  const ProtocolParams& of(Proto p) const { return proto[size_t(p)]; }
  ProtocolParams& of(Proto p) { return proto[size_t(p)]; }
};

// The defaults the CLI uses for a topology: its GPU architecture decides the NCCL constants and the
// executor parameters (H100/H200: measured on the 2 x H200 machine, docs/h200x2.md; A100: datasheet).
ModelParams defaults_for(const topo::Topology& t);

// Every overridable number by name, e.g. "proto.simple.latency_us", "sync_latency_us",
// "mem_efficiency", "link.nvlink.bw_GBps", "nccl.max_channels". Units are in the names (us, GBps).
std::vector<std::string> param_names(const ModelParams& p);
// Sets one number (value in the unit its name says) and its source. Throws input error for unknown names.
void set_param(ModelParams& p, std::string_view name, double value, const std::string& source);
std::optional<double> get_param(const ModelParams& p, std::string_view name);

// Profiles. The built-in format is JSON ("tables" is optional):
//   {"name": "h200x2", "machine": "...", "date": "...",
//    "params": {"proto.copy_engine.latency_us": {"value": 1.7, "source": "..."}, "mem_efficiency": 0.9, ...},
//    "curves": {"copy_engine": {"points": [[4096, 0.5], ...], "source": "..."}},
//    "tables": {"p2p.ce.uni": {"points": [[8, 2.2e-6], ...], "source": "..."}}}
// A curve may instead give its efficiency 1 / (1 + (efficiency_half / S)^efficiency_exponent) with "from_bytes" and
// "to_bytes" (sampled at powers of two between them); a table its fit {"fit": {"alpha_us", "beta_GBps" or
// "peak_TFLOPs", "efficiency_half", "efficiency_exponent"}, "sizes": [...]}: t(S) = alpha + S / (beta * eta(S)).
// Unknown keys at the top level are kept for the calibration engineer's own use (ignored here).
// load_profile applies the file over `base` (normally defaults_for(topology)).
ModelParams load_profile(const std::string& path, ModelParams base);
// The table a series is read as: a series repeated at a pinned launch count names the count (".n100"), its table
// the measurement alone (the count travels in PathTable::launches_per_replay).
std::string table_name(const std::string& series, int launches_per_replay);
// Writes every parameter (value and source) in the built-in format; load_profile reads it back exactly.
std::string profile_json(const ModelParams& p);

// Hook for other profile formats: a loader registered for a file extension (e.g. ".yaml") is used by
// load_profile for files ending in it. The calibration engineer registers theirs from model/profile*.
using ProfileLoader = std::function<void(const std::string& path, ModelParams& params)>;
void register_profile_loader(const std::string& extension, ProfileLoader loader);

// The protocol our (non-library) schedules' ops are charged under, from the schedule's lowering.
Proto transfer_protocol(Lowering lowering, OpKind kind, bool remote_reduce);

}  // namespace cclab::model
