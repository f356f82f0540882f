// Every registered algorithm (except collective matmul and sparse all-reduce, whose owners test them
// with shapes and index data) against the direct computation, on the reference backend: ranks 1..64,
// empty / one-element / uneven / multi-MiB sizes, every root of small rooted collectives, in place and
// out of place, the three dtypes, every reduction, several execution orders.
#include <set>

#include "core/error.hpp"
#include "tests/algorithms/check.hpp"

namespace cclab {
namespace {

using test::check_case;
using test::session_seed;

std::vector<std::string> testable_algorithms() {
  std::vector<std::string> names;
  for (const Algorithm& a : algorithms())
    if (!a.needs_shape && !a.needs_sparse && (a.backends & kRef)) names.push_back(a.name);
  return names;
}

bool one_block_per_rank(const std::string& c) {
  return c == "allgather" || c == "reducescatter" || c == "alltoall" || c == "gather" || c == "scatter";
}
bool reduces(const std::string& c) { return c == "allreduce" || c == "reduce" || c == "reducescatter"; }

uint64_t seed_for(const std::string& name) { return session_seed() ^ std::hash<std::string>{}(name); }

// Whether the algorithm accepts n ranks; if not, the refusal must be an input error naming n.
bool accepts(const Algorithm& algo, int n) {
  AlgoArgs probe;
  probe.nranks = n;
  probe.count = n;
  try {
    make_schedule(algo, probe);
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << algo.name << " n=" << n << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(n)), std::string::npos)
        << algo.name << ": the error should name the rank count: " << e.what();
    return false;
  }
}

class EveryAlgorithm : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryAlgorithm, MatchesDirectResultSmall) {
  const Algorithm& algo = find_algorithm(GetParam());
  const bool blocks = one_block_per_rank(algo.collective);
  uint64_t seed = seed_for(algo.name);
  int accepted = 0;
  for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 64}) {
    if (!accepts(algo, n)) continue;
    ++accepted;
    const int64_t unit = blocks ? n : 1;
    // Empty; one element (per rank for block collectives); uneven: fewer elements than ranks (empty
    // blocks), and a count that does not divide by n (or an odd block size).
    std::vector<int64_t> counts = {0, unit, blocks ? 13 * unit : 7 * int64_t(n) + 3};
    if (!blocks && n > 2) counts.push_back(n - 1);
    std::vector<int> roots = {0};
    if (algo.rooted) {
      roots.clear();
      if (n <= 8) {
        for (int r = 0; r < n; ++r) roots.push_back(r);
      } else {
        roots = {0, n / 2, n - 1};
      }
    }
    std::vector<RedOp> ops = {RedOp::sum};
    if (reduces(algo.collective) && (n == 3 || n == 4 || n == 8))
      ops = {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
    for (int64_t count : counts)
      for (int root : roots)
        for (bool in_place : {false, true})
          for (DType dt : {DType::f32, DType::f16, DType::bf16})
            for (RedOp op : ops) {
              AlgoArgs a;
              a.nranks = n;
              a.count = count;
              a.root = root;
              a.in_place = in_place;
              a.dtype = dt;
              a.redop = op;
              check_case(algo, a, ++seed, n <= 16 ? 2 : 1);
              if (HasFatalFailure()) return;
            }
  }
  EXPECT_GT(accepted, 0) << algo.name << " accepts none of the tested rank counts";
}

TEST_P(EveryAlgorithm, MatchesDirectResultMiB) {
  const Algorithm& algo = find_algorithm(GetParam());
  const bool blocks = one_block_per_rank(algo.collective);
  uint64_t seed = seed_for(algo.name) + 1000;
  struct Big {
    int n;
    DType dtype;
    bool in_place;
  };
  for (const Big big : {Big{5, DType::bf16, false}, Big{8, DType::f32, true}}) {
    if (!accepts(algo, big.n)) continue;
    // About 2 MiB, not a multiple of n elements where the collective allows it.
    const int64_t elems = (int64_t(2) << 20) / dtype_size(big.dtype);
    AlgoArgs a;
    a.nranks = big.n;
    a.count = blocks ? elems / big.n * big.n : elems + 5;
    a.dtype = big.dtype;
    a.in_place = big.in_place;
    a.root = algo.rooted ? big.n - 1 : 0;
    check_case(algo, a, ++seed, 1, true, false);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryAlgorithm, ::testing::ValuesIn(testable_algorithms()), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
});

// The options that change the shape of a schedule: channels and pipeline chunks.
TEST(AlgorithmOptions, ChannelsAndChunks) {
  uint64_t seed = session_seed() + 77;
  for (const char* name : {"allreduce.ring", "allgather.ring", "reducescatter.ring", "broadcast.pipeline",
                           "allreduce.tree", "reduce.nccl", "broadcast.nccl"}) {
    const Algorithm& algo = find_algorithm(name);
    for (int n : {2, 3, 7}) {
      for (int channels : {1, 3}) {
        for (int64_t chunk : {int64_t(0), int64_t(24)}) {
          for (bool in_place : {false, true}) {
            AlgoArgs a;
            a.nranks = n;
            a.count = one_block_per_rank(algo.collective) ? 11 * n : 301;
            a.channels = channels;
            a.chunk_bytes = chunk;
            a.in_place = in_place;
            a.root = algo.rooted ? n - 1 : 0;
            check_case(algo, a, ++seed, 3);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(AlgorithmOptions, RegistryNamesTheContractAlgorithms) {
  std::set<std::string> names;
  for (const Algorithm& a : algorithms()) {
    EXPECT_TRUE(names.insert(a.name).second) << "duplicate name " << a.name;
    EXPECT_EQ(a.name.substr(0, a.name.find('.')), a.collective) << a.name;
    EXPECT_FALSE(a.summary.empty()) << a.name;
    EXPECT_TRUE(bool(a.build)) << a.name;
  }
  for (const char* n : {"broadcast.binomial", "broadcast.pipeline", "broadcast.scatter_allgather",
                        "reduce.binomial",    "reduce.direct",      "gather.binomial",
                        "gather.direct",      "scatter.binomial",   "scatter.direct",
                        "allgather.ring",     "reducescatter.ring", "allreduce.ring",
                        "allreduce.tree",     "allreduce.rhd",      "alltoall.direct",
                        "alltoall.bruck",     "broadcast.nccl",     "reduce.nccl",
                        "allgather.nccl",     "reducescatter.nccl", "allreduce.nccl",
                        "alltoall.nccl"})
    EXPECT_TRUE(names.count(n)) << n << " is not registered";
  for (const char* n :
       {"broadcast.nccl", "reduce.nccl", "allgather.nccl", "reducescatter.nccl", "allreduce.nccl", "alltoall.nccl"})
    EXPECT_TRUE(find_algorithm(n).library) << n;
  for (const char* n : {"broadcast.binomial", "reduce.direct", "gather.binomial", "scatter.direct", "reduce.nccl"})
    EXPECT_TRUE(find_algorithm(n).rooted) << n;
}

}  // namespace
}  // namespace cclab
