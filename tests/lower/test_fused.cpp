// The fused lowering's encoding on the CPU: op tables, lanes, CTA groups, flag slots, start and end
// waits. The main check runs every registry schedule's program through a randomized model of the
// kernel (CTAs interleaved at random, each waiting only for what its op table says) and asserts that
// every execution respects the schedule: dependencies complete before an op starts, conflicting ops
// of a lane in order, no GPU's memory touched before that GPU started, no GPU finishing while a
// peer still touches its memory, and no deadlock.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

#include "algorithms/fused_probes.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "lower/fused.hpp"

namespace cclab::lower {
namespace {

Schedule empty_schedule(int n, int64_t bytes, const char* coll = "allreduce") {
  Schedule s;
  s.algo = "test";
  s.collective = coll;
  s.nranks = n;
  s.count = bytes / 4;
  s.buffers.assign(size_t(n), BufferSizes{bytes, bytes, bytes});
  return s;
}

struct Acc {
  Ref ref;
  int64_t bytes;
  bool write;
};
std::vector<Acc> accesses(const FusedOp& o) {
  if (o.bytes <= 0) return {};
  if (o.kind == FusedKind::copy) return {{o.src, o.bytes, false}, {o.dst, o.bytes, true}};
  if (o.kind == FusedKind::reduce) return {{o.src, o.bytes, false}, {o.src2, o.bytes, false}, {o.dst, o.bytes, true}};
  return {{o.dst, o.bytes, true}};
}
bool conflict(const FusedOp& a, const FusedOp& b) {
  for (const Acc& x : accesses(a))
    for (const Acc& y : accesses(b))
      if ((x.write || y.write) && x.ref.rank == y.ref.rank && x.ref.buf == y.ref.buf &&
          x.ref.offset < y.ref.offset + y.bytes && y.ref.offset < x.ref.offset + x.bytes)
        return true;
  return false;
}

// Runs the program once in a random interleaving; returns "" or the first violation.
std::string simulate(const Schedule& s, const FusedProgram& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int ndev = p.ndevices();
  struct Cta {
    int dev, lane, g;  // lane: index into p.lanes (-1: none)
    uint32_t next = 0;
    bool started_op = false;
  };
  std::vector<Cta> ctas;
  for (int d = 0; d < ndev; ++d) {
    const auto& dv = p.devices[size_t(d)];
    for (int32_t l : dv.lanes)
      for (int g = 0; g < p.lanes[size_t(l)].ctas; ++g) ctas.push_back({d, l, g});
    if (dv.lanes.empty()) ctas.push_back({d, -1, 0});
  }
  // op (device, index) -> which CTAs' parts are done; schedule op -> (device, index).
  std::vector<std::vector<std::vector<char>>> shares(static_cast<size_t>(ndev));
  std::vector<std::pair<int, int>> where(s.ops.size(), {-1, -1});
  for (int d = 0; d < ndev; ++d) {
    const auto& dv = p.devices[size_t(d)];
    shares[size_t(d)].resize(dv.ops.size());
    for (size_t i = 0; i < dv.ops.size(); ++i) {
      shares[size_t(d)][i].assign(size_t(p.lanes[size_t(dv.ops[i].lane)].ctas), 0);
      if (dv.ops[i].op != kNoOp) where[size_t(dv.ops[i].op)] = {d, int(i)};
    }
  }
  for (size_t i = 0; i < s.ops.size(); ++i)
    if (where[i].first < 0) return "schedule op " + std::to_string(i) + " is not in the program";
  auto complete = [&](int d, int i) {
    for (char done : shares[size_t(d)][size_t(i)])
      if (!done) return false;
    return true;
  };
  // Whether the parts of op (d, i) that CTA g of `f` depends on are done: where they touch the same bytes (one
  // writing), the parts of (d, i) whose bytes meet the bytes part g of f touches (fused_share: the kernel's split);
  // with no such bytes, the whole op if `whole`, else nothing.
  auto seen = [&](int d, int i, const FusedOp& f, int g, bool whole) {
    const FusedOp& a = p.devices[size_t(d)].ops[size_t(i)];
    const int ka = p.lanes[size_t(a.lane)].ctas, kf = p.lanes[size_t(f.lane)].ctas;
    int64_t flo, fhi;
    fused_share(f.bytes, g, kf, flo, fhi);
    bool touched = false;
    for (const Acc& x : accesses(a))
      for (const Acc& y : accesses(f)) {
        if ((!x.write && !y.write) || x.ref.rank != y.ref.rank || x.ref.buf != y.ref.buf) continue;
        const int64_t lo = std::max(x.ref.offset, y.ref.offset + flo),
                      hi = std::min(x.ref.offset + x.bytes, y.ref.offset + fhi);
        if (x.ref.offset < y.ref.offset + y.bytes && y.ref.offset < x.ref.offset + x.bytes) touched = true;
        if (lo >= hi) continue;
        for (int h = 0; h < ka; ++h) {
          int64_t alo, ahi;
          fused_share(a.bytes, h, ka, alo, ahi);
          if (std::max(lo, x.ref.offset + alo) < std::min(hi, x.ref.offset + ahi) &&
              !shares[size_t(d)][size_t(i)][size_t(h)])
            return false;
        }
      }
    return touched || !whole || complete(d, i);
  };
  // Every schedule op's ancestors (its dependencies, theirs, ...): what it must see of them is checked by bytes.
  const size_t words = (s.ops.size() + 63) / 64;
  std::vector<std::vector<uint64_t>> ancestors(s.ops.size(), std::vector<uint64_t>(words, 0));
  for (size_t i = 0; i < s.ops.size(); ++i)
    for (OpId d : s.deps(s.ops[i]))
      if (d != kNoOp) {
        for (size_t w = 0; w < words; ++w) ancestors[i][w] |= ancestors[size_t(d)][w];
        ancestors[i][size_t(d) / 64] |= uint64_t(1) << (size_t(d) % 64);
      }
  std::vector<std::vector<char>> flag(size_t(ndev), std::vector<char>(size_t(p.nslots), 0));
  std::vector<char> started(size_t(ndev), 0), finished(size_t(ndev), 0);
  auto dev_of = [&](int32_t rank) { return p.rank_device[size_t(rank)]; };
  auto cta_done = [&](const Cta& c) { return c.lane < 0 || c.next == p.lanes[size_t(c.lane)].op_count; };
  for (;;) {
    // Enabled actions: a GPU starting, a CTA running its next op, a GPU finishing.
    std::vector<int> actions;  // >= 0: CTA index; -1 - d: start d; -1 - ndev - d: finish d
    for (int d = 0; d < ndev; ++d) {
      if (!started[size_t(d)]) {
        actions.push_back(-1 - d);
        continue;
      }
      if (finished[size_t(d)]) continue;
      bool all = true;
      for (const Cta& c : ctas)
        if (c.dev == d && !cta_done(c)) all = false;
      for (int32_t sl : p.devices[size_t(d)].finals)
        if (!flag[size_t(d)][size_t(sl)]) all = false;
      if (all) actions.push_back(-1 - ndev - d);
    }
    for (size_t ci = 0; ci < ctas.size(); ++ci) {
      const Cta& c = ctas[ci];
      if (!started[size_t(c.dev)] || cta_done(c)) continue;
      const auto& dv = p.devices[size_t(c.dev)];
      const FusedOp& f = dv.ops[p.lanes[size_t(c.lane)].op_begin + c.next];
      bool ok = true;
      for (uint32_t w = 0; w < f.wait_count && ok; ++w) {
        const int32_t raw = dv.waits[f.wait_begin + w];
        ok = flag[size_t(c.dev)][size_t(raw & kSliceWait ? (raw & ~kSliceWait) + c.g : raw)];
      }
      if (ok) actions.push_back(int(ci));
    }
    if (actions.empty()) break;
    const int act = actions[rng() % actions.size()];
    if (act < 0 && act >= -ndev) {
      const int d = -1 - act;
      started[size_t(d)] = 1;
      for (int q = 0; q < ndev; ++q)
        if (q != d) flag[size_t(q)][size_t(d)] = 1;
      continue;
    }
    if (act < 0) {
      const int d = -1 - ndev - act;
      // Every op of another GPU that touches this GPU's memory must be complete.
      for (int q = 0; q < ndev; ++q) {
        if (q == d) continue;
        const auto& dq = p.devices[size_t(q)];
        for (size_t i = 0; i < dq.ops.size(); ++i)
          for (const Acc& a : accesses(dq.ops[i]))
            if (dev_of(a.ref.rank) == d && !complete(q, int(i)))
              return "gpu " + std::to_string(d) + " finished while op " + std::to_string(dq.ops[i].op) + " of gpu " +
                     std::to_string(q) + " still touches its memory";
      }
      finished[size_t(d)] = 1;
      continue;
    }
    Cta& c = ctas[size_t(act)];
    const auto& dv = p.devices[size_t(c.dev)];
    const FusedLane& lane = p.lanes[size_t(c.lane)];
    const int idx = int(lane.op_begin + c.next);
    const FusedOp& f = dv.ops[size_t(idx)];
    const std::string name = f.op == kNoOp ? "scale of rank " + std::to_string(f.rank) : "op " + std::to_string(f.op);
    // What the schedule orders before this op is done, byte by byte: the bytes of its ancestors it touches
    // (one of the two writing), and its direct dependencies whole where they share no byte.
    if (f.op != kNoOp) {
      std::vector<char> direct(s.ops.size(), 0);
      for (OpId d : s.deps(s.ops[size_t(f.op)]))
        if (d != kNoOp) direct[size_t(d)] = 1;
      const auto& anc = ancestors[size_t(f.op)];
      for (size_t w = 0; w < words; ++w)
        for (uint64_t bits = anc[w]; bits; bits &= bits - 1) {
          const size_t d = w * 64 + size_t(std::countr_zero(bits));
          if (!seen(where[d].first, where[d].second, f, c.g, direct[d] != 0))
            return name + " (CTA " + std::to_string(c.g) + ") ran before what it needs of op " + std::to_string(d);
        }
    } else {
      for (size_t i = 0; i < s.ops.size(); ++i)
        if (!complete(where[i].first, where[i].second)) return name + " ran before op " + std::to_string(i);
    }
    // What earlier ops of the lane wrote or read of the bytes this part touches is done.
    for (uint32_t j = lane.op_begin; j < uint32_t(idx); ++j)
      if (conflict(dv.ops[j], f) && !seen(c.dev, int(j), f, c.g, false))
        return name + " ran before the conflicting earlier op " + std::to_string(dv.ops[j].op) + " of its lane";
    // Other GPUs' memory only after they started.
    for (const Acc& a : accesses(f))
      if (!started[size_t(dev_of(a.ref.rank))]) return name + " touched a GPU that had not started";
    shares[size_t(c.dev)][size_t(idx)][size_t(c.g)] = 1;
    ++c.next;
    if (f.slot >= 0 && (f.sliced || complete(c.dev, idx)))
      for (int q = 0; q < ndev; ++q)
        if (f.publish_mask >> q & 1u) flag[size_t(q)][size_t(f.slot + (f.sliced ? c.g : 0))] = 1;
  }
  for (int d = 0; d < ndev; ++d)
    if (!finished[size_t(d)]) return "deadlock: gpu " + std::to_string(d) + " never finished\n" + describe(s, p);
  return "";
}

std::vector<const Algorithm*> fused_algorithms() {
  std::vector<const Algorithm*> out;
  for (const auto& a : algorithms())
    if ((a.backends & kGpu) && !a.library && !a.needs_shape && !a.needs_sparse) out.push_back(&a);
  return out;
}

struct Layout {
  std::vector<int> rank_device;
};

void check_all(const std::vector<int>& rank_device, std::vector<int64_t> elems, int seeds, int max_ctas,
               bool slices = false) {
  const int n = int(rank_device.size());
  int programs = 0;
  for (const Algorithm* a : fused_algorithms()) {
    for (int64_t count : elems)
      for (bool in_place : {false, true})
        for (RedOp op : {RedOp::sum, RedOp::avg}) {
          if (op == RedOp::avg && a->collective != "allreduce" && a->collective != "reduce" &&
              a->collective != "reducescatter")
            continue;
          AlgoArgs args;
          args.nranks = n;
          args.count = count_for_bytes(a->collective, count * 4, DType::f32, n);
          if (args.count == 0) continue;
          args.redop = op;
          args.root = n - 1;
          args.in_place = in_place;
          Schedule s;
          try {
            s = make_schedule(*a, args);
          } catch (const Error& e) {
            if (e.kind() == ErrorKind::input) continue;  // e.g. a power-of-two algorithm on 6 ranks
            throw;
          }
          FusedOptions fo;
          fo.rank_device = rank_device;
          fo.max_ctas = max_ctas;
          fo.slices = slices;
          FusedProgram p;
          try {
            p = encode_fused(s, fo);
          } catch (const Error& e) {
            if (e.kind() == ErrorKind::input) continue;  // compute ops
            throw;
          }
          for (const auto& dv : p.devices) EXPECT_LE(dv.ctas, max_ctas) << a->name;
          for (int seed = 0; seed < seeds; ++seed) {
            const std::string err = simulate(s, p, uint64_t(seed) * 7919 + uint64_t(count));
            ASSERT_EQ(err, "") << a->name << " " << n << " ranks, " << args.count << " elements, in_place=" << in_place
                               << " " << redop_name(op) << " seed " << seed;
          }
          ++programs;
        }
  }
  EXPECT_GT(programs, 20);
}

TEST(FusedSim, EveryAlgorithmTwoRanks) { check_all({0, 1}, {1, 7, 1031}, 3, 132); }
// Large enough that lanes get several CTAs (1 MiB ops at 32 KiB per CTA), with few CTAs so lanes share.
TEST(FusedSim, EveryAlgorithmTwoRanksCtaGroups) { check_all({0, 1}, {(1 << 18) + 5}, 2, 24); }
TEST(FusedSim, EveryAlgorithmFourRanksOnTwoGpus) { check_all({0, 0, 1, 1}, {7, 1031}, 2, 132); }
TEST(FusedSim, EveryAlgorithmEightRanksOnTwoGpus) { check_all({0, 0, 0, 0, 1, 1, 1, 1}, {13, 4099}, 1, 132); }
TEST(FusedSim, EveryAlgorithmFourGpus) { check_all({0, 1, 2, 3}, {1031, (1 << 16) + 3}, 2, 16); }
// Sliced ops (per-CTA flags): the same checks, part by part.
TEST(FusedSim, EveryAlgorithmTwoRanksSliced) { check_all({0, 1}, {(1 << 18) + 5}, 2, 24, true); }
TEST(FusedSim, EveryAlgorithmFourGpusSliced) { check_all({0, 1, 2, 3}, {(1 << 16) + 3, (1 << 18) + 1}, 2, 16, true); }
TEST(FusedSim, EveryAlgorithmFourRanksOnTwoGpusSliced) { check_all({0, 0, 1, 1}, {(1 << 17) + 7}, 2, 32, true); }

// The calibration's synthetic programs (algorithms/fused_probes.hpp) are valid schedules the fused kernel runs
// safely, with one lane per rank that sends (rank 0 only for the one-way ones) and the ops the names promise.
TEST(FusedSim, CalibrationProbes) {
  const std::pair<FusedProbe, int> probes[] = {
      {FusedProbe::oneway, 0},   {FusedProbe::oneway, 1},      {FusedProbe::oneway, 8}, {FusedProbe::exchange, 0},
      {FusedProbe::exchange, 1}, {FusedProbe::exchange, 8},    {FusedProbe::puts, 8},   {FusedProbe::reduce, 1},
      {FusedProbe::reduce, 8},   {FusedProbe::exchange_pre, 1}};
  for (const auto& [kind, n] : probes)
    for (int64_t bytes : {8, 2048}) {
      const Schedule s = fused_probe(kind, n, bytes);
      validate_dataflow(s);
      const bool both = kind == FusedProbe::exchange || kind == FusedProbe::reduce || kind == FusedProbe::exchange_pre;
      EXPECT_EQ(s.ops.size(), size_t(both ? 2 * (n + 1) : n + 1)) << s.algo;
      FusedOptions fo;
      fo.rank_device = {0, 1};
      const FusedProgram p = encode_fused(s, fo);
      EXPECT_EQ(p.lanes.size(), size_t(both ? 2 : 1)) << s.algo;
      for (uint64_t seed = 0; seed < 3; ++seed) ASSERT_EQ(simulate(s, p, seed), "") << s.algo;
    }
  EXPECT_EQ(fused_probe_series(FusedProbe::exchange, 8), "fused.prog.exchange.8");
  EXPECT_EQ(fused_probe_series(FusedProbe::exchange_pre, 1), "fused.prog.exchange_pre.1");
  EXPECT_THROW(fused_probe(FusedProbe::puts, 1, 6), Error);
  // The 4-GPU probes: a ring's steps (every rank at work), a chain (one at a time), a fan-out from rank 0.
  const int wide = kFusedWideProbeRanks;
  const std::pair<FusedProbe, int> wide_probes[] = {{FusedProbe::ring, 1},
                                                    {FusedProbe::ring, wide - 1},
                                                    {FusedProbe::chain, wide - 1},
                                                    {FusedProbe::fanout, wide - 1}};
  for (const auto& [kind, n] : wide_probes)
    for (int64_t bytes : {8, 2048}) {
      const Schedule s = fused_probe(kind, n, bytes);
      ASSERT_TRUE(fused_probe_is_wide(kind));
      EXPECT_EQ(s.nranks, wide) << s.algo;
      validate_dataflow(s);
      EXPECT_EQ(s.ops.size(), size_t(kind == FusedProbe::ring ? wide * n : n)) << s.algo;
      for (const Op& op : s.ops) EXPECT_EQ(op.kind, OpKind::put) << s.algo;
      FusedOptions fo;
      fo.rank_device = {0, 1, 2, 3};
      const FusedProgram p = encode_fused(s, fo);
      // Lanes on the ranks that put: every rank in a ring, ranks 0 .. n - 1 in a chain, rank 0 in a fan-out.
      EXPECT_EQ(p.lanes.size(), size_t(kind == FusedProbe::ring ? wide : kind == FusedProbe::chain ? n : 1)) << s.algo;
      for (uint64_t seed = 0; seed < 3; ++seed) ASSERT_EQ(simulate(s, p, seed), "") << s.algo;
    }
  // A chain: each hop waits for the one before it; a ring's second step for the neighbour's first.
  const Schedule chain = fused_probe(FusedProbe::chain, 3, 8);
  EXPECT_TRUE(chain.deps(chain.ops[0]).empty());
  for (size_t i = 1; i < chain.ops.size(); ++i) {
    ASSERT_EQ(chain.deps(chain.ops[i]).size(), 1u);
    EXPECT_EQ(chain.deps(chain.ops[i])[0], OpId(i - 1));
    EXPECT_EQ(chain.ops[i].rank, int(i));
  }
  const Schedule ring = fused_probe(FusedProbe::ring, 2, 8);
  for (int r = 0; r < wide; ++r) {
    const Op& second = ring.ops[size_t(wide + r)];
    ASSERT_EQ(ring.deps(second).size(), 1u);
    EXPECT_EQ(ring.ops[size_t(ring.deps(second)[0])].rank, (r + wide - 1) % wide);
  }
  EXPECT_EQ(fused_probe_series(FusedProbe::ring, 3), "fused.prog.ring.3");
  EXPECT_THROW(fused_probe(FusedProbe::chain, wide, 8), Error);  // more hops than ranks after the first
  EXPECT_THROW(fused_probe(FusedProbe::fanout, 0, 8), Error);
}

// The model itself must catch a broken program: without waits, or without end waits, some
// interleaving violates the schedule.
TEST(FusedSim, CatchesMissingWaits) {
  AlgoArgs args;
  args.nranks = 2;
  args.count = 1031;
  const Schedule s = make_schedule(find_algorithm("allreduce.ring"), args);
  FusedOptions fo;
  const FusedProgram good = encode_fused(s, fo);
  FusedProgram no_waits = good, no_finals = good;
  for (auto& dv : no_waits.devices)
    for (auto& f : dv.ops) f.wait_count = 0;
  for (auto& dv : no_finals.devices) dv.finals.clear();
  int caught_waits = 0, caught_finals = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    EXPECT_EQ(simulate(s, good, seed), "");
    caught_waits += simulate(s, no_waits, seed).empty() ? 0 : 1;
    caught_finals += simulate(s, no_finals, seed).empty() ? 0 : 1;
  }
  EXPECT_GT(caught_waits, 0);
  EXPECT_GT(caught_finals, 0);
}

// The ring's steps split alike: on 4 GPUs with slices each CTA waits for its own part of the peer's step, and
// the checker sees parts waited for at another CTA's slot.
TEST(FusedSim, SlicedRingsWaitPartByPartAndWrongPartsAreCaught) {
  AlgoArgs args;
  args.nranks = 4;
  args.count = (1 << 20) + 4;
  const Schedule s = make_schedule(find_algorithm("allreduce.ring"), args);
  FusedOptions fo;
  fo.max_ctas = 16;
  fo.slices = false;
  const FusedProgram group = encode_fused(s, fo);
  fo.slices.reset();  // the default on 4 GPUs
  const FusedProgram sliced = encode_fused(s, fo);
  EXPECT_EQ(group.sliced_waits, 0);
  EXPECT_GT(sliced.sliced_waits, 0);
  EXPECT_GT(sliced.nslots, group.nslots);  // a slot per CTA of each sliced op
  FusedProgram shifted = sliced;
  for (auto& dv : shifted.devices)
    for (auto& w : dv.waits)
      if (w & kSliceWait) w &= ~kSliceWait;  // every CTA waits for CTA 0's part
  int caught = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    EXPECT_EQ(simulate(s, sliced, seed), "") << seed;
    const std::string err = simulate(s, shifted, seed);
    caught += err.empty() ? 0 : 1;
  }
  EXPECT_GT(caught, 0);
}

