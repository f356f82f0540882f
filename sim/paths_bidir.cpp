// The all-reduce kernels of the lowered plan, priced from the mechanisms the plan says each is made of
// (lower::KernelMechanisms: what crosses the link, the round trips in series, how the reduction and the CTAs
// pipeline) and the calibration's measurements of those mechanisms apart from any collective: a kernel's launch in
// a replayed graph, peer loads and stores across the link (all SMs, and one CTA), LL-style stores, flag round
// trips, local reductions (all SMs, and one CTA). No series of the kernels themselves is read: what they add beyond
// these mechanisms stays in the error (docs/findings/2026-11-27-bidir-kernels-from-mechanisms.md).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "sim/paths.hpp"
#include "sim/paths_detail.hpp"

namespace cclab::sim {

namespace {

// The CTA of the one-CTA series (p2p.sm.cta, p2p.sm_store.cta, reduce.local.cta.<dtype>): 512 threads, 4
// independent 16-byte vectors (or vector pairs) in flight per thread. Their `cta256` and `cta128` twins run 256 and
// 128 threads.
constexpr double kBenchCtaVectors = 512.0 * 4.0;

const model::PathTable* table_or_null(const model::ModelParams& P, const std::string& name) {
  const model::PathTable* t = P.table(name);
  return t && !t->empty() ? t : nullptr;
}

const model::PathTable& table(const model::ModelParams& P, const std::string& name) {
  const model::PathTable* t = table_or_null(P, name);
  if (!t) throw_input("the profile has no '" + name + "' measurement (run cclab calibrate)");
  return *t;
}

// The one-CTA series at fewer threads: "p2p.sm.cta" -> "p2p.sm.cta256", "reduce.local.cta.float" ->
// "reduce.local.cta256.float".
std::string at_threads(const std::string& cta, int threads) {
  const auto at = cta.find(".cta");
  return cta.substr(0, at + 4) + std::to_string(threads) + cta.substr(at + 4);
}

// A kernel launched in per-GPU graphs replayed with `launches` launches each: the graph's fixed cost per replay
// (fork, launches, join) spread over them (bidir.replay: empty PDL kernels, t(N) = c + F / N), and what a launch
// without programmatic dependent launch adds (graph.kernel - graph.kernel_pdl).
Seconds launch_in_graph(const model::ModelParams& P, bool pdl, int launches, std::string& how) {
  const model::PathTable* r = P.table("bidir.replay");
  const Seconds plain_extra =
      pdl ? Seconds(0) : Seconds(std::max(0.0, P.exec.kernel_node.value.value - P.exec.kernel_pdl.value.value));
  if (r && !r->empty()) {
    how += "launch in a graph of " + std::to_string(launches) + " (bidir.replay)";
    return r->time(double(launches)) + plain_extra;
  }
  how += "graph node";
  return (pdl ? P.exec.kernel_pdl.value : P.exec.kernel_node.value);
}

// What moving `bytes` adds to one CTA that keeps `vectors` 16-byte vectors in flight, beyond the one-CTA
// microbenchmark's smallest size. The series at 512 threads and, where measured, at 256 and 128 give it at their
// depths; between two of them it follows a power of the vectors through both; below the shallowest, Little's law (the
// vectors in flight over the memory's latency bound the rate); above 512 threads, the SM's rate of the deepest.
// Nothing without that microbenchmark. (One CTA's local reduction and copy on one H200, 64-512 threads:
// docs/findings/2026-11-29-one-cta-depth.md.) The series both ways at once (`.bidir`) are measured, not read: their
// time over the one-way series' at small sizes is noise over noise (docs/findings/2026-11-29-one-cta-depth.md).
Seconds one_cta(const model::ModelParams& P, const std::string& cta, double bytes, double vectors) {
  const model::PathTable* C = table_or_null(P, cta);
  if (!C || vectors <= 0) return Seconds(0);
  if (vectors >= kBenchCtaVectors) return C->size_part(bytes);
  double v_hi = kBenchCtaVectors;
  Seconds s_hi = C->size_part(bytes);
  for (const int threads : {256, 128}) {
    const model::PathTable* T = table_or_null(P, at_threads(cta, threads));
    if (!T) continue;
    const double v_lo = threads * 4.0;
    const Seconds s_lo = std::max(s_hi, T->size_part(bytes));  // fewer vectors never move faster
    if (vectors >= v_lo) {
      if (s_hi.value <= 0) return s_lo;
      return s_hi * std::pow(s_lo.value / s_hi.value, std::log(v_hi / vectors) / std::log(v_hi / v_lo));
    }
    v_hi = v_lo;
    s_hi = s_lo;
  }
  return s_hi * (v_hi / vectors);
}

// What moving `bytes` across the link adds to a kernel beyond its latencies, with `grid` CTAs each keeping `vectors`
// 16-byte vectors in flight: the all-SM microbenchmark's time over its smallest size's, or, where the CTAs are too
// few to fill the link, one CTA's over bytes / grid.
Seconds transfer(const model::ModelParams& P, const std::string& link, const std::string& cta, double bytes, int grid,
                 double vectors, std::string& how) {
  Seconds size = table(P, link).size_part(bytes);
  how += link + "(S)";
  if (grid > 0 && vectors > 0) {
    const Seconds per_cta = one_cta(P, cta, bytes / grid, vectors);
    if (per_cta > size) {
      size = per_cta;
      how += " bounded by " + cta + "(S/" + std::to_string(grid) + ") at " + std::to_string(int64_t(vectors)) +
             " vectors in flight";
    }
  }
  return size;
}

// A grid of several CTAs counts their arrivals at its end (the last advances the epoch), each CTA fencing first:
// the fence waits for the acknowledgment of what it stored into the peer, which comes back half a round trip after
// the peer's data arrived. One CTA ends without the fence.
Seconds arrival_count_fence(Seconds rtt, int grid, std::string& how) {
  if (grid <= 1) return Seconds(0);
  how += " + half a round trip (the grid's arrival count fences its peer stores)";
  return 0.5 * rtt;
}

// A store into the peer's memory until its acknowledgment is back: the one-way SM-store microbenchmark's smallest
// kernel (a kernel ends once its stores are acknowledged) less the local copy's (the same launch, a local store).
// Without those series, a flag round trip.
Seconds store_acknowledged(const model::ModelParams& P) {
  const model::PathTable* peer = table_or_null(P, "p2p.sm_store.uni");
  const model::PathTable* local = table_or_null(P, "copy.local");
  if (!peer || !local) return P.exec.flag_rtt.value;
  return Seconds(std::max(0.0, peer->points.front().second - local->points.front().second));
}

Seconds reduce_part(const model::ModelParams& P, DType dtype, double bytes) {
  const model::PathTable* t = P.table("reduce.local." + std::string(dtype_name(dtype)));
  if (!t) t = &table(P, "reduce.local.float");
  return t->size_part(bytes);
}

// One CTA reducing `bytes` of local operands with `vectors` 16-byte vector pairs in flight: the one-CTA reduction
// at that depth (one_cta), never faster than all SMs reducing. A profile without the one-CTA series prices all SMs'
// rate.
Seconds one_cta_reduce(const model::ModelParams& P, DType dtype, double bytes, double vectors) {
  const Seconds all = reduce_part(P, dtype, bytes);
  const std::string cta = "reduce.local.cta." + std::string(dtype_name(dtype));
  if (!table_or_null(P, cta) || vectors <= 0) return all;
  return std::max(all, one_cta(P, cta, bytes, vectors));
}

// A kernel's latencies in series: its round trips (latency.flag) and its start / finish handshakes, a flag hop
// each (the same release and acquire as graph.flag_chain).
Seconds round_trips_and_handshakes(const model::ModelParams& P, const lower::KernelMechanisms& k, std::string& how) {
  how += " + " + std::to_string(k.round_trips) + (k.round_trips == 1 ? " round trip" : " round trips") + " (" +
         std::string(k.waits) + ")";
  Seconds t = double(k.round_trips) * P.exec.flag_rtt.value;
  if (k.handshakes > 0) {
    how += " + " + std::to_string(k.handshakes) + (k.handshakes == 1 ? " handshake" : " handshakes") + " (flag_hop)";
    t += double(k.handshakes) * P.exec.flag_hop.value;
  }
  return t;
}

// Persistent lanes, one CTA each, between a start and a finish handshake. Half a lane's threads push its units
// (slots of the peers' rings) one after another, a fenced flag per unit and peer; the other half reduce each unit
// the peers pushed into this GPU (the own input and the slot). A lane's units pipeline through the ring: the first
// unit's stores, then the slower of stores and reduction per further unit, then the last unit's reduction, each at
// one CTA's rate scaled by its vectors in flight.
Seconds lanes_through_rings(const model::ModelParams& P, const lower::KernelMechanisms& k, DType dtype,
                            std::string& how) {
  const Seconds rtt = P.exec.flag_rtt.value;
  const double S = double(k.port_bytes), vectors = k.vectors;
  const int grid = std::max(1, k.grid);
  const int np = std::max(1, k.peers);
  const double per_peer = S / np;
  const double unit = std::min(per_peer, double(k.unit_bytes));
  const double units = std::ceil(std::ceil(per_peer / std::max(unit, 1.0)) / grid);
  const Seconds store = double(np) * one_cta(P, "p2p.sm_store.cta", unit, vectors);
  // Every lane reduces a unit at once: together never faster than all SMs reducing every lane's unit.
  const double lanes = std::min(double(grid), std::ceil(per_peer / std::max(unit, 1.0)));
  const Seconds reduce =
      std::max(double(np) * one_cta_reduce(P, dtype, unit, vectors), reduce_part(P, dtype, np * lanes * unit));
  Seconds body = store + (units - 1) * std::max(store, reduce) + reduce;
  how += "per lane " + std::to_string(int64_t(units)) + " units: p2p.sm_store.cta (one unit), the slower of it and " +
         "reduce.local.cta." + std::string(dtype_name(dtype)) +
         " per further unit, the last unit's reduction (every lane's at once: at least reduce.local over them)";
  // However the lanes pipeline, the link carries every byte before the last units are reduced.
  const Seconds link = table(P, "p2p.sm_store.bidir").size_part(S) + reduce;
  if (link > body) {
    body = link;
    how += ", bounded by p2p.sm_store.bidir(S) and the last unit's reduction";
  }
  body += round_trips_and_handshakes(P, k, how);
  // A lane releases to its peers in turn: each further peer a round trip per unit and for its last release.
  const double more_peers = np - 1;
  if (more_peers > 0)
    how += " + a round trip per further peer for each of a lane's " + std::to_string(int64_t(units)) +
           " units and its last release";
  return body + more_peers * (units + 1) * rtt;
}

}  // namespace

int plan_launches(int launches) { return launches > 0 ? launches : lower::launches_for(lower::Path::general); }

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

Seconds bidir_kernel_time(const model::ModelParams& P, const ExecPath& path, DType dtype, std::string& how) {
  using K = lower::KernelMechanisms;
  const K& k = path.kernel;
  const double S = double(k.port_bytes);
  const int grid = std::max(1, k.grid);
  const Seconds rtt = P.exec.flag_rtt.value;
  Seconds launch = launch_in_graph(P, path.pdl, plan_launches(path.launches), how);
  launch += arrival_count_fence(rtt, grid, how);  // after the launch's words in `how`
  how += " + ";
  if (k.unit_bytes > 0) return launch + lanes_through_rings(P, k, dtype, how);
  // Latencies, in flag round trips between GPUs inside running kernels (latency.flag): a kernel that stores into
  // the peer ends once its stores are acknowledged (a round trip: the peer's stores land in the first half); one
  // that loads from the peer waits a round trip for them; a flag released after stores (a fence: their
  // acknowledgment first) is one more. A handshake between the same CTA of two GPUs (each releases its flag to the
  // other and acquires the other's, side by side) costs a flag hop between kernels of the two GPUs
  // (graph.flag_chain's slope: the same release and acquire, one GPU's kernel waiting for the other's).
  const bool loads = k.link == K::Link::loads;
  const std::string all_sms = loads                          ? "p2p.sm.bidir"
                              : k.link == K::Link::ll_stores ? "p2p.ll_store.bidir"
                                                             : "p2p.sm_store.bidir";
  const std::string one = loads ? "p2p.sm.cta" : "p2p.sm_store.cta";
  Seconds body = transfer(P, all_sms, one, S, grid, k.vectors, how);
  // The reduction of what has landed overlaps what is still in flight: the slower of the two, then the last CTA's
  // share of the reduction.
  if (k.reduce != K::Reduce::within) {
    how += " or the local reduction";
    body = std::max(body, reduce_part(P, dtype, S));
  }
  if (k.tile_bytes > 0) {
    // A tile's flag waits for the acknowledgment of its stores (the fence: a round trip) before the CTA stores its
    // next tile: a CTA with several tiles pays a round trip beside each tile's stores but the last.
    const double tile = double(k.tile_bytes);  // per CTA, to every peer (S counts every peer's)
    const double tiles = std::ceil(S / (double(grid) * tile));
    if (tiles > 1) {
      const Seconds serial = (tiles - 1) * rtt + tiles * one_cta(P, one, tile, k.vectors);
      if (serial > body) {
        body = serial;
        how += ", bounded by " + std::to_string(int64_t(tiles)) + " tiles per CTA, a round trip after each";
      }
    }
  }
  body += round_trips_and_handshakes(P, k, how);
  if (k.wave_bytes > 0) {
    // Each wave after the first waits its round trip after its stores, in series with them.
    const double waves = std::ceil(S / double(k.wave_bytes));
    if (waves > 1) {
      body += (waves - 1) * rtt;
      how += " + " + std::to_string(int64_t(waves - 1)) + " more round trips (waves of the grid's threads x 8 B)";
    }
  }
  if (k.stores_acknowledged) {
    how += " + a further batch of stores into the peers acknowledged (p2p.sm_store.uni over copy.local)";
    body += store_acknowledged(P);
  }
  if (k.reduce == K::Reduce::beside) {
    how += " + the last CTA's reduction";
    body += reduce_part(P, dtype, S / grid);
  } else if (k.reduce == K::Reduce::beside_one_cta) {
    how += " + the last CTA's reduction (reduce.local.cta)";
    body += one_cta_reduce(P, dtype, S / grid, k.vectors);
  }
  return launch + body;
}

}  // namespace cclab::sim
