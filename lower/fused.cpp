#include "lower/fused.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/parse.hpp"
#include "lower/general.hpp"

namespace cclab::lower {

namespace {

constexpr int kMaxFusedDevices = 32;  // publish masks are 32-bit

// One op of the extended list: the schedule's ops, then (RedOp::avg) one scale op per rank.
struct XOp {
  FusedKind kind = FusedKind::copy;
  OpId op = kNoOp;
  int32_t rank = 0;
  Ref dst, src, src2;
  int64_t bytes = 0;
  std::vector<int32_t> deps;  // extended op indices
  int32_t lane = 0, pos = 0;
};

struct Access {
  Ref ref;
  int64_t bytes;
  bool write;
};

std::vector<Access> accesses(const XOp& o) {
  if (o.bytes <= 0) return {};
  switch (o.kind) {
    case FusedKind::copy:
      return {{o.src, o.bytes, false}, {o.dst, o.bytes, true}};
    case FusedKind::reduce:
      return {{o.src, o.bytes, false}, {o.src2, o.bytes, false}, {o.dst, o.bytes, true}};
    case FusedKind::scale:
      return {{o.dst, o.bytes, true}};
  }
  return {};
}

// Read after write, write after read, write after write on overlapping bytes.
bool conflict(const XOp& a, const XOp& b) {
  for (const Access& x : accesses(a))
    for (const Access& y : accesses(b)) {
      if (!x.write && !y.write) continue;
      if (x.ref.rank == y.ref.rank && x.ref.buf == y.ref.buf && x.ref.offset < y.ref.offset + y.bytes &&
          y.ref.offset < x.ref.offset + x.bytes)
        return true;
    }
  return false;
}

// Whether CTA g of `b` touches, of the bytes where it conflicts with `a`, only those CTA g of `a` touched, both
// ops split over k CTAs: the same size, and every conflicting pair of accesses at the same offsets.
bool aligned(const XOp& a, const XOp& b) {
  if (a.bytes != b.bytes || a.bytes <= 0) return false;
  bool any = false;
  for (const Access& x : accesses(a))
    for (const Access& y : accesses(b)) {
      if (!x.write && !y.write) continue;
      if (x.ref.rank != y.ref.rank || x.ref.buf != y.ref.buf || x.ref.offset >= y.ref.offset + y.bytes ||
          y.ref.offset >= x.ref.offset + x.bytes)
        continue;
      if (x.ref.offset != y.ref.offset) return false;
      any = true;
    }
  return any;
}

}  // namespace

FusedProgram encode_fused(const Schedule& s, const FusedOptions& options) {
  if (s.lowering == Lowering::library) throw_input(s.algo + ": a library schedule has no fused lowering");
  for (const Op& op : s.ops)
    if (op.kind == OpKind::compute)
      throw_input(s.algo + ": the fused lowering does not run compute ops (use --tune lowering=plan)");
  FusedProgram p;
  p.nranks = s.nranks;
  std::vector<int> gpu_of = options.rank_device;
  if (gpu_of.empty())
    for (int r = 0; r < s.nranks; ++r) gpu_of.push_back(r);
  if (int(gpu_of.size()) != s.nranks)
    throw_input("fused lowering: " + std::to_string(gpu_of.size()) + " devices given for " + std::to_string(s.nranks) +
                " ranks");

  // Devices: one launch per distinct GPU, sorted by id.
  std::vector<int> gpus = gpu_of;
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  if (int(gpus.size()) > kMaxFusedDevices)
    throw_input("fused lowering: at most " + std::to_string(kMaxFusedDevices) + " GPUs, not " +
                std::to_string(gpus.size()));
  const int ndev = int(gpus.size());
  p.devices.resize(size_t(ndev));
  std::vector<int> ranks_on(size_t(ndev), 0);
  for (int r = 0; r < s.nranks; ++r) {
    const int d = int(std::lower_bound(gpus.begin(), gpus.end(), gpu_of[size_t(r)]) - gpus.begin());
    p.rank_device.push_back(d);
    ++ranks_on[size_t(d)];
  }
  for (int d = 0; d < ndev; ++d) p.devices[size_t(d)].gpu = gpus[size_t(d)];
  const int budget = std::max(1, options.max_ctas);
  auto dev_of_rank = [&](int32_t r) { return p.rank_device[size_t(r)]; };

  // ---- lanes and the extended op list
  std::map<std::pair<int32_t, int32_t>, int32_t> lane_of;  // (rank, channel group) -> lane
  std::vector<int32_t> lane_len;
  auto get_lane = [&](int32_t rank, int32_t channel) {
    const int per_rank =
        std::max(1, std::min(options.max_lanes_per_rank, budget / std::max(1, ranks_on[size_t(dev_of_rank(rank))])));
    const int32_t group = channel % per_rank;
    auto [it, added] = lane_of.try_emplace({rank, group}, int32_t(p.lanes.size()));
    if (added) {
      FusedLane l;
      l.rank = rank;
      l.channel = group;
      l.device = dev_of_rank(rank);
      p.lanes.push_back(l);
      lane_len.push_back(0);
    }
    return it->second;
  };
  std::vector<XOp> xs;
  xs.reserve(s.ops.size() + size_t(s.nranks));
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    CCLAB_ASSERT(op.rank >= 0 && op.rank < s.nranks, "op rank out of range");
    XOp x;
    x.kind = op.kind == OpKind::reduce ? FusedKind::reduce : FusedKind::copy;
    x.op = OpId(i);
    x.rank = op.rank;
    x.dst = s.resolve(op.dst);
    x.src = s.resolve(op.src);
    if (op.kind == OpKind::reduce) x.src2 = s.resolve(op.src2);
    x.bytes = op.bytes;
    for (OpId d : s.deps(op)) {
      if (d == kNoOp) continue;
      if (d < 0 || size_t(d) >= i)
        throw_internal(__FILE__, __LINE__,
                       "op " + std::to_string(i) + " depends on op " + std::to_string(d) + ", not an earlier op");
      x.deps.push_back(d);
    }
    x.lane = get_lane(op.rank, op.channel);
    x.pos = lane_len[size_t(x.lane)]++;
    xs.push_back(std::move(x));
  }
  if (s.redop == RedOp::avg && s.nranks > 1) {
    // Each rank divides its result once every op of every rank is done (peers may read it until then).
    std::vector<int32_t> last(p.lanes.size(), -1);
    for (size_t i = 0; i < xs.size(); ++i) last[size_t(xs[i].lane)] = int32_t(i);
    for (int r = 0; r < s.nranks; ++r) {
      const int64_t b = result_bytes(s, r);
      if (b <= 0) continue;
      XOp x;
      x.kind = FusedKind::scale;
      x.rank = r;
      x.dst = x.src = s.resolve(Ref{r, Buf::output, 0});
      x.bytes = b;
      for (int32_t l : last)
        if (l >= 0) x.deps.push_back(l);
      int32_t lane = -1;  // the rank's first lane, or a new one
      for (size_t l = 0; l < p.lanes.size() && lane < 0; ++l)
        if (p.lanes[l].rank == r) lane = int32_t(l);
      x.lane = lane >= 0 ? lane : get_lane(r, 0);
      x.pos = lane_len[size_t(x.lane)]++;
      xs.push_back(std::move(x));
    }
  }
  const size_t L = p.lanes.size();