TEST(FusedEncoding, WaitsSlotsAndStartFlags) {
  // Two ranks: each puts into the peer's scratch, then reduces what arrived.
  Schedule s = empty_schedule(2, 1024);
  Transport t(s);
  const OpId a = t.put(0, in(0), scratch(1), 512, {}, 0);
  const OpId b = t.put(1, in(1), scratch(0), 512, {}, 0);
  t.reduce(0, in(0), scratch(0), out(0), 512, {b}, 0);
  t.reduce(1, in(1), scratch(1), out(1), 512, {a}, 0);
  const FusedProgram p = encode_fused(s, FusedOptions{});
  ASSERT_EQ(p.ndevices(), 2);
  ASSERT_EQ(p.lanes.size(), 2u);
  const FusedDevice& d0 = p.devices[0];
  ASSERT_EQ(d0.ops.size(), 2u);
  // The put touches GPU 1's memory: it waits for GPU 1's start flag (slot 1).
  ASSERT_EQ(d0.ops[0].wait_count, 1u);
  EXPECT_EQ(d0.waits[d0.ops[0].wait_begin], 1);
  // The put is waited for by the peer's reduce and by the peer's end wait: one slot, published to GPU 1.
  EXPECT_GE(d0.ops[0].slot, 2);
  EXPECT_EQ(d0.ops[0].publish_mask, 2u);
  // The reduce waits for the peer's put (its start flag is implied by that wait? no: it touches only
  // local memory, so it needs no start flag).
  ASSERT_EQ(d0.ops[1].wait_count, 1u);
  EXPECT_EQ(d0.waits[d0.ops[1].wait_begin], p.devices[1].ops[0].slot);
  EXPECT_EQ(d0.ops[1].slot, -1);  // nobody waits for the last reduce
  // GPU 0's end wait: the peer's put into its scratch.
  ASSERT_EQ(d0.finals.size(), 1u);
  EXPECT_EQ(d0.finals[0], p.devices[1].ops[0].slot);
  EXPECT_EQ(p.nslots, 4);
  // start flag (1 hop), the peer's put -> reduce (1 hop); the end wait on the put is not longer.
  EXPECT_EQ(p.critical_hops, 2);
  EXPECT_EQ(p.slot_owner[size_t(d0.ops[0].slot)].device, 0);
  EXPECT_EQ(p.slot_owner[size_t(d0.ops[0].slot)].op, 0);
  EXPECT_EQ(simulate(s, p, 1), "");
}

