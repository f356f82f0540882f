// Checking and timing any Workload the nccl-tests way: fresh inputs and poisoned outputs before a
// checked iteration whose every output element is compared with the exact expected value; warm-up,
// then back-to-back iterations timed with CUDA events (with graph replay: `iters` iterations
// captured into one graph, held behind a blocking kernel so the replay runs back to back without
// host launch gaps). Every host wait is bounded and reports what hung.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/runtime/device.hpp"
#include "exec/runtime/workload.hpp"

namespace cclab::exec {

struct TimingOptions {
  int warmup = 5;
  int iters = 20;
  bool graph = true;        // CUDA-graph replay (else op by op)
  double timeout_s = 60.0;  // any single host wait
};

class Harness {
 public:
  Harness(const Communicator& comm, TimingOptions options);
  // Fills inputs, poisons outputs, runs one iteration (as a 1-iteration graph in graph mode) and
  // returns the number of output elements whose bits differ from the expected values.
  int64_t check(Workload& w);
  // Mean time of one iteration in microseconds.
  // Mean time of one operation over `iters` timed launches (one replayed graph of them; 0: options().iters).
  double time_us(Workload& w, int iters = 0);
  const TimingOptions& options() const { return opt_; }
  // Non-empty when the last timing could not use a graph (and why).
  const std::string& last_fallback() const { return last_fallback_; }

  // Writes inputs and poison for `w` (also used by tests).
  void prepare(Workload& w);
  int64_t count_wrong(Workload& w);

 private:
  // Waits until `done` (recorded on the origin stream) completes, or throws an environment error
  // with w.hang_report() after the timeout.
  void wait(cudaEvent_t done, Workload& w, const char* what);
  const Communicator& comm_;
  TimingOptions opt_;
  MappedHost control_;  // [0] release word of the hold kernel, [1] its timeout flag
  Event start_, stop_, done_;
  std::vector<Stream> util_;         // one per GPU, for fills and checks
  std::vector<DeviceBuffer> wrong_;  // one counter per GPU
  std::string last_fallback_;
};

}  // namespace cclab::exec
