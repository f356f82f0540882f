// The advanced family: hierarchical all-to-all and reduce-scatter, the bidirectional all-reduce and
// its kernel modes, sparse all-reduce and collective matmul (one file per algorithm, adv_*.cpp).
#include "algorithms/adv_allreduce_bidir.hpp"
#include "algorithms/adv_alltoall_hier.hpp"
#include "algorithms/adv_reducescatter_hier.hpp"
#include "algorithms/families.hpp"

namespace cclab {

void add_advanced_algorithms(std::vector<Algorithm>& list) {
  list.push_back({.name = "alltoall.hier",
                  .collective = "alltoall",
                  .summary = "two-level: layout transform, intra-node all-to-all, transform, inter-node all-to-all",
                  .build = build_alltoall_hier});
  list.push_back({.name = "reducescatter.hier",
                  .collective = "reducescatter",
                  .summary = "two-level with node swizzle: intra-node reduce-scatter per destination node, then p2p",
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
}

}  // namespace cclab
