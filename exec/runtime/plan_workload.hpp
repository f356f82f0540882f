// The general path: any schedule, lowered to a Plan, issued on CUDA streams (copy engines for
// put/get/copy, kernels for reduce), cross-stream and cross-GPU dependencies as CUDA events.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "exec/runtime/workload.hpp"
#include "lower/general.hpp"

namespace cclab::exec {

using lower::LowerOptions;
using lower::Plan;
using lower::PlanStep;
using lower::StepKind;

// Executes Compute ops (collective matmul, sparse steps); registered by the owners of those kernels.
struct ComputeContext {
  const Schedule* schedule = nullptr;
  const RankBuffers* buffers = nullptr;
  cudaStream_t stream = nullptr;
  int rank = 0;
};
using ComputeLauncher = std::function<void(const Compute&, const ComputeContext&)>;
void set_compute_launcher(ComputeKind kind, ComputeLauncher launcher);

struct PlanOptions {
  LowerOptions lower;
  int reduce_blocks = 0;  // blocks per reduce / copy kernel; 0: 2 per SM
};

class PlanWorkload : public Workload {
 public:
  // Takes the schedule (kept for the check spec and diagnostics), allocates its buffers.
  PlanWorkload(const Communicator& comm, Schedule schedule, PlanOptions options);
  // Runs `plan`, the schedule's lowering for this communicator (lower::lower_collective made it); a replayed
  // graph holds behind the harness's hold kernel where `held`.
  PlanWorkload(const Communicator& comm, Schedule schedule, Plan plan, int reduce_blocks, std::optional<bool> held);
  std::optional<bool> held() const override { return held_; }
  const CollSpec& spec() const override { return spec_; }
  const RankBuffers& buffers() const override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  std::string hang_report() override;
  std::string note() const override;
  const Plan& plan() const { return plan_; }
  const Schedule& schedule() const { return schedule_; }

 private:
  void issue_step(const PlanStep& step);
  const Communicator& comm_;
  Schedule schedule_;
  Plan plan_;
  CollSpec spec_;
  std::unique_ptr<RankBuffers> buffers_;
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_streams_;
  std::vector<Event> events_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
  // RedOp::avg: per rank, the stream that divides its result once every op is done.
  std::vector<int> avg_stream_;
  std::vector<Event> rank_done_, avg_fork_;
  int reduce_blocks_ = 0;
  std::optional<bool> held_;
  // Progress events recorded after each step while issuing op by op, to name a hung op.
  std::vector<Event> progress_;
  bool progress_valid_ = false;
};

}  // namespace cclab::exec
