// The advanced algorithms on the reference backend: hierarchical all-to-all and reduce-scatter, the
// bidirectional all-reduce family and collective matmul, against direct computations, plus the
// structural properties that make them worth having (message counts, network bytes, lowering).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "algorithms/adv_allreduce_bidir.hpp"
#include "core/error.hpp"
#include "reference/reference.hpp"
#include "tests/algorithms/check.hpp"

namespace cclab {
namespace {

using test::check_case;
using test::session_seed;

AlgoArgs args_of(int n, int64_t count, int node_size = 0) {
  AlgoArgs a;
  a.nranks = n;
  a.count = count;
  a.node_size = node_size;
  return a;
}

// The error kind and message of building `name` with `a`.
std::pair<ErrorKind, std::string> build_error(const std::string& name, const AlgoArgs& a) {
  try {
    make_schedule(find_algorithm(name), a);
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::internal, "no error"};
}

struct Hier {
  int n, g;
};
// n = 4, 8, 16 with node sizes 2 and 4, plus the degenerate layouts (one node, one rank per node).
const std::vector<Hier> kHierCases = {{4, 2}, {4, 4}, {8, 2}, {8, 4}, {16, 2}, {16, 4},
                                      {1, 0}, {2, 1}, {4, 0}, {4, 1}, {6, 3},  {8, 8}};

// Bytes and messages that cross node boundaries, per rank (sender side).
struct NetTraffic {
  std::vector<int64_t> messages, bytes;
};
NetTraffic network_traffic(const Schedule& s, int g) {
  NetTraffic t{std::vector<int64_t>(size_t(s.nranks)), std::vector<int64_t>(size_t(s.nranks))};
  for (const Op& op : s.ops) {
    int from = -1, to = -1;
    if (op.kind == OpKind::put) from = op.rank, to = op.dst.rank;
    if (op.kind == OpKind::get) from = op.src.rank, to = op.rank;
    if (op.kind == OpKind::reduce && op.src2.rank != op.rank) from = op.src2.rank, to = op.rank;
    if (from < 0 || from / g == to / g) continue;
    ++t.messages[size_t(from)];
    t.bytes[size_t(from)] += op.bytes;
  }
  return t;
}

// ---------------------------------------------------------------- alltoall.hier

TEST(AlltoallHier, EqualsTheDirectResult) {
  const Algorithm& algo = find_algorithm("alltoall.hier");
  uint64_t seed = session_seed();
  for (const Hier& h : kHierCases)
    for (int64_t per_block : {0, 1, 3, 257})
      for (DType t : {DType::f32, DType::bf16})
        for (bool in_place : {false, true}) {
          AlgoArgs a = args_of(h.n, per_block * h.n, h.g);
          a.dtype = t;
          a.in_place = in_place;
          check_case(algo, a, ++seed, 1);
        }
}

TEST(AlltoallHier, SameBytesAsAlltoallDirect) {
  for (const Hier& h : {Hier{8, 2}, Hier{16, 4}}) {
    AlgoArgs a = args_of(h.n, 5 * h.n, h.g);
    const Schedule hier = make_schedule(find_algorithm("alltoall.hier"), a);
    const Schedule direct = make_schedule(find_algorithm("alltoall.direct"), a);
    ref::HostBuffers in = ref::allocate(hier);
    ref::fill_inputs(hier, in, session_seed());
    ref::HostBuffers b1 = in, b2 = ref::allocate(direct);
    for (int r = 0; r < h.n; ++r) b2[size_t(r)].input = in[size_t(r)].input;
    ref::run(hier, b1, {.randomize = true, .seed = session_seed()});
    ref::run(direct, b2);
    for (int r = 0; r < h.n; ++r) EXPECT_EQ(b1[size_t(r)].output, b2[size_t(r)].output) << "rank " << r;
  }
}

TEST(AlltoallHier, MessagesPerRankAreGPlusNodes) {
  for (const Hier& h : {Hier{16, 4}, Hier{16, 2}, Hier{64, 8}}) {
    const int nodes = h.n / h.g;
    const int64_t block = 4 * 3;  // 3 floats
    const Schedule s = make_schedule(find_algorithm("alltoall.hier"), args_of(h.n, 3 * h.n, h.g));
    const Schedule flat = make_schedule(find_algorithm("alltoall.direct"), args_of(h.n, 3 * h.n));
    const auto tr = traffic(s), flat_tr = traffic(flat);
    const NetTraffic net = network_traffic(s, h.g), flat_net = network_traffic(flat, h.g);
    for (int r = 0; r < h.n; ++r) {
      SCOPED_TRACE("n=" + std::to_string(h.n) + " G=" + std::to_string(h.g) + " rank " + std::to_string(r));
      // G-1 messages inside the node, N-1 across nodes, against n-1 for the flat version.
      EXPECT_EQ(tr[size_t(r)].sends, (h.g - 1) + (nodes - 1));
      EXPECT_EQ(flat_tr[size_t(r)].sends, h.n - 1);
      EXPECT_EQ(net.messages[size_t(r)], nodes - 1);
      EXPECT_EQ(flat_net.messages[size_t(r)], h.n - h.g);
      // The network carries the same bytes, in G-block messages.
      EXPECT_EQ(net.bytes[size_t(r)], int64_t(h.n - h.g) * block);
      EXPECT_EQ(net.bytes[size_t(r)], flat_net.bytes[size_t(r)]);
    }
  }
}

TEST(AlltoallHier, RejectsPartialNodesAndPartialBlocks) {
  auto [kind, msg] = build_error("alltoall.hier", args_of(6, 60, 4));
  EXPECT_EQ(kind, ErrorKind::input);
  EXPECT_NE(msg.find("6 ranks do not divide into nodes of 4"), std::string::npos) << msg;
  std::tie(kind, msg) = build_error("alltoall.hier", args_of(4, 7, 2));
  EXPECT_EQ(kind, ErrorKind::input);
  EXPECT_NE(msg.find("count 7"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- reducescatter.hier

TEST(ReducescatterHier, EqualsTheDirectReduction) {
  const Algorithm& algo = find_algorithm("reducescatter.hier");
  uint64_t seed = session_seed();
  for (const Hier& h : kHierCases)
    for (int64_t per_rank : {0, 1, 5, 130})
      for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
        for (bool in_place : {false, true}) {
          AlgoArgs a = args_of(h.n, per_rank * h.n, h.g);
          a.redop = op;
          a.dtype = op == RedOp::sum ? DType::f16 : DType::f32;
          a.in_place = in_place;
          check_case(algo, a, ++seed, 1);
        }
}

TEST(ReducescatterHier, SameResultAsTheRing) {
  AlgoArgs a = args_of(8, 8 * 33, 4);
  a.dtype = DType::bf16;
  const Schedule hier = make_schedule(find_algorithm("reducescatter.hier"), a);
  const Schedule ring = make_schedule(find_algorithm("reducescatter.ring"), a);
  ref::HostBuffers in = ref::allocate(hier);
  ref::fill_inputs(hier, in, session_seed());
  ref::HostBuffers b1 = in, b2 = ref::allocate(ring);
  for (int r = 0; r < a.nranks; ++r) b2[size_t(r)].input = in[size_t(r)].input;
  ref::run(hier, b1, {.randomize = true, .seed = session_seed()});
  ref::run(ring, b2);
  for (int r = 0; r < a.nranks; ++r) EXPECT_EQ(b1[size_t(r)].output, b2[size_t(r)].output) << "rank " << r;
}

TEST(ReducescatterHier, NetworkBytesFallByTheNodeSize) {
  for (const Hier& h : {Hier{8, 2}, Hier{16, 4}, Hier{32, 8}}) {
    const int nodes = h.n / h.g;
    const int64_t chunk = 10 * 4;  // 10 floats per rank
    const Schedule s = make_schedule(find_algorithm("reducescatter.hier"), args_of(h.n, 10 * h.n, h.g));
    const NetTraffic net = network_traffic(s, h.g);
    for (int r = 0; r < h.n; ++r) {
      // N-1 partials of one chunk leave each rank; a flat direct reduce-scatter sends (p - G) chunks
      // across the network: G times more.
      EXPECT_EQ(net.messages[size_t(r)], nodes - 1);
      EXPECT_EQ(net.bytes[size_t(r)], (nodes - 1) * chunk);
      EXPECT_EQ(net.bytes[size_t(r)] * h.g, int64_t(h.n - h.g) * chunk);
    }
  }
}

TEST(ReducescatterHier, NodeSwizzleSpreadsEveryStep) {
  const int n = 16, g = 4, nodes = n / g;
  const Schedule s = make_schedule(find_algorithm("reducescatter.hier"), args_of(n, 4 * n, g));
  // Per step: which node each node sends to. Node i sends to node i+t+1 at step t, so every node
  // receives from exactly one node per step, and no network op belongs to the last step.
  std::map<int, std::map<int, std::set<int>>> targets;  // step -> source node -> destination nodes
  for (const Op& op : s.ops)
    if (op.kind == OpKind::put && op.rank / g != op.dst.rank / g) {
      targets[op.step][op.rank / g].insert(op.dst.rank / g);
      EXPECT_EQ(op.dst.rank % g, op.rank % g) << "a partial goes to the same local rank";
    }
  ASSERT_EQ(int(targets.size()), nodes - 1);
  for (const auto& [step, by_node] : targets) {
    std::set<int> receivers;
    for (const auto& [node, dsts] : by_node) {
      ASSERT_EQ(dsts.size(), 1u);
      EXPECT_EQ(*dsts.begin(), (node + step + 1) % nodes);
      receivers.insert(*dsts.begin());
    }
    EXPECT_EQ(int(receivers.size()), nodes) << "step " << step;
  }
}

TEST(ReducescatterHier, RejectsPartialNodes) {
  auto [kind, msg] = build_error("reducescatter.hier", args_of(10, 40, 4));
  EXPECT_EQ(kind, ErrorKind::input);
  EXPECT_NE(msg.find("10 ranks do not divide into nodes of 4"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- allreduce.bidir family

TEST(AllreduceBidir, AllVariantsOnBothSidesOfTheCrossover) {
  const int64_t big = kBidirCrossoverBytes / 4 + 13;  // floats, just above the crossover
  uint64_t seed = session_seed();
  for (const char* name : {"allreduce.bidir", "allreduce.bidir.flash", "allreduce.bidir.stream"})
    for (int n : {1, 2, 3, 4, 5, 8})
      for (int64_t count : {int64_t(0), int64_t(1), int64_t(7), int64_t(1001), big})
        for (bool in_place : {false, true}) {
          if (count == big && n > 4 && in_place) continue;  // keeps the suite fast; n = 8 runs out of place
          AlgoArgs a = args_of(n, count);
          a.in_place = in_place;
          a.redop = count % 2 ? RedOp::sum : RedOp::max;
          // Small pieces so that the stream mode cycles through its slots many times.
          a.chunk_bytes = count == big ? 16 << 10 : 8;
          check_case(find_algorithm(name), a, ++seed, 1);
        }
}

TEST(AllreduceBidir, HalfPrecisionAndAvg) {
  uint64_t seed = session_seed();
  for (const char* name : {"allreduce.bidir", "allreduce.bidir.flash", "allreduce.bidir.stream"})
    for (DType t : {DType::f16, DType::bf16})
      for (RedOp op : {RedOp::sum, RedOp::avg, RedOp::prod}) {
        AlgoArgs a = args_of(4, 333);
        a.dtype = t;
        a.redop = op;
        a.chunk_bytes = 40;
        check_case(find_algorithm(name), a, ++seed, 2);
      }
}

TEST(AllreduceBidir, OneShotBelowTheCrossoverSplitAbove) {
  const int n = 4;
  auto shape = [&](int64_t bytes) {
    const Schedule s = make_schedule(find_algorithm("allreduce.bidir"), args_of(n, bytes / 4));
    int gets = 0, remote_reduces = 0;
    for (const Op& op : s.ops) {
      gets += op.kind == OpKind::get;
      remote_reduces += op.kind == OpKind::reduce && op.src2.rank != op.rank;
    }
    return std::tuple{s, gets, remote_reduces};
  };
  {  // one-shot: each rank reduces every peer's whole buffer with peer loads, nothing else moves
    auto [s, gets, remote] = shape(kBidirCrossoverBytes);
    EXPECT_EQ(s.lowering, Lowering::automatic);
    EXPECT_EQ(gets, 0);
    EXPECT_EQ(remote, n * (n - 1));
    for (const RankTraffic& t : traffic(s)) EXPECT_EQ(t.recv_bytes, (n - 1) * kBidirCrossoverBytes);
  }
  {  // split: 2 (n-1)/n S per rank
    const int64_t S = kBidirCrossoverBytes + 4 * n;
    auto [s, gets, remote] = shape(S);
    EXPECT_EQ(gets, n * (n - 1));
    EXPECT_EQ(remote, n * (n - 1));
    for (const RankTraffic& t : traffic(s)) EXPECT_EQ(t.recv_bytes, 2 * (n - 1) * S / n);
  }
}

TEST(AllreduceBidir, ForcedVariantsNameTheirKernelMode) {
  AlgoArgs a = args_of(2, 1 << 20);
  EXPECT_EQ(make_schedule(find_algorithm("allreduce.bidir.flash"), a).lowering, Lowering::flash);
  EXPECT_EQ(make_schedule(find_algorithm("allreduce.bidir.stream"), a).lowering, Lowering::stream);
  EXPECT_EQ(make_schedule(find_algorithm("allreduce.bidir"), a).lowering, Lowering::automatic);
}

TEST(AllreduceBidir, StreamScratchIsBoundedBySlots) {
  for (int n : {2, 4, 8}) {
    AlgoArgs a = args_of(n, int64_t(64) << 20);  // 256 MiB of floats
    a.chunk_bytes = 1 << 20;
    const Schedule s = make_schedule(find_algorithm("allreduce.bidir.stream"), a);
    for (const BufferSizes& b : s.buffers) EXPECT_EQ(b.scratch, int64_t(n - 1) * kStreamSlots * (1 << 20));
    // Every slot put after the first kStreamSlots pieces of a lane waits for the consumer's reduction
    // of the piece that used the slot before (write after read).
    int waiting = 0;
    for (const Op& op : s.ops)
      if (op.kind == OpKind::put && op.dst.buf == Buf::scratch && op.dep_count > 0) {
        const Op& dep = s.ops[size_t(s.deps(op)[0])];
        EXPECT_EQ(dep.kind, OpKind::reduce);
        EXPECT_EQ(dep.rank, op.dst.rank);
        ++waiting;
      }
    EXPECT_GT(waiting, 0);
  }
}

// ---------------------------------------------------------------- collective matmul

// Values in [-1, 1] on a grid of 1/64, exact in every dtype, so the only error is the computation's.
void fill_matrix_inputs(const Schedule& s, ref::HostBuffers& b, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-64, 64);
  for (int r = 0; r < s.nranks; ++r) {
    auto& in = b[size_t(r)].input;
    for (int64_t i = 0; i < int64_t(in.size()) / dtype_size(s.dtype); ++i)
      store_from_float(s.dtype, in.data(), i, float(d(rng)) / 64);
  }
}

double unit_roundoff(DType t) { return t == DType::f32 ? 0x1p-24 : t == DType::f16 ? 0x1p-11 : 0x1p-8; }

struct Shape {
  int64_t m, k, n;
};

// Every device's output against a float64 product of the same (dtype-exact) inputs, within a few
// roundings of the dtype scaled by sum |a b| per element.
void check_collective_matmul(const std::string& name, int D, Shape sh, DType t, uint64_t seed) {
  SCOPED_TRACE(name + " D=" + std::to_string(D) + " shape " + std::to_string(sh.m) + "," + std::to_string(sh.k) + "," +
               std::to_string(sh.n) + " " + std::string(dtype_name(t)) + " seed=" + std::to_string(seed));
  AlgoArgs a = args_of(D, 0);
  a.dtype = t;
  a.shape = {sh.m, sh.k, sh.n};
  Schedule s;
  ASSERT_NO_THROW(s = make_schedule(find_algorithm(name), a));
  ASSERT_NO_THROW(validate_dataflow(s));
  EXPECT_EQ(s.count, sh.m * D * sh.k);  // records' bytes: the gathered A
  ref::HostBuffers b = ref::allocate(s);
  fill_matrix_inputs(s, b, seed);
  const ref::HostBuffers initial = b;
  ref::run(s, b, {.randomize = true, .seed = seed});
  const bool rs = s.collective == "matmul_reducescatter";
  const int64_t E = dtype_size(t), a_rows = rs ? sh.m * D : sh.m, b_off = a_rows * sh.k * E;
  const int64_t out_rows = rs ? sh.m : sh.m * D;
  // Partials of matmul_reducescatter are rounded to the dtype once per step.
  const double tol = (rs ? D + 1 : 2) * unit_roundoff(t);
  auto A = [&](int dev, int64_t i, int64_t j) {
    return load_as_float(t, initial[size_t(dev)].input.data(), i * sh.k + j);
  };
  auto B = [&](int dev, int64_t i, int64_t j) {
    return load_as_float(t, initial[size_t(dev)].input.data() + b_off, i * sh.n + j);
  };
  for (int d = 0; d < D; ++d)
    for (int64_t i = 0; i < out_rows; ++i)
      for (int64_t j = 0; j < sh.n; ++j) {
        double want = 0, scale = 0;
        for (int e = 0; e < (rs ? D : 1); ++e)
          for (int64_t l = 0; l < sh.k; ++l) {
            // allgather: row i of the gathered A is row i % m of device i / m's shard.
            const double x = rs ? A(e, d * sh.m + i, l) : A(int(i / sh.m), i % sh.m, l);
            const double y = rs ? B(e, l, j) : B(d, l, j);
            want += x * y;
            scale += std::abs(x * y);
          }
        const double got = load_as_float(t, b[size_t(d)].output.data(), i * sh.n + j);
        ASSERT_LE(std::abs(got - want), tol * scale + 1e-30)
            << "device " << d << " C[" << i << "][" << j << "] = " << got << ", want " << want;
      }
}

TEST(CollectiveMatmul, AgainstAFloat64Product) {
  uint64_t seed = session_seed();
  for (const char* name : {"allgather_matmul.ring", "allgather_matmul.ring_bidir", "allgather_matmul.nccl_cublas",
                           "matmul_reducescatter.ring"})
    for (int D : {1, 2, 3, 4})
      for (Shape sh : {Shape{1, 1, 1}, Shape{1, 5, 3}, Shape{2, 3, 4}, Shape{5, 17, 6}})
        for (DType t : {DType::f16, DType::bf16, DType::f32}) check_collective_matmul(name, D, sh, t, ++seed);
}

TEST(CollectiveMatmul, RingStructure) {
  const int D = 4;
  const Shape sh{8, 16, 32};
  AlgoArgs a = args_of(D, 0);
  a.dtype = DType::f16;
  a.shape = {sh.m, sh.k, sh.n};
  const int64_t shard = sh.m * sh.k * 2;
  {  // D matmuls of the shard shape per device; D-1 shards sent to the previous device, on their own channel
    const Schedule s = make_schedule(find_algorithm("allgather_matmul.ring"), a);
    std::vector<int> matmuls(D), sends(D);
    for (const Op& op : s.ops) {
      if (op.kind == OpKind::compute) {
        const Compute& c = s.computes[size_t(op.compute)];
        EXPECT_EQ(c.kind, ComputeKind::matmul);
        EXPECT_EQ(std::tuple(c.m, c.k, c.n), std::tuple(sh.m, sh.k, sh.n));
        ++matmuls[size_t(op.rank)];
      }
      if (op.kind == OpKind::put) {
        EXPECT_EQ(op.dst.rank, (op.rank + D - 1) % D);
        EXPECT_EQ(op.bytes, shard);
        EXPECT_NE(op.channel, 0) << "sends overlap the matmuls on another channel";
        ++sends[size_t(op.rank)];
      }
    }
    for (int d = 0; d < D; ++d) EXPECT_EQ(std::pair(matmuls[size_t(d)], sends[size_t(d)]), std::pair(D, D - 1));
  }
  {  // bidirectional: half a shard each way per step
    const Schedule s = make_schedule(find_algorithm("allgather_matmul.ring_bidir"), a);
    std::map<int, int64_t> bytes_to;  // rank 1's sends by destination
    for (const Op& op : s.ops)
      if (op.kind == OpKind::put && op.rank == 1) bytes_to[op.dst.rank] += op.bytes;
    EXPECT_EQ(bytes_to[0], (D - 1) * shard / 2);
    EXPECT_EQ(bytes_to[2], (D - 1) * shard / 2);
  }
  {  // the library baseline: one matmul of the gathered shape, Lowering::library
    const Schedule s = make_schedule(find_algorithm("allgather_matmul.nccl_cublas"), a);
    EXPECT_EQ(s.lowering, Lowering::library);
    EXPECT_TRUE(find_algorithm("allgather_matmul.nccl_cublas").library);
    int matmuls = 0;
    for (const Op& op : s.ops)
      if (op.kind == OpKind::compute && op.rank == 0) {
        EXPECT_EQ(s.computes[size_t(op.compute)].m, sh.m * D);
        ++matmuls;
      }
    EXPECT_EQ(matmuls, 1);
  }
}

TEST(CollectiveMatmul, BadArguments) {
  AlgoArgs a = args_of(2, 0);
  EXPECT_EQ(build_error("allgather_matmul.ring", a).first, ErrorKind::input);  // no shape
  a.shape = {2, 2, 2};
  a.in_place = true;
  auto [kind, msg] = build_error("matmul_reducescatter.ring", a);
  EXPECT_EQ(kind, ErrorKind::input);
  EXPECT_NE(msg.find("in-place"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cclab
