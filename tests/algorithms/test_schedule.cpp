// validate() / validate_dataflow() catch broken schedules and name the op; the classic algorithms'
// message counts and bytes per rank equal the formulas of ALGORITHMS.md; bad input is refused.
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "tests/algorithms/check.hpp"

namespace cclab {
namespace {

using ::testing::HasSubstr;

Schedule blank(int n, int64_t count, std::string collective = "allreduce") {
  Schedule s;
  s.algo = "test";
  s.collective = std::move(collective);
  s.nranks = n;
  s.count = count;
  s.buffers.assign(size_t(n), BufferSizes{count * 4, count * 4, count * 4});
  return s;
}

std::string error_of(void (*check)(const Schedule&), const Schedule& s) {
  try {
    check(s);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    return e.what();
  }
  return "";
}

TEST(Validate, AcceptsAWellFormedSchedule) {
  Schedule s = blank(2, 8);
  Transport t(s);
  const OpId p = t.put(0, in(0), scratch(1), 32);
  t.reduce(1, in(1), scratch(1), out(1), 32, {p});
  EXPECT_NO_THROW(validate_dataflow(s));
}

TEST(Validate, CatchesReadBeforeWrite) {
  Schedule s = blank(2, 8);
  Transport t(s);
  t.set_step(3);
  t.put(0, out(0), out(1), 32);  // nobody wrote rank 0's output
  EXPECT_NO_THROW(validate(s));  // structurally fine
  const std::string e = error_of(validate_dataflow, s);
  EXPECT_THAT(e, HasSubstr("op 0 (rank 0, channel 0, put, step 3)"));
  EXPECT_THAT(e, HasSubstr("before any op wrote it"));
}

TEST(Validate, CatchesAPartlyWrittenRead) {
  Schedule s = blank(2, 8);
  Transport t(s);
  const OpId p = t.put(0, in(0), scratch(1), 16);
  t.copy(1, scratch(1), out(1), 32, {p});  // bytes 16..32 of the scratch were never written
  EXPECT_THAT(error_of(validate_dataflow, s), HasSubstr("rank 1 scratch[16, 32) before any op wrote it"));
}

TEST(Validate, CatchesAMissingDependency) {
  Schedule s = blank(2, 8);
  Transport t(s);
  t.put(0, in(0), scratch(1), 32);
  t.reduce(1, in(1), scratch(1), out(1), 32);  // does not wait for the put
  const std::string e = error_of(validate_dataflow, s);
  EXPECT_THAT(e, HasSubstr("op 1 (rank 1, channel 0, reduce"));
  EXPECT_THAT(e, HasSubstr("missing dependency"));
}

TEST(Validate, CatchesAMissingWriteAfterReadDependency) {
  Schedule s = blank(2, 8);
  Transport t(s);
  const OpId p = t.put(0, in(0), scratch(1), 32);
  t.reduce(1, in(1), scratch(1), out(1), 32, {p});
  t.put(0, in(0), scratch(1), 32, {p});  // overwrites the slot rank 1 may still be reading
  EXPECT_THAT(error_of(validate_dataflow, s), HasSubstr("before op 1 (rank 1, channel 0, reduce"));
}

TEST(Validate, OrderThroughAChainOfDependenciesIsEnough) {
  Schedule s = blank(3, 8);
  Transport t(s);
  const OpId a = t.put(0, in(0), scratch(1), 32);
  const OpId b = t.copy(1, scratch(1), out(1), 32, {a});
  const OpId c = t.put(1, out(1), scratch(2), 32, {b}, 1);  // another channel of rank 1
  t.copy(2, scratch(2), out(2), 32, {c});
  t.put(0, in(0), scratch(1), 32, {c});  // rank 1 consumed its scratch before c: ordered through c
  EXPECT_NO_THROW(validate_dataflow(s));
}

TEST(Validate, CatchesOutOfBoundsRefs) {
  Schedule s = blank(2, 8);
  Transport t(s);
  t.put(0, in(0, 16), out(1), 32);
  EXPECT_THAT(error_of(validate, s), HasSubstr("src rank 0 input[16, 48) is outside the 32-byte buffer"));
  Schedule s2 = blank(2, 8);
  Transport t2(s2);
  t2.put(0, in(0), out(5), 4);
  EXPECT_THAT(error_of(validate, s2), HasSubstr("names rank 5 of 2"));
}

TEST(Validate, CatchesBadDependencies) {
  Schedule s = blank(2, 8);
  Transport t(s);
  t.copy(0, in(0), out(0), 32);
  t.copy(1, in(1), out(1), 32);
  s.dep_pool.push_back(1);  // op 0 waiting for op 1: a forward edge, which could close a cycle
  s.ops[0].dep_count = 1;
  s.ops[0].dep_begin = 0;
  EXPECT_THAT(error_of(validate, s), HasSubstr("op 0 (rank 0, channel 0, copy, step 0): depends on op 1"));
  s.ops[0].dep_begin = 7;  // outside dep_pool
  EXPECT_THAT(error_of(validate, s), HasSubstr("outside dep_pool"));
}

TEST(Validate, CatchesLocalityViolations) {
  Schedule s = blank(2, 8);
  Transport t(s);
  t.put(0, in(1), out(0), 32);
  EXPECT_THAT(error_of(validate, s), HasSubstr("a put reads a local region and writes a peer's"));
  Schedule s2 = blank(3, 8);
  Transport t2(s2);
  t2.reduce(0, in(1), in(2), out(0), 32);
  EXPECT_THAT(error_of(validate, s2), HasSubstr("at most one peer"));
  Schedule s3 = blank(2, 8);
  Transport t3(s3);
  t3.reduce(0, in(0), in(1), out(0), 6);
  EXPECT_THAT(error_of(validate, s3), HasSubstr("not a whole number of elements"));
}

TEST(Validate, InPlaceInputIsWrittenAtTheStart) {
  // In-place allgather: rank r's input is block r of its output, so reading it is fine...
  Schedule s = blank(2, 8, "allgather");
  s.in_place = true;
  s.buffers.assign(2, BufferSizes{16, 32, 0});
  Transport t(s);
  t.put(0, in(0), out(1, 0), 16);
  EXPECT_NO_THROW(validate_dataflow(s));
  // ...but the other block of the output is not.
  t.put(0, out(0, 16), out(1, 16), 16);
  EXPECT_THAT(error_of(validate_dataflow, s), HasSubstr("rank 0 output[16, 32) before any op wrote it"));
}

TEST(Validate, StrippedDependenciesOfARealScheduleAreCaught) {
  // Dropping the cross-rank dependencies of a ring all-reduce breaks it: the check must say so, and
  // random execution orders of the reference backend must produce wrong results.
  AlgoArgs a;
  a.nranks = 4;
  a.count = 4096;
  Schedule s = make_schedule(find_algorithm("allreduce.ring"), a);
  for (Op& op : s.ops) op.dep_count = 0;
  EXPECT_THAT(error_of(validate_dataflow, s), HasSubstr("missing"));
  ref::HostBuffers initial = ref::allocate(s);
  ref::fill_inputs(s, initial, 1);
  const ref::Expected want = ref::expected_result(s, initial);
  int64_t wrong = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    ref::HostBuffers b = initial;
    ref::run(s, b, {.randomize = true, .seed = seed});
    wrong += ref::count_wrong(s, b, want);
  }
  EXPECT_GT(wrong, 0);
}

TEST(Validate, WriteAfterReadDependenciesOfTheRingMatter) {
  // Removing only the slot-reuse (write-after-read) dependencies of the ring reduce-scatter.
  AlgoArgs a;
  a.nranks = 5;
  a.count = 5 * 64;
  Schedule s = make_schedule(find_algorithm("reducescatter.ring"), a);
  EXPECT_NO_THROW(validate_dataflow(s));
  for (Op& op : s.ops)
    if (op.kind == OpKind::put) op.dep_count = 0;
  EXPECT_THAT(error_of(validate_dataflow, s), HasSubstr("overwrites rank 1 scratch"));
}

// --- structure: the formulas of ALGORITHMS.md -------------------------------------------------

struct Shape {
  Schedule s;
  std::vector<RankTraffic> t;
  int steps = 0;
};

Shape shape_of(const std::string& name, int n, int64_t count, int root = 0, int channels = 1) {
  AlgoArgs a;
  a.nranks = n;
  a.count = count;
  a.root = root;
  a.channels = channels;
  Shape sh;
  sh.s = make_schedule(find_algorithm(name), a);
  sh.t = traffic(sh.s);
  for (const Op& op : sh.s.ops) sh.steps = std::max(sh.steps, op.step + 1);
  return sh;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

TEST(Structure, RingAllReduceSends2nMinus1MessagesOfSOverN) {
  for (const char* name : {"allreduce.ring", "allreduce.nccl"})
    for (int n : {2, 3, 4, 7, 8, 16}) {
      for (int channels : {1, 2}) {
        const int64_t count = int64_t(n) * channels * 100, bytes = count * 4;
        const Shape sh = shape_of(name, n, count, 0, channels);
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(sh.t[size_t(r)].sends, 2 * (n - 1) * channels) << name << " n=" << n;
          EXPECT_EQ(sh.t[size_t(r)].send_bytes, 2 * (n - 1) * bytes / n) << name << " n=" << n;
          EXPECT_EQ(sh.t[size_t(r)].recv_bytes, 2 * (n - 1) * bytes / n) << name << " n=" << n;
        }
        EXPECT_EQ(sh.steps, 2 * (n - 1)) << name << " n=" << n;
      }
    }
}

TEST(Structure, RingAllGatherAndReduceScatterSendNMinus1Blocks) {
  for (const char* name : {"allgather.ring", "reducescatter.ring", "allgather.nccl", "reducescatter.nccl"})
    for (int n : {2, 3, 5, 8}) {
      const int64_t count = int64_t(n) * 64, bytes = count * 4;  // S: output of allgather, input of reducescatter
      const Shape sh = shape_of(name, n, count);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(sh.t[size_t(r)].sends, n - 1) << name;
        EXPECT_EQ(sh.t[size_t(r)].send_bytes, (n - 1) * bytes / n) << name;
      }
      EXPECT_EQ(sh.steps, n - 1) << name;
    }
}

