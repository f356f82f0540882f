// Workloads of the MPI mode: this process's share of one collective. MpiPlanWorkload takes the general
// plan lower::lower_collective made of the whole schedule (as the single-process path runs it) and issues only
// this rank's steps: dependencies inside the process are CUDA events, dependencies on another rank's op are
// epoch flags (mpi_kernels.hpp). MpiFusedWorkload runs this rank's kernel of a fused program.
// MpiBidirWorkload runs this rank's kernel of allreduce.bidir. MpiNcclWorkload is the NCCL
// baseline with ncclCommInitRank.
#pragma once

#include <nccl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/kernels/bidir.hpp"
#include "exec/nccl/nccl_workload.hpp"
#include "exec/runtime/fused_workload.hpp"
#include "exec/runtime/harness.hpp"
#include "exec/runtime/mpi_plan.hpp"
#include "exec/runtime/mpi_world.hpp"
#include "exec/runtime/plan_workload.hpp"
#include "exec/runtime/workload.hpp"

namespace cclab::exec {

class MpiWorkload {
 public:
  virtual ~MpiWorkload() = default;
  virtual const CollSpec& spec() const = 0;
  virtual MpiBuffers& buffers() = 0;
  // One iteration of this rank on the world's origin stream (forks and joins inside).
  virtual void issue(cudaStream_t origin) = 0;
  // `iters` iterations captured from origin into one graph (this process's GPU only).
  virtual std::unique_ptr<Replay> capture(cudaStream_t origin, int iters);
  // After the GPU went idle: throw if a wait kernel reported a timeout.
  virtual void check_device_errors() {}
  // One line for a host-side timeout.
  virtual std::string hang_report() = 0;
  virtual std::string note() const = 0;
  // This rank's NCCL estimate of one iteration (Workload::nccl_estimate_us); every rank calls it together.
  virtual std::optional<double> nccl_estimate_us() { return std::nullopt; }
};

class MpiPlanWorkload : public MpiWorkload {
 public:
  // The plan lower::lower_collective made of the schedule (rank r on GPU r). timeout_ns bounds every flag wait and
  // device barrier.
  MpiPlanWorkload(const MpiWorld& world, Schedule schedule, Plan plan, int reduce_blocks, uint64_t timeout_ns);
  const CollSpec& spec() const override { return spec_; }
  MpiBuffers& buffers() override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  void check_device_errors() override;
  std::string hang_report() override;
  std::string note() const override;
  const Plan& plan() const { return plan_; }

 private:
  void issue_step(const PlanStep& step);
  const MpiWorld& world_;
  Schedule schedule_;
  Plan plan_;
  CollSpec spec_;
  uint64_t timeout_ns_;
  int reduce_blocks_ = 0;
  std::unique_ptr<MpiBuffers> buffers_;
  std::vector<int> local_stream_;  // plan stream -> index into streams_, or -1 (another rank's)
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_streams_;
  MpiEventRoles roles_;
  std::vector<Event> events_;  // per plan event: created where the recording rank also waits on it
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
  int64_t cross_process_waits_ = 0, local_steps_ = 0;
};

// A fused program (lower/fused.hpp) with one process per GPU: this rank's GPU runs its kernel of the program, as one
// process runs every GPU's. Every rank's buffers and control block (epoch, flags, arrival counters, in its flags
// slot, zeroed once) are mapped into the others through CUDA IPC, so the kernels' flags and peer copies work across
// processes as across devices of one process; the kernels' epochs order the iterations (no device barrier).
class MpiFusedWorkload : public MpiWorkload {
 public:
  MpiFusedWorkload(const MpiWorld& world, Schedule schedule, const FusedParams& params, FusedProgram program);
  const CollSpec& spec() const override { return spec_; }
  MpiBuffers& buffers() override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  void check_device_errors() override;
  std::string hang_report() override;
  std::string note() const override;

