#include "sim/paths.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "algorithms/copy_pipeline.hpp"
#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "sim/paths_detail.hpp"

namespace cclab::sim {

namespace {

// ---- measured pieces ----------------------------------------------------------------------------------

const model::PathTable* table(const model::ModelParams& p, std::string_view name) { return p.table(name); }

// The rate a table's largest measured size reached (bytes / seconds); 0 without points.
double top_rate(const model::ModelParams& p, std::string_view name) {
  if (const model::PathTable* t = table(p, name); t && !t->points.empty() && t->points.back().second > 0)
    return double(t->points.back().first) / t->points.back().second;
  return 0.0;
}

// A protocol whose size-dependent efficiency makes a flow of S bytes on a path of rate `rate` last what the
// table says the size adds to one operation of S / split bytes (split: CTA groups sharing the op). Fixed
// costs are charged separately (RunOptions latencies), so the curve carries the size part only.
// The fixed part of one operation where the time does not grow with the size (up to 64 KiB): the upper
// quartile of those points. The both-ways graph copy's fixed part is bimodal per sample (6.6-7.1 or 8.0-8.5 us
// from 8 B to 64 KiB on 2 x H200, its fork to GPU1 and back) while its MiB-size points repeat between
// calibrations (512 KiB: 9.3 us in each): against the smallest point alone every mid-size part moved by up
// to 1.8 us (a 1 GiB tree all-reduce: 1024 such puts, +20% between two calibrations). The slower mode is
// the base those sizes carry; the upper quartile finds it whichever mode holds more points. Single-mode
// tables: within their spread.
double plateau(const model::PathTable& t) {
  std::vector<double> v;
  for (const auto& [b, sec] : t.points)
    if (b <= (64 << 10)) v.push_back(sec);
  if (v.empty()) return t.points.empty() ? 0.0 : t.points.front().second;
  std::sort(v.begin(), v.end());
  return v[(3 * (v.size() - 1) + 2) / 4];
}

model::ProtocolParams link_proto(const model::PathTable& t, double rate, double split, const std::string& what,
                                 bool plateau_base = false) {
  model::ProtocolParams pp;
  pp.efficiency = {1.0, what};
  pp.latency = {Seconds(0), what};
  const double base = plateau_base ? plateau(t) : t.points.front().second;
  for (const auto& [b, sec] : t.points) {
    const double s = double(b) * split;
    const double size_part = plateau_base && b <= (64 << 10) ? 0.0 : std::max(0.0, t.time(double(b)).value - base);
    const double f = size_part > 0 ? std::min(1.0, s / (rate * size_part)) : 1.0;
    if (pp.curve.empty() || int64_t(s) > pp.curve.back().bytes) pp.curve.push_back({int64_t(s), std::max(f, 1e-4)});
  }
  pp.curve_source = "size part of " + t.source;
  return pp;
}

// The same for local memory traffic: `weight` bytes of HBM traffic per op byte at capacity `hbm`. Caches
// make small local work faster than HBM (factor above 1), bounded here at 8.
model::ProtocolParams mem_proto(const model::PathTable& t, double hbm, double weight, const std::string& what) {
  model::ProtocolParams pp;
  pp.efficiency = {1.0, what};
  for (const auto& [b, sec] : t.points) {
    const double size_part = t.size_part(double(b)).value;
    const double f = size_part > 0 ? std::clamp(weight * double(b) / (hbm * size_part), 1e-3, 8.0) : 8.0;
    pp.curve.push_back({b, f});
  }
  pp.curve_source = "size part of " + t.source;
  return pp;
}

struct Rates {
  double link = 0;  // GPU0 -> GPU1 route bottleneck, bytes/s
  double hbm = 0;   // GPU0's memory system as the simulator sees it, bytes/s
};
Rates rates_of(Simulator& sim) {
  Rates r;
  const auto& t = sim.topology();
  const auto& p = sim.params();
  if (t.num_gpus() >= 2) r.link = t.route_gpus(0, 1).bottleneck.value;
  if (t.num_gpus() >= 1) {
    const auto& n = t.node(t.gpu(0));
    r.hbm = (n.mem_bw.value > 0 ? n.mem_bw.value : p.default_mem_bw.value.value) * p.mem_efficiency.value;
  }
  return r;
}

// Protocols made from the profile's tables for one run; they must outlive the run (RunOptions points at
// them).
struct PathProtos {
  std::optional<model::ProtocolParams> copy, peer_reduce, local_copy, local_reduce;
  void apply(RunOptions& ro) const {
    if (copy) ro.copy_proto = &*copy;
    if (peer_reduce) ro.peer_reduce_proto = &*peer_reduce;
    if (local_copy) ro.local_copy_proto = &*local_copy;
    if (local_reduce) ro.local_reduce_proto = &*local_reduce;
  }
};

std::string dtype_key(DType d) { return std::string(dtype_name(d)); }

constexpr bool kPlateauBase = true;  // see plateau()

bool is_copy_kind(OpKind k) { return k == OpKind::put || k == OpKind::get || k == OpKind::copy; }

// ---- the general lowering -----------------------------------------------------------------------------

// Whether transfers go both ways between some pair of ranks (then the both-ways tables apply).
bool both_ways(const Schedule& s) {
  std::set<std::pair<int, int>> dirs;
  for (const Op& op : s.ops) {
    int from = -1, to = -1;
    if (op.kind == OpKind::put) from = op.rank, to = op.dst.rank;
    if (op.kind == OpKind::get) from = op.src.rank, to = op.rank;
    if (op.kind == OpKind::reduce)
      for (const Ref* r : {&op.src, &op.src2})
        if (r->rank != op.rank) from = r->rank, to = op.rank;
    if (from >= 0 && from != to) dirs.insert({from, to});
  }
  for (auto [a, b] : dirs)
    if (dirs.count({b, a})) return true;
  return false;
}

// The fork / join of c copy and k kernel streams per GPU on both GPUs. 1 + 1 is measured as such
// (graph.fork_mix.1). Other mixes: the fork's cost grows with the streams per GPU, not per kind
// (graph.fork_kernels.1/2/3: ~11 / 20 / 60 us on 2 x H200), so the kernel streams count as the streams
// c+1..c+k of a kernel fork, and the c copy streams add what copies cost beyond kernels at c streams
// (graph.fork_both.c against graph.fork_kernels.c). Counting the kernel streams as a first kernel stream
// (fork_for's sum) left the copy-mode all-reduce (2 copy + 1 kernel streams per GPU) ~20 us too fast.
Seconds fork_both_gpus(const model::ExecutorParams& e, int c, int k) {
  // Measured as such where calibrated (graph.fork_mix.2_1: the copy-mode all-reduce's fork).
  if (c == 2 && k == 1 && e.fork_mix21.value.value > 0) return e.fork_mix21.value;
  if (c <= 0 || k <= 0 || (c == 1 && k == 1)) return e.fork_for(c, k);
  return e.fork_for(c, 0) + e.fork_for(0, c + k) - e.fork_for(0, c);
}

// The median over a held.* table's sizes of its time less the other tables' at the same size (and less the
// local copy of that size where given), at least 0: a fixed cost of the plan's shape, measured where the
// copies are large enough for the records' sizes.
Seconds held_extra(const model::PathTable& t, std::initializer_list<const model::PathTable*> minus,
                   const model::PathTable* local) {
  std::vector<double> d;
  for (const auto& [bytes, sec] : t.points) {
    double v = sec;
    for (const auto* m : minus) v -= m->time(double(bytes)).value;
    if (local) v -= local->time(double(bytes)).value;
    d.push_back(v);
  }
  if (d.empty()) return Seconds(0);
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  return Seconds(std::max(0.0, n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2])));
}

