// Folded simulation of symmetric schedules on symmetric clusters: "one group of ranks represents all".
//
// On a cluster of identical servers whose fabric repeats every P servers, rotating GPU i to i + K
// (K = P x GPUs per server) maps the machine onto itself. When an algorithm is symmetric under the same
// rotation (a ring, an all-to-all, a hierarchical exchange: rank r's k-th op is rank r+K's k-th op moved
// by K), every op of rank r + jK starts and ends exactly when rank r's k-th op does. So it suffices to
//   1. record only the ops of ranks [0, K) (the Transport's keep filter drops the rest while the algorithm
//      runs, which keeps a 1024-GPU schedule of millions of ops out of memory),
//   2. point each dependency on a dropped op (rank q, index k) at its representative (q mod K, k), and
//   3. fold every link onto its orbit representative, so the K ranks' flows share links exactly as all
//      n ranks' flows would (each representative link carries one image of every flow that crosses its
//      orbit).
// Symmetry is checked, not assumed: the topology's rotation edge by edge and on sample routes
// (Simulator::fold_period), and the schedule by recording a prefix of the next group's ops as well and
// comparing them, shifted by K, with the first group's. Any mismatch falls back to the full engine.
// tests/sim checks folded against full runs on medium clusters.
#pragma once

#include <optional>

#include "algorithms/registry.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

// Ops per rank of the second group compared against the first (the symmetry check).
constexpr int32_t kSymmetryCheckOps = 512;

// The folded run of `algo` with `args`, or nullopt when the topology or the schedule is not symmetric
// (then simulate the full schedule). `reduced_ops` (if given) receives the ops actually simulated.
std::optional<SimResult> run_symmetric(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                       const RunOptions& opt, Schedule* reduced_out = nullptr);

}  // namespace cclab::sim