  // ---- CTAs per lane: by the lane's largest op, within the device's share.
  std::vector<int64_t> lane_max(L, 0);
  std::vector<int> lanes_on(size_t(ndev), 0);
  for (const XOp& x : xs) lane_max[size_t(x.lane)] = std::max(lane_max[size_t(x.lane)], x.bytes);
  for (const FusedLane& l : p.lanes) ++lanes_on[size_t(l.device)];
  const int64_t cta_bytes = std::max<int64_t>(1, options.cta_bytes);
  // Upper bound of the group waits a lane of several CTAs would need: its ops that touch bytes an
  // earlier op of the lane touched (within the conflict window), and its total bytes.
  std::vector<int32_t> lane_conflicts(L, 0);
  std::vector<int64_t> lane_bytes(L, 0);
  {
    std::vector<std::vector<int32_t>> seen(L);
    for (size_t j = 0; j < xs.size(); ++j) {
      const size_t l = size_t(xs[j].lane);
      lane_bytes[l] += xs[j].bytes;
      const auto& ops = seen[l];
      int scanned = 0;
      for (auto it = ops.rbegin(); it != ops.rend() && scanned < options.conflict_window; ++it, ++scanned)
        if (conflict(xs[size_t(*it)], xs[j])) {
          ++lane_conflicts[l];
          break;
        }
      seen[l].push_back(int32_t(j));
    }
  }
  for (size_t l = 0; l < L; ++l) {
    const int share = std::max(1, budget / std::max(1, lanes_on[size_t(p.lanes[l].device)]));
    const int64_t k = std::clamp<int64_t>((lane_max[l] + cta_bytes - 1) / cta_bytes, 1, share);
    // Data time saved by k CTAs against the group waits they add.
    const double saved = double(lane_bytes[l]) / options.cta_bytes_per_s * (1.0 - 1.0 / double(k));
    const double cost = double(lane_conflicts[l]) * options.group_wait_s;
    p.lanes[l].ctas = int32_t(k > 1 && saved > cost ? k : 1);
  }