SimResult run_general(Simulator& sim, const lower::LoweredPlan& plan, std::string* how) {
  const model::ModelParams& P = sim.params();
  const Schedule s = lower::plan_schedule(plan.schedule, plan.general);
  const Rates rt = rates_of(sim);
  const bool bidir = both_ways(s);
  const bool kernels = s.lowering == Lowering::kernel;  // copies as kernels of SM loads / stores
  PathProtos pr;
  const std::string dir = bidir ? ".bidir" : ".uni";
  // Copy-engine copies at their measured size part inside replayed graphs where the profile has it
  // (p2p.ce.graph.*), else back to back on a stream (p2p.ce.*).
  const std::string copy_table = kernels                                     ? "p2p.sm_store" + dir
                                 : table(P, "p2p.ce.graph" + dir) != nullptr ? "p2p.ce.graph" + dir
                                                                             : "p2p.ce" + dir;
  if (const auto* t = table(P, copy_table); t && rt.link > 0)
    pr.copy = link_proto(*t, rt.link, 1, copy_table, kPlateauBase);
  if (const auto* t = table(P, "reduce.peer." + dtype_key(s.dtype)); t && rt.link > 0)
    pr.peer_reduce = link_proto(*t, rt.link, 1, "reduce.peer." + dtype_key(s.dtype));
  // Local copies as replayed in graphs where measured so (copy.local.graph), else back to back (copy.local).
  std::string local_table = table(P, "copy.local.graph") ? "copy.local.graph" : "copy.local";
  // A plan's local copies run on L2-resident data while its buffers fit in L2 (a replay's iterations
  // reuse them), on fresh data beyond: there, where measured so (copy.local.graph.cold, each iteration on
  // its own part of the buffers), that table from its smallest size on. The limit is what copy.local.graph
  // (one source and one destination repeated) shows: hot while both fit (5.7 us at 16 MiB, cold 9.9),
  // cold at 32 MiB (17.4, cold 17.7) on 2 x H200; a plan is hot while its buffers take no more than two
  // of the largest copy still hot.
  model::PathTable cold_local;
  if (const auto* hot = table(P, "copy.local.graph"), *cold = table(P, "copy.local.graph.cold");
      hot && cold && !cold->points.empty()) {
    int64_t hot_limit = 0;
    for (const auto& [b, t] : hot->points)
      if (b >= cold->points.front().first && t < 0.8 * cold->time(double(b)).value) hot_limit = 2 * b;
    int64_t footprint = 0;
    for (const BufferSizes& b : s.buffers) footprint = std::max(footprint, b.input + b.output + b.scratch);
    if (footprint > hot_limit) {
      for (const auto& pt : hot->points)
        if (pt.first < cold->points.front().first) cold_local.points.push_back(pt);
      cold_local.points.insert(cold_local.points.end(), cold->points.begin(), cold->points.end());
      cold_local.source = cold->source + " (below its smallest size: " + hot->source + ")";
      local_table = "copy.local.graph.cold";
    }
  }
  const model::PathTable* local_t = cold_local.empty() ? table(P, local_table) : &cold_local;
  if (local_t && rt.hbm > 0) pr.local_copy = mem_proto(*local_t, rt.hbm, 2, local_table);
  if (const auto* t = table(P, "reduce.local." + dtype_key(s.dtype)); t && rt.hbm > 0)
    pr.local_reduce = mem_proto(*t, rt.hbm, 3, "reduce.local." + dtype_key(s.dtype));
  RunOptions ro;
  ro.record_ops = false;
  // The measured node costs include the wire: a transfer costs max(route, node) latency, not their sum.
  ro.step_covers_route = true;
  // Its peer copies are copy-engine copies: into one peer, one at a time (p2p.ce.pair.*).
  ro.copies_in_issue_order = true;
  pr.apply(ro);
  // rank -> its streams (a channel each in the plan's schedule): whether each issues copies, and whether
  // one of its streams copies both within its GPU and into another (a local copy beside a put).
  std::map<int, std::map<int, bool>> streams;
  std::map<std::pair<int, int>, int> copy_kinds;  // (rank, stream) -> bit 0 local copy, bit 1 peer copy
  for (const Op& op : s.ops) {
    const int st = op.channel;
    bool& copies = streams[op.rank][st];
    copies = copies || is_copy_kind(op.kind);
    if (!is_copy_kind(op.kind)) continue;
    const int from = op.kind == OpKind::get ? op.src.rank : op.rank;
    const int to = op.kind == OpKind::get ? op.rank : op.dst.rank;
    copy_kinds[{op.rank, st}] |= from == to ? 1 : 2;
  }
  // The GPUs beyond GPU0 (the origin of the replay's fork) that the plan runs on.
  const int other_gpus = int(streams.size()) - (streams.count(0) ? 1 : 0);
  const bool other_gpu = other_gpus > 0;
  const bool mixed_stream =
      std::any_of(copy_kinds.begin(), copy_kinds.end(), [](const auto& kv) { return kv.second == 3; });
  int copy_streams = 0, kernel_streams = 0;
  // The streams of the other GPUs (what the cross-GPU fork reaches) apart from GPU0's own: GPU0's streams beyond
  // the others' fork within GPU0 (a root's local copy beside its put: broadcast, scatter, gather).
  int other_copy = 0, other_kernel = 0, gpu0_streams = 0;
  for (const auto& [r, set] : streams) {
    int c = 0, k = 0;
    for (const auto& [ch, copies] : set) (copies ? c : k) += 1;
    copy_streams = std::max(copy_streams, c);
    kernel_streams = std::max(kernel_streams, k);
    if (r == 0) {
      gpu0_streams = c + k;
    } else {
      other_copy = std::max(other_copy, c);
      other_kernel = std::max(other_kernel, k);
    }
  }
  // Every iteration forks from GPU0's origin stream to the plan's streams and joins back:
  // graph.fork_both.<k> / fork_kernels.<k> / fork_mix.1 / fork_local* measured that by streams per GPU and
  // what they run; a stream that copies both within its GPU and into the other pays graph.fork_local_mix's
  // extra.
  // Where streams of both GPUs mix local and peer copies, graph.fork_both_mix.1 measured that extra against
  // graph.fork_both.1 (older profiles: the GPU0-only graph.fork_local_mix's extra).
  const Seconds mix_extra =
      !mixed_stream ? Seconds(0)
      : other_gpu && P.exec.fork_both_mix.value.value > 0
          ? Seconds(std::max(0.0, (P.exec.fork_both_mix.value - P.exec.fork_streams[0].value).value))
          : P.exec.fork_local_mix.value;
  // The fork and join reach every GPU the plan runs on: the graph.fork_both.* shapes measured them to one
  // other GPU; each further GPU adds its own cross-GPU edges, a fork and a join to each of its streams, resolved
  // one after another at a cross-GPU dependency each (exec.event_peer_us): 4 x H100 and 4 x H200 run
  // sol.bidir_copy's four copies (one stream per GPU) in 41 us at 8 B where two GPUs' take 16 us, 12.5 us per
  // further GPU against two edges' 13.9. (Counting the whole two-GPU shape again per GPU priced the rings' fork to
  // two copy streams per GPU at 3 x 58 us on 4 x H200.)
  const Seconds further_gpus =
      P.exec.event_peer.value * (2.0 * double(other_copy + other_kernel) * double(std::max(0, other_gpus - 1)));
  // The graph.fork_both.* shapes have as many streams on GPU0 as on the other GPU; GPU0's streams beyond that
  // are local forks, the second local stream's cost each (graph.fork_local2 - graph.fork_local).
  const int gpu0_extra = std::max(0, gpu0_streams - (other_copy + other_kernel));
  const Seconds gpu0_local =
      Seconds(std::max(0.0, (P.exec.fork_local2.value - P.exec.fork_local.value).value) * double(gpu0_extra));
  ro.start_latency = (other_gpu ? fork_both_gpus(P.exec, other_copy, other_kernel) + further_gpus + gpu0_local
                      : copy_streams + kernel_streams >= 2 ? P.exec.fork_local2.value
                                                           : P.exec.fork_local.value) +
                     mix_extra;
  // GPU0-only plans of one stream, where timed as such behind the harness's hold at 1-16 MiB (held.*): the
  // fork (held.fork_copy - held.copy) and, on a stream that copies locally then into the peer, what that
  // adds beyond the local copy (held.fork_local_mix - held.fork_copy - the local copy), medians over the
  // sizes. The gated 8-byte graph.fork_local_mix was bimodal between calls (8.4 / 16.0 us per sample).
  const model::PathTable *held_copy = table(P, "held.copy"), *held_fork = table(P, "held.fork_copy"),
                         *held_mix = table(P, "held.fork_local_mix");
  const Seconds held_fork_cost =
      held_copy && held_fork ? held_extra(*held_fork, {held_copy}, nullptr) : Seconds(0);  // one forked stream
  if (!other_gpu && copy_streams + kernel_streams == 1 && held_copy && held_fork && held_mix && local_t)
    ro.start_latency = held_fork_cost + (mixed_stream ? held_extra(*held_mix, {held_fork}, local_t) : Seconds(0));
  // GPU0-only plans of two copy streams, a local copy beside the peer copy (a 2-rank broadcast). Where timed
  // behind the hold (held.*): the fork of one stream as above, and what the second stream adds to the peer
  // copy's plan at the peer copies' bytes, held.fork_local2 - held.fork_copy interpolated between the sizes
  // measured: more than the local copy alone takes, and shrinking as the copies grow
  // (docs/findings/2026-11-23-pdl-unheld-replays-l2-copies.md).
  Seconds second_stream_extra(0);
  const model::PathTable* held_two = table(P, "held.fork_local2");
  if (!other_gpu && copy_streams == 2 && kernel_streams == 0 && !mixed_stream && held_copy && held_fork && held_two &&
      !held_two->points.empty()) {
    ro.start_latency = held_fork_cost;
    model::PathTable extra;
    for (const auto& [b, t] : held_two->points)
      extra.points.push_back({b, std::max(1e-9, t - held_fork->time(double(b)).value)});
    int64_t peer_bytes = 0;
    for (const Op& op : s.ops)
      if (op.kind == OpKind::put || op.kind == OpKind::get) peer_bytes += op.bytes;
    second_stream_extra = extra.time(double(peer_bytes));
  }
  // Between streams of the two GPUs: with a copy and a kernel stream per GPU, the measured copy -> kernel
  // edge of that shape (graph.fork_mix_cross.1); otherwise the edge of a stream per GPU (graph.fork_both.1).
  ro.sync_latency = other_gpu && copy_streams > 0 && kernel_streams > 0 && P.exec.event_peer_mix.value.value > 0
                        ? P.exec.event_peer_mix.value
                        : P.exec.event_peer.value;
  // Between two streams of one GPU: with streams of both GPUs running, the measured kernel -> copy edge
  // (graph.fork_mix_chain.1); otherwise (and in older profiles) one edge of the local fork / join pair.
  ro.local_dep_latency =
      other_gpu && P.exec.local_edge_busy.value.value > 0 ? P.exec.local_edge_busy.value : P.exec.fork_local.value / 2;
  ro.copy_latency = kernels ? P.exec.kernel_node.value : P.exec.copy_node.value;
  ro.local_copy_latency = kernels ? P.exec.kernel_node.value : P.exec.copy_local_node.value;
  // A kernel node costs its node plus what the kernel itself takes on a tiny input: the measured kernel's
  // smallest time beyond a bare back-to-back launch (a reduce reading a peer waits for NVLink round trips).
  auto kernel_cost = [&](const std::string& series) {
    const model::PathTable* t = table(P, series);
    const double body = t ? std::max(0.0, t->points.front().second - P.launch_latency.value.value) : 0.0;
    return P.exec.kernel_node.value + Seconds(body);
  };
  ro.kernel_latency = kernel_cost("reduce.local." + dtype_key(s.dtype));
  // A kernel reading the peer: its node as measured in a graph (graph.fork_reduce_peer), where measured.
  ro.peer_kernel_latency = P.exec.reduce_peer_node.value.value > 0 ? P.exec.reduce_peer_node.value
                                                                   : kernel_cost("reduce.peer." + dtype_key(s.dtype));
  if (how)
    *how = "general lowering model: " + std::to_string(s.ops.size()) + " ops after coalescing, " +
           (pr.copy ? copy_table : std::string("protocol")) + " rates, fork/join " +
           (other_gpu ? std::to_string(other_copy) + " copy + " + std::to_string(other_kernel) +
                            " kernel streams per GPU beyond GPU0" +
                            (gpu0_extra ? " (GPU0 " + std::to_string(gpu0_extra) + " more)" : std::string())
                      : std::string("local"));
  // A graph the plan does not hold (lower::LoweredPlan::held) has its host launch timed with its replay. replay.unheld
  // (a graph of alternating empty kernels and peer copies) is not used as a bound: it moves 2x between
  // calibrations of one machine and its nodes cost more than these graphs' (allreduce.tree from 32 MiB runs below
  // it), so a prediction bounded by it follows the noise
  // (docs/findings/2026-11-23-nccl-rings-unheld-launch-small-sizes.md).
  SimResult r = sim.run(s, ro);
  r.time = r.time + second_stream_extra;
  if (how && second_stream_extra.value > 0)
    *how += ", second stream +" + std::to_string(second_stream_extra.value * 1e6) + " us (held.fork_local2)";
  // Without the hold the GPU starts on the replay while the host is still launching it, so the replay
  // cannot end before the host has launched its last node and the GPU has run the iteration after it.
  // Where calibrated (xchain.launch_unheld: the host's launch of 20-iteration graphs in the shape of these
  // plans, a copy and a kernel stream per GPU with kernel -> copy rounds crossing the GPUs, against their
  // nodes; linear beyond), per iteration at least that launch time / iterations plus one iteration of work.
  // The unheld replays of those graphs less their held ones are no measure of it (the held ones can run slower).
  // Only within the calibrated node counts, not extrapolated: past 1280 nodes the microbenchmark's graphs stop
  // resembling the plans (they take longer to launch than a whole replay of the tree of as many nodes).
  // Plans none of whose ops waits on another GPU's (the tree: each put waits for its own GPU's reduction)
  // take the graphs of that shape (lchain) where calibrated: their launch is cheaper than xchain's, whose
  // rounds wait across the GPUs (docs/findings/2026-11-23-nccl-rings-unheld-launch-small-sizes.md). Plans of
  // other shapes can cost more per node (the copy mode's graphs of two copy streams and a kernel stream per GPU:
  // docs/findings/2026-11-29-nccl-empty-chunks-fused-back-to-back.md).
  bool waits_across = false;
  for (const Op& op : s.ops)
    for (OpId d : s.deps(op))
      if (s.ops[size_t(d)].rank != op.rank) waits_across = true;
  const int64_t nodes = plan.graph_nodes();
  const model::PathTable* launch_t = !waits_across && table(P, "lchain.launch_unheld")
                                         ? table(P, "lchain.launch_unheld")
                                         : table(P, "xchain.launch_unheld");
  // The microbenchmark's graphs span two GPUs (GPU0 and GPU1): plans over more GPUs are not of their shape. On 4 x H200
  // its launch of 768 nodes (3.9 ms, ~2.4 ms of it fixed per graph) bounded a one-launch 768-node tree replay at 4.7
  // ms, where the whole replay measured 1.18 ms (docs/findings/2026-11-27-nccl-choices-mid-size-rings.md).
  if (!plan.held && other_gpus == 1 && launch_t && !launch_t->points.empty() &&
      nodes <= launch_t->points.back().first) {
    const double bound = (launch_t->time(double(nodes)).value + r.time.value) / plan.launches;
    const double extra = std::max(0.0, bound - r.time.value);
    r.time = r.time + Seconds(extra);
    if (how)
      *how += ", unheld (" + std::to_string(nodes) + " nodes): launch-bound +" + std::to_string(extra * 1e6) + " us";
  }
  return r;
}