TEST(FusedEncoding, ImpliedDependenciesCostNoWait) {
  // Rank 1's second op depends on rank 0's first and second ops; waiting for the second implies the
  // first (same lane, one CTA), so one wait.
  Schedule s = empty_schedule(2, 1024);
  Transport t(s);
  const OpId a = t.copy(0, in(0), scratch(0), 256, {}, 0);
  const OpId b = t.copy(0, in(0), out(0), 256, {}, 0);
  t.copy(1, in(1), scratch(1), 256, {}, 0);
  t.get(1, scratch(0), out(1), 256, {a, b}, 0);
  const FusedProgram p = encode_fused(s, FusedOptions{});
  const FusedDevice& d1 = p.devices[1];
  ASSERT_EQ(d1.ops.size(), 2u);
  // start flag of GPU 0 is implied by the wait on GPU 0's op: one wait only.
  EXPECT_EQ(d1.ops[1].wait_count, 1u);
  EXPECT_EQ(d1.waits[d1.ops[1].wait_begin], p.devices[0].ops[1].slot);
  EXPECT_EQ(p.devices[0].ops[0].slot, -1);
  EXPECT_EQ(p.start_waits, 0);
  EXPECT_EQ(p.critical_hops, 2);  // rank 1's get waits for rank 0's copy (1), GPU 0's end wait (2)
  EXPECT_EQ(simulate(s, p, 3), "");
}

