// Folded simulation of symmetric schedules on symmetric clusters: "a few ranks represent all".
//
// On a cluster of identical servers, shifting every GPU i to i + K maps the machine onto itself for
// some K, and an algorithm may be symmetric under the same shift (a ring, an all-to-all, a hierarchical
// exchange: rank r's k-th op is rank r+K's k-th op moved by K). Then every op of rank r + jK starts and
// ends exactly when rank r's k-th op does, so it suffices to
//   1. record only the ops of ranks [0, K) (the Transport's rank window drops the rest while the
//      algorithm runs, and algorithms that loop over Transport::loop_ranks() do not even visit most
//      ranks, which keeps a 16,384-GPU schedule of a billion ops out of time and memory),
//   2. point each dependency on a dropped op (rank q, index k) at its representative (q mod K, k), and
//   3. fold every link onto its orbit representative, so the K ranks' flows share links exactly as all
//      n ranks' flows would (each representative link carries one image of every flow that crosses its
//      orbit).
// Two shifts are tried. First one server (K = GPUs per server), checked on the routes the schedule's
// transfers use (Simulator::route_fold): a ring's hops between neighbours pass; an all-to-all, whose
// flows between leaf groups share spine links in patterns that repeat only with the leaf group, does
// not. Then a leaf group (the topology's rotation, Simulator::fold_period), checked on the whole graph.
// Symmetry is checked, not assumed: the topology as said, and the schedule by recording the next K ranks'
// ops as well (all of them for a server, the first kSymmetryCheckOps for a leaf group) and comparing
// them, shifted by K, with the first K ranks'. Any mismatch falls back to the next shift, then to the
// full engine. tests/sim checks folded against full runs.
#pragma once

#include <optional>

#include "algorithms/registry.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

// Ops per rank of the second leaf group compared against the first (the symmetry check).
constexpr int32_t kSymmetryCheckOps = 512;

// Which shifts run_symmetric may fold by (tests compare them).
enum class FoldShift : uint8_t {
  any,       // one server, else a leaf group
  rotation,  // a leaf group only (the topology's rotation)
};

// The folded run of `algo` with `args`, or nullopt when the topology or the schedule is not symmetric
// (then simulate the full schedule). `reduced_out` (if given) receives the ops actually simulated,
// `period_out` the number of ranks they stand for all from.
std::optional<SimResult> run_symmetric(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                       const RunOptions& opt, Schedule* reduced_out = nullptr,
                                       int* period_out = nullptr, FoldShift shifts = FoldShift::any);

}  // namespace cclab::sim