// ---- the fused path -------------------------------------------------------------------------------------

// What the fused models read of the plan's encoding (lower/fused.hpp): which lane each op runs on, how many
// CTAs each lane has, which ops each op waits for and which ops publish a flag.
struct FusedLayout {
  std::vector<int> lane;                 // per op
  std::vector<int> lane_gpu;             // per lane: the rank whose GPU runs it
  std::vector<int> lane_ctas;            // per lane
  std::vector<std::vector<OpId>> waits;  // per op: the ops whose flags it waits for (start flags left out)
  std::vector<char> publishes;           // per op: stores a flag (something waits for it, or an end wait)
  // per op: its CTAs publish their own parts (per-CTA flags), each as a CTA alone does, with no arrival count
  std::vector<char> sliced;
  // The last CTA of a group's op releases its flag to each GPU of its mask one store after another, each
  // system-scope release ordered after the previous one (a lone CTA's threads, and the start flags, release
  // side by side): per op, for each of `waits` the waiter's place in its publisher's releases (0: the first,
  // as the 2-GPU probes timed it).
  std::vector<std::vector<int>> wait_release_pos;
  int flag_waits = 0;       // waits for ops' flags plus end waits
  int max_device_ctas = 0;  // the largest launch
};

struct Access {
  Ref ref;
  int64_t bytes;
  bool write;
};