TEST(Structure, RecursiveHalvingDoublingSends2Log2nMessages) {
  for (int n : {2, 4, 8, 16, 64}) {
    const int64_t count = int64_t(n) * 32, bytes = count * 4;
    const Shape sh = shape_of("allreduce.rhd", n, count);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sh.t[size_t(r)].sends, 2 * ceil_log2(n));
      EXPECT_EQ(sh.t[size_t(r)].send_bytes, 2 * (n - 1) * bytes / n);
    }
    EXPECT_EQ(sh.steps, 2 * ceil_log2(n));
  }
}

TEST(Structure, DoubleBinaryTreeMovesEachHalfUpAndDownOnce) {
  for (int n : {2, 3, 4, 7, 8, 16}) {
    const int64_t count = 1 << 20, bytes = count * 4;  // 4 MiB: 4 chunks per tree at the 512 KiB default
    const Shape sh = shape_of("allreduce.tree", n, count);
    int64_t total = 0, messages = 0;
    for (int r = 0; r < n; ++r) {
      total += sh.t[size_t(r)].send_bytes;
      messages += sh.t[size_t(r)].sends;
      // Up and down each tree: a rank sends at most 3 halves (one up, two children down) per tree.
      EXPECT_LE(sh.t[size_t(r)].send_bytes, 3 * bytes) << "n=" << n;
    }
    EXPECT_EQ(total, 2 * (n - 1) * bytes) << "n=" << n;
    EXPECT_EQ(messages, 2 * 2 * (n - 1) * 4) << "n=" << n;  // 2 trees x (up + down) x (n-1) edges x 4 chunks
  }
  // Complementary trees: with n even, no rank is a leaf in both (it receives from a child somewhere).
  const Shape sh = shape_of("allreduce.tree", 8, 8 * 1024);
  std::vector<bool> inner(8, false);
  for (const Op& op : sh.s.ops)
    if (op.kind == OpKind::reduce) inner[size_t(op.rank)] = true;
  EXPECT_EQ(std::count(inner.begin(), inner.end(), true), 8);
}

