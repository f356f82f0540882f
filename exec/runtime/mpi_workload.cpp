#include "exec/runtime/mpi_workload.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/kernels.hpp"

namespace cclab::exec {

std::unique_ptr<Replay> MpiWorkload::capture(cudaStream_t origin, int iters) {
  return capture_multi_device(origin, iters, [this](cudaStream_t o) { issue(o); });
}

// ---- MpiPlanWorkload -----------------------------------------------------------------------------

MpiPlanWorkload::MpiPlanWorkload(const MpiWorld& world, Schedule schedule, Plan plan, int reduce_blocks,
                                 uint64_t timeout_ns)
    : world_(world), schedule_(std::move(schedule)), plan_(std::move(plan)), timeout_ns_(timeout_ns) {
  if (schedule_.nranks != world.size())
    throw_internal(__FILE__, __LINE__,
                   "schedule for " + std::to_string(schedule_.nranks) + " ranks under " + std::to_string(world.size()) +
                       " processes");
  for (const auto& st : plan_.steps)
    if (st.kind == StepKind::compute)
      throw_input(schedule_.algo + ": compute ops (collective matmul, sparse) do not run in the MPI mode yet");
  reduce_blocks_ = reduce_blocks > 0 ? reduce_blocks : 2 * world.sm_count();

  spec_ = spec_of(schedule_);

  // Who records and who waits on each event of the plan (mpi_plan.hpp).
  const int me = world.rank();
  roles_ = mpi_event_roles(plan_);
  cross_process_waits_ = roles_.flag_waits[size_t(me)];
  events_.resize(size_t(plan_.num_events()));
  for (size_t e = 0; e < events_.size(); ++e)
    if (roles_.producer_rank[e] == me && roles_.local_wait[e]) events_[e] = Event(world.device(), false);

  local_stream_.assign(plan_.streams.size(), -1);
  for (size_t i = 0; i < plan_.streams.size(); ++i)
    if (plan_.streams[i].rank == me) {
      local_stream_[i] = int(streams_.size());
      streams_.emplace_back(world.device());
      raw_streams_.push_back(streams_.back().get());
      joins_.emplace_back(world.device(), false);
      raw_joins_.push_back(joins_.back().get());
    }
  for (const auto& st : plan_.steps) local_steps_ += local_stream_[size_t(st.stream)] >= 0;
  fork_ = Event(world.device(), false);
  // One flag per plan event in every rank's memory: the producer stores into the consumers' copies.
  buffers_ = std::make_unique<MpiBuffers>(world, schedule_.buffers, int64_t(plan_.num_events()) * 8, true);
}

void MpiPlanWorkload::issue_step(const PlanStep& st) {
  const int me = world_.rank();
  const cudaStream_t s = raw_streams_[size_t(local_stream_[size_t(st.stream)])];
  const unsigned long long* epoch = &world_.ctrl()->epoch;
  auto& b = *buffers_;
  std::vector<MpiFlagWait> remote;
  for (int32_t e : plan_.waits(st)) {
    if (roles_.producer_rank[size_t(e)] == me)
      CCLAB_CUDA(cudaStreamWaitEvent(s, events_[size_t(e)].get(), 0));
    else
      remote.push_back({b.flags(me) + e, roles_.producer_rank[size_t(e)], roles_.producer_op[size_t(e)]});
  }
  if (!remote.empty())
    launch_mpi_wait(s, epoch, remote.data(), int(remote.size()), me, int(st.op), world_.err_device(), timeout_ns_);
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
    case StepKind::compute:
      break;  // refused in the constructor
  }
  if (st.record < 0) return;
  const auto e = size_t(st.record);
  if (events_[e].get()) CCLAB_CUDA(cudaEventRecord(events_[e].get(), s));
  if (!roles_.remote_consumers[e].empty()) {
    std::vector<unsigned long long*> flags;
    for (int c : roles_.remote_consumers[e]) flags.push_back(b.flags(c) + e);
    launch_mpi_signal(s, epoch, flags.data(), int(flags.size()));
  }
}

