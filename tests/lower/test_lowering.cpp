#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "algorithms/registry.hpp"
#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "lower/bidir.hpp"
#include "lower/general.hpp"
#include "lower/lowering.hpp"

namespace cclab::lower {
namespace {

LowerOptions no_coalescing() {
  LowerOptions o;
  o.coalesce = false;
  return o;
}

Schedule empty_schedule(int n, int64_t bytes, const char* coll = "allreduce") {
  Schedule s;
  s.algo = "test";
  s.collective = coll;
  s.nranks = n;
  s.count = bytes / 4;
  s.buffers.assign(size_t(n), BufferSizes{bytes, bytes, bytes});
  return s;
}

TEST(Lowering, StreamsPerRankAndChannelAndEnginesByKind) {
  Schedule s = empty_schedule(2, 1024);
  Transport t(s);
  const OpId a = t.put(0, in(0), scratch(1), 512, {}, 0);
  const OpId b = t.put(1, in(1), scratch(0), 512, {}, 1);
  t.reduce(0, in(0), scratch(0), out(0), 512, {b}, 0);
  t.reduce(1, in(1), scratch(1), out(1), 512, {a}, 2);
  const Plan p = lower(s, no_coalescing());
  ASSERT_EQ(p.steps.size(), 4u);
  EXPECT_EQ(p.streams.size(), 3u);  // (0,0), (1,1), (1,2)
  EXPECT_EQ(p.steps[0].kind, StepKind::memcpy);
  EXPECT_EQ(p.steps[2].kind, StepKind::reduce_kernel);
  EXPECT_EQ(p.steps[0].stream, p.steps[2].stream);  // same rank, same channel
  EXPECT_NE(p.steps[1].stream, p.steps[3].stream);  // same rank, other channel
  // Both reduces wait for a put of the other rank: two events, both crossing GPUs.
  EXPECT_EQ(p.num_events(), 2);
  EXPECT_EQ(p.steps[2].wait_count, 1u);
  EXPECT_EQ(p.steps[3].wait_count, 1u);
  EXPECT_EQ(p.cross_device_waits, 2);
  EXPECT_EQ(p.streams[size_t(p.steps[1].stream)].device, 1);
}

TEST(Lowering, KernelLoweringTurnsCopiesIntoCopyKernels) {
  Schedule s = empty_schedule(2, 64);
  s.lowering = Lowering::kernel;
  Transport t(s);
  t.get(0, in(1), out(0), 64);
  const Plan p = lower(s, no_coalescing());
  EXPECT_EQ(p.steps[0].kind, StepKind::copy_kernel);
}

TEST(Lowering, SameStreamAndImpliedDependenciesCostNoEvent) {
  Schedule s = empty_schedule(2, 4096);
  Transport t(s);
  const OpId a0 = t.copy(0, in(0), scratch(0), 64, {}, 0);
  const OpId a1 = t.copy(0, in(0, 64), scratch(0, 64), 64, {}, 0);
  const OpId b0 = t.copy(1, in(1), scratch(1), 64, {a0, a1}, 0);          // only a1 needs an event
  const OpId b1 = t.copy(1, in(1, 64), scratch(1, 64), 64, {a0, b0}, 0);  // a0 implied through b0
  t.copy(0, in(0, 128), scratch(0, 128), 64, {a1, b1}, 0);
  const Plan p = lower(s, no_coalescing());
  EXPECT_EQ(p.steps[size_t(b0)].wait_count, 1u);
  EXPECT_EQ(p.wait_pool[p.steps[size_t(b0)].wait_begin], p.steps[size_t(a1)].record);
  EXPECT_EQ(p.steps[size_t(a0)].record, -1);
  EXPECT_EQ(p.steps[size_t(b1)].wait_count, 0u);
  EXPECT_EQ(p.steps[4].wait_count, 1u);
  EXPECT_EQ(p.num_events(), 2);
}

TEST(Lowering, TransitiveThroughAThirdStream) {
  Schedule s = empty_schedule(3, 4096);
  Transport t(s);
  const OpId a = t.copy(0, in(0), scratch(0), 64);
  const OpId b = t.copy(1, in(1), scratch(1), 64, {a});
  t.copy(2, in(2), scratch(2), 64, {a, b});  // a is implied by b
  const Plan p = lower(s, no_coalescing());
  EXPECT_EQ(p.steps[2].wait_count, 1u);
  EXPECT_EQ(p.wait_pool[p.steps[2].wait_begin], p.steps[size_t(b)].record);
}

TEST(Lowering, SharedGpusAndChannelFolding) {
  Schedule s = empty_schedule(4, 4096);
  Transport t(s);
  for (int c = 0; c < 6; ++c) t.copy(3, in(3, c * 64), scratch(3, c * 64), 64, {}, c);
  LowerOptions o;
  o.rank_device = {0, 0, 1, 1};
  o.max_streams_per_rank = 4;
  o.coalesce = false;
  const Plan p = lower(s, o);
  EXPECT_EQ(p.streams.size(), 4u);  // channels 4 and 5 fold onto 0 and 1
  for (const auto& st : p.streams) EXPECT_EQ(st.device, 1);
  EXPECT_EQ(p.steps[4].stream, p.steps[0].stream);
}

TEST(Lowering, InPlaceRefsAreResolved) {
  Schedule s = empty_schedule(2, 256, "allgather");
  s.count = 64;
  s.in_place = true;
  Transport t(s);
  t.get(1, in(0), out(1), 128);
  const Plan p = lower(s, no_coalescing());
  // allgather in place: rank 0's input is its output at offset 0 * count/n.
  EXPECT_EQ(p.steps[0].src.buf, Buf::output);
  EXPECT_EQ(p.steps[0].src.offset, 0);
  Schedule s2 = s;
  s2.ops.clear();
  Transport t2(s2);
  t2.get(0, in(1), out(0, 128), 128);
  EXPECT_EQ(lower(s2, no_coalescing()).steps[0].src.offset, 128);  // rank 1's slice
}

TEST(Lowering, ContiguousChunksWithNoConsumerCoalesce) {
  Schedule s = empty_schedule(2, 4096);
  Transport t(s);
  for (int c = 0; c < 4; ++c) t.put(0, in(0, c * 1024), out(1, c * 1024), 1024);  // a 2-rank chain: no forwarding
  const OpId last = t.put(0, in(0), out(1), 1024, {}, 1);                         // other channel: its own step
  t.copy(1, out(1), scratch(1), 4096, {OpId(3)});                                 // waits for the last chunk
  const Plan p = lower(s, LowerOptions{});
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].bytes, 4096);
  EXPECT_EQ(p.steps[0].merged, 4);
  EXPECT_GE(p.steps[0].record, 0);  // the merged copy still signals the waiter
  EXPECT_EQ(p.steps[1].op, last);
  EXPECT_EQ(lower(s, no_coalescing()).steps.size(), 6u);
}