TEST(Structure, AllToAllDirectIsPairwise) {
  for (const char* name : {"alltoall.direct", "alltoall.nccl"})
    for (int n : {2, 3, 8}) {
      const int64_t count = int64_t(n) * 16, bytes = count * 4;
      const Shape sh = shape_of(name, n, count);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(sh.t[size_t(r)].sends, n - 1);
        EXPECT_EQ(sh.t[size_t(r)].send_bytes, (n - 1) * bytes / n);
      }
      for (const Op& op : sh.s.ops)  // step s: rank r sends to r + s
        if (op.kind == OpKind::put) {
          EXPECT_EQ(op.dst.rank, (op.rank + op.step) % n);
        }
    }
}

TEST(Structure, BruckSendsLog2nMessages) {
  for (int n : {2, 3, 5, 8, 16}) {
    const Shape sh = shape_of("alltoall.bruck", n, int64_t(n) * 4);
    for (int r = 0; r < n; ++r) EXPECT_EQ(sh.t[size_t(r)].sends, ceil_log2(n)) << "n=" << n;
  }
}

TEST(Structure, BroadcastsDeliverSToEveryRankOnce) {
  for (const char* name : {"broadcast.binomial", "broadcast.pipeline", "broadcast.scatter_allgather", "broadcast.nccl"})
    for (int n : {2, 3, 5, 8, 16})
      for (int root : {0, n - 1}) {
        const int64_t count = 3 << 18, bytes = count * 4;  // 3 MiB: 6 chunks at the default chunk size
        const Shape sh = shape_of(name, n, count, root);
        for (int r = 0; r < n; ++r) EXPECT_EQ(sh.t[size_t(r)].recv_bytes, r == root ? 0 : bytes) << name;
        const std::string nm = name;
        if (nm == "broadcast.binomial") {
          EXPECT_EQ(sh.t[size_t(root)].sends, ceil_log2(n));
          EXPECT_EQ(sh.steps, ceil_log2(n));
        }
        if (nm == "broadcast.pipeline" || nm == "broadcast.nccl") {
          int64_t messages = 0;
          for (const auto& x : sh.t) messages += x.sends;
          EXPECT_EQ(messages, (n - 1) * 6);
          EXPECT_EQ(sh.steps, n - 2 + 6);  // (n - 2 + C) pipeline slots
        }
      }
}

