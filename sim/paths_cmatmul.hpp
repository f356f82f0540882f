// The executor's collective matmuls as the simulator predicts them: per iteration, the
// streams the executor enqueues (cuBLAS products on a compute stream, copy-engine copies on copy streams,
// events between them), iterations back to back as it times them. Each product is the profile's matmul at
// its shape (matmul.<dtype>, timed as the executor times its products), slowed while copies run beside it
// by the measured ratio of matmul.<dtype>.ce_both (products beside copy-engine copies both ways) to
// matmul.<dtype>; copies at p2p.ce.* rates, the reduce-scatter's additions at reduce.local.<dtype>, NCCL's
// all-gather from its send/recv (nccl.p2p.bidir). Never a collective record.
#pragma once

#include <optional>
#include <string>

#include "sim/predict.hpp"

namespace cclab::sim {

// allgather_matmul.ring / .ring_bidir / .nccl_cublas and matmul_reducescatter.ring / .nccl_cublas (the
// executor's baseline: one product, then NCCL's reduce-scatter) with args.shape (the
// shard's m, k, n) and args.dtype. nullopt for other names or a profile without the matmul.<dtype> series.
std::optional<Prediction> predict_cmatmul_exec(Simulator& sim, const std::string& algo, const AlgoArgs& args);

}  // namespace cclab::sim
