// Pieces of the executor path models (sim/paths.cpp) that live in files of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/units.hpp"
#include "model/params.hpp"

namespace cclab::sim {

// NCCL's collectives on 2 GPUs from its measured send/recv (nccl.p2p.*); nullopt where that model does not
// apply (other rank counts, profiles without those series): the tuning model of sim/predict.cpp then does.
// `iters`: launches per replayed graph of the record (0: not recorded, as the 20 of the tables).
std::optional<Seconds> nccl_two_gpus(const model::ModelParams& P, std::string_view coll, int64_t bytes, int nranks,
                                     std::string& how, int iters = 0);

struct ExecPath;

// One bidir all-reduce kernel (mode ll, flash, push or stream; sim/paths_bidir.cpp) moving `bytes` per GPU:
// its graph node and body from the profile's measured pieces; `how` says which.
Seconds bidir_kernel_time(const model::ModelParams& P, const ExecPath& path, int64_t bytes, DType dtype,
                          std::string& how);

// What a record timed with `iters` launches per replayed graph pays beyond the bidir.* tables (timed with
// 20): the per-replay fixed cost (fork, graph launches, join) spread over its launches. 0 without the
// bidir.replay series or when iters is 0 or 20; appends to `how` when it applies.
Seconds replay_correction(const model::ModelParams& P, int iters, std::string& how);

}  // namespace cclab::sim