  // ---- waits. Vector clocks (as in plan.cpp): clock[l][m] = the last position of lane m known to be
  // complete (as a group) at the current point of lane l. A lane of one CTA runs its ops in order,
  // so its own position is known; a lane of several CTAs knows only what it waited for.
  std::vector<std::vector<int32_t>> clock(L, std::vector<int32_t>(L, -1));
  std::vector<std::vector<int32_t>> snapshot(xs.size());
  std::vector<char> keep_snapshot(xs.size(), 0);
  for (const XOp& x : xs) {
    for (int32_t d : x.deps) keep_snapshot[size_t(d)] = 1;
    if (p.lanes[size_t(x.lane)].ctas > 1) keep_snapshot[size_t(&x - xs.data())] = 1;
  }
  std::vector<uint32_t> started(L, 0);  // per lane: devices whose start flag of this epoch is known
  std::vector<std::vector<int32_t>> waits_of(xs.size()), start_of(xs.size());
  // Sliced dependencies (options.slices): CTA g waits for CTA g's part only. What such a wait tells a lane is
  // not a group's completion, so it leaves the clock as it is.
  std::vector<std::vector<int32_t>> slice_waits_of(xs.size());
  std::vector<char> sliced(xs.size(), 0);
  // What CTA g of an op has seen done, through waits on parts and its own order, is the parts g of the op's
  // ancestors: d's part is enough for j only if every ancestor of d that j conflicts with splits alike too.
  std::vector<std::vector<uint64_t>> ancestors;
  const bool slices = options.slices.value_or(ndev > 2);
  if (slices) {
    const size_t words = (xs.size() + 63) / 64;
    ancestors.assign(xs.size(), std::vector<uint64_t>(words, 0));
    std::vector<int32_t> prev_on_lane(L, -1);
    for (size_t j = 0; j < xs.size(); ++j) {
      auto& a = ancestors[j];
      auto take = [&](int32_t d) {
        const auto& ad = ancestors[size_t(d)];
        for (size_t w = 0; w < words; ++w) a[w] |= ad[w];
        a[size_t(d) / 64] |= uint64_t(1) << (size_t(d) % 64);
      };
      for (int32_t d : xs[j].deps) take(d);
      if (prev_on_lane[size_t(xs[j].lane)] >= 0) take(prev_on_lane[size_t(xs[j].lane)]);
      prev_on_lane[size_t(xs[j].lane)] = int32_t(j);
    }
  }
  auto splits_alike = [&](size_t c, size_t j) {
    return p.lanes[size_t(xs[c].lane)].ctas == p.lanes[size_t(xs[j].lane)].ctas && aligned(xs[c], xs[j]);
  };
  auto sliceable = [&](int32_t d, size_t j) {
    // A scale waits for everything (every rank's result is final), not for the bytes it touches.
    if (!slices || p.lanes[size_t(xs[j].lane)].ctas < 2 || xs[j].kind == FusedKind::scale ||
        !splits_alike(size_t(d), j))
      return false;
    const auto& ad = ancestors[size_t(d)];
    for (size_t w = 0; w < ad.size(); ++w)
      for (uint64_t bits = ad[w]; bits; bits &= bits - 1) {
        const size_t c = w * 64 + size_t(std::countr_zero(bits));
        if (conflict(xs[c], xs[j]) && !splits_alike(c, j)) return false;
      }
    return true;
  };
  std::vector<int32_t> lane_prev(L, -1);  // last op index placed on each lane
  std::vector<std::vector<int32_t>> lane_ops(L);
  for (size_t j = 0; j < xs.size(); ++j) {
    const XOp& x = xs[j];
    const size_t l = size_t(x.lane);
    const bool group = p.lanes[l].ctas > 1;
    auto& clk = clock[l];
    auto wait_on = [&](int32_t d) {
      waits_of[j].push_back(d);
      for (size_t m = 0; m < L; ++m) clk[m] = std::max(clk[m], snapshot[size_t(d)][m]);
      started[l] |= 1u << p.lanes[size_t(xs[size_t(d)].lane)].device;
    };
    std::vector<int32_t> deps = x.deps;
    std::sort(deps.begin(), deps.end(), std::greater<int32_t>());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (int32_t d : deps) {
      const size_t m = size_t(xs[size_t(d)].lane);
      if (m == l && !group) continue;  // one CTA runs the lane in order
      if (clk[m] >= xs[size_t(d)].pos) continue;
      if (sliceable(d, j)) {
        if (m == l) continue;  // CTA g wrote its part of d before it reaches this op
        slice_waits_of[j].push_back(d);
        sliced[size_t(d)] = 1;
        started[l] |= 1u << p.lanes[m].device;  // every CTA of the lane sees a flag of that GPU's launch
        continue;
      }
      wait_on(d);
    }
    if (group) {
      // The lane's CTAs may be at different ops: wait for the latest earlier op this one conflicts with (CTA g's
      // own order covers the ones it conflicts with part by part).
      const auto& ops = lane_ops[l];
      int scanned = 0;
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
        const int32_t i = *it;
        if (xs[size_t(i)].pos <= clk[l]) break;
        if (++scanned > options.conflict_window) {
          wait_on(ops.back());  // too far to scan: the previous op covers every earlier one
          break;
        }
        if (conflict(xs[size_t(i)], x)) {
          if (sliceable(i, j)) continue;
          wait_on(i);
          break;
        }
      }
    } else {
      clk[l] = x.pos;
    }
    // Start flags of the other GPUs whose memory this op touches.
    const int here = p.lanes[l].device;
    for (const Access& a : accesses(x)) {
      const int d = dev_of_rank(a.ref.rank);
      if (d != here && !(started[l] >> d & 1u)) {
        start_of[j].push_back(d);
        started[l] |= 1u << d;
      }
    }
    if (keep_snapshot[j]) {
      snapshot[j] = clk;
      snapshot[j][l] = x.pos;  // the group completed this op, hence every earlier op of the lane
    }
    lane_prev[l] = int32_t(j);
    lane_ops[l].push_back(int32_t(j));
  }

  // End waits: each GPU waits for the last op of every other GPU's lane that touches its memory.
  std::vector<std::vector<int32_t>> finals(static_cast<size_t>(ndev));
  for (size_t l = 0; l < L; ++l) {
    const int here = p.lanes[l].device;
    std::vector<int32_t> last_touch(size_t(ndev), -1);
    for (int32_t i : lane_ops[l])
      for (const Access& a : accesses(xs[size_t(i)])) {
        const int d = dev_of_rank(a.ref.rank);
        if (d != here) last_touch[size_t(d)] = i;
      }
    for (int d = 0; d < ndev; ++d)
      if (last_touch[size_t(d)] >= 0) finals[size_t(d)].push_back(last_touch[size_t(d)]);
  }

  // ---- slots: [0, ndev) start flags, then every op something waits for.
  std::vector<int32_t> slot(xs.size(), -1);
  std::vector<uint32_t> mask(xs.size(), 0);
  p.nslots = ndev;
  for (int d = 0; d < ndev; ++d) p.slot_owner.push_back({d, -1});
  // A sliced op owns a slot per CTA of its lane, every other op one.
  auto slots_of = [&](int32_t op) { return sliced[size_t(op)] ? p.lanes[size_t(xs[size_t(op)].lane)].ctas : 1; };
  auto need = [&](int32_t op, int waiter_device) {
    if (slot[size_t(op)] < 0) {
      slot[size_t(op)] = p.nslots;
      p.nslots += slots_of(op);
    }
    mask[size_t(op)] |= 1u << waiter_device;
  };
  for (size_t j = 0; j < xs.size(); ++j) {
    for (int32_t d : waits_of[j]) need(d, p.lanes[size_t(xs[j].lane)].device);
    for (int32_t d : slice_waits_of[j]) need(d, p.lanes[size_t(xs[j].lane)].device);
  }
  for (int d = 0; d < ndev; ++d)
    for (int32_t i : finals[size_t(d)]) need(i, d);
  p.slot_owner.resize(size_t(p.nslots));

  // ---- per-device arrays, lane-major.
  std::vector<int32_t> index_in_device(xs.size(), -1);
  for (size_t l = 0; l < L; ++l) {
    FusedDevice& dv = p.devices[size_t(p.lanes[l].device)];
    FusedLane& lane = p.lanes[l];
    lane.op_begin = uint32_t(dv.ops.size());
    lane.op_count = uint32_t(lane_ops[l].size());
    lane.cta_begin =
        dv.lanes.empty() ? 0 : p.lanes[size_t(dv.lanes.back())].cta_begin + p.lanes[size_t(dv.lanes.back())].ctas;
    dv.lanes.push_back(int32_t(l));
    for (int32_t i : lane_ops[l]) {
      const XOp& x = xs[size_t(i)];
      FusedOp f;
      f.kind = x.kind;
      f.op = x.op;
      f.rank = x.rank;
      f.dst = x.dst;
      f.src = x.src;
      f.src2 = x.src2;
      f.bytes = x.bytes;
      f.lane = int32_t(l);
      f.pos = x.pos;
      f.wait_begin = uint32_t(dv.waits.size());
      for (int d : start_of[size_t(i)]) dv.waits.push_back(d);
      // A whole-op wait on a sliced op waits for every CTA's part.
      for (int32_t w : waits_of[size_t(i)])
        for (int g = 0; g < slots_of(w); ++g) dv.waits.push_back(slot[size_t(w)] + g);
      for (int32_t w : slice_waits_of[size_t(i)]) dv.waits.push_back(slot[size_t(w)] | kSliceWait);
      f.wait_count = uint32_t(dv.waits.size() - f.wait_begin);
      f.slot = slot[size_t(i)];
      f.sliced = sliced[size_t(i)] != 0;
      f.publish_mask = mask[size_t(i)];
      p.waits += int64_t(f.wait_count - start_of[size_t(i)].size());
      p.sliced_waits += int64_t(slice_waits_of[size_t(i)].size());
      p.op_waits += int64_t(waits_of[size_t(i)].size());
      p.start_waits += int64_t(start_of[size_t(i)].size());
      p.publishes += std::popcount(f.publish_mask);
      index_in_device[size_t(i)] = int32_t(dv.ops.size());
      if (f.slot >= 0)
        for (int g = 0; g < slots_of(i); ++g) p.slot_owner[size_t(f.slot + g)] = {lane.device, int32_t(dv.ops.size())};
      dv.ops.push_back(f);
    }
  }
  for (int d = 0; d < ndev; ++d) {
    FusedDevice& dv = p.devices[size_t(d)];
    for (int32_t i : finals[size_t(d)])
      for (int g = 0; g < slots_of(i); ++g) dv.finals.push_back(slot[size_t(i)] + g);
    p.waits += int64_t(dv.finals.size());
    int32_t ctas = 0;
    for (int32_t l : dv.lanes) ctas += p.lanes[size_t(l)].ctas;
    dv.ctas = std::max(1, ctas);
  }
  // Critical path in cross-GPU hops: extended order is topological (waits point back, lanes in order).
  std::vector<int32_t> hops(xs.size(), 0), lane_hops(L, 0);
  for (size_t j = 0; j < xs.size(); ++j) {
    const size_t l = size_t(xs[j].lane);
    int32_t h = lane_hops[l];
    if (!start_of[j].empty()) h = std::max(h, 1);
    for (const auto* ws : {&waits_of[j], &slice_waits_of[j]})
      for (int32_t d : *ws)
        h = std::max(h, hops[size_t(d)] + (p.lanes[size_t(xs[size_t(d)].lane)].device != p.lanes[l].device ? 1 : 0));
    hops[j] = lane_hops[l] = h;
    p.critical_hops = std::max(p.critical_hops, h);
  }
  for (int d = 0; d < ndev; ++d)
    for (int32_t i : finals[size_t(d)]) p.critical_hops = std::max(p.critical_hops, hops[size_t(i)] + 1);
  return p;
}