TEST(FusedEncoding, CtaGroupsWaitForConflictingOpsOfTheirLane) {
  // One lane, 256 KiB ops at 32 KiB per CTA: 8 CTAs. The reduce reads what the copy wrote (RAW):
  // it waits for the copy's flag; the independent second copy does not.
  Schedule s = empty_schedule(1, 1 << 20);
  Transport t(s);
  t.copy(0, in(0), scratch(0), 256 << 10, {}, 0);
  t.copy(0, in(0) + (256 << 10), out(0) + (512 << 10), 256 << 10, {}, 0);
  t.reduce(0, in(0), scratch(0), out(0), 256 << 10, {}, 0);
  const FusedProgram p = encode_fused(s, FusedOptions{});
  ASSERT_EQ(p.lanes.size(), 1u);
  EXPECT_EQ(p.lanes[0].ctas, 8);
  const FusedDevice& d = p.devices[0];
  EXPECT_EQ(d.ctas, 8);
  EXPECT_EQ(d.ops[1].wait_count, 0u);
  ASSERT_EQ(d.ops[2].wait_count, 1u);
  EXPECT_EQ(d.waits[d.ops[2].wait_begin], d.ops[0].slot);
  EXPECT_EQ(d.ops[0].publish_mask, 1u);  // its own GPU: the sibling CTAs
  EXPECT_EQ(simulate(s, p, 5), "");
}