void MpiPlanWorkload::issue(cudaStream_t origin) {
  DeviceGuard g(world_.device());
  fork_streams(origin, fork_.get(), raw_streams_);
  for (const auto& st : plan_.steps)
    if (local_stream_[size_t(st.stream)] >= 0) issue_step(st);
  join_streams(origin, raw_joins_, raw_streams_);
  // The iteration ends when every rank's ops are done (the single-process join does the same):
  // peers may read or write this rank's buffers until then.
  // It also moves this rank to the next epoch, unless an avg division still follows.
  const bool avg = schedule_.redop == RedOp::avg && schedule_.nranks > 1;
  world_.device_barrier(origin, timeout_ns_, !avg);
  if (avg) {
    const int me = world_.rank();
    const CollShape shape = coll_shape(spec_.coll, spec_.nranks, spec_.count, me, spec_.root);
    if (shape.out_elems > 0)
      launch_scale_avg(origin, schedule_.dtype, buffers_->ptr(schedule_.resolve(Ref{me, Buf::output, 0})),
                       shape.out_elems, schedule_.nranks);
    world_.device_barrier(origin, timeout_ns_, true);  // no peer reads a result of the next iteration early
  }
}

void MpiPlanWorkload::check_device_errors() {
  if (const std::string e = world_.device_error(); !e.empty()) throw_env(schedule_.algo + ": " + e);
}

std::string MpiPlanWorkload::hang_report() {
  const std::string e = world_.device_error();
  return schedule_.algo + ": " +
         (e.empty() ? "rank " + std::to_string(world_.rank()) + "'s streams did not drain (no wait timed out)" : e);
}

std::string MpiPlanWorkload::note() const {
  return "general lowering, MPI (" + std::to_string(world_.size()) + " processes): rank " +
         std::to_string(world_.rank()) + " " + std::to_string(local_steps_) + " of " +
         std::to_string(plan_.steps.size()) + " ops on " + std::to_string(streams_.size()) + " streams, " +
         std::to_string(cross_process_waits_) + " flag waits";
}

// ---- MpiFusedWorkload ----------------------------------------------------------------------------

MpiFusedWorkload::MpiFusedWorkload(const MpiWorld& world, Schedule schedule, const FusedParams& params,
                                   FusedProgram program)
    : world_(world),
      schedule_(std::move(schedule)),
      params_(params),
      program_(std::move(program)),
      err_(fused_error_bytes()) {
  if (schedule_.nranks != world.size())
    throw_internal(__FILE__, __LINE__,
                   "schedule for " + std::to_string(schedule_.nranks) + " ranks under " + std::to_string(world.size()) +
                       " processes");
  spec_ = spec_of(schedule_);
  std::memset(err_.host(), 0, fused_error_bytes());
  // The program was encoded with rank r on GPU r: its devices are ranks. Every rank's flags slot holds its
  // control block, as large as the largest device's (all ranks allocate alike).
  size_t ctrl_bytes = 0;
  for (int d = 0; d < program_.ndevices(); ++d) {
    ctrl_bytes = std::max(ctrl_bytes, fused_control_bytes(program_, d));
    if (program_.devices[size_t(d)].gpu == world.rank()) device_index_ = d;
  }
  buffers_ = std::make_unique<MpiBuffers>(world, schedule_.buffers, int64_t(ctrl_bytes), true);
  if (device_index_ < 0) return;  // no op of the program runs on this rank's GPU
  std::vector<void*> ctrl;
  for (const FusedDevice& dv : program_.devices) ctrl.push_back(buffers_->flags(dv.gpu));
  const auto ptr = [this](Ref r) { return buffers_->ptr(r); };
  kernel_ = std::make_unique<FusedDeviceKernel>(program_, device_index_, world.device(), ptr, ctrl, err_.device(),
                                                params_, float(schedule_.nranks));
}

void MpiFusedWorkload::issue(cudaStream_t origin) {
  if (!kernel_) return;
  DeviceGuard g(world_.device());
  kernel_->launch(schedule_.dtype, schedule_.redop, params_.pdl, origin);
}

void MpiFusedWorkload::check_device_errors() {
  const std::string t = fused_timeout_text(program_, schedule_, err_.host());
  if (!t.empty()) throw_env("rank " + std::to_string(world_.rank()) + ": " + t);
}

std::string MpiFusedWorkload::hang_report() {
  const std::string t = fused_timeout_text(program_, schedule_, err_.host());
  return "rank " + std::to_string(world_.rank()) + ": " +
         (t.empty() ? schedule_.algo + " (fused): the kernel is still running and no spin-wait reported a timeout" : t);
}