std::string describe(const Schedule& s, const FusedProgram& p) {
  static const char* kinds[] = {"copy", "reduce", "scale"};
  auto ref = [](Ref r) {
    return "r" + std::to_string(r.rank) + "." + std::string(buf_name(r.buf)) + "+" + std::to_string(r.offset);
  };
  std::ostringstream os;
  for (size_t d = 0; d < p.devices.size(); ++d) {
    const FusedDevice& dv = p.devices[d];
    os << "gpu " << dv.gpu << ": " << dv.lanes.size() << " lanes, " << dv.ctas << " CTAs, end waits";
    for (int32_t w : dv.finals) os << " s" << w;
    os << "\n";
    for (const FusedOp& f : dv.ops) {
      const FusedLane& l = p.lanes[size_t(f.lane)];
      os << "  lane " << f.lane << " (rank " << l.rank << " ch " << l.channel << ", " << l.ctas << " CTAs) #" << f.pos
         << " ";
      if (f.op != kNoOp) os << "op " << f.op << " " << op_kind_name(s.ops[size_t(f.op)].kind) << " -> ";
      os << kinds[int(f.kind)] << " " << ref(f.src);
      if (f.kind == FusedKind::reduce) os << " , " << ref(f.src2);
      os << " -> " << ref(f.dst) << " " << f.bytes << " B";
      if (f.wait_count) {
        os << " waits";
        for (uint32_t w = 0; w < f.wait_count; ++w) {
          const int32_t raw = dv.waits[f.wait_begin + w];
          os << " s" << (raw & ~kSliceWait) << (raw & kSliceWait ? "+g" : "");
        }
      }
      if (f.slot >= 0) os << " publishes s" << f.slot << (f.sliced ? "+g" : "") << " to mask " << f.publish_mask;
      os << "\n";
    }
  }
  return os.str();
}

