// How the MPI mode splits a Plan's dependencies into CUDA events (same rank) and epoch flags (another
// rank): exec/runtime/mpi_plan.hpp, on hand-made schedules and on every registry algorithm's plan.
#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "exec/runtime/mpi_plan.hpp"
#include "exec/runtime/runner.hpp"

namespace cclab::exec {
namespace {

Schedule empty_schedule(int n, int64_t bytes) {
  Schedule s;
  s.algo = "test";
  s.collective = "allreduce";
  s.nranks = n;
  s.count = bytes / 4;
  s.buffers.assign(size_t(n), BufferSizes{bytes, bytes, bytes});
  return s;
}

LowerOptions one_gpu_per_rank(int n) {
  LowerOptions o;
  for (int r = 0; r < n; ++r) o.rank_device.push_back(r);
  return o;
}

TEST(MpiEventRoles, SameRankStaysAnEventOtherRanksGetFlags) {
  Schedule s = empty_schedule(3, 1024);
  Transport t(s);
  const OpId a = t.put(0, in(0), scratch(1), 256, {}, 0);   // rank 0 -> rank 1
  const OpId b = t.copy(1, in(1), scratch(1), 256, {}, 1);  // rank 1, channel 1
  t.reduce(1, scratch(1), in(1), out(1), 256, {a, b}, 0);   // rank 1, channel 0: a (flag) and b (event)
  t.reduce(2, in(2), in(2), out(2), 256, {a}, 0);           // rank 2 also waits for a
  const Plan p = lower::lower(s, one_gpu_per_rank(3));
  const MpiEventRoles r = mpi_event_roles(p);
  ASSERT_EQ(p.num_events(), 2);
  const auto ea = size_t(p.steps[0].record), eb = size_t(p.steps[1].record);
  EXPECT_EQ(r.producer_rank[ea], 0);
  EXPECT_EQ(r.producer_op[ea], int(a));
  EXPECT_FALSE(r.local_wait[ea]);
  EXPECT_EQ(r.remote_consumers[ea], (std::vector<int>{1, 2}));
  EXPECT_EQ(r.producer_rank[eb], 1);
  EXPECT_TRUE(r.local_wait[eb]);
  EXPECT_TRUE(r.remote_consumers[eb].empty());
  EXPECT_EQ(r.flag_waits, (std::vector<int64_t>{0, 1, 1}));
}

// Every general algorithm: each event has one producer, is waited on somewhere, and the flag waits
// are exactly the plan's waits that cross ranks (one GPU per rank: its cross-device waits).
TEST(MpiEventRoles, EveryRegistryScheduleIsCovered) {
  int checked = 0;
  for (const auto& name : gpu_algorithm_names()) {
    const Algorithm* a = nullptr;
    try {
      a = &find_algorithm(name);
    } catch (const Error&) {
      continue;  // executor-only names (bidir modes, sol)
    }
    if (a->library) continue;
    for (int n : {2, 4}) {
      AlgoArgs args;
      args.nranks = n;
      args.count = 3000 * n + 7;
      args.root = n - 1;
      Schedule s;
      try {
        s = make_schedule(*a, args);
      } catch (const Error&) {
        continue;  // this rank count or size is refused by the algorithm
      }
      const Plan p = lower::lower(s, one_gpu_per_rank(n));
      const MpiEventRoles r = mpi_event_roles(p);
      int64_t flags = 0;
      for (int64_t f : r.flag_waits) flags += f;
      EXPECT_EQ(flags, p.cross_device_waits) << name << " n=" << n;
      for (int e = 0; e < p.num_events(); ++e) {
        const auto ev = size_t(e);
        EXPECT_GE(r.producer_op[ev], 0) << name << " event " << e;
        EXPECT_TRUE(r.local_wait[ev] || !r.remote_consumers[ev].empty()) << name << " event " << e;
        for (int c : r.remote_consumers[ev]) EXPECT_NE(c, r.producer_rank[ev]) << name;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace cclab::exec
