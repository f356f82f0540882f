// The discrete-event, flow-level simulator (DESIGN.md "Simulator semantics").
//
// Every op of a schedule becomes work on shared resources:
//   - put / get, and each remote source of a reduce: a flow of the op's bytes on the directed links of
//     the topology's route (each direction of a full-duplex link is its own resource), plus the op's
//     local memory traffic where it reduces;
//   - copy / local reduce: a flow on the rank's memory system (bytes read + written, at HBM bandwidth);
//   - compute: a flow of FLOPs (matmul) or bytes (sparse steps) on the rank's tensor cores / memory.
// Flows that share a resource share it max-min fairly (progressive filling), recomputed at each event
// time only for the connected component of resources and flows that the event touched. Events at the
// same instant are handled as one batch, so symmetric steps (every rank of a ring starting its next
// chunk together) cost one recomputation per component, not one per flow.
//
// An op starts when its dependencies (explicit, and the previous op of its (rank, channel)) have
// ended, plus the synchronisation latency of a dependency on another rank (or another channel). Its
// end is the end of its flow plus its fixed latency: the route's hop latencies and the protocol's
// per-transfer latency (transfers) or the local-op latency (local work).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "core/units.hpp"
#include "model/params.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {

// How the transfers of one schedule are charged. Defaults: the protocol the schedule's lowering maps
// to (model::transfer_protocol) and the model's launch latency.
struct RunOptions {
  std::optional<model::Proto> proto;        // force one protocol for every transfer (NCCL model)
  std::optional<Seconds> start_latency;     // every rank's first op starts this late (default: launch)
  std::optional<Seconds> step_latency;      // per-transfer latency instead of the protocol's
  std::optional<Seconds> net_step_latency;  // per-transfer latency of transfers that cross the network
  std::optional<BytesPerSec> per_flow_cap;  // cap on every transfer flow instead of the protocol's
  std::optional<Seconds> sync_latency;      // cross-rank dependency latency instead of the model's
  std::optional<Seconds> local_op_latency;  // fixed cost of local ops instead of the model's
  // The step latency is the whole per-transfer latency (NCCL's hwLat is measured per ring step, wires
  // included): a transfer costs max(route latency, step latency) instead of their sum.
  bool step_covers_route = false;
  // The executor's paths (sim/paths.hpp) charge its own fixed costs and measured rates per op kind:
  std::optional<Seconds> copy_latency;                // per put / get / copy (a copy node, a fused copy step)
  std::optional<Seconds> local_copy_latency;          // per copy within one rank (instead of copy_latency)
  std::optional<Seconds> kernel_latency;              // per reduce / compute (a kernel node, a fused reduce step)
  std::optional<Seconds> peer_kernel_latency;         // per reduce reading a peer (instead of kernel_latency)
  std::optional<Seconds> local_dep_latency;           // cross-channel dependency on one rank instead of the model's
  const model::ProtocolParams* copy_proto = nullptr;  // replaces the protocol of peer copies
  const model::ProtocolParams* peer_reduce_proto = nullptr;  // replaces the protocol of remote reduce sources
  // Scale the memory traffic of local copies / local reductions by 1 / efficiency_at(op bytes) (measured
  // local rates against size: caches make small ones faster than HBM, launch tails slower).
  const model::ProtocolParams* local_copy_proto = nullptr;
  const model::ProtocolParams* local_reduce_proto = nullptr;
  // Peer copies from one GPU into the same peer run one at a time, in the order they become ready: copy-engine
  // copies do (two cudaMemcpyPeerAsync into one peer on two streams at once: the first ends when it would alone,
  // the second at twice that, 1 MiB to 512 MiB on 2 x H200; calibration's p2p.ce.pair.*). Otherwise they share
  // the route's links max-min fairly with every other flow.
  bool copies_in_issue_order = false;
  bool record_ops = true;        // keep per-op start / end
  bool record_timeline = false;  // keep per-resource load over time (for --trace)
};

struct OpTime {
  double start = 0, end = 0;  // seconds
};

