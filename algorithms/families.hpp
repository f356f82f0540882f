// Internal: each family of algorithms appends its entries to the registry (registry.cpp).
#pragma once

#include <vector>

#include "algorithms/registry.hpp"

namespace cclab {

void add_classic_algorithms(std::vector<Algorithm>& list);   // broadcast, reduce, gather, scatter,
                                                             // allgather, reducescatter, allreduce, alltoall
void add_library_baselines(std::vector<Algorithm>& list);    // <collective>.nccl, allgather_matmul.nccl_cublas
void add_advanced_algorithms(std::vector<Algorithm>& list);  // hierarchical, bidir, sparse, collective matmul

}  // namespace cclab
