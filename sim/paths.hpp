// The executor's lowered plans (lower/lowering.hpp) as the simulator prices them, from microbenchmarks only:
//   general   a CUDA graph of copy-engine copies and reduce kernels on streams, forked from and joined to
//             GPU0's stream, cross-stream dependencies as events, replayed;
//   fused     one kernel per GPU runs the whole schedule, lanes of CTAs, flags in peer memory;
//   kernel    allreduce.bidir's kernels (ll, flash, stream, push, lamport);
//   library   NCCL, through its measured send/recv on 2 GPUs where the profile has them.
// Each plan is costed with the profile's measured pieces: graph node and edge costs (graph.*), flag round
// trips (latency.flag), and the measured time-against-size of the transfers it makes (model::PathTable of
// p2p.*, copy.local, reduce.*), never a collective record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lower/lowering.hpp"
#include "sim/predict.hpp"

namespace cclab::sim {

// What the path models read of a lowered plan.
struct ExecPath {
  enum class Kind : uint8_t { general, fused, bidir, nccl };
  Kind kind = Kind::general;
  lower::KernelMechanisms kernel;  // bidir: the kernel's mechanisms (lower/ says which)
  bool pdl = false;                // kernels launched with programmatic dependent launch
  int launches = 0;                // the lowered plan's kernel launches per replay (lower/ decides them)
};
ExecPath exec_path_of(const lower::LoweredPlan& plan, const AlgoArgs& args);

// The machine facts the lowering needs, from the topology (SMs per GPU by model; rank r on GPU r).
lower::Machine machine_of(const topo::Topology& t);

// Whether the parameters carry the measurements the executor's plans are priced with (a calibrated profile):
// without them predict() simulates the algorithm's schedule on the topology's links instead.
bool prices_executor_plans(const model::ModelParams& P);

// The executor's plan for (algo, args) on the simulator's machine, priced; nullopt where the parameters do not
// price executor plans (no calibrated profile) or this plan's path has no model (NCCL beyond 2 GPUs: the NCCL
// tuning model of predict() applies; the all-reduce kernels beyond their 8 ranks: the flow model). In the second case
// `unpriced` receives the plan's columns, so the record still names the plan it stands for.
std::optional<Prediction> predict_executor(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                           std::vector<std::pair<std::string, std::string>>* unpriced = nullptr);

// The executor's plan for (algo, args), priced whatever the parameters hold (tests; the tables a plan needs
// must be there). Throws an input error where the plan's path has no model.
Prediction predict_plan(Simulator& sim, const Algorithm& algo, const AlgoArgs& args);

// The collective matmul's cuBLAS references (matmul.cublas_full, matmul.cublas_shard_x<D>), measured by the
// executor beside its collective matmuls.
bool is_matmul_reference(std::string_view algo);
Prediction predict_matmul_reference(Simulator& sim, const std::string& name, const AlgoArgs& args);

}  // namespace cclab::sim
