// Chrome trace JSON (the Trace Event Format that Perfetto and chrome://tracing open) of simulated runs:
// one process per rank with one thread per channel (each op a slice), and one counter track per
// resource that carried traffic (its load in GB/s, or TFLOP/s for tensor cores, over time).
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

struct TraceRun {
  std::string name;          // shown in process names, e.g. "allreduce.ring 1GiB"
  const Schedule* schedule;  // the simulated schedule
  const SimResult* result;   // run with record_ops (and record_timeline for the link tracks)
};

// Runs are laid end to end on one time axis. Writes atomically; refuses (input error) more than
// kMaxTraceOps ops in all.
constexpr size_t kMaxTraceOps = 4000000;
void write_chrome_trace(const std::string& path, const std::vector<TraceRun>& runs);
// The JSON text itself (for tests).
std::string chrome_trace_json(const std::vector<TraceRun>& runs);

}  // namespace cclab::sim
