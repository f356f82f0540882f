// The fused small-message path as a Workload (): any schedule the registry makes, encoded once
// (lower/fused.hpp) into a table per GPU, and run by ONE kernel launch per GPU per collective: each
// CTA group walks its lane's ops (wait for the flags, move or reduce the bytes with 16-byte loads and
// stores, publish its own flag). Ranks that share a GPU run in the same launch (CTA groups per lane),
// so spin-waiting ranks never starve each other of SMs. Graph-safe: epochs live on the device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/workload.hpp"
#include "lower/fused.hpp"

namespace cclab::exec {

using lower::encode_fused;
using lower::FusedDevice;
using lower::FusedKind;
using lower::FusedLane;
using lower::FusedOp;
using lower::FusedOptions;
using lower::FusedParams;
using lower::FusedProgram;
using lower::LoweringMode;

class FusedWorkload : public Workload {
 public:
  // Encodes the schedule, allocates its buffers, flags and device tables. Throws an input error for
  // schedules the fused path does not run (compute ops, more ranks per GPU than fit in one launch).
  FusedWorkload(const Communicator& comm, Schedule schedule, const FusedParams& params);
  // Runs `program`, the schedule's encoding for this communicator (lower::lower_collective made it).
  FusedWorkload(const Communicator& comm, Schedule schedule, const FusedParams& params, FusedProgram program);
  ~FusedWorkload() override;
  const CollSpec& spec() const override { return spec_; }
  const RankBuffers& buffers() const override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  // One graph per GPU (the kernels synchronise across GPUs themselves).
  std::unique_ptr<Replay> capture(cudaStream_t origin, int iters) override;
  void check_device_errors() override;
  std::string hang_report() override;
  std::string note() const override;
  const FusedProgram& program() const { return program_; }

 private:
  void enqueue();
  std::string describe_timeout();  // empty when no spin-wait timed out
  const Communicator& comm_;
  Schedule schedule_;
  FusedParams params_;
  FusedProgram program_;
  CollSpec spec_;
  std::unique_ptr<RankBuffers> buffers_;
  std::vector<DeviceBuffer> tables_, ctrl_;  // per device: op/wait/lane tables; epoch, flags, arrivals
  MappedHost err_;
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
  struct Impl;
  std::unique_ptr<Impl> impl_;  // the kernel arguments per device (device-side layout)
};

}  // namespace cclab::exec
