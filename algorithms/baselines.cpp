// Library baselines: the executor calls NCCL; the schedule is NCCL's algorithm as the model sees it
// (so the simulator can predict it and the reference backend can check the schedule):
//   broadcast: a pipelined chain from the root; reduce: a pipelined chain ending at the root;
//   allgather, reducescatter, allreduce: rings (NCCL also picks trees / NVLS for allreduce: the
//   simulator refines that choice); alltoall: one send and one receive per peer (grouped p2p).
#include "algorithms/classic.hpp"
#include "algorithms/families.hpp"

namespace cclab {

void add_library_baselines(std::vector<Algorithm>& list) {
  using namespace classic;
  auto add = [&](const char* name, const char* collective, const char* summary, bool rooted,
                 void (*build)(const AlgoArgs&, Transport&)) {
    Algorithm a;
    a.name = name;
    a.collective = collective;
    a.summary = summary;
    a.backends = kAll;
    a.library = true;
    a.rooted = rooted;
    a.build = [build](const AlgoArgs& args, Transport& t) {
      build(args, t);
      t.set_lowering(Lowering::library);
    };
    list.push_back(std::move(a));
  };
  add("broadcast.nccl", "broadcast", "ncclBroadcast (modelled as a pipelined chain)", true, build_broadcast_pipeline);
  add("reduce.nccl", "reduce", "ncclReduce (modelled as a pipelined chain to the root)", true, build_reduce_chain);
  add("allgather.nccl", "allgather", "ncclAllGather (modelled as a ring)", false, build_allgather_ring);
  add("reducescatter.nccl", "reducescatter", "ncclReduceScatter (modelled as a ring)", false, build_reducescatter_ring);
  add("allreduce.nccl", "allreduce", "ncclAllReduce (modelled as a ring)", false, build_allreduce_ring);
  add("alltoall.nccl", "alltoall", "ncclSend/ncclRecv to every peer (modelled as pairwise)", false,
      build_alltoall_direct);
}

}  // namespace cclab
