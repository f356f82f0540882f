// The bidir all-reduce kernels on 2 GPUs (modes ll, flash, push, stream, lamport, twoshot),
// costed from the profile's measured pieces. The copy mode is a copy-engine schedule on the general lowering
// (sim/paths.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "sim/paths.hpp"
#include "sim/paths_detail.hpp"

namespace cclab::sim {

namespace {

constexpr int64_t kRingSlotBytes = int64_t(256) << 10;  // bidir.ring's slot (BidirParams::slot_bytes default)
constexpr int kRingSlots = 4;                           // and slots per lane (BidirParams::slots default)

// A table, or a fallback table where the profile predates the first (an older calibration); `used` names it.
const model::PathTable& table_or(const model::ModelParams& P, const std::string& name, const std::string& fallback,
                                 std::string& used) {
  const model::PathTable* t = P.table(name);
  used = name;
  if (!t) {
    t = P.table(fallback);
    used = fallback + " (no " + name + " in the profile)";
  }
  if (!t) throw_input("the profile has no '" + name + "' measurement (run cclab calibrate)");
  return *t;
}

Seconds size_part(const model::ModelParams& P, const std::string& name, const std::string& fallback, double bytes,
                  std::string& used) {
  return table_or(P, name, fallback, used).size_part(bytes);
}

// Profiles without the bidir.* series (calibrations before those microbenchmarks): each mode from
// general pieces, a graph node, a back-to-back transfer body and flag round trips.
Seconds from_general_pieces(const model::ModelParams& P, const ExecPath& path, int64_t bytes, DType dtype,
                            std::string& how) {
  const double S = double(bytes);
  // The kernel's node in the replayed graph (with PDL where the plan launches so) ...
  const Seconds node = path.pdl ? P.exec.kernel_pdl.value : P.exec.kernel_node.value;
  const Seconds flag = P.exec.flag_rtt.value;
  // ... and its body: a microbenchmark kernel making the same transfer, timed back to back, less the bare
  // back-to-back launch that timing includes (latency.launch).
  const Seconds bare = P.launch_latency.value;
  auto body = [&](const std::string& name, const std::string& fallback, double x, std::string& used) {
    return Seconds(std::max(0.0, table_or(P, name, fallback, used).time(x).value - bare.value));
  };
  std::string used, used2;
  if (path.mode == "ll") {
    // Each GPU stores its S bytes as LL words (4 data + 4 flag bytes: 2S on the wire) into the peer's
    // buffer, both ways at once, and reduces what arrives in registers: one flag's one-way trip.
    // p2p.ll_store.bidir makes exactly these stores (data bytes); older profiles: plain stores of 2S.
    const bool ll_table = P.table("p2p.ll_store.bidir") != nullptr;
    const Seconds t = node +
                      (ll_table ? body("p2p.ll_store.bidir", "p2p.sm_store.bidir", S, used)
                                : body("p2p.sm_store.bidir", "p2p.sm.bidir", 2 * S, used)) +
                      flag / 2;
    how = "ll: node + " + used + (ll_table ? "(S)" : "(2S)") + " body + flag/2";
    return t;
  }
  if (path.mode == "push") {
    // One-shot push: in every CTA half the threads store the input into the
    // peer's scratch tile by tile, releasing a flag per tile (the fused path's kind of hop), while the other
    // half wait for the peer's tiles and reduce them: the two halves overlap, so the slower of the store
    // (both ways at once) and the reduction, plus one hop and the reduction of the last tile.
    const int grid = path.grid > 0 ? path.grid : 1;
    const Seconds store = body("p2p.sm_store.bidir", "p2p.sm.bidir", S, used);
    const std::string red = "reduce.local." + std::string(dtype_name(dtype));
    const Seconds reduce = size_part(P, red, "reduce.local.float", S, used2);
    const Seconds last_tile = size_part(P, red, "reduce.local.float", S / grid, used2);
    const Seconds t = node + P.exec.flag_hop.value + std::max(store, reduce) + last_tile;
    how = "push: node + flag hop + max(" + used + "(S) body, " + used2 + "(S)) + last tile's reduction";
    return t;
  }
  if (path.mode == "lamport") {
    // One-shot push where the data is its own flag: each GPU stores its S
    // bytes into the peer (both ways at once) and polls what arrives, no flag: one one-way trip, as ll.
    const Seconds t = node + body("p2p.sm_store.bidir", "p2p.sm.bidir", S, used) + flag / 2;
    how = "lamport: node + " + used + "(S) body + flag/2";
    return t;
  }
  if (path.mode == "flash") {
    // One-shot pull: each GPU loads the peer's S bytes (SM loads both ways) and reduces on the fly, between
    // a start barrier (the peer's input is ready) and a finish barrier (the peer is done reading mine):
    // each a flag round trip.
    const Seconds t = node + body("p2p.sm.bidir", "p2p.sm.bidir", S, used) + 2.0 * flag;
    how = "flash: node + " + used + "(S) body + 2 flag round trips";
    return t;
  }
  if (path.mode == "twoshot") {
    // Reduce-scatter and all-gather in one kernel: each GPU loads its slice (S/2) from the peer and stores the
    // reduced slice into it, so S bytes come in per GPU (loads and the peer's stores), both ways at once as in
    // the both-ways load series; between a start and a finish handshake, each a flag round trip. The
    // store-only variant pushes the peer's slices with a flag per tile instead of the start handshake (the
    // owner waits one flag hop, as push does), then the finish handshake.
    if (path.push) {
      const Seconds t = node + body("p2p.sm.bidir", "p2p.sm.bidir", S, used) + P.exec.flag_hop.value + flag;
      how = "twoshot (store-only): node + " + used + "(S) body + a tile flag's hop + the finish round trip";
      return t;
    }
    const Seconds t = node + body("p2p.sm.bidir", "p2p.sm.bidir", S, used) + 2.0 * flag;
    how = "twoshot: node + " + used + "(S) body + 2 flag round trips";
    return t;
  }
  if (path.mode == "stream") {
    // Persistent lanes, one CTA each (half its threads push into the peer's ring, half
    // reduce what arrives): each lane moves S / grid bytes at the rate of half a CTA's stores, bounded by
    // the both-ways store rate of the whole link; barriers at start and end as flash.
    const int grid = path.grid > 0 ? path.grid : 1;
    std::string used_cta;
    const Seconds per_lane = 2.0 * size_part(P, "p2p.sm_store.cta", "p2p.sm.bidir", S / grid, used_cta);
    const Seconds link = size_part(P, "p2p.sm_store.bidir", "p2p.sm.bidir", S, used);
    const Seconds t =
        node + body("p2p.sm_store.bidir", "p2p.sm.bidir", 8, used2) + 2.0 * flag + std::max(per_lane, link);
    how = "stream: node + tiny store body + 2 flag round trips + max(2 x " + used_cta + "(S/grid), " + used + "(S))";
    return t;
  }
  throw_input("no model for bidir mode '" + path.mode + "'");
}

// The grid cap a series was measured with (its table's grid_cap; 0 without the series).
int grid_cap_of(const model::ModelParams& P, const std::string& name) {
  const model::PathTable* t = P.table(name);
  return t != nullptr ? t->grid_cap : 0;
}

// The microbenchmark of each mode's transfer and synchronisation (the bidir.* series), where the
// profile has it: the series measured with the kernel's own parameters (threads, vectors per thread,
// grid cap, split roles) as the plan gives them, else the mode's default series; nullptr without it.
const model::PathTable* transfer_table(const model::ModelParams& P, const ExecPath& path, int64_t bytes,
                                       std::string& name) {
  const int64_t threads = path.threads > 0 ? path.threads : 512;
  const int64_t unroll = path.unroll;
  const int64_t vecs = std::max<int64_t>(1, (bytes + 15) / 16);
  auto capped = [&](int64_t tile_vecs) {  // the grid is below one CTA per tile: a grid cap
    return path.grid > 0 && path.grid < (vecs + tile_vecs - 1) / tile_vecs;
  };
  auto pick = [&](const std::string& variant, const std::string& dflt) {
    name = P.table(variant) ? variant : dflt;
    return P.table(name);
  };
  if (path.mode == "ll") {
    name = path.pdl ? "bidir.ll" : "bidir.ll_plain";
    return P.table(name);
  }
  if (path.mode == "flash") {
    if (!path.ldg) return nullptr;  // the shared-memory engine
    const int64_t u = unroll > 0 ? unroll : 4;
    std::string variant = "bidir.pull";
    if (threads == 512 && u == 2)
      variant =
          capped(512 * 2) && path.grid == grid_cap_of(P, "bidir.pull.u2.g66") ? "bidir.pull.u2.g66" : "bidir.pull.u2";
    else if (threads == 512 && u == 8)
      variant = "bidir.pull.u8";
    return pick(variant, "bidir.pull");
  }
  if (path.mode == "push")
    return pick(capped(256 * 4) && path.grid == grid_cap_of(P, "bidir.push.g132") ? "bidir.push.g132" : "bidir.push",
                "bidir.push");
  if (path.mode == "lamport") {
    // lamport: its own series (its variants: split roles, 256 threads); profiles measured before it:
    // push's (the same stores, a flag per tile instead of the data as its own flag).
    const std::string variant = path.split       ? "bidir.lamport.split"
                                : threads == 256 ? "bidir.lamport.t256"
                                                 : "bidir.lamport";
    if (const model::PathTable* t = pick(variant, "bidir.lamport")) return t;
    name = "bidir.push";
    return P.table(name);
  }
  // stream: the ring of the microbenchmark has the executor's default slots (4 of 256 KiB).
  if (path.mode == "stream" && (path.slot_bytes == 0 || path.slot_bytes == kRingSlotBytes) &&
      (path.slots == 0 || path.slots == kRingSlots)) {
    name = "bidir.ring";
    return P.table(name);
  }
  return nullptr;
}

}  // namespace

int plan_launches(int iters) { return iters > 0 ? iters : lower::launches_for(lower::Path::general); }

Seconds replay_shift(const model::ModelParams& P, int measured, int planned, std::string& how) {
  const model::PathTable* r = P.table("bidir.replay");
  if (measured <= 0 || planned <= 0 || planned == measured || !r || r->points.size() < 2) return Seconds(0);
  // Time per launch t(N) = c + F / N over the measured N: least squares in x = 1 / N gives F.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [n, t] : r->points) {
    const double x = 1.0 / double(n);
    sx += x;
    sy += t;
    sxx += x * x;
    sxy += x * t;
  }
  const double k = double(r->points.size()), den = k * sxx - sx * sx;
  if (!(den > 0)) return Seconds(0);
  const double F = std::max(0.0, (k * sxy - sx * sy) / den);
  how += " + bidir.replay's per-replay cost x (1/" + std::to_string(planned) + " - 1/" + std::to_string(measured) + ")";
  return Seconds(F * (1.0 / planned - 1.0 / measured));
}

