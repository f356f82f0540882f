// The executor's sparse all-reduce as the simulator predicts it: the host drives it in
// phases that each end with a wait for the GPUs, so its time is the sum of the phases, each costed from the
// profile's microbenchmarks of the executor's own pieces (the sparse.* series: CUB
// coalescing and sort-unique as the host issues and waits for them, the segment-sum, matching and fill
// kernels against size), the index copies (p2p.ce.uni, copy.local) and NCCL's model for the dense
// all-reduce (sim/paths_nccl.cpp: its send/recv on 2 GPUs). Never a collective record.
#pragma once

#include <optional>
#include <string>

#include "sim/predict.hpp"

namespace cclab::sim {

// Which of the executor's paths ran (a record's `path` and `union_mode` columns).
struct SparseExecPath {
  bool dense = false;         // the whole table filled and all-reduced (SparCML's switch)
  bool gather_bcast = false;  // the union built on rank 0 and copied to the others (else on every rank)
};

// The executor's time for `args` (args.sparse: rows, dim, density, dist; sizes from the data model,
// sparse::model_sizes) on `path`, with `how` listing the phases. nullopt when the profile has no sparse.*
// series (the plain simulator model applies then).
std::optional<Prediction> predict_sparse_exec(Simulator& sim, const AlgoArgs& args, const SparseExecPath& path);

}  // namespace cclab::sim
