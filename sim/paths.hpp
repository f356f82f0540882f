// The executor's paths as the simulator predicts them (issue 8: predict what the EXECUTOR does, from
// microbenchmarks only). A measured record's `note` says which path ran:
//   general lowering   "general lowering: N ops on S streams, E events": a CUDA graph of copy-engine
//                      copies and reduce kernels on streams, forked from and joined to GPU0's stream,
//                      cross-stream dependencies as events (exec/plan*.cpp), replayed;
//   fused              "lowering=fused: ... one launch per GPU of up to C CTAs ...": one kernel per GPU
//                      runs the whole schedule, lanes of CTAs, flags in peer memory (exec/fused*);
//   bidir modes        "mode=ll|flash|stream|push|copy ...": the all-reduce kernels of exec/bidir.cu
//                      (copy: a copy-engine reduce-scatter + all-gather schedule on the general lowering);
//   NCCL               "NCCL x.y.z": the library, through the NCCL tuning model (sim/predict.cpp).
// Each path is the schedule (or the mode's structure) costed with the profile's measured pieces: graph
// node and edge costs (graph.*), flag round trips (latency.flag), and the measured time-against-size of
// the transfers it makes (model::PathTable of p2p.*, copy.local, reduce.*), never a collective record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/predict.hpp"

namespace cclab::sim {

struct ExecPath {
  enum class Kind : uint8_t { unknown, general, fused, bidir, nccl, library_other };
  Kind kind = Kind::unknown;
  std::string mode;        // bidir: ll, flash, stream, push, copy
  int grid = 0;            // bidir kernels: CTAs per GPU
  int64_t chunk = 0;       // bidir copy: copy-engine chunk in bytes
  int pieces = 0;          // bidir copy: "chunk=part/N in [4M,64M]": the part in N pieces (0: `chunk`)
  int slots = 0;           // bidir copy: scratch slots per peer
  int64_t slot_bytes = 0;  // bidir stream: ring-buffer slot
  bool pdl = false;        // kernels launched with programmatic dependent launch
  int iters = 0;           // launches per replayed graph (the record's iters column; 0: not recorded)
  std::string note;        // the record's note (the bidir models read their kernels' variant parameters from it)
  int fused_ctas = 0;      // fused: CTAs of the largest launch
  int fused_lanes = 0;     // fused: lanes over all GPUs
};

// Reads a record's note (and, for `allreduce.bidir.<mode>` names, the algorithm name). Unknown notes give
// Kind::unknown (the plain simulator model applies).
ExecPath parse_exec_note(std::string_view note, std::string_view algo);

// True for the names the executor records that are not registry algorithms but have a path model here:
// `allreduce.bidir.<mode>` and `sol.bidir_copy`.
bool is_executor_only_name(std::string_view algo);

// Predicts one measured configuration on `path`. `algo_name` is the record's algorithm (it may be an
// executor-only name); `args` as for predict(). Throws an input error for a path this model does not
// know for that algorithm.
Prediction predict_exec_path(Simulator& sim, const std::string& algo_name, AlgoArgs args, const ExecPath& path);

}  // namespace cclab::sim