TEST(Lowering, ChunksSomeoneWaitsForStaySeparate) {
  Schedule s = empty_schedule(3, 4096);
  Transport t(s);
  const OpId a = t.put(0, in(0, 0), out(1, 0), 1024);
  t.put(0, in(0, 1024), out(1, 1024), 1024);
  t.put(1, out(1, 0), out(2, 0), 1024, {a});  // forwards the first chunk: pipelining needs it alone
  const Plan p = lower(s, LowerOptions{});
  EXPECT_EQ(p.steps.size(), 3u);
  Schedule gap = empty_schedule(2, 4096);
  Transport t2(gap);
  t2.put(0, in(0, 0), out(1, 0), 1024);
  t2.put(0, in(0, 2048), out(1, 1024), 1024);  // not contiguous in the source
  EXPECT_EQ(lower(gap, LowerOptions{}).steps.size(), 2u);
  Schedule shift = empty_schedule(1, 4096);
  Transport t3(shift);
  t3.copy(0, scratch(0, 0), scratch(0, 64), 64);  // the second reads what the first wrote
  t3.copy(0, scratch(0, 64), scratch(0, 128), 64);
  EXPECT_EQ(lower(shift, LowerOptions{}).steps.size(), 2u);
}

TEST(Lowering, RejectsWrongDeviceCount) {
  Schedule s = empty_schedule(2, 64);
  LowerOptions o;
  o.rank_device = {0};
  EXPECT_THROW(lower(s, o), Error);
}

TEST(BidirCopySchedule, OneShotPipelineWithSlotReuseAndInPlaceHazards) {
  BidirParams p;
  p.ce_chunk = 1024;
  p.ce_pieces = 0;
  p.ce_slots = 2;
  p.ce_split = false;
  for (bool ip : {false, true}) {
    const Schedule s = bidir_copy_schedule(2, 1000, DType::f32, RedOp::sum, ip, p);  // 4000 B: 4 chunks
    validate(s);
    validate_dataflow(s);
    int gets = 0, reduces = 0;
    for (const auto& op : s.ops) {
      gets += op.kind == OpKind::get;
      reduces += op.kind == OpKind::reduce;
    }
    EXPECT_EQ(gets, 8);
    EXPECT_EQ(reduces, 8);
    EXPECT_EQ(s.buffers[0].scratch, 2 * 1024);
    const Plan plan = lower(s, no_coalescing());
    EXPECT_GT(plan.num_events(), 0);
  }
}

