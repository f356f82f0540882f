// Pieces of the executor path models (sim/paths.cpp) that live in files of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/units.hpp"
#include "lower/lowering.hpp"
#include "model/params.hpp"

namespace cclab::sim {

// NCCL's collectives on 2 GPUs from its measured send/recv (nccl.p2p.*); nullopt where that model does not
// apply (other rank counts, profiles without those series): the tuning model of sim/predict.cpp then does.
// `launches`: the lowered plan's kernel launches per replayed graph (0: not given; plan_launches gives the general
// lowering's).
// The protocol is the one NCCL's tuner picks on `topology` (model::nccl_plan).
std::optional<Seconds> nccl_two_gpus(const model::ModelParams& P, const topo::Topology& topology, std::string_view coll,
                                     int64_t bytes, int nranks, std::string& how, int launches = 0);

// NCCL's fixed cost per collective on this machine at protocol `proto` (LL or Simple), beside the steps and
// bytes the tuning model prices: its send/recv of the smallest size measured, one way at that protocol pinned
// (nccl.p2p.<proto>.graph.uni, shifted to a graph's default launches per replay), less the one flag hop that moved
// it (sync_latency). The launch is the GPU's own, whatever the rank count: it carries to n GPUs of the machine.
// nullopt without the series.
std::optional<Seconds> nccl_measured_launch(const model::ModelParams& P, model::Proto proto);

struct ExecPath;

// One all-reduce kernel of the lowered plan (sim/paths_bidir.cpp), priced from the mechanisms the plan says it is
// made of (lower::KernelMechanisms) and the profile's measurements of them; `how` says which.
Seconds bidir_kernel_time(const model::ModelParams& P, const ExecPath& path, DType dtype, std::string& how);

// The launches per replayed graph of a plan whose count is not given (0): a graph's default (lower::launches_for).
int plan_launches(int launches);

// What a plan of `planned` launches per replayed graph pays beyond a series measured at `measured` (its table's
// launches_per_replay): the per-replay fixed cost (fork, graph launches, join) spread over other launches,
// t(N) = c + F / N (bidir.replay). 0 without that series, when either count is 0 or they are equal; appends to
// `how` when it applies.
Seconds replay_shift(const model::ModelParams& P, int measured, int planned, std::string& how);

}  // namespace cclab::sim
