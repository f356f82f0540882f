// The classic collectives, one file each (algorithms/<collective>_<variant>.cpp). Each builder emits
// its schedule into the Transport; registration (names, summaries) is in classic.cpp and baselines.cpp.
#pragma once

#include "algorithms/registry.hpp"

namespace cclab::classic {

void build_broadcast_binomial(const AlgoArgs& a, Transport& t);
void build_broadcast_pipeline(const AlgoArgs& a, Transport& t);
void build_broadcast_scatter_allgather(const AlgoArgs& a, Transport& t);
void build_reduce_binomial(const AlgoArgs& a, Transport& t);
void build_reduce_direct(const AlgoArgs& a, Transport& t);
void build_reduce_chain(const AlgoArgs& a, Transport& t);  // pipelined chain ending at the root (NCCL's ring reduce)
void build_gather_binomial(const AlgoArgs& a, Transport& t);
void build_gather_direct(const AlgoArgs& a, Transport& t);
void build_scatter_binomial(const AlgoArgs& a, Transport& t);
void build_scatter_direct(const AlgoArgs& a, Transport& t);
void build_allgather_ring(const AlgoArgs& a, Transport& t);
void build_reducescatter_ring(const AlgoArgs& a, Transport& t);
void build_allreduce_ring(const AlgoArgs& a, Transport& t);
void build_allreduce_tree(const AlgoArgs& a, Transport& t);
void build_allreduce_rhd(const AlgoArgs& a, Transport& t);
void build_alltoall_direct(const AlgoArgs& a, Transport& t);
void build_alltoall_bruck(const AlgoArgs& a, Transport& t);

}  // namespace cclab::classic