TEST(FusedEncoding, CtasAndLanesStayWithinTheLaunch) {
  // 4 ranks on one GPU, 16 channels each, 8 CTAs allowed: lanes fold to 2 channels per rank, one CTA each.
  Schedule s = empty_schedule(4, 1 << 20);
  Transport t(s);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 16; ++c) t.copy(r, in(r) + c * 1024, out(r) + c * 1024, 1024, {}, c);
  FusedOptions fo;
  fo.rank_device = {0, 0, 0, 0};
  fo.max_ctas = 8;
  const FusedProgram p = encode_fused(s, fo);
  EXPECT_EQ(p.lanes.size(), 8u);
  EXPECT_EQ(p.devices[0].ctas, 8);
  int32_t next = 0;
  for (int32_t l : p.devices[0].lanes) {
    EXPECT_EQ(p.lanes[size_t(l)].cta_begin, next);
    next += p.lanes[size_t(l)].ctas;
  }
  EXPECT_EQ(simulate(s, p, 9), "");
}

TEST(FusedEncoding, AvgAddsOneScalePerRankAfterEverything) {
  AlgoArgs args;
  args.nranks = 2;
  args.count = 1031;
  args.redop = RedOp::avg;
  const Schedule s = make_schedule(find_algorithm("allreduce.ring"), args);
  const FusedProgram p = encode_fused(s, FusedOptions{});
  int scales = 0;
  for (const auto& dv : p.devices)
    for (const auto& f : dv.ops)
      if (f.kind == FusedKind::scale) {
        ++scales;
        EXPECT_EQ(f.bytes, 1031 * 4);
        EXPECT_GT(f.wait_count, 0u);
      }
  EXPECT_EQ(scales, 2);
}