std::string_view lowering_mode_name(LoweringMode m) {
  switch (m) {
    case LoweringMode::plan:
      return "plan";
    case LoweringMode::fused:
      return "fused";
    case LoweringMode::automatic:
      return "auto";
  }
  return "?";
}

std::string FusedParams::apply(const std::string& tune) {
  std::stringstream ss(tune);
  std::string kv, rest;
  while (std::getline(ss, kv, ',')) {
    const auto eq = kv.find('=');
    const std::string k = eq == std::string::npos ? kv : kv.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : kv.substr(eq + 1), flag = "--tune " + k;
    if (k == "lowering") {
      if (v == "plan")
        lowering = LoweringMode::plan;
      else if (v == "fused")
        lowering = LoweringMode::fused;
      else if (v == "auto")
        lowering = LoweringMode::automatic;
      else
        throw_input("--tune lowering: plan, fused or auto, not '" + v + "'");
    } else if (k == "fused_max") {
      fused_max = parse_size(flag, v);
    } else if (k == "wide_fused_max") {
      wide_fused_max = parse_size(flag, v);
    } else if (k == "wide_round_fused_max") {
      wide_round_fused_max = parse_size(flag, v);
    } else if (k == "wide_sliced_fused_max") {
      wide_sliced_fused_max = parse_size(flag, v);
    } else if (k == "sliced_op_min") {
      sliced_op_min = parse_size(flag, v);
    } else if (k == "fused_threads") {
      threads = int(parse_int(flag, v, 32, kFusedMaxThreads));
      if (threads % 32 != 0) throw_input("--tune fused_threads must be a multiple of 32, not " + v);
    } else if (k == "fused_cta_bytes") {
      cta_bytes = parse_size(flag, v);
      if (cta_bytes <= 0) throw_input("--tune fused_cta_bytes must be positive");
    } else if (k == "fused_ctas") {
      max_ctas = int(parse_int(flag, v, 0, 1 << 16));
    } else if (k == "fused_fence") {
      if (v != "sc" && v != "release") throw_input("--tune fused_fence: sc or release, not '" + v + "'");
      sc_fence = v == "sc";
    } else if (k == "fused_slices") {
      slices = parse_int(flag, v, 0, 1) != 0;
    } else if (k == "fused_pdl") {
      pdl = parse_int(flag, v, 0, 1) != 0;
    } else if (k == "fused_timeout") {
      timeout_s = parse_double(flag, v, 0.001, 3600);
    } else if (k == "kernel_timeout") {
      // The bidir kernels' key (scripts/measure.sh raises it under compute-sanitizer): it sets this
      // path's spin-wait timeout too, unless fused_timeout is given, and stays for BidirParams.
      if (tune.find("fused_timeout=") == std::string::npos) timeout_s = parse_double(flag, v, 0.001, 3600);
      rest += (rest.empty() ? "" : ",") + kv;
    } else {
      rest += (rest.empty() ? "" : ",") + kv;
    }
  }
  return rest;
}