TEST(BidirCopySchedule, SplitPipelineReducesEachPartOnItsOwner) {
  BidirParams p;
  p.ce_chunk = 512;
  p.ce_pieces = 0;
  p.ce_slots = 2;
  for (int n : {2, 3, 4})
    for (bool ip : {false, true}) {
      const Schedule s = bidir_copy_schedule(n, 1001, DType::f32, RedOp::sum, ip, p);
      validate(s);
      validate_dataflow(s);
      int64_t reduced = 0, pushed = 0;
      for (const auto& op : s.ops) {
        if (op.kind == OpKind::reduce) reduced += op.bytes;
        if (op.kind == OpKind::put) pushed += op.bytes;
        EXPECT_NE(op.kind, OpKind::get);
      }
      // Every element is reduced n-1 times in total (once per peer, on its owner), and travels
      // (n-1) times to owners plus (n-1) times back.
      EXPECT_EQ(reduced, int64_t(n - 1) * 1001 * 4);
      EXPECT_EQ(pushed, 2 * int64_t(n - 1) * 1001 * 4);
    }
}

TEST(BidirCopySchedule, LargePartsGetLargeChunks) {
  BidirParams p;
  p.ce_pieces = 8;  // chunk = part / 8 within [4 MiB, 64 MiB]
  const Schedule s = bidir_copy_schedule(2, int64_t(1) << 28, DType::f32, RedOp::sum, false, p);  // 1 GiB
  int64_t biggest = 0;
  for (const auto& op : s.ops) biggest = std::max(biggest, op.bytes);
  EXPECT_EQ(biggest, int64_t(64) << 20);
  EXPECT_EQ(s.buffers[0].scratch, int64_t(p.ce_slots) * (64 << 20));
}

TEST(BidirCopySchedule, ManyRanksAndPush) {
  BidirParams p;
  p.ce_chunk = 512;
  p.ce_pieces = 0;
  p.ce_push = true;
  p.ce_split = false;
  const Schedule s = bidir_copy_schedule(4, 1001, DType::f16, RedOp::max, true, p);
  validate(s);
  validate_dataflow(s);
}

TEST(SolSchedule, EachRankPushesIntoItsLeftNeighbour) {
  const Schedule s = sol_bidir_copy_schedule(2, 1 << 20, DType::f32, 4);
  validate(s);
  ASSERT_EQ(s.ops.size(), 8u);
  int64_t bytes = 0;
  for (const auto& op : s.ops) {
    EXPECT_EQ(op.kind, OpKind::put);
    EXPECT_EQ(op.dst.rank, (op.rank + 1) % 2);
    if (op.rank == 0) bytes += op.bytes;
  }
  EXPECT_EQ(bytes, 4 << 20);
}

TEST(BidirParams, TuneKeysAndErrors) {
  BidirParams p;
  p.apply(
      "lanes=64,slots=8,slot_bytes=128K,flash_stages=2,ce_chunk=4M,mode=flash,flash_engine=cp.async,auto_ll_max=64K");
  EXPECT_EQ(p.flash_engine, "cp.async");
  EXPECT_EQ(p.auto_ll_max, 64 << 10);
  EXPECT_THROW(p.apply("flash_engine=tma"), Error);
  EXPECT_EQ(p.lanes, 64);
  EXPECT_EQ(p.slots, 8);
  EXPECT_EQ(p.slot_bytes, 128 << 10);
  EXPECT_EQ(p.ce_chunk, 4 << 20);
  EXPECT_THROW(parse_settings("bogus=1"), Error);
  EXPECT_THROW(parse_settings("lanes"), Error);
  EXPECT_NO_THROW(parse_settings("lanes,NCCL_ALGO=Ring", /*lenient=*/true));
  EXPECT_THROW(p.apply("slot_bytes=17"), Error);
  EXPECT_EQ(parse_bidir_mode("stream"), BidirMode::stream);
  EXPECT_EQ(parse_bidir_mode("push"), BidirMode::push);
  EXPECT_EQ(parse_bidir_mode("lamport"), BidirMode::lamport);
  BidirParams l;
  l.apply(
      "lamport_blocks=66,lamport_threads=128,lamport_unroll=4,lamport_ahead=3,lamport_split=1,lamport_max_bytes=16M,"
      "auto_mid=lamport");
  EXPECT_TRUE(l.lamport_split);
  EXPECT_EQ(l.lamport_ahead, 3);
  EXPECT_EQ(l.lamport_blocks, 66);
  EXPECT_EQ(l.lamport_threads, 128);
  EXPECT_EQ(l.lamport_unroll, 4);
  EXPECT_EQ(l.lamport_max_bytes, 16 << 20);
  EXPECT_EQ(l.auto_mid, BidirMode::lamport);
  EXPECT_THROW(BidirParams().apply("lamport_max_bytes=2G"), Error);
  BidirParams q;
  q.apply("push_threads=256,push_unroll=2,push_blocks=64,auto_mid=push");
  EXPECT_EQ(q.push_threads, 256);
  EXPECT_EQ(q.push_unroll, 2);
  EXPECT_EQ(q.push_blocks, 64);
  EXPECT_EQ(q.auto_mid, BidirMode::push);
  EXPECT_THROW(BidirParams().apply("push_threads=100"), Error);  // halves must be whole warps
  // Every mode's kernel is built for at most 512 threads: more is an input error, not a failed launch.
  for (const char* k :
       {"flash_threads", "ll_threads", "push_threads", "lamport_threads", "twoshot_threads", "stream_threads"})
    EXPECT_THROW(BidirParams().apply(std::string(k) + "=1024"), Error) << k;
  EXPECT_THROW(BidirParams().apply("auto_mid=ll"), Error);
  EXPECT_THROW(parse_bidir_mode("warp"), Error);
}

