// The fused small-message path as a Workload (): any schedule the registry makes, encoded once
// (lower/fused.hpp) into a table per GPU, and run by ONE kernel launch per GPU per collective: each
// CTA group walks its lane's ops (wait for the flags, move or reduce the bytes with 16-byte loads and
// stores, publish its own flag). Ranks that share a GPU run in the same launch (CTA groups per lane),
// so spin-waiting ranks never starve each other of SMs. Graph-safe: epochs live on the device.
#pragma once

#include <functional>
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

// One GPU's kernel of a fused program (FusedProgram::devices[d]): its op table, uploaded to that GPU, and its launch
// arguments. The single-process workload makes one per GPU; the MPI mode one per process, with the peers' buffers
// and control blocks mapped through CUDA IPC.
class FusedDeviceKernel {
 public:
  // cuda_device: the CUDA ordinal of device d in this process; ptr: where a buffer reference lies as this GPU sees it
  // (any rank's); ctrl: every device's control block (fused_control_bytes, zeroed before the first launch) as this GPU
  // sees it; err: the mapped error word (fused_error_bytes) the kernel's spin-waits report into.
  FusedDeviceKernel(const FusedProgram& program, int d, int cuda_device, const std::function<void*(Ref)>& ptr,
                    const std::vector<void*>& ctrl, void* err, const FusedParams& params, float divisor);
  ~FusedDeviceKernel();
  FusedDeviceKernel(FusedDeviceKernel&&) noexcept;
  FusedDeviceKernel& operator=(FusedDeviceKernel&&) noexcept;
  void launch(DType dtype, RedOp op, bool pdl, cudaStream_t s) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// Bytes of device d's control block: its epoch, the program's flags (which producers on any GPU store into) and the
// arrival counters of its ops.
size_t fused_control_bytes(const FusedProgram& program, int d);
// Bytes of the error word the kernels' spin-waits report a timeout into.
size_t fused_error_bytes();
// The timeout a kernel recorded in `err_host` as one line (which op waited for what), or "" when none; clears it.
std::string fused_timeout_text(const FusedProgram& program, const Schedule& schedule, void* err_host);

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
  const Communicator& comm_;
  Schedule schedule_;
  FusedParams params_;
  FusedProgram program_;
  CollSpec spec_;
  std::unique_ptr<RankBuffers> buffers_;
  std::vector<DeviceBuffer> ctrl_;  // per device: epoch, flags, arrivals
  MappedHost err_;
  std::vector<FusedDeviceKernel> kernels_;  // per device
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
};

}  // namespace cclab::exec
