// alltoall.hier: hierarchical all-to-all for mixture-of-experts dispatch (ALGORITHMS.md).
#pragma once

#include "algorithms/registry.hpp"

namespace cclab {

// Ranks form nodes of G = AlgoArgs::node_size consecutive ranks (0: one node). Rank (a, l) is local
// rank l of node a; B = count / p elements is the block every rank sends to every rank (nccl-tests'
// alltoall layout: input block j goes to rank j, output block i came from rank i).
//   1. layout transform: input blocks reordered by destination local index m, then node b
//      (scratch X[m][b] = input[b*G + m]);
//   2. intra-node all-to-all: (a, l) puts X[m][*] (N blocks) into (a, m)'s scratch Y[l][*];
//   3. layout transform: (a, m) reorders Y[l][b] into X[b][l] (by destination node);
//   4. inter-node all-to-all among ranks of local index m: (a, m) puts X[b][*] (G blocks) into
//      (b, m)'s output at block a*G, which is exactly where blocks from ranks (a, 0..G-1) belong.
// Messages per rank: G-1 inside the node, N-1 across nodes (alltoall.direct: p-1).
// Scratch: 2 p B bytes per rank (X is reused by step 3 once step 2's puts have read it).
void build_alltoall_hier(const AlgoArgs& args, Transport& t);

}  // namespace cclab
