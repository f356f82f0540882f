// reducescatter.hier: two-level reduce-scatter with node swizzle (ALGORITHMS.md).
#pragma once

#include "algorithms/registry.hpp"

namespace cclab {

// Ranks form nodes of G = AlgoArgs::node_size consecutive ranks (0: one node); rank (a, l) is local
// rank l of node a and ends with chunk a*G + l (R = count / p elements) reduced over all ranks.
// At step t = 0..N-1 node a works for destination node b = (a + t + 1) mod N:
//   - intra-node reduce-scatter of the part for node b: every (a, m) puts its chunk for (b, l) into
//     (a, l)'s scratch (copy engines can do this, no SMs), and (a, l) reduces the G pieces;
//   - (a, l) puts that partial to (b, l), the rank with the same local index on node b.
// At step t all nodes send to distinct nodes (a permutation), so every network link carries the same
// load; the last step (t = N-1) is the own node and needs no network. Each rank finally reduces the
// N partials (one per source node) in arrival order. Bytes crossing the network per rank: (N-1) R,
// against (p-G) R for a flat direct reduce-scatter: a factor G less.
// Channels: 0 intra-node puts, 1 intra-node reductions, 2 network puts, 3 final reductions.
// Scratch per rank: (N G + 2 N) R bytes; no slot is reused, so there are no write-after-read waits.
void build_reducescatter_hier(const AlgoArgs& args, Transport& t);

}  // namespace cclab
