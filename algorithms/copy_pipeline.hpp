// The executor's copy-engine all-reduce pipeline (allreduce.bidir mode=copy) as a Schedule: built here,
// in the algorithms library, so the executor runs it and the simulator predicts the very same schedule.
#pragma once

#include <cstdint>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/transport.hpp"

namespace cclab {

struct CopyPipeline {
  int64_t chunk = 32 << 20;  // bytes per copy
  // pieces > 0: chunk = (bytes of a rank's part) / pieces, clamped to [4 MiB, 64 MiB].
  int pieces = 0;
  int slots = 3;      // scratch slots per peer
  bool split = true;  // reduce-scatter + all-gather; false: one-shot (every rank reduces everything)
  bool push = false;  // one-shot only: copy engines push (put) instead of pull (get)
};

// split: for each chunk of the part rank o owns, every peer pushes its copy into o's scratch slot
// (channel 0), o reduces (channel 1) and pushes the result into every peer's output (channel 2).
// One-shot: every rank pulls every peer's chunk into a slot (channel 0) and reduces it (channel 1).
// Slot reuse and in-place hazards are dependencies.
Schedule copy_pipeline_allreduce(int nranks, int64_t count, DType dtype, RedOp op, bool in_place,
                                 const CopyPipeline& p);

// sol.bidir_copy: rank r pushes its whole input into rank r-1's output, every rank at once on a copy engine
// (S bytes each way between 2 GPUs): the link's speed of light in both directions.
void build_sol_bidir_copy(const AlgoArgs& args, Transport& t);

}  // namespace cclab
