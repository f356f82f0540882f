// Helpers shared by the advanced algorithms (hierarchical, bidirectional, sparse, collective matmul).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "algorithms/registry.hpp"
#include "core/error.hpp"

namespace cclab::adv {

// Ranks grouped into nodes of `size` consecutive ranks: rank = node * size + local.
struct NodeLayout {
  int nranks = 1;
  int size = 1;   // G, ranks per node
  int nodes = 1;  // N = nranks / G
  int node(int rank) const { return rank / size; }
  int local(int rank) const { return rank % size; }
  int rank(int node, int local) const { return node * size + local; }
};

// The node layout of a hierarchical algorithm: AlgoArgs::node_size (0: all ranks form one node).
// Throws an input error naming the algorithm when the ranks do not divide into whole nodes.
inline NodeLayout node_layout(const AlgoArgs& args, std::string_view algo) {
  const int p = args.nranks;
  const int g = args.node_size == 0 ? p : args.node_size;
  if (g < 1) throw_input(std::string(algo) + ": node size must be positive (got " + std::to_string(g) + ")");
  if (p % g != 0)
    throw_input(std::string(algo) + ": " + std::to_string(p) + " ranks do not divide into nodes of " +
                std::to_string(g) + " GPUs (node size)");
  return NodeLayout{p, g, p / g};
}

// Collectives of one block per rank (alltoall, reducescatter) take whole blocks, as nccl-tests does.
inline void require_whole_blocks(const AlgoArgs& args, std::string_view algo) {
  if (args.count % args.nranks != 0)
    throw_input(std::string(algo) + ": count " + std::to_string(args.count) + " is not a multiple of the rank count " +
                std::to_string(args.nranks) + " (every rank holds one block of count/n elements)");
}

// Splits `count` elements into `parts` contiguous pieces whose sizes differ by at most one (the
// first count % parts pieces get the extra element), so sizes that do not divide still cover all.
struct Split {
  int64_t count = 0;
  int parts = 1;
  int64_t size(int i) const { return count / parts + (i < count % parts ? 1 : 0); }
  int64_t begin(int i) const { return i * (count / parts) + std::min<int64_t>(i, count % parts); }
};

inline int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace cclab::adv
