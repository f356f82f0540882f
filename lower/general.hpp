// Lowering a Schedule to a Plan: plain data that says which stream of which GPU runs each op, with
// which engine, and which events carry the cross-stream (and cross-GPU) dependencies. The plan has
// no CUDA in it, so the lowering is tested on the CPU; exec/runtime/plan_workload.* issues it (op by op, or
// captured once into a CUDA graph).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace cclab::lower {

// How a data movement op (put, get, copy) is carried out.
enum class Engine : uint8_t {
  copy_engine,  // cudaMemcpyAsync between (peer) device pointers: no SMs used
  kernel,       // a copy kernel of 16-byte loads and stores (peer pointers allowed)
};

enum class StepKind : uint8_t {
  memcpy,         // put/get/copy on a copy engine
  copy_kernel,    // put/get/copy as a kernel
  reduce_kernel,  // reduce: dst = src redop src2 (a source may be on a peer GPU)
  compute,        // Schedule::computes[compute]
};

// One op of the schedule, placed on a stream. Refs are resolved (in-place alias applied).
struct PlanStep {
  OpId op = kNoOp;
  StepKind kind = StepKind::memcpy;
  int32_t stream = 0;  // index into Plan::streams
  Ref dst, src, src2;
  int64_t bytes = 0;
  int32_t compute = -1;
  uint32_t wait_begin = 0, wait_count = 0;  // events to wait for before the step (Plan::wait_pool)
  int32_t record = -1;                      // event recorded after the step, or -1
  int32_t merged = 1;                       // schedule ops carried out by this step (coalescing)
};

// A stream: one per (rank, channel group) on the rank's GPU.
struct PlanStream {
  int32_t rank = 0;
  int32_t channel = 0;  // the first channel mapped to it
  int32_t device = 0;
};

struct Plan {
  int nranks = 0;
  std::vector<int> rank_device;       // GPU of each rank
  std::vector<PlanStream> streams;    // rank-major
  std::vector<PlanStep> steps;        // schedule order, which is a valid issue order (deps point back)
  std::vector<int32_t> wait_pool;     // event ids
  std::vector<int32_t> event_stream;  // the stream (hence device) that records each event
  int64_t cross_device_waits = 0;     // waits whose event lives on another GPU (for reports)

  std::span<const int32_t> waits(const PlanStep& s) const { return {wait_pool.data() + s.wait_begin, s.wait_count}; }
  int num_events() const { return int(event_stream.size()); }
};

struct LowerOptions {
  std::vector<int> rank_device;         // GPU of each rank (size = nranks); empty: rank r on GPU r
  Engine copies = Engine::copy_engine;  // for Lowering::automatic; copy_engine/kernel lowerings force theirs
  int max_streams_per_rank = 16;        // channels beyond this share streams (channel % max)
  // Fold a copy into the previous one on the same stream when they are contiguous, nothing waits
  // for the first and the second waits for nothing: a chunked pipeline with no consumer in between
  // (e.g. a 2-rank chain broadcast) becomes one large copy-engine copy instead of many small ones.
  bool coalesce = true;
};

// Throws an input error for a lowering the general path does not take (library) and an internal
// error when the schedule's dependencies point forward.
Plan lower(const Schedule& s, const LowerOptions& options);

// The plan as a schedule of its own steps (coalesced copies one op), each on the channel of its stream, each
// depending on the steps whose events it waits for: what runs, in the form the simulator prices. Refs are
// resolved (the result is not in place).
Schedule plan_schedule(const Schedule& s, const Plan& p);

// One line per step, for `cclab run --dump-plan` and test failure messages.
std::string describe(const Schedule& s, const Plan& p);

}  // namespace cclab::lower
