// Pieces of the executor path models (sim/paths.cpp) that live in files of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/units.hpp"
#include "model/params.hpp"

namespace cclab::sim {

// NCCL's collectives on 2 GPUs from its measured send/recv (nccl.p2p.*); nullopt where that model does not
// apply (other rank counts, profiles without those series): the tuning model of sim/predict.cpp then does.
std::optional<Seconds> nccl_two_gpus(const model::ModelParams& P, std::string_view coll, int64_t bytes, int nranks,
                                     std::string& how);

}  // namespace cclab::sim