std::string MpiFusedWorkload::note() const {
  const int ctas = device_index_ < 0 ? 0 : program_.devices[size_t(device_index_)].ctas;
  const size_t ops = device_index_ < 0 ? 0 : program_.devices[size_t(device_index_)].ops.size();
  return "lowering=fused, MPI (" + std::to_string(world_.size()) +
         " processes, buffers and flags through CUDA IPC): rank " + std::to_string(world_.rank()) + " " +
         std::to_string(ops) + " ops in one launch of " + std::to_string(ctas) + " CTAs x " +
         std::to_string(params_.threads) + " threads" + (params_.pdl ? ", pdl" : "");
}

// ---- NCCL ------------------------------------------------------------------------------------------

MpiNcclComm::MpiNcclComm(const MpiWorld& world, const NcclOptions& options) {
  pins_ = apply_nccl_environment(options);  // before the communicator is created
  ncclUniqueId id{};
  if (world.rank() == 0) CCLAB_NCCL(ncclGetUniqueId(&id));
  world.broadcast(&id, sizeof id, 0);
  DeviceGuard g(world.device());
  CCLAB_NCCL(ncclCommInitRank(&comm_, world.size(), id, world.rank()));
  version_ = nccl_version_string();
}

MpiNcclComm::~MpiNcclComm() {
  if (comm_) ncclCommDestroy(comm_);
}

MpiNcclWorkload::MpiNcclWorkload(const MpiWorld& world, const MpiNcclComm& nccl, CollSpec spec)
    : world_(world), nccl_(nccl), spec_(std::move(spec)) {
  if (spec_.coll == Coll::exchange) throw_input("NCCL has no exchange collective");
  if (spec_.in_place && (spec_.coll == Coll::alltoall || spec_.coll == Coll::gather || spec_.coll == Coll::scatter))
    throw_input(std::string(coll_name(spec_.coll)) + ".nccl has no in-place form (send/recv on one buffer)");
  buffers_ = std::make_unique<MpiBuffers>(
      world, nccl_buffer_sizes(spec_.coll, spec_.nranks, spec_.count, spec_.dtype, spec_.root), 0, false);
}

void MpiNcclWorkload::issue(cudaStream_t s) {
  DeviceGuard g(world_.device());
  const int r = world_.rank(), n = spec_.nranks;
  const auto t = nccl_type(spec_.dtype);
  const auto op = nccl_redop(spec_.op);
  const int64_t per = spec_.count / n, e = dtype_size(spec_.dtype);
  void* in = buffers_->ptr(spec_.resolve(Ref{r, Buf::input, 0}));
  void* out = buffers_->ptr(spec_.resolve(Ref{r, Buf::output, 0}));
  ncclComm_t c = nccl_.get();
  auto at = [&](void* p, int64_t i) { return static_cast<char*>(p) + i * per * e; };
  switch (spec_.coll) {
    case Coll::allreduce:
      CCLAB_NCCL(ncclAllReduce(in, out, size_t(spec_.count), t, op, c, s));
      break;
    case Coll::broadcast:
      CCLAB_NCCL(ncclBroadcast(in, out, size_t(spec_.count), t, spec_.root, c, s));
      break;
    case Coll::reduce:
      CCLAB_NCCL(ncclReduce(in, out, size_t(spec_.count), t, op, spec_.root, c, s));
      break;
    case Coll::allgather:
      CCLAB_NCCL(ncclAllGather(in, out, size_t(per), t, c, s));
      break;
    case Coll::reducescatter:
      CCLAB_NCCL(ncclReduceScatter(in, out, size_t(per), t, op, c, s));
      break;
    case Coll::alltoall:
      CCLAB_NCCL(ncclGroupStart());
      for (int p = 0; p < n; ++p) {
        CCLAB_NCCL(ncclSend(at(in, p), size_t(per), t, p, c, s));
        CCLAB_NCCL(ncclRecv(at(out, p), size_t(per), t, p, c, s));
      }
      CCLAB_NCCL(ncclGroupEnd());
      break;
    case Coll::gather:
      CCLAB_NCCL(ncclGroupStart());
      CCLAB_NCCL(ncclSend(in, size_t(per), t, spec_.root, c, s));
      if (r == spec_.root)
        for (int p = 0; p < n; ++p) CCLAB_NCCL(ncclRecv(at(out, p), size_t(per), t, p, c, s));
      CCLAB_NCCL(ncclGroupEnd());
      break;
    case Coll::scatter:
      CCLAB_NCCL(ncclGroupStart());
      if (r == spec_.root)
        for (int p = 0; p < n; ++p) CCLAB_NCCL(ncclSend(at(in, p), size_t(per), t, p, c, s));
      CCLAB_NCCL(ncclRecv(out, size_t(per), t, spec_.root, c, s));
      CCLAB_NCCL(ncclGroupEnd());
      break;
    case Coll::exchange:
      break;
  }
}

