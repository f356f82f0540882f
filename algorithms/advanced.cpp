// The advanced family: hierarchical all-to-all and reduce-scatter, the bidirectional all-reduce and
// its kernel modes, sparse all-reduce and collective matmul (one file per algorithm, adv_*.cpp).
#include "algorithms/adv_allreduce_bidir.hpp"
#include "algorithms/adv_alltoall_hier.hpp"
#include "algorithms/adv_collective_matmul.hpp"
#include "algorithms/adv_reducescatter_hier.hpp"
#include "algorithms/adv_sparse.hpp"
#include "algorithms/copy_pipeline.hpp"
#include "algorithms/families.hpp"

namespace cclab {

void add_advanced_algorithms(std::vector<Algorithm>& list) {
  list.push_back({.name = "alltoall.hier",
                  .collective = "alltoall",
                  .summary = "two-level: layout transform, intra-node all-to-all, transform, inter-node all-to-all",
                  .hierarchical = true,
                  .build = build_alltoall_hier});
  list.push_back({.name = "reducescatter.hier",
                  .collective = "reducescatter",
                  .summary = "two-level with node swizzle: intra-node reduce-scatter per destination node, then p2p",
                  .hierarchical = true,
                  .build = build_reducescatter_hier});
  list.push_back({.name = "allreduce.bidir",
                  .collective = "allreduce",
                  .summary = "pull-based: one-shot below 512 KiB, reduce-scatter/all-gather split above",
                  .build = build_allreduce_bidir});
  list.push_back({.name = "allreduce.bidir.flash",
                  .collective = "allreduce",
                  .summary = "one-shot pull: every rank reduces every peer's buffer (flash kernel mode)",
                  .build = build_allreduce_bidir_flash});
  list.push_back({.name = "allreduce.bidir.stream",
                  .collective = "allreduce",
                  .summary = "reduce-scatter/all-gather in pieces through bounded slot rings (stream kernel mode)",
                  .build = build_allreduce_bidir_stream});
  // The other kernel modes of allreduce.bidir (lower/bidir.hpp): the same one-shot data movement, forced.
  list.push_back({.name = "allreduce.bidir.ll",
                  .collective = "allreduce",
                  .summary = "one-shot push of 8-byte words carrying their own epoch flag (ll kernel mode)",
                  .build = build_allreduce_oneshot});
  list.push_back({.name = "allreduce.bidir.push",
                  .collective = "allreduce",
                  .summary = "one-shot push with per-tile progress flags (push kernel mode)",
                  .build = build_allreduce_oneshot});
  list.push_back({.name = "allreduce.bidir.lamport",
                  .collective = "allreduce",
                  .summary = "one-shot push whose NaN sentinel marks what has not arrived (lamport kernel mode)",
                  .build = build_allreduce_oneshot});
  list.push_back({.name = "allreduce.bidir.twoshot",
                  .collective = "allreduce",
                  .summary = "reduce-scatter (peer loads) then all-gather (peer stores) in one kernel (twoshot mode)",
                  .build = build_allreduce_pull_split});
  list.push_back({.name = "allreduce.bidir.copy",
                  .collective = "allreduce",
                  .summary = "copy engines: reduce-scatter into scratch slots, reduce kernels, all-gather (copy mode)",
                  .build = [](const AlgoArgs& args, Transport& t) {
                    t.adopt(copy_pipeline_allreduce(args.nranks, args.count, args.dtype, args.redop, args.in_place,
                                                    CopyPipeline{}));
                  }});
  list.push_back({.name = "sol.bidir_copy",
                  .collective = "sol",
                  .summary = "speed of light: every rank's copy engine pushes its buffer into its neighbour's at once",
                  .backends = kSim | kGpu,
                  .build = build_sol_bidir_copy});
  list.push_back({.name = "allreduce.sparse",
                  .collective = "allreduce",
                  .summary = "sparse rows: coalesce, index all-gather + union, match, dense all-reduce of the union",
                  .needs_sparse = true,
                  .build = sparse::build_allreduce_sparse});
  list.push_back({.name = "allgather_matmul.ring",
                  .collective = "allgather_matmul",
                  .summary = "C = AllGather(A) @ B: shard matmul per step while the shard travels to d-1",
                  .needs_shape = true,
                  .build = build_allgather_matmul_ring});
  list.push_back({.name = "allgather_matmul.ring_bidir",
                  .collective = "allgather_matmul",
                  .summary = "as allgather_matmul.ring with half of each shard going each way round the ring",
                  .needs_shape = true,
                  .build = build_allgather_matmul_ring_bidir});
  list.push_back({.name = "allgather_matmul.nccl_cublas",
                  .collective = "allgather_matmul",
                  .summary = "baseline: NCCL all-gather of A, then one cuBLAS matmul",
                  .library = true,
                  .needs_shape = true,
                  .build = build_allgather_matmul_nccl_cublas});
  list.push_back({.name = "matmul_reducescatter.ring",
                  .collective = "matmul_reducescatter",
                  .summary = "partial sums of each row block travel round the ring while the next is computed",
                  .needs_shape = true,
                  .build = build_matmul_reducescatter_ring});
}

}  // namespace cclab