TEST(BidirChoice, SmallUsesLLLargeUsesABandwidthMode) {
  BidirParams p;
  EXPECT_EQ(choose_bidir_mode(8, 2, p), BidirMode::ll);
  EXPECT_EQ(choose_bidir_mode(32 << 10, 2, p), BidirMode::ll);
  EXPECT_NE(choose_bidir_mode(int64_t(1) << 30, 2, p), BidirMode::ll);
  EXPECT_NE(choose_bidir_mode(4 << 20, 8, p), BidirMode::ll);
  p.auto_ll_max = 1024;
  p.auto_flash_max = 1 << 20;
  p.auto_mid = BidirMode::flash;
  p.auto_large = BidirMode::stream;
  EXPECT_EQ(choose_bidir_mode(2048, 2, p), BidirMode::flash);
  EXPECT_EQ(choose_bidir_mode(2 << 20, 2, p), BidirMode::stream);
  p.auto_mid = BidirMode::push;
  EXPECT_EQ(choose_bidir_mode(2048, 2, p), BidirMode::push);
  // lamport only up to the receive buffers it keeps; larger messages go to the large mode (or copy).
  p.auto_mid = BidirMode::lamport;
  p.auto_flash_max = 64 << 20;
  p.lamport_max_bytes = 1 << 20;
  EXPECT_EQ(choose_bidir_mode(1 << 20, 2, p), BidirMode::lamport);
  EXPECT_EQ(choose_bidir_mode(2 << 20, 2, p), BidirMode::stream);
  p.auto_large = BidirMode::lamport;
  EXPECT_EQ(choose_bidir_mode(int64_t(1) << 30, 2, p), BidirMode::copy);
}

AlgoArgs two_ranks(int64_t bytes, const std::string& tune = "") {
  AlgoArgs a;
  a.nranks = 2;
  a.count = bytes / 4;
  a.tune = tune;
  return a;
}

LoweredPlan plan_of(const std::string& algo, int64_t bytes, const std::string& tune = "") {
  return lower_collective(find_algorithm(algo), two_ranks(bytes, tune), Machine{});
}

std::string column(const LoweredPlan& p, const std::string& name) {
  for (const auto& [k, v] : p.columns())
    if (k == name) return v;
  return "?";
}

TEST(LowerCollective, AllreduceBidirPicksItsModeBySize) {
  const LoweredPlan small = plan_of("allreduce.bidir", 8);
  EXPECT_EQ(small.path, Path::kernel);
  EXPECT_EQ(small.kernel.mode, BidirMode::ll);
  EXPECT_EQ(small.kernel.grid, 1);
  EXPECT_TRUE(small.kernel.pdl);
  EXPECT_EQ(small.launches, 100);
  const LoweredPlan mid = plan_of("allreduce.bidir", 2 << 20);
  EXPECT_EQ(mid.kernel.mode, BidirMode::lamport);
  EXPECT_EQ(mid.kernel.grid, 132);  // one CTA per SM of the default machine
  const LoweredPlan large = plan_of("allreduce.bidir", int64_t(1) << 30);
  EXPECT_EQ(large.path, Path::general);
  EXPECT_EQ(*large.mode, BidirMode::copy);
  EXPECT_EQ(large.launches, 20);
  EXPECT_EQ(large.reduce_blocks, BidirParams{}.ce_reduce_blocks);
  // --tune mode= and the forcing names win over the size.
  EXPECT_EQ(plan_of("allreduce.bidir", 8, "mode=flash").kernel.mode, BidirMode::flash);
  EXPECT_EQ(plan_of("allreduce.bidir.push", 8).kernel.mode, BidirMode::push);
  EXPECT_EQ(plan_of("allreduce.bidir.copy", 8).path, Path::general);
  // A GPU shared by ranks: plain launches, every CTA resident.
  Machine shared;
  shared.rank_device = {0, 0};
  const LoweredPlan s = lower_collective(find_algorithm("allreduce.bidir.ll"), two_ranks(256 << 10), shared);
  EXPECT_FALSE(s.kernel.pdl);
  EXPECT_LE(s.kernel.grid, 66);
  // The occupancy the machine reports bounds the push grid.
  Machine tight;
  tight.resident = [](BidirMode, int, int) { return 100; };
  EXPECT_EQ(lower_collective(find_algorithm("allreduce.bidir.push"), two_ranks(64 << 20), tight).kernel.grid, 100);
}

