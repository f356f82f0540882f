// Synthetic programs for the fused path (not collectives): `cclab calibrate` times them through the
// executor's own fused kernel (exec/microbench/microbench_fused.cpp) and the simulator's fused model starts from their
// measured times (sim/paths.cpp). Two ranks, ops of `bytes` each, all on channel 0 (one lane per rank):
//   oneway.n    rank 0 makes n local copies (each reading the previous one's output), then puts into rank 1
//   exchange.n  both ranks put into the other; each then makes n local copies of what the peer put
//   puts.n      rank 0 puts n + 1 times into rank 1
//   reduce.n    both ranks put into the other's scratch; each then makes n local reductions, the first
//               reading what the peer put (an exchange whose ops after the wait are reductions)
//   exchange_pre.n  both ranks make n local copies (each reading the previous one's output), then put into
//               the other (oneway.n both ways: copies before the put in a two-way program)
// oneway.0 and exchange.0 are the fused kernel's fixed cost with one flag each way (launch, start and end
// waits) for a one-directional and a two-directional program; the n > 0 programs add n ops of a kind.
// On kFusedWideProbeRanks ranks (one GPU each; machines with that many GPUs), how flag hops add up when several
// GPUs are at work at once, against one at a time (docs/findings/2026-11-29-nccl-empty-chunks-fused-back-to-back.md):
//   ring.n      n steps of every rank putting into the next (rank r + 1), each step's put forwarding what the
//               previous step brought (an all-gather ring's steps for n = ranks - 1)
//   chain.n     rank 0 puts into rank 1, which then forwards it to rank 2, ...: n hops, one GPU at work at a time
//   fanout.n    rank 0 puts into ranks 1 .. n, one after another
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/schedule.hpp"

namespace cclab {

enum class FusedProbe : uint8_t { oneway, exchange, puts, reduce, exchange_pre, ring, chain, fanout };

// Ranks of the ring, chain and fanout probes.
constexpr int kFusedWideProbeRanks = 4;
// Whether a probe runs on kFusedWideProbeRanks ranks (else on 2).
bool fused_probe_is_wide(FusedProbe p);

// The probes `cclab calibrate` times: on 2 GPUs, or (wide) on kFusedWideProbeRanks where the machine has them.
struct FusedProbeRun {
  FusedProbe kind;
  int n;
};
const std::vector<FusedProbeRun>& fused_calibration_probes(bool wide);

// Launches per replayed graph the probes are timed with (scripts/measure.sh's for the fused sizes).
constexpr int kFusedProbeLaunches = 100;

std::string_view fused_probe_kind(FusedProbe p);
// The microbenchmark series of a probe: "fused.prog.<kind>.<n>".
std::string fused_probe_series(FusedProbe p, int n);
Schedule fused_probe(FusedProbe p, int n, int64_t bytes);

}  // namespace cclab