// This rank's call, simulated on the stream issue() uses.
std::optional<double> MpiNcclWorkload::nccl_estimate_us() {
  return nccl_simulated_us(spec_.coll, spec_.nranks, [this] { issue(world_.origin()); });
}

std::string MpiNcclWorkload::note() const {
  return "NCCL " + nccl_.version() + (nccl_.pins().empty() ? std::string() : " " + nccl_.pins()) + ", MPI (" +
         std::to_string(world_.size()) + " processes, ncclCommInitRank)";
}

// ---- MpiBidirWorkload ----------------------------------------------------------------------------

namespace {
constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
}  // namespace

MpiBidirWorkload::MpiBidirWorkload(const MpiWorld& world, const BidirParams& params, lower::BidirMode mode,
                                   CollSpec spec, double timeout_s)
    : world_(world), params_(params), mode_(mode), spec_(std::move(spec)), err_(bidir_error_bytes()) {
  using lower::BidirMode;
  if (lower::runs_as_schedule(mode_)) throw_internal(__FILE__, __LINE__, "copy and ring modes run as schedules");
  const int n = spec_.nranks;
  const int64_t bytes = spec_.count * dtype_size(spec_.dtype);
  // lamport receives into buffers of lamport_max_bytes per peer and parity: a larger message runs in chunks of them.
  chunk_bytes_ =
      mode_ == BidirMode::lamport ? std::min(bytes, lower::lamport_chunk_bytes(params_.lamport_max_bytes)) : bytes;
  const int dev = world.device();
  const DType t = spec_.dtype;
  const RedOp op = spec_.op;
  const lower::LaunchLimits gpu{world.sm_count(), 1, [t, op, dev](lower::BidirMode m, int threads, int unroll) {
                                  return bidir_resident_ctas(m, threads, unroll, t, op, dev);
                                }};
  for (int64_t off = 0; off < bytes; off += chunk_bytes_)
    launches_.push_back(
        lower::bidir_launch(mode_, std::min(chunk_bytes_, bytes - off), n, spec_.in_place, params_, gpu));
  // The mode's receive buffer (lamport, push, twoshot_push, stream) is the scratch slot.
  const BidirRecvBuffer recv = bidir_recv_buffer(launches_.front(), params_, chunk_bytes_, n);
  const int64_t ctrl = round_up(int64_t(bidir_ctrl_bytes()), 256);
  auto sizes = nccl_buffer_sizes(spec_.coll, n, spec_.count, spec_.dtype, spec_.root);
  for (auto& b : sizes) b.scratch = recv.bytes;
  buffers_ = std::make_unique<MpiBuffers>(world, sizes, ctrl + int64_t(bidir_ll_bytes(params_)), true);
  peers_.nranks = n;
  // The mode's receive buffers in `peers_` (none for ll, flash and the loading twoshot: recv.bytes is 0).
  void** recv_of = mode_ == BidirMode::lamport   ? peers_.lamport
                   : mode_ == BidirMode::push    ? peers_.push
                   : mode_ == BidirMode::twoshot ? peers_.scatter
                                                 : peers_.ring;
  for (int q = 0; q < n; ++q) {
    char* flags = reinterpret_cast<char*>(buffers_->flags(q));
    peers_.ctrl[q] = flags;
    peers_.ll[q] = flags + ctrl;
    peers_.in[q] = buffers_->ptr(spec_.resolve(Ref{q, Buf::input, 0}));
    peers_.out[q] = buffers_->ptr(spec_.resolve(Ref{q, Buf::output, 0}));
    if (recv.bytes > 0) recv_of[q] = buffers_->base(q, Buf::scratch);
  }
  peers_.lamport_stride = peers_.push_stride = peers_.scatter_stride = recv.stride;
  peers_.ring_lanes = launches_.front().ring_lanes;
  peers_.err = err_.device();
  peers_.timeout_s = timeout_s;
  if (mode_ == BidirMode::lamport) {  // lamport's sentinel in every receive buffer before any peer's first store
    DeviceGuard g(world.device());
    CCLAB_CUDA(cudaMemset(buffers_->base(world.rank(), Buf::scratch), 0xff, size_t(recv.bytes)));
    CCLAB_CUDA(cudaDeviceSynchronize());
  }
  world.barrier();
}