// The pipelined broadcast's chunk: sqrt(S a B / (n - 2)), between NCCL's step (512 KiB) and the message; two ranks
// keep the default (nothing to overlap).
TEST(LowerCollective, PipelineChunkGrowsWithTheMessageAndShrinksWithTheHops) {
  EXPECT_EQ(pipeline_chunk_bytes(int64_t(512) << 20, 2), 0);
  const int64_t big = pipeline_chunk_bytes(int64_t(512) << 20, 4);
  EXPECT_NEAR(double(big), std::sqrt(double(int64_t(512) << 20) * kPipelineStepBytes / 2), 1.0);
  EXPECT_GT(big, int64_t(24) << 20);                            // ~31 MB: 17 chunks of 512 MiB over 3 hops
  EXPECT_LT(pipeline_chunk_bytes(int64_t(512) << 20, 8), big);  // more hops, more fill: smaller chunks
  EXPECT_EQ(pipeline_chunk_bytes(64 << 10, 4), 512 << 10);      // never below NCCL's step
  AlgoArgs a;
  a.nranks = 4;
  a.count = (int64_t(512) << 20) / 4;
  const LoweredPlan p = lower_collective(find_algorithm("broadcast.pipeline"), a, Machine{});
  auto puts = [](const LoweredPlan& plan) {  // each chunk crosses n - 1 = 3 hops
    return std::count_if(plan.schedule.ops.begin(), plan.schedule.ops.end(),
                         [](const Op& o) { return o.kind == OpKind::put; });
  };
  EXPECT_EQ(puts(p), 3 * (((int64_t(512) << 20) + big - 1) / big));
  a.tune = "chunk_bytes=8M";  // --tune still wins
  EXPECT_EQ(puts(lower_collective(find_algorithm("broadcast.pipeline"), a, Machine{})), 3 * 64);
}

// More than 2 ranks: one-shot modes move n-1 times the message per rank, so allreduce.bidir takes ll, then the
// wide mid mode, then twoshot (each rank reduces its slice, 2(n-1)/n of the message per rank), then the ring.
TEST(LowerCollective, WideBidirChoosesTwoshotAboveItsCrossovers) {
  auto four = [](int64_t bytes) {
    AlgoArgs a;
    a.nranks = 4;
    a.count = bytes / 4;
    return a;
  };
  const Algorithm& bidir = find_algorithm("allreduce.bidir");
  const BidirParams d;
  EXPECT_EQ(lower_collective(bidir, four(d.wide_ll_max), Machine{}).kernel.mode, BidirMode::ll);
  EXPECT_EQ(lower_collective(bidir, four(d.wide_mid_max), Machine{}).kernel.mode, d.wide_mid);
  const LoweredPlan large = lower_collective(bidir, four(int64_t(1) << 30), Machine{});
  EXPECT_EQ(large.path, Path::kernel);
  EXPECT_EQ(large.kernel.mode, BidirMode::twoshot);
  // The store-only variant by default: 2 CTAs per SM, and half of each CTA's threads reduce.
  EXPECT_TRUE(large.kernel.push);
  EXPECT_EQ(large.kernel.grid, 264);
  // A slice smaller than the grid's first round takes fewer CTAs: 1 MiB over 4 ranks, 256 reducing threads x 2
  // vectors a round.
  const Algorithm& twoshot = find_algorithm("allreduce.bidir.twoshot");
  EXPECT_EQ(lower_collective(twoshot, four(1 << 20), Machine{}).kernel.grid, 32);
  // The load variant: one CTA per SM, every thread reduces (512 threads x 1 vector a round).
  AlgoArgs loads = four(1 << 20);
  loads.tune = "twoshot_push=0,twoshot_unroll=1";
  const LoweredPlan load = lower_collective(twoshot, loads, Machine{});
  EXPECT_FALSE(load.kernel.push);
  EXPECT_EQ(load.kernel.grid, 32);
  loads.count = (int64_t(1) << 30) / 4;
  EXPECT_EQ(lower_collective(twoshot, loads, Machine{}).kernel.grid, 132);
  loads.tune = "twoshot_threads=96";  // half store, half reduce: a multiple of 64
  EXPECT_THROW(lower_collective(twoshot, loads, Machine{}), Error);
  // Loads up to twoshot_load_max, stores above it.
  AlgoArgs split = four(4 << 20);
  split.tune = "twoshot_load_max=4M";
  EXPECT_FALSE(lower_collective(twoshot, split, Machine{}).kernel.push);
  split.count = (int64_t(8) << 20) / 4;
  EXPECT_TRUE(lower_collective(twoshot, split, Machine{}).kernel.push);
  // Each variant at its own unroll: twoshot_load_unroll for the loads, twoshot_unroll for the stores; without
  // twoshot_load_unroll both take twoshot_unroll.
  split.tune = "twoshot_load_max=4M,twoshot_load_unroll=1";
  EXPECT_EQ(lower_collective(twoshot, split, Machine{}).kernel.unroll, 2);
  split.count = (int64_t(4) << 20) / 4;
  EXPECT_EQ(lower_collective(twoshot, split, Machine{}).kernel.unroll, 1);
  split.tune = "twoshot_load_max=4M,twoshot_unroll=4";
  EXPECT_EQ(lower_collective(twoshot, split, Machine{}).kernel.unroll, 4);
  // The crossovers come from --tune like the 2-rank ones.
  AlgoArgs tuned = four(4 << 20);
  tuned.tune = "wide_mid_max=8M,wide_mid=push";
  EXPECT_EQ(lower_collective(bidir, tuned, Machine{}).kernel.mode, BidirMode::push);
  tuned.tune = "wide_mid=ll";
  EXPECT_THROW(lower_collective(bidir, tuned, Machine{}), Error);
}