std::vector<Access> fused_accesses(const Schedule& s, const Op& op) {
  if (op.bytes <= 0) return {};
  std::vector<Access> a = {{s.resolve(op.src), op.bytes, false}, {s.resolve(op.dst), op.bytes, true}};
  if (op.kind == OpKind::reduce) a.push_back({s.resolve(op.src2), op.bytes, false});
  return a;
}

FusedLayout layout_of(const Schedule& s, const lower::FusedProgram& p) {
  FusedLayout f;
  const size_t n = s.ops.size();
  f.lane.assign(n, 0);
  f.waits.assign(n, {});
  f.publishes.assign(n, 0);
  f.sliced.assign(n, 0);
  f.wait_release_pos.assign(n, {});
  for (const auto& l : p.lanes) {
    f.lane_gpu.push_back(l.rank);
    f.lane_ctas.push_back(l.ctas);
  }
  for (size_t di = 0; di < p.devices.size(); ++di) {
    const auto& dv = p.devices[di];
    const int me = int(di);
    f.max_device_ctas = std::max(f.max_device_ctas, int(dv.ctas));
    f.flag_waits += int(dv.finals.size());
    for (const auto& op : dv.ops) {
      if (op.op == kNoOp || size_t(op.op) >= n) continue;  // the avg scaling ops
      f.lane[size_t(op.op)] = op.lane;
      f.publishes[size_t(op.op)] = op.slot >= 0;
      f.sliced[size_t(op.op)] = op.sliced;
      for (uint32_t w = 0; w < op.wait_count; ++w) {
        // A wait on a sliced op's parts (a CTA's own part, or every CTA's, polled side by side) is priced as one
        // wait for the op: the CTAs of a lane are taken to move at one pace.
        const int32_t slot = dv.waits[op.wait_begin + w] & ~lower::kSliceWait;
        const auto& owner = p.slot_owner[size_t(slot)];
        if (owner.op < 0) continue;  // a start flag
        const auto& from_op = p.devices[size_t(owner.device)].ops[size_t(owner.op)];
        if (from_op.op != kNoOp) {
          auto& waits = f.waits[size_t(op.op)];
          if (std::find(waits.begin(), waits.end(), from_op.op) != waits.end()) continue;  // another CTA's part
          waits.push_back(from_op.op);
          // Among a group's releases into other GPUs (each waits for a round trip across NVLink); a waiter on
          // the publisher's own GPU is priced as the 2-GPU probes timed it.
          const bool group = p.lanes[size_t(from_op.lane)].ctas > 1 && !from_op.sliced;
          const uint32_t before = from_op.publish_mask & ((1u << me) - 1u) & ~(1u << owner.device);
          f.wait_release_pos[size_t(op.op)].push_back(group && me != owner.device ? std::popcount(before) : 0);
        }
        ++f.flag_waits;
      }
    }
  }
  return f;
}

// An op's CTAs together move its bytes across the link no faster than SM copies of its direction reach at their
// largest measured size (stores into a peer: p2p.sm_store.uni, loads from one: p2p.sm.uni); 0 for a local move
// or where unmeasured. Ops with per-CTA flags are priced CTA by CTA, and this bounds their sum.
double link_bound(const model::ModelParams& P, int move, double bytes) {
  const double rate = move == 0 ? top_rate(P, "p2p.sm_store.uni") : move == 1 ? top_rate(P, "p2p.sm.uni") : 0.0;
  return rate > 0 ? bytes / rate : 0.0;
}

