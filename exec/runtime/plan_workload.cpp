#include "exec/runtime/plan_workload.hpp"

#include <map>
#include <mutex>

#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/kernels.hpp"

namespace cclab::exec {

namespace {

std::map<ComputeKind, ComputeLauncher>& launchers() {
  static std::map<ComputeKind, ComputeLauncher> m;
  return m;
}

const char* step_name(StepKind k) {
  switch (k) {
    case StepKind::memcpy:
      return "copy-engine copy";
    case StepKind::copy_kernel:
      return "copy kernel";
    case StepKind::reduce_kernel:
      return "reduce kernel";
    case StepKind::compute:
      return "compute";
  }
  return "?";
}

}  // namespace

void set_compute_launcher(ComputeKind kind, ComputeLauncher launcher) { launchers()[kind] = std::move(launcher); }

PlanWorkload::PlanWorkload(const Communicator& comm, Schedule schedule, PlanOptions options)
    : PlanWorkload(comm, schedule,
                   lower::lower(schedule,
                                [&] {
                                  options.lower.rank_device = comm.rank_device();
                                  return options.lower;
                                }()),
                   options.reduce_blocks, std::nullopt) {}

PlanWorkload::PlanWorkload(const Communicator& comm, Schedule schedule, Plan plan, int reduce_blocks,
                           std::optional<bool> held)
    : comm_(comm), schedule_(std::move(schedule)), plan_(std::move(plan)), held_(held) {
  if (schedule_.nranks != comm.nranks())
    throw_internal(__FILE__, __LINE__,
                   "schedule for " + std::to_string(schedule_.nranks) + " ranks on a communicator of " +
                       std::to_string(comm.nranks()));
  for (const auto& st : plan_.steps)
    if (st.kind == StepKind::compute && !launchers().count(schedule_.computes[size_t(st.compute)].kind))
      throw_input(schedule_.algo + ": the executor has no kernel for this schedule's compute ops yet");
  reduce_blocks_ = reduce_blocks > 0 ? reduce_blocks : 2 * comm.sm_count();

  spec_ = spec_of(schedule_);
  buffers_ = std::make_unique<RankBuffers>(comm, schedule_.buffers);

  for (const auto& ps : plan_.streams) {
    streams_.emplace_back(ps.device);
    raw_streams_.push_back(streams_.back().get());
  }
  for (int32_t es : plan_.event_stream) events_.emplace_back(plan_.streams[size_t(es)].device, false);
  fork_ = Event(comm.device_of(0), false);
  avg_stream_.assign(size_t(schedule_.nranks), -1);
  if (schedule_.redop == RedOp::avg && schedule_.nranks > 1) {
    for (size_t i = 0; i < plan_.streams.size(); ++i)
      if (avg_stream_[size_t(plan_.streams[i].rank)] < 0) avg_stream_[size_t(plan_.streams[i].rank)] = int(i);
    for (int r = 0; r < schedule_.nranks; ++r) {
      if (avg_stream_[size_t(r)] < 0 &&
          coll_shape(spec_.coll, spec_.nranks, spec_.count, r, spec_.root).out_elems > 0) {
        // A rank with a result but no ops of its own (its peers wrote it): give it a stream.
        avg_stream_[size_t(r)] = int(streams_.size());
        streams_.emplace_back(comm.device_of(r));
        raw_streams_.push_back(streams_.back().get());
      }
      rank_done_.emplace_back(comm.device_of(r), false);
    }
    avg_fork_.emplace_back(comm.device_of(0), false);
  }
  for (const auto& st : streams_) joins_.emplace_back(st.device(), false);
  for (auto& e : joins_) raw_joins_.push_back(e.get());
}

void PlanWorkload::issue_step(const PlanStep& st) {
  const cudaStream_t s = raw_streams_[size_t(st.stream)];
  for (int32_t e : plan_.waits(st)) CCLAB_CUDA(cudaStreamWaitEvent(s, events_[size_t(e)].get(), 0));
  const auto& b = *buffers_;
  switch (st.kind) {
    case StepKind::memcpy:
      if (st.bytes > 0)
        CCLAB_CUDA(cudaMemcpyAsync(b.ptr(st.dst), b.ptr(st.src), size_t(st.bytes), cudaMemcpyDeviceToDevice, s));
      break;
    case StepKind::copy_kernel:
      launch_copy(s, b.ptr(st.dst), b.ptr(st.src), st.bytes, reduce_blocks_);
      break;
    case StepKind::reduce_kernel:
      launch_reduce(s, schedule_.dtype, schedule_.redop, b.ptr(st.dst), b.ptr(st.src), b.ptr(st.src2),
                    st.bytes / dtype_size(schedule_.dtype), reduce_blocks_);
      break;
    case StepKind::compute: {
      const Compute& c = schedule_.computes[size_t(st.compute)];
      launchers().at(c.kind)(c, ComputeContext{&schedule_, buffers_.get(), s, plan_.streams[size_t(st.stream)].rank});
      break;
    }
  }
  if (st.record >= 0) CCLAB_CUDA(cudaEventRecord(events_[size_t(st.record)].get(), s));
}

void PlanWorkload::issue(cudaStream_t origin) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CCLAB_CUDA(cudaStreamIsCapturing(origin, &capturing));
  // The first iteration issued op by op records a progress event after every step, so that a hang
  // names the first op that did not finish on each stream.
  const bool trace = capturing == cudaStreamCaptureStatusNone && progress_.empty();
  fork_streams(origin, fork_.get(), raw_streams_);
  for (const auto& st : plan_.steps) {
    DeviceGuard g(plan_.streams[size_t(st.stream)].device);
    issue_step(st);
    if (trace) {
      progress_.emplace_back(plan_.streams[size_t(st.stream)].device, false);
      CCLAB_CUDA(cudaEventRecord(progress_.back().get(), raw_streams_[size_t(st.stream)]));
    }
  }
  if (trace) progress_valid_ = true;
  join_streams(origin, raw_joins_, raw_streams_);
  if (!avg_fork_.empty()) {
    // avg: once every op of every rank is done (peers may read a rank's output until then), each
    // rank divides its result by nranks on its first stream.
    CCLAB_CUDA(cudaEventRecord(avg_fork_.front().get(), origin));
    for (int r = 0; r < schedule_.nranks; ++r) {
      if (avg_stream_[size_t(r)] < 0) continue;
      const cudaStream_t st = raw_streams_[size_t(avg_stream_[size_t(r)])];
      CCLAB_CUDA(cudaStreamWaitEvent(st, avg_fork_.front().get(), 0));
      DeviceGuard g(comm_.device_of(r));
      const CollShape shape = coll_shape(spec_.coll, spec_.nranks, spec_.count, r, spec_.root);
      launch_scale_avg(st, schedule_.dtype, buffers_->ptr(schedule_.resolve(Ref{r, Buf::output, 0})), shape.out_elems,
                       schedule_.nranks);
      CCLAB_CUDA(cudaEventRecord(rank_done_[size_t(r)].get(), st));
      CCLAB_CUDA(cudaStreamWaitEvent(origin, rank_done_[size_t(r)].get(), 0));
    }
  }
}