TEST(FusedEncoding, ComputeOpsAndLibrarySchedulesAreRefused) {
  Schedule s = empty_schedule(1, 64);
  s.computes.push_back(Compute{});
  Op op;
  op.kind = OpKind::compute;
  op.compute = 0;
  s.ops.push_back(op);
  EXPECT_THROW(encode_fused(s, FusedOptions{}), Error);
  Schedule lib = empty_schedule(1, 64);
  lib.lowering = Lowering::library;
  EXPECT_THROW(encode_fused(lib, FusedOptions{}), Error);
}

TEST(FusedParams, TuneKeysAreTakenAndOthersPassedOn) {
  FusedParams fp;
  EXPECT_EQ(fp.lowering, LoweringMode::automatic);
  const std::string rest = fp.apply("lowering=auto,fused_max=64K,channels=2,fused_threads=256,fused_pdl=0");
  EXPECT_EQ(rest, "channels=2");
  EXPECT_EQ(fp.lowering, LoweringMode::automatic);
  EXPECT_EQ(fp.fused_max, 64 << 10);
  EXPECT_EQ(fp.threads, 256);
  EXPECT_FALSE(fp.pdl);
  EXPECT_TRUE(fp.use_fused(64 << 10));
  EXPECT_FALSE(fp.use_fused((64 << 10) + 1));
  // More than 2 ranks have their own crossover.
  EXPECT_TRUE(fp.use_fused(fp.wide_fused_max, 4));
  EXPECT_FALSE(fp.use_fused(fp.wide_fused_max + 1, 4));
  // auto keeps the general lowering for a plan without cross-GPU waits, whatever the size.
  AlgoArgs args;
  args.nranks = 2;
  args.count = 4;
  const Schedule ring = make_schedule(find_algorithm("allreduce.ring"), args);
  const Schedule direct = make_schedule(find_algorithm("reduce.direct"), args);
  EXPECT_TRUE(fp.use_fused(ring, {0, 1}));
  EXPECT_FALSE(fp.use_fused(direct, {0, 1}));
  // No cross-GPU wait either, but copy-engine puts: fused (5.5 us against 15.7 general on 2 x H200).
  args.count = 8;
  const Schedule gather = make_schedule(find_algorithm("gather.direct"), args);
  EXPECT_TRUE(fp.use_fused(gather, {0, 1}));
  fp.lowering = LoweringMode::fused;
  EXPECT_TRUE(fp.use_fused(direct, {0, 1}));
  fp.lowering = LoweringMode::plan;
  EXPECT_FALSE(fp.use_fused(ring, {0, 1}));
  EXPECT_EQ(fp.apply("kernel_timeout=60,mode=ll"), "kernel_timeout=60,mode=ll");
  EXPECT_EQ(fp.timeout_s, 60.0);
  fp.apply("kernel_timeout=60,fused_timeout=2");
  EXPECT_EQ(fp.timeout_s, 2.0);
  EXPECT_FALSE(fp.sc_fence);
  fp.apply("fused_fence=sc");
  EXPECT_TRUE(fp.sc_fence);
  EXPECT_THROW(fp.apply("fused_fence=none"), Error);
  EXPECT_THROW(fp.apply("lowering=fast"), Error);
  EXPECT_THROW(fp.apply("fused_threads=100"), Error);
  EXPECT_THROW(fp.apply("fused_threads=1024"), Error);
}