// The fused kernels from the profile's measurements of their own ops (fused.step.* for lanes of one CTA,
// fused.group.* for ops of a CTA group that wait for an earlier op of their lane, fused.group_free.* for the
// group's other ops; made by a kernel that runs ops as the fused path's kernel does): per lane, its ops one
// after the other, each for the measured time of that op (copy + barrier + flag release) at its size; a wait
// for an op of another lane costs a flag hop (graph.flag_chain.*); every GPU launches once
// (graph.flag_chain.*), a lane's first touch of a peer GPU waits for that GPU's start flag, and a GPU is done
// once the peers' last ops on its memory are (one more hop). Empty when the profile lacks those tables.
std::optional<Seconds> fused_from_op_tables(const model::ModelParams& P, const Schedule& s, const FusedLayout& f,
                                            std::string* how) {
  const char* moves[] = {"put", "get", "local"};
  const model::PathTable *step[3], *group[3], *group_free[3], *quiet[3];
  for (int m = 0; m < 3; ++m) {
    step[m] = table(P, std::string("fused.step.") + moves[m]);
    quiet[m] = table(P, std::string("fused.step_quiet.") + moves[m]);
    group[m] = table(P, std::string("fused.group.") + moves[m]);
    group_free[m] = table(P, std::string("fused.group_free.") + moves[m]);
    if (!step[m]) return std::nullopt;
  }
  const size_t n = s.ops.size();
  // The launch with the kernel's prologue (loading the lane's op table) where measured so.
  const double hop = P.exec.flag_hop.value.value, launch = P.exec.flag_launch_table.value.value > 0
                                                               ? P.exec.flag_launch_table.value.value
                                                               : P.exec.flag_launch.value.value;
  // A wait for a lane of the same GPU polls a flag stored in local memory: what a CTA group's op costs with
  // such a wait (fused.group.local) beyond the same op without it (fused.group_free.local), at their smallest
  // measured size; the cross-GPU hop where the profile lacks either.
  double local_hop = hop;
  if (group[2] && group_free[2] && !group[2]->points.empty() && !group_free[2]->points.empty()) {
    const double b = double(group[2]->points.front().first);
    local_hop = std::max(0.0, group[2]->time(b).value - group_free[2]->time(b).value);
  }
  // Which memory an op moves: into a peer (put), out of a peer (get), within its GPU (local). A reduction
  // moves 3 bytes per byte (two reads, a write) where a copy moves 2: a local one costs as a copy of 1.5x.
  auto move_of = [&](const Op& op) {
    const Ref d = s.resolve(op.dst), a = s.resolve(op.src), b = s.resolve(op.src2);
    if (d.rank != op.rank) return 0;
    if (a.rank != op.rank || (op.kind == OpKind::reduce && b.rank != op.rank)) return 1;
    return 2;
  };
  std::vector<double> end(n, 0);
  std::vector<double> lane_free(f.lane_gpu.size(), launch);
  std::vector<std::set<int>> lane_started(f.lane_gpu.size());
  // Per GPU g: when the last op of another GPU's lane touching g's memory ends.
  std::map<int, double> touched_until, gpu_end;
  int counted[3] = {0, 0, 0}, group_ops = 0, free_ops = 0, quiet_ops = 0, sliced_ops = 0;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = s.ops[i];
    const int l = f.lane[i], g = f.lane_gpu[size_t(l)], k = f.lane_ctas[size_t(l)];
    double t = lane_free[size_t(l)];
    bool own_wait = false;  // a wait for an earlier op of its own CTA group
    for (OpId d : f.waits[i]) {
      own_wait = own_wait || f.lane[size_t(d)] == l;
      const int from = f.lane_gpu[size_t(f.lane[size_t(d)])];
      t = std::max(t, end[size_t(d)] + (f.lane[size_t(d)] == l ? 0.0 : from == g ? local_hop : hop));
    }
    for (const Access& a : fused_accesses(s, op))
      if (a.ref.rank != g && lane_started[size_t(l)].insert(a.ref.rank).second) t = std::max(t, launch + hop);
    const int m = move_of(op);
    const double bytes = double(op.bytes) * (m == 2 && op.kind == OpKind::reduce ? 1.5 : 1.0);
    double dur;
    // An op that stores no flag skips the release (and, in a CTA group, the arrival count): fused.step_quiet.*
    // of its CTA's share, where measured.
    const bool silent = !f.publishes[i] && quiet[m] != nullptr;
    if (silent && !own_wait) {
      dur = quiet[m]->time(bytes / k).value;
      ++quiet_ops;
    } else if (k == 1) {
      dur = step[m]->time(bytes).value;
    } else if (f.sliced[i]) {
      // each CTA moves its share and publishes it, as a lone CTA does, the op within the link's rate
      dur = std::max(step[m]->time(bytes / k).value, link_bound(P, m, bytes));
      ++sliced_ops;
    } else if (own_wait && group[m]) {
      dur = group[m]->time(bytes).value;  // measured with the wait for the previous op's flag in it
      ++group_ops;
    } else if (group_free[m]) {
      dur = group_free[m]->time(bytes).value;  // a CTA group's op with no wait of its own (arrivals, publish)
      ++free_ops;
    } else {
      dur = step[m]->time(bytes / k).value;  // older profiles: the CTAs' shares side by side
    }
    ++counted[m];
    end[i] = t + dur;
    lane_free[size_t(l)] = end[i];
    gpu_end[g] = std::max(gpu_end[g], end[i]);
    for (const Access& a : fused_accesses(s, op))
      if (a.ref.rank != g) touched_until[a.ref.rank] = std::max(touched_until[a.ref.rank], end[i]);
  }
  double total = launch;
  for (const auto& [g, e] : gpu_end) total = std::max(total, e);
  for (const auto& [g, e] : touched_until) total = std::max(total, e + hop);
  if (how)
    *how =
        "fused model: one launch per GPU (graph.flag_chain), " + std::to_string(f.lane_gpu.size()) +
        " lanes of up to " + std::to_string(f.max_device_ctas) + " CTAs per GPU, " + std::to_string(f.flag_waits) +
        " flag waits, ops at fused.step.put/get/local (" + std::to_string(counted[0]) + "/" +
        std::to_string(counted[1]) + "/" + std::to_string(counted[2]) + ")" +
        (group_ops ? ", " + std::to_string(group_ops) + " group waits at fused.group.*" : std::string()) +
        (free_ops ? ", " + std::to_string(free_ops) + " CTA-group ops at fused.group_free.*" : std::string()) +
        (quiet_ops ? ", " + std::to_string(quiet_ops) + " ops without a flag at fused.step_quiet.*" : std::string()) +
        (sliced_ops ? ", " + std::to_string(sliced_ops) + " ops with per-CTA flags at fused.step.* of a CTA's share"
                    : std::string()) +
        ", a flag hop per wait across lanes";
  return Seconds(total);
}

// The fused kernels from the executor's own kernel timed on synthetic programs (fused.prog.*, algorithms/
// fused_probes.hpp; timed at their table's launches per replay, other counts take the difference in the replay's
// fixed cost per launch, replay_shift). A launch costs what the measured probe of its
// direction costs (oneway.0: one GPU puts into the other; exchange.0: both do; launch, start and end flags and
// one put included), plus what its lanes do beyond that probe's single put: per lane its ops one after the
// other, each at its kind's measured cost in the kernel (the slope of the probe with 8 more ops of that kind:
// local copies before the lane's first wait from oneway.8, after it from exchange.8, puts from puts.8,
// reductions from reduce.8) plus what the op's size adds (fused.step_quiet.* against their smallest size), and
// a flag hop per wait on another lane. Ops before a lane's first wait are not hidden behind the start flag: in
// back-to-back launches the peer's start flag is already there (oneway.8's slope is the copies' full cost).
// Lanes of several CTAs keep the group tables (fused.group*). Empty without the probes.
// Whether a fused program's GPUs touch each other's memory both ways (its probe: exchange, else oneway).
bool fused_both_ways(const Schedule& s, const FusedLayout& f) {
  std::map<int, std::set<int>> touches;  // GPU -> the other GPUs its lanes touch
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const int g = f.lane_gpu[size_t(f.lane[i])];
    for (const Access& a : fused_accesses(s, s.ops[i]))
      if (a.ref.rank != g) touches[g].insert(a.ref.rank);
  }
  for (const auto& [g, others] : touches)
    for (int o : others)
      if (touches.count(o) && touches[o].count(g)) return true;
  return false;
}