// From wide_ring_min on (more than 2 ranks), allreduce.bidir is lowered as allreduce.ring is: the same schedule on
// the general path, its channels included, under its own name and mode.
TEST(LowerCollective, WideBidirRunsTheRingFromItsCrossover) {
  AlgoArgs a;
  a.nranks = 4;
  a.count = (512 << 20) / 4;
  a.tune = "wide_ring_min=512M";
  const LoweredPlan bidir = lower_collective(find_algorithm("allreduce.bidir"), a, Machine{});
  const LoweredPlan ring = lower_collective(find_algorithm("allreduce.ring"), a, Machine{});
  EXPECT_EQ(bidir.path, Path::general);
  ASSERT_TRUE(bidir.mode.has_value());
  EXPECT_EQ(*bidir.mode, BidirMode::ring);
  EXPECT_EQ(bidir.algo, "allreduce.bidir");
  EXPECT_EQ(bidir.general.steps.size(), ring.general.steps.size());
  EXPECT_EQ(bidir.launches, ring.launches);
  EXPECT_EQ(column(bidir, "bidir_mode"), "ring");
  // Below it, and by default (0: never), the two-shot; the ring is never the middle mode.
  a.count /= 2;
  EXPECT_EQ(lower_collective(find_algorithm("allreduce.bidir"), a, Machine{}).kernel.mode, BidirMode::twoshot);
  a.tune = "";
  a.count *= 4;
  EXPECT_EQ(lower_collective(find_algorithm("allreduce.bidir"), a, Machine{}).kernel.mode, BidirMode::twoshot);
  a.tune = "mode=ring";  // at any size, as allreduce.ring (here the fused path)
  a.count = 1024;
  EXPECT_EQ(lower_collective(find_algorithm("allreduce.bidir"), a, Machine{}).path,
            lower_collective(find_algorithm("allreduce.ring"), a, Machine{}).path);
  BidirParams p;
  EXPECT_THROW(p.apply("wide_mid=ring"), Error);
  EXPECT_THROW(p.apply("auto_mid=ring"), Error);
  EXPECT_THROW(bidir_launch(BidirMode::ring, 1 << 20, 4, false, p, LaunchLimits{}), Error);
}

