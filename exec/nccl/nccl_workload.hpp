// Library baselines in the same harness: `<collective>.nccl` through NCCL, single-process mode
// (ncclCommInitAll over the GPUs in use; group calls), with the same buffers, sizes and checks.
#pragma once

#include <nccl.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/runtime/workload.hpp"

namespace cclab::exec {

struct NcclOptions {
  std::string algo;   // pins NCCL_ALGO when non-empty (e.g. Ring, Tree)
  std::string proto;  // pins NCCL_PROTO when non-empty (e.g. Simple, LL, LL128)
};

// Before any NCCL communicator is created (single-process and MPI modes alike): keeps NVLink multicast
// off (NCCL_NVLS_ENABLE=0 unless set; an environment error when set to anything else: it can take a
// shared host's GPUs out of service) and applies the pins. Returns the pins in effect, e.g.
// "NCCL_ALGO=Ring NCCL_PROTO=Simple", for the records' notes.
std::string apply_nccl_environment(const NcclOptions& options);
// The loaded library's version, "2.28.3".
std::string nccl_version_string();
// NCCL's reduction for a cclab RedOp.
ncclRedOp_t nccl_redop(RedOp op);

// One NCCL communicator per GPU. Sets NCCL_NVLS_ENABLE=0 unless already set (NVLink multicast must
// stay off on the shared machines) and the pins before ncclCommInitAll. Throws an input error when
// ranks share GPUs (NCCL needs one GPU per rank), an environment error on NCCL failures.
class NcclComms {
 public:
  NcclComms(const Communicator& comm, const NcclOptions& options);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;
  ncclComm_t get(int rank) const { return comms_[size_t(rank)]; }
  const std::string& version() const { return version_; }
  const std::string& pins() const { return pins_; }

 private:
  std::vector<ncclComm_t> comms_;
  std::string version_, pins_;
};

// NCCL's own estimate, in microseconds, of one iteration of `coll` on `nranks` ranks: the NCCL calls `calls`
// makes (they may open their own group: groups nest) are issued between ncclGroupStart() and
// ncclGroupSimulateEnd() (NCCL >= 2.22), which picks algorithm and protocol as ncclGroupEnd() would and launches
// nothing. nullopt where NCCL gives none:
// - an NCCL without ncclGroupSimulateEnd;
// - all-to-all, gather and scatter, which cclab composes from send/recv: NCCL estimates collectives only, and a
//   simulated group of sends and receives would stay queued in NCCL's planner until the next real launch;
// - one rank: NCCL copies at once, outside any group.
// Several communicators in one group (one per GPU, one process): NCCL writes each one's estimate into the same
// struct in turn and the last stands. Without a tuner plugin the ranks agree by construction (ncclCommInitAll agrees
// every graph's bandwidths across ranks, and the cost tables follow from those and comm-wide counts), so that is every
// rank's. Like a first real launch it may connect NCCL's channels for the algorithm it picks: every rank of the
// communicator calls it together.
std::optional<double> nccl_simulated_us(Coll coll, int nranks, const std::function<void()>& calls);

// The buffer sizes NCCL's call needs for a collective (nccl-tests layout).
std::vector<BufferSizes> nccl_buffer_sizes(Coll coll, int nranks, int64_t count, DType dtype, int root);

class NcclWorkload : public Workload {
 public:
  NcclWorkload(const Communicator& comm, const NcclComms& nccl, CollSpec spec);
  const CollSpec& spec() const override { return spec_; }
  const RankBuffers& buffers() const override { return *buffers_; }
  void issue(cudaStream_t origin) override;
  // One graph per GPU, as nccl-tests -G captures (NCCL's group calls across several GPUs' streams).
  std::unique_ptr<Replay> capture(cudaStream_t origin, int iters) override;
  std::string hang_report() override { return "NCCL did not complete"; }
  std::string note() const override;
  std::optional<double> nccl_estimate_us() override;

 private:
  void enqueue();  // the group call on the rank streams
  const Communicator& comm_;
  const NcclComms& nccl_;
  CollSpec spec_;
  std::unique_ptr<RankBuffers> buffers_;
  std::vector<Stream> streams_;
  std::vector<cudaStream_t> raw_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
};

}  // namespace cclab::exec