std::optional<Seconds> fused_from_probes(const model::ModelParams& P, const Schedule& s, const FusedLayout& f,
                                         int launches, std::string* how) {
  auto at = [&](const char* name) -> std::optional<double> {
    const model::PathTable* t = table(P, name);
    if (!t || t->points.empty()) return std::nullopt;
    return t->points.front().second;  // the probes' 8-byte ops
  };
  const auto ow0 = at("fused.prog.oneway.0"), ow8 = at("fused.prog.oneway.8"), ex0 = at("fused.prog.exchange.0"),
             ex8 = at("fused.prog.exchange.8"), puts8 = at("fused.prog.puts.8"), red8 = at("fused.prog.reduce.8"),
             ow1 = at("fused.prog.oneway.1"), ex1 = at("fused.prog.exchange.1"), exp1 = at("fused.prog.exchange_pre.1"),
             red1 = at("fused.prog.reduce.1");
  const char* moves[] = {"put", "get", "local"};
  const model::PathTable *quiet[3], *group[3], *group_free[3];
  for (int m = 0; m < 3; ++m) {
    quiet[m] = table(P, std::string("fused.step_quiet.") + moves[m]);
    group[m] = table(P, std::string("fused.group.") + moves[m]);
    group_free[m] = table(P, std::string("fused.group_free.") + moves[m]);
    if (!quiet[m] || quiet[m]->points.empty()) return std::nullopt;
  }
  if (!ow0 || !ow8 || !ex0 || !ex8 || !puts8 || !red8) return std::nullopt;
  const double local_pre = std::max(0.0, (*ow8 - *ow0) / 8), local_post = std::max(0.0, (*ex8 - *ex0) / 8),
               put = std::max(0.0, (*puts8 - *ow0) / 8), reduce = std::max(0.0, (*red8 - *ex0) / 8);
  // The first copy of a lane before its first wait (after it) costs what oneway.1 (exchange.1) adds to the
  // probe without it; the others the slope from there to 8 copies. Profiles without the .1 probes: the slope.
  // Two-way programs take their first copy before the wait from exchange_pre.1 (both ranks copy, then put)
  // where measured: on 2 x H200 it adds 0.8 us to exchange.0 where oneway.1 adds 0.2 to oneway.0.
  const bool two_way = fused_both_ways(s, f);
  const double pre_first = two_way && exp1 ? std::max(0.0, *exp1 - *ex0)
                           : ow1           ? std::max(0.0, *ow1 - *ow0)
                                           : local_pre,
               pre_next = ow1 ? std::max(0.0, (*ow8 - *ow1) / 7) : local_pre,
               post_first = ex1 ? std::max(0.0, *ex1 - *ex0) : local_post,
               post_next = ex1 ? std::max(0.0, (*ex8 - *ex1) / 7) : local_post;
  // A lane's first reduction (after its wait, as in reduce.1) the same way.
  const double reduce_first = red1 ? std::max(0.0, *red1 - *ex0) : reduce,
               reduce_next = red1 ? std::max(0.0, (*red8 - *red1) / 7) : reduce;
  const double hop = P.exec.flag_hop.value.value;
  // One more system-scope release after another from the same thread: the previous store's round trip.
  const double release = P.exec.flag_rtt.value.value;
  double publish[3] = {0, 0, 0};
  for (int m = 0; m < 3; ++m)
    if (const model::PathTable* st = table(P, std::string("fused.step.") + moves[m]); st && !st->points.empty())
      publish[m] = std::max(0.0, st->points.front().second - quiet[m]->time(double(st->points.front().first)).value);
  // What an op's size adds to its kind's cost at the probes' 8 bytes (a CTA's share in a group).
  auto grows = [&](int m, double bytes) {
    const double b0 = double(quiet[m]->points.front().first);
    return std::max(0.0, quiet[m]->time(std::max(bytes, b0)).value - quiet[m]->time(b0).value);
  };
  const size_t n = s.ops.size();
  auto move_of = [&](const Op& op) {
    const Ref d = s.resolve(op.dst), a = s.resolve(op.src), b = s.resolve(op.src2);
    if (d.rank != op.rank) return 0;
    if (a.rank != op.rank || (op.kind == OpKind::reduce && b.rank != op.rank)) return 1;
    return 2;
  };
  // Lanes start together; the probe's fixed cost is added at the end.
  std::vector<double> end(n, 0), lane_free(f.lane_gpu.size(), 0);
  std::vector<char> lane_waited(f.lane_gpu.size(), 0);
  std::vector<int> copies_pre(f.lane_gpu.size(), 0), copies_post(f.lane_gpu.size(), 0), reduces(f.lane_gpu.size(), 0);
  int sliced_ops = 0;
  std::vector<std::set<int>> published_to(f.lane_gpu.size());
  std::map<int, double> touched_until;
  double last = 0;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = s.ops[i];
    const int l = f.lane[i], g = f.lane_gpu[size_t(l)], k = f.lane_ctas[size_t(l)];
    double t = lane_free[size_t(l)];
    bool own_wait = false;
    for (size_t w = 0; w < f.waits[i].size(); ++w) {
      const OpId d = f.waits[i][w];
      const int dl = f.lane[size_t(d)];
      own_wait = own_wait || dl == l;
      if (dl != l) {
        lane_waited[size_t(l)] = 1;
        published_to[size_t(l)].clear();  // what it stored before the wait has been acknowledged meanwhile
      }
      t = std::max(t, end[size_t(d)] + (dl == l ? 0.0 : hop + f.wait_release_pos[i][w] * release));
    }
    const int m = move_of(op);
    const double bytes = double(op.bytes) * (m == 2 && op.kind == OpKind::reduce ? 1.5 : 1.0);
    double dur;
    // An op with per-CTA flags is priced as its CTAs alone (the last branch): no arrival count, and the waits
    // on its own lane's ops are each CTA's program order.
    // A CTA group's op crosses the link no faster than SM copies reach (the group tables stop at 1 MiB).
    if (k > 1 && !f.sliced[i] && own_wait && group[m]) {
      // a CTA group's op waiting for its lane's previous op
      dur = std::max(group[m]->time(bytes).value, link_bound(P, m, bytes));
    } else if (k > 1 && !f.sliced[i] && f.publishes[i] && group_free[m]) {
      // Its CTAs count their arrivals (fences) before the flag; the flag's own release is in the probe already
      // (its one put stores a flag): what a flag adds to a one-CTA op (fused.step - fused.step_quiet) is not
      // counted twice.
      dur = std::max(group_free[m]->time(bytes).value - publish[m], link_bound(P, m, bytes));
    } else {  // one CTA, a CTA group's op without a flag or with per-CTA flags: each CTA moves its share
      double fixed = put;
      if (op.kind == OpKind::reduce) {
        fixed = reduces[size_t(l)]++ ? reduce_next : reduce_first;
      } else if (m == 2) {
        int& before = (lane_waited[size_t(l)] ? copies_post : copies_pre)[size_t(l)];
        fixed = lane_waited[size_t(l)] ? (before ? post_next : post_first) : (before ? pre_next : pre_first);
        ++before;
      }
      dur = fixed + grows(m, bytes / k) +
            (m == 1 ? std::max(0.0, quiet[1]->points.front().second - quiet[0]->points.front().second) : 0.0);
      if (k > 1) dur = std::max(dur, fixed + link_bound(P, m, bytes));
      if (f.sliced[i]) ++sliced_ops;
      // Its flag is released once its stores are acknowledged (a round trip, latency.flag). The probes publish
      // into one peer; a lane whose ops publish into one more GPU after another with no wait between (a
      // scatter's put into each peer) adds that round trip for each further GPU.
      if (f.publishes[i])
        for (const Access& a : fused_accesses(s, op))
          if (a.write && a.ref.rank != g && published_to[size_t(l)].insert(a.ref.rank).second &&
              published_to[size_t(l)].size() > 1)
            dur += release;
    }
    end[i] = t + dur;
    lane_free[size_t(l)] = end[i];
    last = std::max(last, end[i]);
    for (const Access& a : fused_accesses(s, op))
      if (a.ref.rank != g) {
        touched_until[a.ref.rank] = std::max(touched_until[a.ref.rank], end[i]);
      }
  }
  for (const auto& [g, e] : touched_until) last = std::max(last, e + hop);
  // The probe's own lanes on the same terms: its put (and, two-way, the peer's at the same time) and the flag.
  const double base = two_way ? *ex0 : *ow0, base_lanes = put + hop;
  std::string h;
  std::string unused;
  const model::PathTable* probe = P.table(std::string("fused.prog.") + (two_way ? "exchange.0" : "oneway.0"));
  const Seconds replay = replay_shift(P, probe->launches_per_replay, plan_launches(launches), h);
  if (how)
    *how = std::string("fused model: the executor's kernel on the probe fused.prog.") +
           (two_way ? "exchange.0" : "oneway.0") + " plus " + std::to_string(f.lane_gpu.size()) +
           " lanes' ops at the probes' per-op costs (copies " + std::to_string(int(pre_first * 1e9)) + "+" +
           std::to_string(int(pre_next * 1e9)) + "/" + std::to_string(int(post_first * 1e9)) + "+" +
           std::to_string(int(post_next * 1e9)) + " ns before/after a wait, put " + std::to_string(int(put * 1e9)) +
           " ns, reduce " + std::to_string(int(reduce * 1e9)) + " ns) and fused.step_quiet.* growth" +
           (sliced_ops ? ", " + std::to_string(sliced_ops) + " ops with per-CTA flags CTA by CTA within the link's rate"
                       : std::string()) +
           ", a flag hop per wait" + h;
  return Seconds(base + std::max(0.0, last - base_lanes)) + replay;
}