// On more than 2 GPUs a one-round schedule (no waits, every GPU sends) stays fused past wide_fused_max, up to
// wide_round_fused_max; a ring (waits), a rooted one-round schedule (one GPU sends) and 2 GPUs do not.
TEST(FusedParams, OneRoundSchedulesOnEveryGpuStayFusedLonger) {
  FusedParams fp;
  fp.apply("fused_slices=0");  // without the rule for per-CTA flags (below)
  const std::vector<int> four = {0, 1, 2, 3};
  auto at = [](const char* algo, int n, int64_t bytes) {
    AlgoArgs args;
    args.nranks = n;
    args.count = bytes / 4;
    return make_schedule(find_algorithm(algo), args);
  };
  const int64_t mid = 2 * fp.wide_fused_max;
  ASSERT_LT(mid, fp.wide_round_fused_max);
  EXPECT_TRUE(fp.use_fused(at("alltoall.direct", 4, mid), four));
  EXPECT_FALSE(fp.use_fused(at("alltoall.direct", 4, 2 * fp.wide_round_fused_max), four));
  EXPECT_FALSE(fp.use_fused(at("allgather.ring", 4, mid), four));
  EXPECT_FALSE(fp.use_fused(at("scatter.direct", 4, mid), four));
  EXPECT_FALSE(fp.use_fused(at("alltoall.direct", 2, mid), {0, 1}));
  fp.apply("wide_round_fused_max=16M");
  EXPECT_FALSE(fp.use_fused(at("alltoall.direct", 4, mid), four));
}

