// The fused small-message path as a Workload (issue 6): any schedule the registry makes, encoded once
// (fused_program.hpp) into a table per GPU, and run by ONE kernel launch per GPU per collective: each
// CTA group walks its lane's ops (wait for the flags, move or reduce the bytes with 16-byte loads and
// stores, publish its own flag). Ranks that share a GPU run in the same launch (CTA groups per lane),
// so spin-waiting ranks never starve each other of SMs. Graph-safe: epochs live on the device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "exec/device.hpp"
#include "exec/fused_program.hpp"
#include "exec/workload.hpp"

namespace cclab::exec {

enum class LoweringMode : uint8_t { plan, fused, automatic };

struct FusedParams {
  LoweringMode lowering = LoweringMode::automatic;
  // lowering=auto: fused up to this many bytes (the collective's nccl-tests size), the general
  // lowering above. On 2 x H200 (scripts/gpu_fused.sh, 2026-11-22, /work/gpu-out/final) the fused
  // path was faster than the general lowering at every size up to 1 MiB for every 2-rank schedule
  // except the kernel-only reduces (see use_fused below) and broadcast at >= 64 KiB (within 25%).
  int64_t fused_max = 1 << 20;
  int threads = 512;             // per CTA (launch bound of the kernel)
  int64_t cta_bytes = 32 << 10;  // FusedOptions::cta_bytes
  int max_ctas = 0;              // per launch; 0: one per SM
  bool pdl = true;               // programmatic dependent launch (overlap with the previous kernel)
  // fused_fence=sc: a fence.sc.sys (__threadfence_system) before every flag store, on top of the
  // release store (the first GPU run's version: zero wrong, ~2 us per flag hop); default "release":
  // the barrier + st.release.sys alone, which the PTX memory model makes sufficient.
  bool sc_fence = false;
  double timeout_s = 10.0;  // kernel spin-wait timeout

  // Reads the keys this path owns from "key=value,..." (lowering, fused_max, fused_threads,
  // fused_cta_bytes, fused_ctas, fused_pdl, fused_fence, fused_timeout; kernel_timeout is read and kept) and
  // returns the string without them; throws an input error naming a bad value.
  std::string apply(const std::string& tune);
  // Whether `bytes` runs fused under this mode (by size only).
  bool use_fused(int64_t bytes) const {
    return lowering == LoweringMode::fused || (lowering == LoweringMode::automatic && bytes <= fused_max);
  }
  // The choice for a schedule: auto also keeps the general lowering when its plan has no cross-GPU
  // waits and no copy-engine copies (e.g. a 2-rank reduce whose root's kernel reads its peer): that
  // plan needs no GPU-to-GPU handshake, while the fused kernels always pay a start and an end flag
  // hop (2 x H200: reduce.direct 2.9 us general vs 6.1 us fused at 16 B).
  bool use_fused(const Schedule& s, const std::vector<int>& rank_device) const;
};
std::string_view lowering_mode_name(LoweringMode m);

class FusedWorkload : public Workload {
 public:
  // Encodes the schedule, allocates its buffers, flags and device tables. Throws an input error for
  // schedules the fused path does not run (compute ops, more ranks per GPU than fit in one launch).
  FusedWorkload(const Communicator& comm, Schedule schedule, const FusedParams& params);
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