TEST(Structure, ReducesReadEveryInputOnce) {
  for (const char* name : {"reduce.binomial", "reduce.direct", "reduce.nccl"})
    for (int n : {2, 3, 5, 8})
      for (int root : {0, 2 % n}) {
        const int64_t count = 1024, bytes = count * 4;
        const Shape sh = shape_of(name, n, count, root);
        for (int r = 0; r < n; ++r) EXPECT_EQ(sh.t[size_t(r)].send_bytes, r == root ? 0 : bytes) << name << " n=" << n;
        if (std::string(name) == "reduce.binomial") {
          EXPECT_EQ(sh.steps, ceil_log2(n));
        }
      }
}

TEST(Structure, GatherAndScatterMoveNMinus1BlocksThroughTheRoot) {
  for (int n : {2, 3, 5, 8, 16})
    for (int root : {0, n - 1}) {
      const int64_t count = int64_t(n) * 8, bytes = count * 4;
      for (const char* name : {"gather.binomial", "gather.direct"}) {
        const Shape sh = shape_of(name, n, count, root);
        EXPECT_EQ(sh.t[size_t(root)].recv_bytes, (n - 1) * bytes / n) << name;
        EXPECT_LE(sh.t[size_t(root)].recvs, std::string(name) == "gather.direct" ? n - 1 : ceil_log2(n) + 1) << name;
      }
      for (const char* name : {"scatter.binomial", "scatter.direct"}) {
        const Shape sh = shape_of(name, n, count, root);
        EXPECT_EQ(sh.t[size_t(root)].send_bytes, (n - 1) * bytes / n) << name;
        EXPECT_LE(sh.t[size_t(root)].sends, std::string(name) == "scatter.direct" ? n - 1 : ceil_log2(n) + 1) << name;
      }
    }
}