// What the simulator prices a kernel launch by: its mechanisms, each mode's from the kernel's code.
TEST(KernelMechanisms, EachModeAsTheMechanismsItIsMadeOf) {
  using K = KernelMechanisms;
  BidirParams p;
  const LaunchLimits gpu{132, 1, {}};
  constexpr int64_t S = 1 << 20;
  auto of = [&](BidirMode mode, int n, bool in_place = false, int64_t bytes = 1 << 20) {
    return kernel_mechanisms(bidir_launch(mode, bytes, n, in_place, p, gpu), bytes, n, in_place, p);
  };
  // One-shot modes carry every peer's whole message through each port, two-shot a reduce-scatter and an all-gather.
  EXPECT_EQ(of(BidirMode::flash, 4).port_bytes, 3 * S);
  EXPECT_EQ(of(BidirMode::twoshot, 4).port_bytes, 2 * 3 * S / 4);
  // Loads between a start and a finish handshake, the reduction within them.
  const K flash = of(BidirMode::flash, 2);
  EXPECT_EQ(flash.link, K::Link::loads);
  EXPECT_EQ(flash.round_trips, 1);
  EXPECT_EQ(flash.handshakes, 2);
  EXPECT_EQ(flash.reduce, K::Reduce::within);
  EXPECT_FALSE(flash.stores_acknowledged);
  // The store-only two-shot stores the reduced slice into the peer before its finish; the load variant does not
  // wait for more than its three round trips.
  EXPECT_TRUE(of(BidirMode::twoshot, 2).stores_acknowledged);
  EXPECT_EQ(of(BidirMode::twoshot, 2).handshakes, 1);  // the finish (its flags say the peer has started)
  p.twoshot_push = false;
  EXPECT_FALSE(of(BidirMode::twoshot, 2).stores_acknowledged);
  // LL stores, a round trip, waves of the grid's threads x 8 bytes (every peer's).
  const K ll = of(BidirMode::ll, 3, false, 64 << 10);
  EXPECT_EQ(ll.link, K::Link::ll_stores);
  EXPECT_EQ(ll.round_trips, 1);
  EXPECT_EQ(ll.wave_bytes, int64_t(ll.grid) * p.ll_threads * 2 * 8);
  // Push: half of each CTA's threads store, a flag after each tile; the last CTA's share reduced at one CTA's rate.
  const K push = of(BidirMode::push, 2);
  EXPECT_EQ(push.link, K::Link::stores);
  EXPECT_EQ(push.round_trips, 2);
  EXPECT_EQ(push.reduce, K::Reduce::beside_one_cta);
  EXPECT_EQ(push.tile_bytes, int64_t(push.vectors * 16));
  // Lamport split out of place: half the threads send.
  p.lamport_split = true;
  EXPECT_EQ(of(BidirMode::lamport, 2).vectors * 2, of(BidirMode::lamport, 2, /*in_place=*/true).vectors);
  // Stream: lanes passing units of a slot (or the whole message, when smaller) through the rings.
  p.slot_bytes = 256 << 10;
  EXPECT_EQ(of(BidirMode::stream, 2).unit_bytes, 256 << 10);
  p.slot_bytes = 4 << 20;
  EXPECT_EQ(of(BidirMode::stream, 2).unit_bytes, S);
  EXPECT_EQ(of(BidirMode::stream, 2).round_trips, 2);
  EXPECT_EQ(of(BidirMode::stream, 2).handshakes, 2);
}

TEST(LowerCollective, GeneralSchedulesRunFusedWhileSmall) {
  const LoweredPlan small = plan_of("allreduce.ring", 4096);
  EXPECT_EQ(small.path, Path::fused);
  EXPECT_EQ(small.launches, 100);
  EXPECT_EQ(column(small, "lanes"), "2");
  const LoweredPlan large = plan_of("allreduce.ring", 2 << 20);
  EXPECT_EQ(large.path, Path::general);
  EXPECT_EQ(large.launches, 20);
  EXPECT_TRUE(large.held);
  EXPECT_EQ(column(large, "steps"), std::to_string(large.general.steps.size()));
  // No GPU waits for another in a 2-rank direct reduce: the general plan, whatever the size.
  EXPECT_EQ(plan_of("reduce.direct", 16).path, Path::general);
  EXPECT_EQ(plan_of("allreduce.ring", 4096, "lowering=plan").path, Path::general);
  EXPECT_EQ(plan_of("allreduce.ring", 4096, "launches=7").launches, 7);
  // A graph of more nodes than the hold covers is not held.
  const LoweredPlan tree = plan_of("allreduce.tree", 64 << 20);
  EXPECT_EQ(tree.held, tree.graph_nodes() <= kMaxHeldGraphNodes);
  EXPECT_FALSE(tree.held);
}

// copies= moves the general plan's data by copy engines or by kernels, whatever the schedule says; the plan's
// schedule says which, so the simulator prices the same engine.
TEST(LowerCollective, CopiesSettingPicksTheGeneralPlansEngine) {
  auto kinds = [](const LoweredPlan& p) {
    std::set<StepKind> k;
    for (const auto& st : p.general.steps) k.insert(st.kind);
    return k;
  };
  const LoweredPlan ce = plan_of("broadcast.pipeline", 8 << 20);
  ASSERT_EQ(ce.path, Path::general);
  EXPECT_EQ(kinds(ce), std::set<StepKind>{StepKind::memcpy});
  const LoweredPlan sm = plan_of("broadcast.pipeline", 8 << 20, "copies=kernel");
  EXPECT_EQ(kinds(sm), std::set<StepKind>{StepKind::copy_kernel});
  EXPECT_EQ(sm.schedule.lowering, Lowering::kernel);
  // The copy-engine all-reduce asks for copy engines; copies=kernel overrides it.
  EXPECT_EQ(kinds(plan_of("allreduce.bidir.copy", 64 << 20, "copies=kernel")).count(StepKind::memcpy), 0u);
  EXPECT_THROW(parse_settings("copies=dma"), Error);
}