void MpiBidirWorkload::issue(cudaStream_t s) {
  DeviceGuard g(world_.device());
  const int r = world_.rank();
  const int64_t esize = dtype_size(spec_.dtype), bytes = spec_.count * esize;
  const char* in = static_cast<const char*>(buffers_->ptr(spec_.resolve(Ref{r, Buf::input, 0})));
  char* out = static_cast<char*>(buffers_->ptr(spec_.resolve(Ref{r, Buf::output, 0})));
  int64_t off = 0;
  for (const auto& l : launches_) {
    const int64_t n = std::min(chunk_bytes_, bytes - off);
    CCLAB_CUDA(launch_bidir_rank(l, params_, peers_, r, in + off, out + off, n / esize, spec_.dtype, spec_.op, s));
    off += n;
  }
}

void MpiBidirWorkload::check_device_errors() {
  const std::string t = bidir_timeout_text(err_.host());
  if (!t.empty()) throw_env("rank " + std::to_string(world_.rank()) + ": allreduce.bidir: " + t);
}

std::string MpiBidirWorkload::hang_report() {
  const std::string t = bidir_timeout_text(err_.host());
  return "rank " + std::to_string(world_.rank()) + ": the allreduce.bidir " +
         std::string(lower::bidir_mode_name(mode_)) + " kernel did not complete" + (t.empty() ? "" : " (" + t + ")");
}

std::string MpiBidirWorkload::note() const {
  std::string n = params_.describe(mode_) + " grid=" + std::to_string(launches_.front().grid) + ", MPI (" +
                  std::to_string(spec_.nranks) + " processes, buffers through CUDA IPC)";
  if (launches_.size() > 1) n += ", " + std::to_string(launches_.size()) + " launches over lamport's buffers";
  return n;
}

// ---- MpiHarness --------------------------------------------------------------------------------------

MpiHarness::MpiHarness(const MpiWorld& world, TimingOptions options)
    : world_(world),
      opt_(options),
      control_(64),
      start_(world.device(), true),
      stop_(world.device(), true),
      done_(world.device(), false),
      util_(world.device()),
      wrong_(world.device(), sizeof(unsigned long long)) {}

