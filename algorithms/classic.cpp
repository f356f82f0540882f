// The classic collectives by their contract names. Each builder lives in its own file
// (algorithms/<collective>_<variant>.cpp); this file only says what each is.
#include "algorithms/classic.hpp"

#include "algorithms/families.hpp"

namespace cclab {

void add_classic_algorithms(std::vector<Algorithm>& list) {
  using namespace classic;
  auto add = [&](const char* name, const char* collective, const char* summary, bool rooted,
                 void (*build)(const AlgoArgs&, Transport&)) {
    Algorithm a;
    a.name = name;
    a.collective = collective;
    a.summary = summary;
    a.backends = kAll;
    a.rooted = rooted;
    a.build = build;
    list.push_back(std::move(a));
  };
  add("broadcast.binomial", "broadcast", "binomial tree, whole message per round", true, build_broadcast_binomial);
  add("broadcast.pipeline", "broadcast", "chain from the root, message pipelined in chunks", true,
      build_broadcast_pipeline);
  add("broadcast.scatter_allgather", "broadcast", "van de Geijn: binomial scatter then ring all-gather", true,
      build_broadcast_scatter_allgather);
  add("reduce.binomial", "reduce", "binomial tree, parents read children's partials", true, build_reduce_binomial);
  add("reduce.direct", "reduce", "the root reads and adds every peer's input", true, build_reduce_direct);
  add("gather.binomial", "gather", "binomial tree, subtrees gathered in scratch", true, build_gather_binomial);
  add("gather.direct", "gather", "every rank puts its block into the root", true, build_gather_direct);
  add("scatter.binomial", "scatter", "binomial tree, subtrees staged in scratch", true, build_scatter_binomial);
  add("scatter.direct", "scatter", "the root puts every block into its rank", true, build_scatter_direct);
  add("allgather.ring", "allgather", "ring, n-1 steps (channels split the blocks)", false, build_allgather_ring);
  add("reducescatter.ring", "reducescatter", "ring, n-1 steps (channels split the blocks)", false,
      build_reducescatter_ring);
  add("allreduce.ring", "allreduce", "ring reduce-scatter then all-gather, 2(n-1) steps", false, build_allreduce_ring);
  add("allreduce.tree", "allreduce", "double binary tree, each tree half the data, pipelined", false,
      build_allreduce_tree);
  add("allreduce.rhd", "allreduce", "recursive halving-doubling (power-of-two ranks)", false, build_allreduce_rhd);
  add("alltoall.direct", "alltoall", "pairwise: at step s rank r sends to r+s", false, build_alltoall_direct);
  add("alltoall.bruck", "alltoall", "Bruck: log2(n) messages of ~n/2 blocks (small blocks)", false,
      build_alltoall_bruck);
}

}  // namespace cclab