namespace {

// The series each mode's default runs with, which the microbenchmarks repeat at the records' launches per graph
// (".n100") and, for the modes whose reduction loads the own input apart from what they send, with that second
// operand (".own.n100"); "" where there is none.
constexpr const char* kRecordSuffix = ".n100";
std::string default_series(const ExecPath& path) {
  if (path.mode == "flash") return "bidir.pull";
  if (path.mode == "push") return "bidir.push";
  if (path.mode == "ll") return path.pdl ? "bidir.ll" : "bidir.ll_plain";
  if (path.mode == "stream") return "bidir.ring";
  if (path.mode == "lamport") return "bidir.lamport.t256";
  return "";
}

// A table's time where `bytes` lies within its measured sizes; nullopt beyond them (or without the table).
std::optional<Seconds> within(const model::PathTable* t, double bytes) {
  if (!t || t->points.empty() || bytes > double(t->points.back().first)) return std::nullopt;
  return t->time(bytes);
}

// The bidir kernels read their per-rank pointers from BidirArgs, a by-value block (~0.5 KB) indexed by rank at
// run time. The microbenchmarks pass plain pointers, except the .args series, each measured beside the same
// kernel without it. (Until a06bb3f the kernels also passed the block by reference to their timeout reporter,
// which copied it into a stack frame in every launch; see
// docs/findings/2026-11-22-argument-block-crossovers-diagnostics.md.)
// The block's cost depends on how many threads read it: each pair's difference is read against
// the threads its microbenchmark launched at each size (grids capped at the series' grid_cap, the measuring GPU's
// SMs), averaged where sizes share a grid, interpolated in threads and, beyond the most it launched,
// taken in proportion to the threads. PDL launches: ll's and pull's pairs; plain launches: ll_plain's.
int64_t ll_bench_threads(double bytes, int64_t cap) {  // 256 threads per CTA, a pair of 4-byte words per thread
  const int64_t pairs = (int64_t(std::ceil(bytes / 4)) + 1) / 2;
  return 256 * std::clamp<int64_t>((pairs + 255) / 256, 1, cap);
}
int64_t pull_bench_threads(double bytes, int64_t cap) {  // 512 threads per CTA, tiles of 32 KiB
  const int64_t nvec = int64_t(std::ceil(bytes / 16));
  return 512 * std::clamp<int64_t>((nvec + 2047) / 2048, 1, cap);
}

struct BlockPair {
  std::string with, without;
  int64_t (*threads)(double, int64_t);
};

// (threads launched, the block's extra time) over the pairs' common sizes, averaged per thread count.
std::map<int64_t, double> block_cost_points(const model::ModelParams& P, const std::vector<BlockPair>& pairs,
                                            std::string& used) {
  std::map<int64_t, std::pair<double, int>> sum;
  for (const BlockPair& bp : pairs) {
    const model::PathTable *w = P.table(bp.with), *wo = P.table(bp.without);
    if (!w || !wo || w->empty() || wo->empty() || w->grid_cap <= 0) continue;
    used += (used.empty() ? "" : ", ") + bp.with + " - " + bp.without;
    for (const auto& [bytes, t] : w->points) {
      if (bytes > wo->points.back().first) continue;
      auto& [total, k] = sum[bp.threads(double(bytes), w->grid_cap)];
      total += t - wo->time(double(bytes)).value;
      ++k;
    }
  }
  std::map<int64_t, double> out;
  for (const auto& [x, tk] : sum) out[x] = tk.first / tk.second;
  return out;
}

// The block's cost for `threads` launched per GPU (0 without the series).
Seconds block_cost(const model::ModelParams& P, const ExecPath& path, int64_t threads, std::string& used) {
  const std::vector<BlockPair> pairs =
      path.pdl ? std::vector<BlockPair>{{"bidir.ll.args.n100", "bidir.ll.n100", ll_bench_threads},
                                        {"bidir.pull.own.args.n100", "bidir.pull.own.n100", pull_bench_threads}}
               : std::vector<BlockPair>{{"bidir.ll_plain.args.n100", "bidir.ll_plain.n100", ll_bench_threads}};
  const std::map<int64_t, double> pts = block_cost_points(P, pairs, used);
  if (pts.empty()) return Seconds(0);
  double y;
  if (threads <= pts.begin()->first) {
    y = pts.begin()->second;
  } else if (threads >= pts.rbegin()->first) {
    y = pts.rbegin()->second * double(threads) / double(pts.rbegin()->first);
  } else {
    auto hi = pts.lower_bound(threads);
    auto lo = std::prev(hi);
    y = lo->second + (hi->second - lo->second) * double(threads - lo->first) / double(hi->first - lo->first);
  }
  return Seconds(std::max(0.0, y));
}

}  // namespace

