// The simulator refuses schedules it cannot finish (issue 9): a dependency cycle across ranks, within a
// channel, through a self-dependency, or a wait on an op that does not exist must end with an error that
// names the op, promptly, instead of running forever. Schedules are built by hand, as a buggy algorithm
// or a hand-edited schedule would produce them (the Transport never emits a dependency on a later op).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "core/error.hpp"
#include "model/params.hpp"
#include "sim/simulator.hpp"
#include "topology/topology.hpp"

namespace cclab {
namespace {

constexpr int64_t kBytes = 4096;

// Builds a schedule op by op with explicit dependency lists, bypassing the Transport's checks.
struct HandSchedule {
  Schedule s;
  explicit HandSchedule(int nranks) {
    s.algo = "hand.built";
    s.collective = "allgather";
    s.nranks = nranks;
    s.count = kBytes / 4;
    s.buffers.assign(size_t(nranks), BufferSizes{kBytes, kBytes * nranks, kBytes});
  }
  OpId add(OpKind kind, int rank, int peer, std::vector<OpId> deps, int channel = 0) {
    Op op;
    op.kind = kind;
    op.rank = rank;
    op.channel = uint8_t(channel);
    op.bytes = kBytes;
    op.src = Ref{kind == OpKind::get ? peer : rank, Buf::input, 0};
    op.dst = Ref{kind == OpKind::put ? peer : rank, Buf::output, int64_t(rank) * kBytes};
    op.dep_begin = uint32_t(s.dep_pool.size());
    for (OpId d : deps) s.dep_pool.push_back(d);
    op.dep_count = uint32_t(deps.size());
    s.ops.push_back(op);
    return OpId(s.ops.size() - 1);
  }
  OpId put(int rank, int peer, std::vector<OpId> deps, int channel = 0) {
    return add(OpKind::put, rank, peer, std::move(deps), channel);
  }
  OpId copy(int rank, std::vector<OpId> deps, int channel = 0) {
    return add(OpKind::copy, rank, rank, std::move(deps), channel);
  }
};

// A uniform network: every pair of GPUs one direct link (no topology effects in these tests).
topo::Topology network(int n) { return topo::make_uniform(n, BytesPerSec(100e9), Seconds(1e-6)); }

// Runs the schedule on the simulator with a watchdog: a hang fails the test (and ends the process, since
// a stuck simulation cannot be cancelled) instead of waiting for ctest's timeout.
sim::SimResult run_bounded(const Schedule& s, int ngpus) {
  auto done = std::async(std::launch::async, [&] {
    const topo::Topology topology = network(ngpus);  // the simulator keeps a reference to it
    sim::Simulator simulator(topology, model::ModelParams::ideal());
    return simulator.run(s);
  });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: the simulator did not return within 5 s on schedule '%s'\n", s.algo.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  return done.get();
}

// Expects the simulator to refuse `s` with an internal error (simulator.hpp: "an internal error naming
// the op") whose message names one of `ops`. Returns the message.
std::string expect_refused(const Schedule& s, int ngpus, const std::set<int>& ops) {
  try {
    run_bounded(s, ngpus);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal) << e.what();
    const std::string msg = e.what();
    std::set<int> mentioned;  // every "op <digits>" in it
    for (size_t p = msg.find("op "); p != std::string::npos; p = msg.find("op ", p + 1)) {
      const size_t b = p + 3;
      size_t e = b;
      while (e < msg.size() && msg[e] >= '0' && msg[e] <= '9') ++e;
      if (e > b) mentioned.insert(std::stoi(msg.substr(b, e - b)));
    }
    bool hit = false;
    for (int op : ops) hit = hit || mentioned.count(op);
    EXPECT_TRUE(hit) << "the error does not name a stuck op: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    return msg;
  }
  ADD_FAILURE() << "the simulator accepted a schedule that cannot finish";
  return "";
}

TEST(Unfinishable, ControlAValidExchangeFinishes) {
  HandSchedule h(2);
  const OpId a = h.put(0, 1, {});
  const OpId b = h.put(1, 0, {});
  h.copy(0, {b});
  h.copy(1, {a});
  const sim::SimResult r = run_bounded(h.s, 2);
  EXPECT_GT(r.time.value, 0);
}

TEST(Unfinishable, TwoRanksWaitingForEachOther) {
  HandSchedule h(2);
  h.put(0, 1, {1});  // op 0 waits for op 1 ...
  h.put(1, 0, {0});  // ... which waits for op 0
  const std::string msg = expect_refused(h.s, 2, {0, 1});
  EXPECT_NE(msg.find("rank"), std::string::npos) << msg;
}

TEST(Unfinishable, OpWaitingForItself) {
  HandSchedule h(2);
  h.put(0, 1, {0});
  expect_refused(h.s, 2, {0});
}

TEST(Unfinishable, CycleThroughChannelOrder) {
  // Op 0 waits for op 1, but op 1 runs after op 0 on the same (rank, channel): a cycle with a single
  // explicit edge.
  HandSchedule h(2);
  h.copy(0, {1}, /*channel=*/0);
  h.copy(0, {}, /*channel=*/0);
  expect_refused(h.s, 2, {0, 1});
}

TEST(Unfinishable, CycleAcrossChannelsOfOneRank) {
  HandSchedule h(2);
  h.copy(0, {1}, /*channel=*/0);
  h.copy(0, {0}, /*channel=*/1);
  expect_refused(h.s, 2, {0, 1});
}

TEST(Unfinishable, WaitOnAnOpThatDoesNotExist) {
  HandSchedule h(2);
  h.put(0, 1, {});
  h.put(1, 0, {7});  // there is no op 7: a signal that never comes
  const std::string msg = expect_refused(h.s, 2, {1});
  EXPECT_NE(msg.find('7'), std::string::npos) << msg;
}

TEST(Unfinishable, WaitOnANegativeOpId) {
  HandSchedule h(2);
  h.put(0, 1, {-5});
  expect_refused(h.s, 2, {0});
}

TEST(Unfinishable, CycleAfterALongValidPrefix) {
  // 8 ranks pass a ring for 64 steps (all of which can finish), then three ranks wait on each other.
  constexpr int n = 8, steps = 64;
  HandSchedule h(n);
  std::vector<OpId> prev(n, kNoOp);
  for (int step = 0; step < steps; ++step) {
    std::vector<OpId> cur(n);
    for (int r = 0; r < n; ++r) {
      std::vector<OpId> deps;
      if (prev[(r + n - 1) % n] != kNoOp) deps.push_back(prev[(r + n - 1) % n]);
      cur[r] = h.put(r, (r + 1) % n, deps);
    }
    prev = cur;
  }
  const OpId first = OpId(h.s.ops.size());
  h.put(0, 1, {first + 2});
  h.put(1, 2, {first});
  h.put(2, 0, {first + 1});
  expect_refused(h.s, n, {first, first + 1, first + 2});
}

TEST(Unfinishable, ValidateAlsoRefusesACycleNamingTheOp) {
  // schedule.hpp: validate() allows dependencies on earlier ops only, so no cycle passes it.
  HandSchedule h(2);
  h.put(0, 1, {1});
  h.put(1, 0, {0});
  try {
    validate(h.s);
    ADD_FAILURE() << "validate accepted a dependency cycle";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cclab
