// A Workload is one collective (or link test) ready to run on the GPUs: its buffers are allocated,
// and issue() enqueues one iteration that forks from the origin stream, runs on every rank's
// stream(s) and joins back. The harness (harness.cpp) fills inputs, checks outputs and times
// iterations the same way for every workload: the general schedule lowering, NCCL, the fused
// bidirectional kernels.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/values.hpp"

namespace cclab::exec {

// Per-rank input, output and scratch device buffers (RAII), sized by the schedule's BufferSizes.
class RankBuffers {
 public:
  // Throws an input error naming the size when a GPU has not enough free memory (checked with
  // cudaMemGetInfo before allocating, with `reserve_bytes` kept free per GPU for the runtime).
  RankBuffers(const Communicator& comm, const std::vector<BufferSizes>& sizes, size_t reserve_bytes = size_t(1) << 30);
  void* base(int rank, Buf b) const;
  int64_t size(int rank, Buf b) const;
  // Device pointer of a ref (after resolving in-place aliases with Schedule::resolve).
  void* ptr(Ref r) const { return static_cast<char*>(base(r.rank, r.buf)) + r.offset; }
  int nranks() const { return int(bufs_.size()); }

 private:
  struct Three {
    DeviceBuffer input, output, scratch;
  };
  std::vector<Three> bufs_;
};

// What the harness checks and how the collective's buffers are laid out.
struct CollSpec {
  Coll coll = Coll::allreduce;
  int nranks = 1;
  int64_t count = 0;  // the collective's total count (Schedule::count)
  DType dtype = DType::f32;
  RedOp op = RedOp::sum;
  int root = 0;
  bool in_place = false;
  // Where rank r's input and output start, as a Schedule resolves in(r, 0) and out(r, 0).
  std::function<Ref(Ref)> resolve;
};
// The collective a schedule runs; `resolve` reads `s`, which must outlive the spec (a workload's own member).
inline CollSpec spec_of(const Schedule& s) {
  CollSpec c{parse_coll(s.collective), s.nranks, s.count, s.dtype, s.redop, s.root, s.in_place, {}};
  c.resolve = [p = &s](Ref r) { return p->resolve(r); };
  return c;
}

// A graph (or one graph per GPU) holding several captured iterations, launched from the origin.
class Replay {
 public:
  virtual ~Replay() = default;
  virtual void launch(cudaStream_t origin) = 0;
  // False when the replay issues work from the host (then it must not sit behind a blocking
  // kernel: a full launch queue would deadlock with it).
  virtual bool holdable() const { return true; }
  // Why the replay is not a graph, when it is not.
  virtual std::string fallback() const { return {}; }
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual const CollSpec& spec() const = 0;
  virtual const RankBuffers& buffers() const = 0;
  // Enqueue one iteration: fork from origin, work, join into origin.
  virtual void issue(cudaStream_t origin) = 0;
  // Capture `iters` iterations into a replayable graph. Default: one multi-GPU stream capture of
  // issue() repeated.
  virtual std::unique_ptr<Replay> capture(cudaStream_t origin, int iters);
  // After the GPUs went idle: throw if a kernel reported an error (e.g. a spin-wait timeout).
  virtual void check_device_errors() {}
  // Called when a wait timed out: one line naming what did not finish.
  virtual std::string hang_report() { return "the collective did not complete"; }
  // Whether a timed graph replay is held behind the harness's hold kernel until the host has launched it,
  // where the lowering chose (lower::LoweredPlan::held); empty: where the replay's graph allows it.
  virtual std::optional<bool> held() const { return std::nullopt; }
  // Extra note for the record (mode, launch parameters).
  virtual std::string note() const { return {}; }
  // NCCL's own estimate of one iteration in microseconds, for the record's nccl_estimate_us; nullopt where the
  // workload is not an NCCL call or NCCL gives none. Call it before timing (it may connect NCCL's channels).
  virtual std::optional<double> nccl_estimate_us() { return std::nullopt; }
};

// Multi-GPU stream capture of `iters` calls of `issue` from origin into one graph.
std::unique_ptr<Replay> capture_multi_device(cudaStream_t origin, int iters,
                                             const std::function<void(cudaStream_t)>& issue);

// Per-GPU capture: every stream in `streams` is captured into its own graph while `enqueue` issues
// one iteration onto them (no fork/join between iterations: for work that synchronises across GPUs
// inside its kernels, like NCCL and the fused all-reduce kernels). The replay forks once from the
// origin, launches every graph, and joins once.
std::unique_ptr<Replay> capture_per_device(const Communicator& comm, const std::vector<cudaStream_t>& streams,
                                           int iters, const std::function<void()>& enqueue);

// Fork/join helpers: every stream in `streams` waits for origin's current point; origin waits for
// all of them. Events are owned by the caller (one per stream for join, one for fork).
void fork_streams(cudaStream_t origin, cudaEvent_t fork, const std::vector<cudaStream_t>& streams);
void join_streams(cudaStream_t origin, const std::vector<cudaEvent_t>& joins, const std::vector<cudaStream_t>& streams);

}  // namespace cclab::exec