// On more than 2 GPUs programs get per-CTA flags by default, and a schedule whose every wait for another op is per
// CTA (the rings) stays fused up to wide_sliced_fused_max; trees and pipelines with whole-op waits, schedules with no
// waits, 2 GPUs and group flags (fused_slices=0) do not.
TEST(FusedParams, SchedulesWaitingOnlyPerCtaStayFusedLonger) {
  FusedParams fp;
  const std::vector<int> four = {0, 1, 2, 3}, two = {0, 1};
  auto at = [](const char* algo, int n, int64_t bytes) {
    AlgoArgs args;
    args.nranks = n;
    args.count = bytes / 4;
    return make_schedule(find_algorithm(algo), args);
  };
  EXPECT_TRUE(fp.sliced_on(4));
  EXPECT_FALSE(fp.sliced_on(2));
  const int64_t mid = 2 * fp.wide_fused_max;
  ASSERT_LT(mid, fp.wide_sliced_fused_max);
  for (const char* algo : {"allreduce.ring", "allgather.ring", "reducescatter.ring"}) {
    EXPECT_TRUE(fp.use_fused(at(algo, 4, mid), four)) << algo;
    EXPECT_TRUE(fp.use_fused(at(algo, 4, fp.wide_sliced_fused_max), four)) << algo;
    EXPECT_FALSE(fp.use_fused(at(algo, 4, 2 * fp.wide_sliced_fused_max), four)) << algo;
    EXPECT_FALSE(fp.use_fused(at(algo, 2, mid), two)) << algo;
  }
  for (const char* algo : {"broadcast.pipeline", "broadcast.binomial", "scatter.binomial", "gather.binomial",
                           "broadcast.scatter_allgather", "alltoall.bruck", "allreduce.tree", "scatter.direct"})
    EXPECT_FALSE(fp.use_fused(at(algo, 4, mid), four)) << algo;
  // The encoding follows: per-CTA waits on 4 GPUs, none on 2.
  EXPECT_GT(encode_fused(at("allreduce.ring", 4, 1 << 20), fp.options(four, 16)).sliced_waits, 0);
  EXPECT_EQ(encode_fused(at("allreduce.ring", 2, 1 << 20), fp.options(two, 16)).sliced_waits, 0);
  fp.apply("fused_slices=0");
  EXPECT_FALSE(fp.use_fused(at("allgather.ring", 4, mid), four));
  EXPECT_EQ(encode_fused(at("allreduce.ring", 4, 1 << 20), fp.options(four, 16)).sliced_waits, 0);
}

}  // namespace
}  // namespace cclab::lower