namespace {

// No op waits for another op, and every GPU writes into or reads from a peer: all of them use their links at once.
bool one_round_on_every_gpu(const Schedule& s, const std::vector<int>& rank_device) {
  if (!s.dep_pool.empty()) return false;
  auto gpu = [&](int rank) { return rank < int(rank_device.size()) ? rank_device[size_t(rank)] : rank; };
  std::set<int> gpus, sending;
  for (int r = 0; r < s.nranks; ++r) gpus.insert(gpu(r));
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::compute) return false;
    if (gpu(op.dst.rank) != gpu(op.src.rank)) sending.insert(gpu(op.rank));
  }
  return sending == gpus;
}

}  // namespace

// Whether the schedule's ops move sliced_op_min bytes on average, and its fused program has per-CTA flags with every
// wait of an op for another one of them (ring steps of equal size): no CTA of a lane then waits for the others.
bool FusedParams::every_wait_per_cta(const Schedule& s, const std::vector<int>& rank_device, int sms) const {
  int64_t ops = 0, bytes = 0;
  for (const Op& op : s.ops) {
    ops += op.bytes > 0 ? 1 : 0;
    bytes += std::max<int64_t>(0, op.bytes);
  }
  if (ops == 0 || bytes < ops * sliced_op_min) return false;
  try {
    const FusedProgram p = encode_fused(s, options(rank_device, sms));
    return p.sliced_waits > 0 && p.op_waits == 0;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::input) throw;
    return false;  // a schedule the fused path does not run
  }
}