// On more than 2 GPUs the general path keeps its graphs held and gives the reducing rings a second channel.
TEST(LowerCollective, WideGeneralPlansStayHeldAndRingsOverlapCopyAndReduce) {
  EXPECT_EQ(held_launches(36, 20), 14);   // 512 / 36
  EXPECT_EQ(held_launches(16, 20), 20);   // never more than the default
  EXPECT_EQ(held_launches(3072, 20), 1);  // at least one, held or not
  AlgoArgs a;
  a.nranks = 4;
  a.count = 2 * FusedParams{}.wide_sliced_fused_max / 4;  // above the rings' fused sizes
  const LoweredPlan rs = lower_collective(find_algorithm("reducescatter.ring"), a, Machine{});
  EXPECT_EQ(rs.path, Path::general);
  EXPECT_EQ(rs.schedule.nranks, 4);
  EXPECT_EQ(column(rs, "streams"), "8");  // 2 channels x 4 ranks
  EXPECT_EQ(rs.launches, held_launches(int64_t(rs.general.steps.size()), 20));
  EXPECT_TRUE(rs.held);
  // A ring that only copies keeps its one channel; --tune still wins.
  EXPECT_EQ(column(lower_collective(find_algorithm("allgather.ring"), a, Machine{}), "streams"), "4");
  a.tune = "channels=1,launches=20";
  const LoweredPlan one = lower_collective(find_algorithm("reducescatter.ring"), a, Machine{});
  EXPECT_EQ(column(one, "streams"), "4");
  EXPECT_EQ(one.launches, 20);
  // Ranks sharing GPUs (timings not meaningful there) and 2 ranks keep one channel and 20 launches.
  a.tune.clear();
  Machine shared;
  shared.rank_device = {0, 1, 0, 1};
  EXPECT_EQ(lower_collective(find_algorithm("reducescatter.ring"), a, shared).launches, 20);
  a.nranks = 8;
  a.count = 2 * FusedParams{}.wide_sliced_fused_max / 4;
  shared.rank_device = {0, 1, 2, 3, 0, 1, 2, 3};
  const LoweredPlan eight = lower_collective(find_algorithm("reducescatter.ring"), a, shared);
  EXPECT_EQ(eight.launches, 20);
  EXPECT_EQ(eight.schedule.ops.size(), lower_collective(
                                           find_algorithm("reducescatter.ring"),
                                           [&] {
                                             AlgoArgs one = a;
                                             one.tune = "channels=1";
                                             return one;
                                           }(),
                                           shared)
                                           .schedule.ops.size());
  a.nranks = 2;
  a.count = (int64_t(256) << 20) / 4;
  const LoweredPlan two = lower_collective(find_algorithm("reducescatter.ring"), a, Machine{});
  EXPECT_EQ(column(two, "streams"), "2");
  EXPECT_EQ(two.launches, 20);
}

TEST(LowerCollective, LibraryAndLinkTest) {
  const LoweredPlan nccl = plan_of("allreduce.nccl", 1 << 20);
  EXPECT_EQ(nccl.path, Path::library);
  EXPECT_EQ(nccl.launches, 100);
  EXPECT_EQ(column(nccl, "lowering"), "library");
  const LoweredPlan sol = plan_of("sol.bidir_copy", 1 << 20);
  EXPECT_EQ(sol.path, Path::general);
  EXPECT_EQ(sol.general.steps.size(), 2u);
}

TEST(LowerCollective, ColumnsNameEveryPlanColumnOnce) {
  const auto cols = plan_of("allreduce.bidir", 8).columns();
  ASSERT_EQ(cols.size(), plan_column_names().size());
  for (size_t i = 0; i < cols.size(); ++i) EXPECT_EQ(cols[i].first, plan_column_names()[i]);
  EXPECT_EQ(column(plan_of("allreduce.bidir", 8), "bidir_mode"), "ll");
  EXPECT_EQ(column(plan_of("allreduce.bidir", 8), "pdl"), "1");
}

TEST(LowerCollective, SmsOfKnownGpus) {
  EXPECT_EQ(sms_of_gpu("NVIDIA H200"), 132);
  EXPECT_EQ(sms_of_gpu("H20"), 78);
  EXPECT_EQ(sms_of_gpu("A100-SXM4-80GB"), 108);
  EXPECT_EQ(sms_of_gpu("something new"), 132);
}

TEST(PlanSchedule, StepsWithTheirStreamOrderAndEvents) {
  const LoweredPlan p = plan_of("allreduce.ring", 4 << 20, "lowering=plan");
  const Schedule s = plan_schedule(p.schedule, p.general);
  ASSERT_EQ(s.ops.size(), p.general.steps.size());
  int cross = 0;
  for (const Op& op : s.ops)
    for (OpId d : s.deps(op)) cross += s.ops[size_t(d)].rank != op.rank;
  EXPECT_EQ(cross, int(p.general.cross_device_waits));
}

}  // namespace
}  // namespace cclab::lower