TEST(Json, EveryOpWithItsFieldsAndDependencies) {
  AlgoArgs a;
  a.nranks = 3;
  a.count = 10;
  a.dtype = DType::bf16;
  a.in_place = true;
  const Schedule s = make_schedule(find_algorithm("allreduce.ring"), a);
  const nlohmann::json j = nlohmann::json::parse(to_json(s));
  EXPECT_EQ(j["algo"], "allreduce.ring");
  EXPECT_EQ(j["dtype"], "bfloat16");
  EXPECT_EQ(j["in_place"], true);
  ASSERT_EQ(j["buffers"].size(), 3u);
  EXPECT_EQ(j["buffers"][1]["scratch"], s.buffers[1].scratch);
  ASSERT_EQ(j["ops"].size(), s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    const nlohmann::json& o = j["ops"][i];
    EXPECT_EQ(o["id"], i);
    EXPECT_EQ(o["rank"], op.rank);
    EXPECT_EQ(o["kind"], op_kind_name(op.kind));
    EXPECT_EQ(o["bytes"], op.bytes);
    EXPECT_EQ(o["dst"][0], op.dst.rank);
    EXPECT_EQ(o["dst"][1], buf_name(op.dst.buf));
    EXPECT_EQ(o["dst"][2], op.dst.offset);
    std::vector<OpId> deps(s.deps(op).begin(), s.deps(op).end());
    EXPECT_EQ(o["deps"].get<std::vector<OpId>>(), deps);
  }
  // An empty schedule (count 0) is still valid JSON.
  a.count = 0;
  EXPECT_EQ(nlohmann::json::parse(to_json(make_schedule(find_algorithm("allreduce.ring"), a)))["ops"].size(), 0u);
}

// --- bad input ---------------------------------------------------------------------------------

std::string input_error(const std::string& name, AlgoArgs a) {
  try {
    make_schedule(find_algorithm(name), a);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    return e.what();
  }
  return "";
}

TEST(BadInput, ClearErrors) {
  AlgoArgs a;
  a.nranks = 6;
  a.count = 60;
  EXPECT_THAT(input_error("allreduce.rhd", a), HasSubstr("power-of-two rank count (got 6 ranks)"));
  a.count = 61;
  EXPECT_THAT(input_error("allgather.ring", a), HasSubstr("count 61 is not a multiple of the rank count 6"));
  a.count = 60;
  a.root = 6;
  EXPECT_THAT(input_error("broadcast.binomial", a), HasSubstr("root 6"));
  try {
    find_algorithm("allreduce.rnig");
    ADD_FAILURE() << "unknown name accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_THAT(std::string(e.what()), HasSubstr("allreduce.ring"));
  }
}

TEST(Sizes, CountForBytesFollowsNcclTests) {
  EXPECT_EQ(count_for_bytes("allreduce", 1000, DType::f32, 3), 250);
  EXPECT_EQ(count_for_bytes("allgather", 1000, DType::f32, 3), 249);
  EXPECT_EQ(count_for_bytes("alltoall", 1000, DType::f16, 8), 496);
  EXPECT_EQ(count_for_bytes("broadcast", 7, DType::f32, 2), 1);
}

// The executor's sparse baselines are names `cclab run` accepts but no schedule: asking for one as an algorithm
// says that, rather than "unknown", and no baseline shadows a registry entry.
TEST(Registry, ExecutorBaselinesAreNamedNotUnknown) {
  ASSERT_FALSE(executor_baselines().empty());
  for (const auto& b : executor_baselines()) {
    try {
      find_algorithm(b.name);
      ADD_FAILURE() << b.name << " found as an algorithm";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("executor baseline")) << b.name;
    }
  }
  try {
    find_algorithm("index_match.nope");
    ADD_FAILURE() << "index_match.nope found";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown algorithm"));
  }
}

}  // namespace
}  // namespace cclab