bool FusedParams::use_fused(const Schedule& s, const std::vector<int>& rank_device, int sms) const {
  const int64_t bytes = s.count * dtype_size(s.dtype);
  const bool wide = lowering == LoweringMode::automatic && s.nranks > 2;
  const bool wide_round = wide && bytes <= wide_round_fused_max && one_round_on_every_gpu(s, rank_device);
  if (!wide_round && !use_fused(bytes, s.nranks) &&
      !(wide && bytes <= wide_sliced_fused_max && every_wait_per_cta(s, rank_device, sms)))
    return false;
  if (lowering == LoweringMode::fused) return true;
  LowerOptions lo;
  lo.rank_device = rank_device;
  const Plan plan = lower(s, lo);
  if (plan.cross_device_waits > 0) return true;
  // No GPU waits for another: the plan is cheap when it is kernels only (a reduce kernel reading its
  // peer: 2.9 us against 6.1 fused at 16 B on 2 x H200, records at 901a4d8); copy-engine copies cost ~6 us
  // each and more with several streams (gather.direct 15.7 us, scatter 11 us general vs 5.5 fused).
  for (const PlanStep& st : plan.steps)
    if (st.kind == StepKind::memcpy) return true;
  return false;
}

FusedOptions FusedParams::options(const std::vector<int>& rank_device, int sms) const {
  FusedOptions fo;
  fo.rank_device = rank_device;
  fo.max_ctas = std::min(max_ctas > 0 ? std::min(max_ctas, sms) : sms, kFusedMaxCtas);
  fo.cta_bytes = cta_bytes;
  fo.slices = slices;
  return fo;
}

}  // namespace cclab::lower