void MpiHarness::wait(cudaEvent_t done, MpiWorkload& w, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(opt_.timeout_s);
  for (;;) {
    cudaError_t e = cudaEventQuery(done);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) CCLAB_CUDA(e);
    if (std::chrono::steady_clock::now() > deadline) {
      static_cast<volatile uint32_t*>(control_.host())[0] = 1;  // let a hold kernel go
      throw_env(std::string(what) + " did not finish within " + std::to_string(int(opt_.timeout_s)) +
                " s: " + w.hang_report());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  w.check_device_errors();
}

void MpiHarness::prepare(MpiWorkload& w) {
  const CollSpec& s = w.spec();
  MpiBuffers& b = w.buffers();
  const int r = world_.rank();
  const cudaStream_t st = util_.get();
  DeviceGuard g(world_.device());
  // Poison the output and scratch (all bits set: NaN in every dtype), then write the input.
  if (b.size(r, Buf::output) > 0)
    CCLAB_CUDA(cudaMemsetAsync(b.base(r, Buf::output), 0xff, size_t(b.size(r, Buf::output)), st));
  if (b.size(r, Buf::scratch) > 0)
    CCLAB_CUDA(cudaMemsetAsync(b.base(r, Buf::scratch), 0xff, size_t(b.size(r, Buf::scratch)), st));
  const CollShape shape = coll_shape(s.coll, s.nranks, s.count, r, s.root);
  if (shape.in_elems > 0)
    launch_fill_input(st, s.dtype, s.op, r, b.ptr(s.resolve(Ref{r, Buf::input, 0})), shape.in_elems);
  CCLAB_CUDA(cudaStreamSynchronize(st));
}

int64_t MpiHarness::check(MpiWorkload& w) {
  prepare(w);
  world_.barrier();  // no peer writes into this rank's buffers before they are poisoned and filled
  const cudaStream_t origin = world_.origin();
  DeviceGuard g(world_.device());
  last_fallback_.clear();
  std::unique_ptr<Replay> once;
  if (opt_.graph) {
    once = w.capture(origin, 1);
    once->launch(origin);
  } else {
    w.issue(origin);
  }
  CCLAB_CUDA(cudaEventRecord(done_.get(), origin));
  wait(done_.get(), w, "the checked iteration");

  const CollSpec& s = w.spec();
  const int r = world_.rank();
  const CollShape shape = coll_shape(s.coll, s.nranks, s.count, r, s.root);
  auto* wrong = static_cast<unsigned long long*>(wrong_.get());
  CCLAB_CUDA(cudaMemsetAsync(wrong, 0, sizeof *wrong, util_.get()));
  const CheckSpec cs{s.coll, s.dtype, s.op, s.nranks, r, s.root, s.count};
  launch_check(util_.get(), cs, w.buffers().ptr(s.resolve(Ref{r, Buf::output, 0})), shape.out_elems, wrong);
  unsigned long long n = 0;
  CCLAB_CUDA(cudaMemcpyAsync(&n, wrong, sizeof n, cudaMemcpyDeviceToHost, util_.get()));
  CCLAB_CUDA(cudaStreamSynchronize(util_.get()));
  return world_.sum(int64_t(n));
}

double MpiHarness::time_us(MpiWorkload& w) {
  const cudaStream_t origin = world_.origin();
  DeviceGuard g(world_.device());
  const int iters = std::max(1, opt_.iters);
  auto* ctl = static_cast<volatile uint32_t*>(control_.host());
  const uint64_t timeout_ns = uint64_t(opt_.timeout_s * 0.8e9);
  // Every rank starts its timed iterations after a device barrier of all ranks, so the slowest
  // rank's time is the collective's (not the skew of the host launches).
  auto aligned_start = [&] {
    if (world_.single_node()) world_.device_barrier(origin, timeout_ns);
    CCLAB_CUDA(cudaEventRecord(start_.get(), origin));
  };
  if (opt_.graph) {
    auto replay = w.capture(origin, iters);
    last_fallback_ = replay->fallback();
    const int warm_launches = std::max(1, (opt_.warmup + iters - 1) / iters);
    for (int i = 0; i < warm_launches; ++i) replay->launch(origin);
    CCLAB_CUDA(cudaEventRecord(done_.get(), origin));
    wait(done_.get(), w, "the warm-up");
    // The hold kernel keeps the replay's launch from being timed; all ranks use it or none does.
    const bool hold = world_.sum(replay->holdable() ? 0 : 1) == 0;
    world_.barrier();
    ctl[0] = 0;
    ctl[1] = 0;
    auto* dev_ctl = static_cast<uint32_t*>(control_.device());
    if (hold) launch_hold(origin, dev_ctl, dev_ctl + 1, uint64_t(opt_.timeout_s * 0.5e9));
    aligned_start();
    replay->launch(origin);
    CCLAB_CUDA(cudaEventRecord(stop_.get(), origin));
    ctl[0] = 1;
    wait(stop_.get(), w, "the timed replay");
    if (world_.sum(ctl[1] ? 1 : 0) > 0) {
      // A launch blocked behind the hold on some rank (a full launch queue): all time it again.
      world_.barrier();
      aligned_start();
      replay->launch(origin);
      CCLAB_CUDA(cudaEventRecord(stop_.get(), origin));
      wait(stop_.get(), w, "the timed replay");
    }
  } else {
    for (int i = 0; i < opt_.warmup; ++i) w.issue(origin);
    CCLAB_CUDA(cudaEventRecord(done_.get(), origin));
    wait(done_.get(), w, "the warm-up");
    world_.barrier();
    aligned_start();
    for (int i = 0; i < iters; ++i) w.issue(origin);
    CCLAB_CUDA(cudaEventRecord(stop_.get(), origin));
    wait(stop_.get(), w, "the timed iterations");
  }
  float ms = 0;
  CCLAB_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return world_.max(double(ms) * 1e3 / iters);
}

}  // namespace cclab::exec