 private:
  const MpiWorld& world_;
  Schedule schedule_;
  FusedParams params_;
  FusedProgram program_;
  CollSpec spec_;
  int device_index_ = -1;  // this rank's device in the program
  MappedHost err_;
  std::unique_ptr<MpiBuffers> buffers_;
  std::unique_ptr<FusedDeviceKernel> kernel_;
};

// allreduce.bidir's kernels with one process per GPU (launch_bidir_rank): this rank's kernel of the mode one process
// would launch on every GPU. Each rank's control words and ll receive buffer sit in its flags slot (zeroed once), the
// mode's receive buffer (lamport's, all ones: its sentinel, which the harness's poison writes as well; push's,
// twoshot_push's, stream's ring) in its scratch; MpiBuffers maps these and the user buffers (which flash and twoshot
// read and write) into the peers through CUDA IPC. Above lamport_max_bytes lamport runs as launches over chunks of its
// buffers, every rank cutting the same chunks.
class MpiBidirWorkload : public MpiWorkload {
 public:
  // mode: a kernel mode (not copy or ring, which run as schedules).
  MpiBidirWorkload(const MpiWorld& world, const BidirParams& params, lower::BidirMode mode, CollSpec spec,
                   double timeout_s);
  const CollSpec& spec() const override { return spec_; }
  MpiBuffers& buffers() override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  void check_device_errors() override;
  std::string hang_report() override;
  std::string note() const override;

 private:
  const MpiWorld& world_;
  BidirParams params_;
  lower::BidirMode mode_;
  CollSpec spec_;
  int64_t chunk_bytes_ = 0;                   // bytes of one launch (the whole message below lamport's buffers)
  std::vector<lower::BidirLaunch> launches_;  // one per chunk
  MappedHost err_;                            // this rank's error word
  std::unique_ptr<MpiBuffers> buffers_;
  BidirRankPeers peers_;
};

// The rank's NCCL communicator (ncclCommInitRank; the unique id travels by MPI_Bcast).
class MpiNcclComm {
 public:
  MpiNcclComm(const MpiWorld& world, const NcclOptions& options);
  ~MpiNcclComm();
  MpiNcclComm(const MpiNcclComm&) = delete;
  MpiNcclComm& operator=(const MpiNcclComm&) = delete;
  ncclComm_t get() const { return comm_; }
  const std::string& version() const { return version_; }
  const std::string& pins() const { return pins_; }

 private:
  ncclComm_t comm_ = nullptr;
  std::string version_, pins_;
};

class MpiNcclWorkload : public MpiWorkload {
 public:
  MpiNcclWorkload(const MpiWorld& world, const MpiNcclComm& nccl, CollSpec spec);
  const CollSpec& spec() const override { return spec_; }
  MpiBuffers& buffers() override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  std::string hang_report() override { return "rank " + std::to_string(world_.rank()) + ": NCCL did not complete"; }
  std::string note() const override;
  std::optional<double> nccl_estimate_us() override;

 private:
  const MpiWorld& world_;
  const MpiNcclComm& nccl_;
  CollSpec spec_;
  std::unique_ptr<MpiBuffers> buffers_;
};

// The nccl-tests way of checking and timing (harness.hpp), per process: each rank fills and checks
// its own buffers, #wrong is summed over ranks; the timed replay starts after a device barrier of
// all ranks, and the reported time is the slowest rank's.
class MpiHarness {
 public:
  MpiHarness(const MpiWorld& world, TimingOptions options);
  int64_t check(MpiWorkload& w);
  double time_us(MpiWorkload& w);
  const std::string& last_fallback() const { return last_fallback_; }

 private:
  void prepare(MpiWorkload& w);
  void wait(cudaEvent_t done, MpiWorkload& w, const char* what);
  const MpiWorld& world_;
  TimingOptions opt_;
  MappedHost control_;  // [0] release word of the hold kernel, [1] its timeout flag
  Event start_, stop_, done_;
  Stream util_;
  DeviceBuffer wrong_;
  std::string last_fallback_;
};

}  // namespace cclab::exec