// The floor every fused program stands on: a GPU's NVLink port carries each byte its lanes move to or from a
// peer, whatever the lanes and CTAs (the per-op models above price each lane as if it had the port to itself).
// Per GPU and direction (its stores into peers and the peers' loads from it leave it; the rest enter), the time
// of those bytes at the rate SM copies of that kind reach across the link: stores at the top of p2p.sm_store.uni
// (of p2p.sm_store.fanout where a GPU stores into, or is stored into by, several peers and the profile has it),
// loads at the top of p2p.sm.uni (their largest size measured), the route's bandwidth without them. Zero where no
// byte crosses a GPU.
Seconds fused_port_floor(Simulator& sim, const Schedule& s, const FusedLayout& f, std::string* how) {
  const model::ModelParams& P = sim.params();
  auto rate_of = [&](const char* name) {
    const double r = top_rate(P, name);
    return r > 0 ? r : rates_of(sim).link;
  };
  const double store_rate = rate_of("p2p.sm_store.uni"), load_rate = rate_of("p2p.sm.uni");
  if (store_rate <= 0 || load_rate <= 0) return Seconds(0);
  // A GPU that stores into several peers (out), or that several store into (in), at the rate every GPU reached
  // storing into all its peers at once (p2p.sm_store.fanout, measured on 3 or more GPUs; absent, one peer's rate).
  std::map<int, std::set<int>> stores_to, stored_by;  // per GPU (rank)
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const int g = f.lane_gpu[size_t(f.lane[i])];
    for (const Access& a : fused_accesses(s, s.ops[i]))
      if (a.write && a.ref.rank != g) {
        stores_to[g].insert(a.ref.rank);
        stored_by[a.ref.rank].insert(g);
      }
  }
  const double fanout_rate = top_rate(P, "p2p.sm_store.fanout");
  auto store_rate_at = [&](const std::map<int, std::set<int>>& peers, int gpu) {
    const auto it = peers.find(gpu);
    return fanout_rate > 0 && it != peers.end() && it->second.size() > 1 ? fanout_rate : store_rate;
  };
  bool fanned = false;
  std::map<int, double> out, in;  // per GPU (rank): seconds of the port's direction
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const int g = f.lane_gpu[size_t(f.lane[i])];
    for (const Access& a : fused_accesses(s, s.ops[i])) {
      if (a.ref.rank == g) continue;
      if (a.write) {
        const double rate_out = store_rate_at(stores_to, g), rate_in = store_rate_at(stored_by, a.ref.rank);
        fanned = fanned || rate_out != store_rate || rate_in != store_rate;
        out[g] += double(a.bytes) / rate_out;
        in[a.ref.rank] += double(a.bytes) / rate_in;
      } else {
        in[g] += double(a.bytes) / load_rate;
        out[a.ref.rank] += double(a.bytes) / load_rate;
      }
    }
  }
  double busiest = 0;
  for (const auto& m : {out, in})
    for (const auto& [g, t] : m) busiest = std::max(busiest, t);
  if (how && busiest > 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "; the busiest NVLink port direction takes %.1f us (SM stores at %.0f GB/s, loads at %.0f: "
                  "p2p.sm_store.uni / p2p.sm.uni at their largest size)",
                  busiest * 1e6, store_rate / 1e9, load_rate / 1e9);
    *how += buf;
    if (fanned) {
      std::snprintf(buf, sizeof buf, "; stores with several peers at %.0f GB/s (p2p.sm_store.fanout)",
                    fanout_rate / 1e9);
      *how += buf;
    }
  }
  return Seconds(busiest);
}

SimResult run_fused(Simulator& sim, const lower::LoweredPlan& plan, std::string* how) {
  const model::ModelParams& P = sim.params();
  const Schedule& s = plan.schedule;
  const FusedLayout f = layout_of(s, plan.fused);
  // The per-lane models below, held to the ports' floor where it is the larger.
  auto floored = [&](Seconds t) {
    std::string floor_how;
    const Seconds floor = fused_port_floor(sim, s, f, &floor_how);
    SimResult r;
    r.time = t;
    if (floor.value > t.value) {
      r.time = floor;
      if (how) *how += floor_how;
    }
    return r;
  };
  if (auto t = fused_from_probes(P, s, f, plan.launches, how)) return floored(*t);
  if (auto t = fused_from_op_tables(P, s, f, how)) return floored(*t);
  const Rates rt = rates_of(sim);
  // GPUs whose memory the ops touch (ranks on distinct GPUs): every one of them launches the kernel, and a
  // lane's first touch of another GPU waits for that GPU's start flag.
  std::set<int> touched;
  for (const Op& op : s.ops) {
    touched.insert(op.rank);
    if (op.kind != OpKind::compute)
      for (const Ref* r : {&op.dst, &op.src, &op.src2})
        if (op.kind == OpKind::reduce || r != &op.src2) touched.insert(r->rank);
  }
  const int ngpus = std::min(int(touched.size()), s.nranks);
  // CTAs per lane: the launch's CTAs shared by the lanes of one GPU.
  // Lanes live on the GPUs of the ranks that have ops.
  std::set<int> with_ops;
  for (const Op& op : s.ops) with_ops.insert(op.rank);
  const int gpus_with_lanes = std::max(1, int(with_ops.size()));
  const int lanes_per_gpu = std::max(1, (int(f.lane_gpu.size()) + gpus_with_lanes - 1) / gpus_with_lanes);
  const double ctas = std::max(1.0, double(std::max(f.max_device_ctas, 1)) / lanes_per_gpu);
  int puts = 0, gets = 0;
  for (const Op& op : s.ops) {
    puts += op.kind == OpKind::put;
    gets += op.kind == OpKind::get;
  }
  // Copies are made by the CTA group of the op's lane: stores into the peer for puts, loads for gets.
  const std::string copy_table = puts >= gets ? "p2p.sm_store.cta" : "p2p.sm.cta";
  PathProtos pr;
  if (const auto* t = table(P, copy_table); t && rt.link > 0) pr.copy = link_proto(*t, rt.link, ctas, copy_table);
  if (const auto* t = table(P, "p2p.sm.cta"); t && rt.link > 0)
    pr.peer_reduce = link_proto(*t, rt.link, ctas, "p2p.sm.cta");
  if (const auto* t = table(P, "copy.local"); t && rt.hbm > 0) pr.local_copy = mem_proto(*t, rt.hbm, 2, "copy.local");
  if (const auto* t = table(P, "reduce.local." + dtype_key(s.dtype)); t && rt.hbm > 0)
    pr.local_reduce = mem_proto(*t, rt.hbm, 3, "reduce.local." + dtype_key(s.dtype));
  RunOptions ro;
  ro.record_ops = false;
  // The measured node costs include the wire: a transfer costs max(route, node) latency, not their sum.
  ro.step_covers_route = true;
  pr.apply(ro);
  // The fused kernels' own synchronisation, measured as such (graph.flag_chain.*): a hop per dependency and
  // per start / end wait, one launch per GPU.
  const Seconds flag_one_way = P.exec.flag_hop.value;
  const Seconds launch = P.exec.flag_launch.value;
  // One launch per GPU; a lane's first touch of a peer waits for that GPU's start flag.
  ro.start_latency = launch + (ngpus > 1 ? flag_one_way : Seconds(0));
  ro.sync_latency = flag_one_way;       // a flag store into the waiting GPU's memory, seen by its poll
  ro.local_dep_latency = flag_one_way;  // lanes of one GPU wait on the same kind of flag
  ro.copy_latency = Seconds(0);         // no launch per op: the fixed part is in the flags and the launch
  ro.kernel_latency = Seconds(0);
  SimResult r = sim.run(s, ro);
  // End waits: a GPU's launch completes once the peers' ops on its memory are done (one more flag).
  if (ngpus > 1) r.time = r.time + flag_one_way;
  if (how) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", ctas);
    *how = "fused model: one launch per GPU, " + std::string(buf) + " CTAs per lane at " +
           (pr.copy ? copy_table : std::string("protocol")) + " rates, flags one-way per dependency";
  }
  return r;
}