std::string PlanWorkload::hang_report() {
  if (!progress_valid_)
    return schedule_.algo + ": the schedule's streams did not drain (graph replay: no per-op trace)";
  // The first step of each stream whose progress event is not complete.
  std::string report;
  std::vector<char> seen(plan_.streams.size(), 0);
  for (size_t i = 0; i < plan_.steps.size() && i < progress_.size(); ++i) {
    const auto& st = plan_.steps[i];
    if (seen[size_t(st.stream)]) continue;
    if (cudaEventQuery(progress_[i].get()) == cudaErrorNotReady) {
      seen[size_t(st.stream)] = 1;
      const auto& ps = plan_.streams[size_t(st.stream)];
      report += (report.empty() ? "" : "; ") + std::string("rank ") + std::to_string(ps.rank) + " channel " +
                std::to_string(ps.channel) + " op " + std::to_string(st.op) + " (" + step_name(st.kind) + ", " +
                std::to_string(st.bytes) + " B) did not finish";
    }
  }
  cudaGetLastError();
  return schedule_.algo + ": " + (report.empty() ? std::string("all ops finished, the join did not") : report);
}

std::string PlanWorkload::note() const {
  return "general lowering: " + std::to_string(plan_.steps.size()) + " ops on " + std::to_string(plan_.streams.size()) +
         " streams, " + std::to_string(plan_.num_events()) + " events";
}

}  // namespace cclab::exec