// A resource of the model: a directed link of the topology, or a GPU's memory system or tensor cores.
struct ResourceStat {
  std::string name;        // "n0.gpu0->n0.nvs0", "gpu3.hbm", "gpu3.tensor"
  std::string kind;        // link kind name, "hbm" or "tensor"
  double capacity = 0;     // bytes/s (FLOP/s for tensor)
  double carried = 0;      // bytes (FLOPs) carried during the run, counting protocol overhead
  double utilisation = 0;  // carried / (capacity * total time)
};

struct LoadSample {
  double t = 0;  // seconds
  int32_t resource = 0;
  double load = 0;  // bytes/s (or FLOP/s) in use from t on
};

struct SimResult {
  Seconds time;                             // end of the last op
  std::vector<OpTime> ops;                  // per op (empty unless record_ops)
  std::vector<ResourceStat> resources;      // only those that carried something
  std::vector<LoadSample> timeline;         // only with record_timeline, in time order
  std::vector<std::string> resource_names;  // index -> name, for timeline samples (only with record_timeline)
  int64_t flows = 0;                        // flows simulated
  int64_t recomputations = 0;               // max-min solves (components) performed
  int64_t events = 0;
  // The busiest resource (highest utilisation) and its utilisation: why the time is what it is.
  std::string bottleneck;
  double bottleneck_utilisation = 0;
};

// A folding of the model's resources for a run of ranks [0, period) that stands for all ranks
// (sim/symmetric.hpp): every resource maps to the representative of its orbit under the shift of every
// rank by `period`.
struct Fold {
  int period = 0;
  std::vector<int32_t> rep;  // resource -> representative
};

class Simulator {
 public:
  // The topology's GPU i is rank i. Routes are cached across runs (a size sweep reuses them).
  Simulator(const topo::Topology& topology, model::ModelParams params, topo::RouteOptions route = {});
  // The same, taking the topology over (a cluster of 131,072 GPUs is worth not copying).
  Simulator(topo::Topology&& topology, model::ModelParams params, topo::RouteOptions route = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Throws an input error when the schedule has more ranks than the topology has GPUs, and an internal
  // error naming the op when the schedule cannot finish (a dependency cycle or a dependency on a
  // missing op).
  SimResult run(const Schedule& s, const RunOptions& opt = {});

  // Rotation symmetry for folded runs (sim/symmetric.hpp): the smallest K such that moving every GPU i
  // to (i + K) mod n maps the topology (links, rates, routes) onto itself, with n / K >= 2; 0 when
  // none was found. Computed once per rank count and route options.
  int fold_period(int nranks);
  // That rotation as a folding (null when there is none).
  const Fold* rotation_fold(int nranks);
  // A finer folding, for schedules whose transfers use only some routes: the shift of every GPU by
  // `period`, checked on the routes of `pairs` (the (from, to) GPUs of the transfers of ranks
  // [0, period)) and of all their shifted copies instead of on the whole graph. nullopt when those
  // routes do not map onto each other link for link (same rates and latencies, every link's orbit of
  // n / period links), or when there are too many of them to check quickly.
  std::optional<Fold> route_fold(int nranks, int period, const std::vector<std::pair<int, int>>& pairs);
  // Runs a schedule that holds only the ops of ranks [0, fold.period) of a symmetric schedule: every
  // resource is folded onto its representative, so the ranks' flows meet exactly the contention all n
  // ranks' flows would. Peers may be any rank. `cross_rank` (one flag per entry of the schedule's
  // dep_pool, or empty) says which dependencies were on another rank before they were pointed at
  // their representatives (a representative may be an op of the depending rank itself); without it,
  // the ranks of the ops decide.
  SimResult run_folded(const Schedule& reduced, const Fold& fold, const RunOptions& opt = {},
                       const std::vector<uint8_t>& cross_rank = {});

  const topo::Topology& topology() const;
  const model::ModelParams& params() const;

 private:
  struct Impl;
  Impl* impl_;
  SimResult run_impl(const Schedule& s, const RunOptions& opt, const std::vector<uint8_t>& cross_rank);
};

}  // namespace cclab::sim