// ---- records -----------------------------------------------------------------------------------------

Prediction make_prediction(Simulator& sim, const std::string& name, const std::string& collective, const AlgoArgs& args,
                           int64_t count, Seconds t, const std::string& how, bool rooted) {
  Prediction p;
  p.result.time = t;
  Record& r = p.record;
  r.algo = name;
  r.collective = collective;
  r.backend = "sim";
  r.topology = sim.topology().name;
  r.ranks = args.nranks;
  r.count = count;
  r.bytes = count * dtype_size(args.dtype);
  r.dtype = std::string(dtype_name(args.dtype));
  r.redop = std::string(redop_name(args.redop));
  r.root = rooted ? args.root : -1;
  r.in_place = args.in_place;
  r.time_us = t.us();
  r.wrong = -1;
  fill_bandwidths(r);
  r.note = how;
  return p;
}

}  // namespace

ExecPath exec_path_of(const lower::LoweredPlan& plan, const AlgoArgs& args) {
  ExecPath p;
  p.launches = plan.launches;
  switch (plan.path) {
    case lower::Path::general:
      p.kind = ExecPath::Kind::general;
      break;
    case lower::Path::fused:
      p.kind = ExecPath::Kind::fused;
      break;
    case lower::Path::library:
      p.kind = ExecPath::Kind::nccl;
      break;
    case lower::Path::kernel: {
      const lower::Settings set = lower::parse_settings(args.tune, /*lenient=*/true);
      p.kind = ExecPath::Kind::bidir;
      p.kernel = lower::kernel_mechanisms(plan.kernel, args.count * dtype_size(args.dtype), args.nranks, args.in_place,
                                          set.bidir);
      p.pdl = plan.kernel.pdl;
      break;
    }
  }
  return p;
}

lower::Machine machine_of(const topo::Topology& t) {
  lower::Machine m;
  if (t.num_gpus() > 0) m.sms = lower::sms_of_gpu(t.node(t.gpu(0)).model);
  return m;
}

bool prices_executor_plans(const model::ModelParams& P) {
  // The copy engines' and the fused kernel's measurements: every calibrated profile has them.
  return table(P, "p2p.ce.uni") != nullptr && table(P, "fused.step.put") != nullptr;
}

bool is_matmul_reference(std::string_view algo) {
  return algo == "matmul.cublas_full" || algo.starts_with("matmul.cublas_shard_x");  // x<D>: D shard products
}

Prediction predict_matmul_reference(Simulator& sim, const std::string& name, const AlgoArgs& args) {
  const model::ModelParams& P = sim.params();
  // The collective matmul's references: one cuBLAS product of the gathered shape (m D) x k x n, or the D
  // shard products m x k x n one after the other, at the measured rate for their FLOPs.
  const model::PathTable* mm = table(P, "matmul." + dtype_key(args.dtype));
  if (!mm) throw_input(name + ": the profile has no matmul." + dtype_key(args.dtype) + " measurement");
  const double shard = 2.0 * double(args.shape.m) * double(args.shape.k) * double(args.shape.n);
  const bool full = name == "matmul.cublas_full";
  // D from the record's size (the bytes of the gathered A, (m D) x k elements): these rows run on one GPU.
  const int64_t mk = std::max<int64_t>(1, args.shape.m * args.shape.k);
  const double d = std::max<double>(1.0, std::round(double(args.count) / double(mk)));
  // The executor times the full product first, on a GPU whose clocks no tensor-core burst has lowered
  // yet: at the rested rate where measured for products that large (matmul.<type>.rested);
  // the shard products follow it, at the back-to-back rate.
  const model::PathTable* rested = table(P, "matmul." + dtype_key(args.dtype) + ".rested");
  const bool from_rest = full && rested && !rested->points.empty() && shard * d >= double(rested->points.front().first);
  const Seconds t = from_rest ? rested->time(shard * d) : full ? mm->time(shard * d) : d * mm->time(shard);
  Prediction p = make_prediction(sim, name, "matmul", args, args.count, t,
                                 from_rest ? "matmul." + dtype_key(args.dtype) + ".rested((m D) k n)"
                                 : full    ? "matmul." + dtype_key(args.dtype) + "((m D) k n)"
                                           : "D x matmul." + dtype_key(args.dtype) + "(m k n)",
                                 false);
  p.record.shape =
      std::to_string(args.shape.m) + "," + std::to_string(args.shape.k) + "," + std::to_string(args.shape.n);
  return p;
}

namespace {

// The plan priced; nullopt where its path has no model here (NCCL beyond its 2-GPU measurements, the
// all-reduce kernels beyond 2 GPUs).
std::optional<Prediction> price(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                const lower::LoweredPlan& plan) {
  const model::ModelParams& P = sim.params();
  const ExecPath path = exec_path_of(plan, args);
  std::string how;
  auto made = [&](Seconds t, SimResult* r) {
    Prediction p = make_prediction(sim, algo.name, algo.collective, args, args.count, t, how, algo.rooted);
    if (r) p.result = std::move(*r);
    for (auto& col : plan.columns()) p.record.extra.push_back(std::move(col));
    return p;
  };
  switch (plan.path) {
    case lower::Path::library:
      if (auto t = nccl_two_gpus(P, sim.topology(), algo.collective, args.count * dtype_size(args.dtype), args.nranks,
                                 how, plan.launches))
        return made(*t, nullptr);
      return std::nullopt;
    case lower::Path::kernel: {
      // The peer mechanisms are measured between 2 GPUs. On n GPUs every GPU's port to the switch carries what
      // all its peers send it at once (the plan's port bytes), priced as moving that many bytes each way; its
      // launch and flag latencies stay those of one peer.
      const int n = args.nranks;
      if (n < 2 || n > lower::kBidirMaxRanks) return std::nullopt;
      how = std::string(lower::bidir_mode_name(plan.kernel.mode)) + ": ";
      const Seconds t = bidir_kernel_time(P, path, args.dtype, how);
      if (n > 2)
        how += "; at " + std::to_string(path.kernel.port_bytes) + " B per GPU port (" + std::to_string(n) + " ranks)";
      return made(t, nullptr);
    }
    case lower::Path::fused: {
      SimResult r = run_fused(sim, plan, &how);
      return made(r.time, &r);
    }
    case lower::Path::general: {
      SimResult r = run_general(sim, plan, &how);
      if (plan.mode) how = std::string(lower::bidir_mode_name(*plan.mode)) + " mode, " + how;
      return made(r.time, &r);
    }
  }
  return std::nullopt;
}

}  // namespace

Prediction predict_plan(Simulator& sim, const Algorithm& algo, const AlgoArgs& args) {
  const lower::LoweredPlan plan = lower::lower_collective(algo, args, machine_of(sim.topology()));
  if (auto p = price(sim, algo, args, plan)) return std::move(*p);
  throw_input(algo.name + ": no model of its " + std::string(lower::path_name(plan.path)) + " plan on " +
              std::to_string(args.nranks) + " ranks");
}

std::optional<Prediction> predict_executor(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                           std::vector<std::pair<std::string, std::string>>* unpriced) {
  if (!prices_executor_plans(sim.params()) || algo.needs_shape || algo.needs_sparse) return std::nullopt;
  const lower::LoweredPlan plan = lower::lower_collective(algo, args, machine_of(sim.topology()));
  auto p = price(sim, algo, args, plan);
  if (!p && unpriced) *unpriced = plan.columns();
  return p;
}

}  // namespace cclab::sim