Seconds bidir_kernel_time(const model::ModelParams& P, const ExecPath& path, int64_t bytes, DType dtype,
                          std::string& how) {
  std::string name;
  const model::PathTable* t = transfer_table(P, path, bytes, name);
  if (!t) {
    // No microbenchmark of this mode's transfer in the profile: the general pieces, as a graph of the plan's
    // default launches replays them.
    const Seconds g = from_general_pieces(P, path, bytes, dtype, how);
    return g + replay_shift(P, plan_launches(0), plan_launches(path.iters), how);
  }
  const double S = double(bytes);
  // The microbenchmark makes the kernel's launches, handshakes / flags and transfer of S bytes each way,
  // timed as the harness times the records (per-GPU graphs of launches, replayed).
  Seconds time = t->time(S);
  how = path.mode + ": " + name + "(S) (launches, handshakes and transfer as measured)";
  // Launches per replay: each table at its own count and, for each mode's default, again at the records' count
  // (.n100). Time per launch is c + F / n, so a plan of n launches per replay differs from the table by the
  // default series' own difference between its two counts, scaled in 1 / n (exactly the .n100 series there).
  const std::string base = default_series(path);
  const int n = plan_launches(path.iters);
  const model::PathTable *few = P.table(base), *many = P.table(base + kRecordSuffix);
  const std::optional<Seconds> at_few = within(few, S), at_many = within(many, S);
  if (n != t->launches_per_replay && at_few && at_many && few->launches_per_replay > 0 &&
      many->launches_per_replay > 0 && few->launches_per_replay == t->launches_per_replay) {
    const double w =
        (1.0 / n - 1.0 / few->launches_per_replay) / (1.0 / many->launches_per_replay - 1.0 / few->launches_per_replay);
    time = time + w * (*at_many - *at_few);
    how += " + (" + base + kRecordSuffix + " - " + base + ")(S) x " + std::to_string(w) + " (" + std::to_string(n) +
           " launches per replay)";
  } else {
    time = time + replay_shift(P, t->launches_per_replay, n, how);
  }
  // The reduction: its arithmetic runs in registers as the peer's bytes arrive; where the kernel loads its
  // own input apart from what it sends (flash, push, stream), the .own.n100 series measured those loads in
  // the same transfer: their extra time, within its sizes. Elsewhere (ll and lamport send the input they
  // reduce; sizes beyond the series) only a local reduction of S slower than the transfer's size part shows.
  // bidir.lamport.t256.own.n100 is the lamport kernel's loop itself (the own input read again, all loads of
  // an iteration first).
  // (lamport: its kernel's own loop, which may be faster than the plain series' one; the others only add
  // loads: a difference below zero is timing noise, kept unbiased.)
  // push and stream: the .ownloop series (their kernels' own reduction loops) where measured.
  // Before those, a .kernelloop.<element> series where measured (stream's: its loop as the kernel runs it, the
  // slot's address computed per vector and the elements widened to float; half takes bfloat16's): the records'
  // time moves with the element type (stream bfloat16 1.2-1.4 x float from 32 KiB), which integer adds cannot show.
  // push and lamport have theirs too (push: 16-bit rows 0.9 us over float from 32 KiB, 2 x H200, 2026-11-23,
  // commit 8163c56; lamport: its sentinel checks and rewrites element by element).
  std::string own_name = base + ".kernelloop." + (dtype_size(dtype) == 4 ? "float" : "bfloat16") + kRecordSuffix;
  if (!P.table(own_name)) own_name = base + ".ownloop" + kRecordSuffix;
  if (!P.table(own_name)) own_name = base + ".own" + kRecordSuffix;
  const model::PathTable *own_t = P.table(own_name), *base100_t = many;
  const std::optional<Seconds> own100 = within(own_t, S);
  if (own100 && at_many) {
    time = time + (*own100 - *at_many);
    how += " + the reduction's own loads (" + own_name + " - " + base + kRecordSuffix + ")(S)";
  } else if (own_t && base100_t && !own_t->empty() && !base100_t->empty() && S > double(own_t->points.back().first)) {
    // Beyond the series' sizes (64 MiB) the loads' share of the time stays as at the largest size measured.
    const double top = double(std::min(own_t->points.back().first, base100_t->points.back().first));
    const double share = own_t->time(top).value / base100_t->time(top).value - 1.0;
    time = time + share * time;
    how += " + the reduction's own loads as a share (" + own_name + " / " + base + kRecordSuffix +
           " - 1 at the largest size)";
  } else {
    std::string red_used;
    const Seconds transfer_size = t->size_part(S);
    const Seconds reduce_size =
        size_part(P, "reduce.local." + std::string(dtype_name(dtype)), "reduce.local.float", S, red_used);
    time = time + std::max(Seconds(0), reduce_size - transfer_size);
    how += ", reduction overlapped (" + red_used + ")";
  }
  // The argument block's reads, for the threads the kernel launches (the plan's grid and threads).
  const int64_t threads = std::max<int64_t>(1, path.grid) * (path.threads > 0 ? path.threads : 512);
  std::string block_used;
  const Seconds block = block_cost(P, path, threads, block_used);
  if (!block_used.empty()) {
    time = time + block;
    how += " + the argument block's reads for " + std::to_string(threads) + " threads (" + block_used + ")";
  }
  if (name == "bidir.push" && path.mode == "lamport")
    how += "; lamport's data-as-flag stores costed as push's stores with a flag per tile (no bidir.lamport series)";
  return time;
}

}  // namespace cclab::sim
