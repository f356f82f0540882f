#include "exec/nccl/nccl_workload.hpp"

#include <cmath>
#include <cstdlib>

#include "exec/runtime/cuda_check.hpp"

namespace cclab::exec {

ncclRedOp_t nccl_redop(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return ncclSum;
    case RedOp::prod:
      return ncclProd;
    case RedOp::min:
      return ncclMin;
    case RedOp::max:
      return ncclMax;
    case RedOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

std::string apply_nccl_environment(const NcclOptions& options) {
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  if (std::string(std::getenv("NCCL_NVLS_ENABLE")) != "0")
    throw_env("NCCL_NVLS_ENABLE is set to '" + std::string(std::getenv("NCCL_NVLS_ENABLE")) +
              "': cclab keeps NVLink multicast off (set it to 0)");
  if (!options.algo.empty()) setenv("NCCL_ALGO", options.algo.c_str(), 1);
  if (!options.proto.empty()) setenv("NCCL_PROTO", options.proto.c_str(), 1);
  std::string pins;
  if (const char* a = std::getenv("NCCL_ALGO")) pins += std::string("NCCL_ALGO=") + a;
  if (const char* p = std::getenv("NCCL_PROTO")) pins += (pins.empty() ? "" : " ") + std::string("NCCL_PROTO=") + p;
  return pins;
}

std::string nccl_version_string() {
  int v = 0;
  CCLAB_NCCL(ncclGetVersion(&v));
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

NcclComms::NcclComms(const Communicator& comm, const NcclOptions& options) {
  if (comm.shared())
    throw_input("NCCL baselines need one GPU per rank (" + std::to_string(comm.nranks()) + " ranks on " +
                std::to_string(comm.ngpus()) + " GPUs)");
  pins_ = apply_nccl_environment(options);
  comms_.resize(size_t(comm.nranks()));
  std::vector<int> devs = comm.rank_device();
  CCLAB_NCCL(ncclCommInitAll(comms_.data(), comm.nranks(), devs.data()));
  version_ = nccl_version_string();
}

NcclComms::~NcclComms() {
  for (auto c : comms_)
    if (c) ncclCommDestroy(c);
}

std::optional<double> nccl_simulated_us(Coll coll, int nranks, const std::function<void()>& calls) {
  const bool collective = coll == Coll::allreduce || coll == Coll::broadcast || coll == Coll::reduce ||
                          coll == Coll::allgather || coll == Coll::reducescatter;
  if (!collective || nranks < 2) return std::nullopt;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22200  // 2.22.0, the first with ncclGroupSimulateEnd
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  CCLAB_NCCL(ncclGroupStart());
  calls();
  CCLAB_NCCL(ncclGroupSimulateEnd(&info));
  // estimatedTime is the chosen (algorithm, protocol)'s entry of NCCL's cost table, latency plus bytes over
  // bandwidth in microseconds (src/enqueue.cc topoGetAlgoInfo, src/graph/tuning.cc ncclTopoGetAlgoTime); it
  // stays at the initializer's NCCL_UNDEF_FLOAT (-1) when no collective was simulated.
  if (!(info.estimatedTime >= 0) || !std::isfinite(info.estimatedTime)) return std::nullopt;
  return double(info.estimatedTime);
#else
  (void)calls;
  return std::nullopt;
#endif
}

std::vector<BufferSizes> nccl_buffer_sizes(Coll coll, int nranks, int64_t count, DType dtype, int root) {
  std::vector<BufferSizes> sizes;
  const int64_t e = dtype_size(dtype);
  for (int r = 0; r < nranks; ++r) {
    const CollShape s = coll_shape(coll, nranks, count, r, root);
    // Every rank gets full-size buffers (nccl-tests allocates the same on all ranks).
    const CollShape full_in = coll_shape(coll, nranks, count, root, root);
    sizes.push_back({std::max(s.in_elems, full_in.in_elems) * e, std::max(s.out_elems, full_in.out_elems) * e, 0});
  }
  return sizes;
}

NcclWorkload::NcclWorkload(const Communicator& comm, const NcclComms& nccl, CollSpec spec)
    : comm_(comm), nccl_(nccl), spec_(std::move(spec)) {
  if (spec_.coll == Coll::exchange) throw_input("NCCL has no exchange collective");
  // Send/recv-based collectives would read and overwrite the same buffer concurrently in place
  // (nccl-tests marks them out-of-place only too).
  if (spec_.in_place && (spec_.coll == Coll::alltoall || spec_.coll == Coll::gather || spec_.coll == Coll::scatter))
    throw_input(std::string(coll_name(spec_.coll)) + ".nccl has no in-place form (send/recv on one buffer)");
  buffers_ = std::make_unique<RankBuffers>(
      comm, nccl_buffer_sizes(spec_.coll, spec_.nranks, spec_.count, spec_.dtype, spec_.root));
  for (int r = 0; r < spec_.nranks; ++r) {
    streams_.emplace_back(comm.device_of(r));
    raw_.push_back(streams_.back().get());
    joins_.emplace_back(comm.device_of(r), false);
    raw_joins_.push_back(joins_.back().get());
  }
  fork_ = Event(comm.device_of(0), false);
}

void NcclWorkload::enqueue() {
  const int n = spec_.nranks;
  const auto t = nccl_type(spec_.dtype);
  const int64_t per = spec_.count / n, e = dtype_size(spec_.dtype);
  CCLAB_NCCL(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    void* in = buffers_->ptr(spec_.resolve(Ref{r, Buf::input, 0}));
    void* out = buffers_->ptr(spec_.resolve(Ref{r, Buf::output, 0}));
    ncclComm_t c = nccl_.get(r);
    cudaStream_t s = raw_[size_t(r)];
    switch (spec_.coll) {
      case Coll::allreduce:
        CCLAB_NCCL(ncclAllReduce(in, out, size_t(spec_.count), t, nccl_redop(spec_.op), c, s));
        break;
      case Coll::broadcast:
        CCLAB_NCCL(ncclBroadcast(in, out, size_t(spec_.count), t, spec_.root, c, s));
        break;
      case Coll::reduce:
        CCLAB_NCCL(ncclReduce(in, out, size_t(spec_.count), t, nccl_redop(spec_.op), spec_.root, c, s));
        break;
      case Coll::allgather:
        CCLAB_NCCL(ncclAllGather(in, out, size_t(per), t, c, s));
        break;
      case Coll::reducescatter:
        CCLAB_NCCL(ncclReduceScatter(in, out, size_t(per), t, nccl_redop(spec_.op), c, s));
        break;
      case Coll::alltoall:
        for (int p = 0; p < n; ++p) {
          CCLAB_NCCL(ncclSend(static_cast<char*>(in) + p * per * e, size_t(per), t, p, c, s));
          CCLAB_NCCL(ncclRecv(static_cast<char*>(out) + p * per * e, size_t(per), t, p, c, s));
        }
        break;
      case Coll::gather:
        CCLAB_NCCL(ncclSend(in, size_t(per), t, spec_.root, c, s));
        if (r == spec_.root)
          for (int p = 0; p < n; ++p)
            CCLAB_NCCL(ncclRecv(static_cast<char*>(out) + p * per * e, size_t(per), t, p, c, s));
        break;
      case Coll::scatter:
        if (r == spec_.root)
          for (int p = 0; p < n; ++p)
            CCLAB_NCCL(ncclSend(static_cast<char*>(in) + p * per * e, size_t(per), t, p, c, s));
        CCLAB_NCCL(ncclRecv(out, size_t(per), t, spec_.root, c, s));
        break;
      case Coll::exchange:
        break;
    }
  }
  CCLAB_NCCL(ncclGroupEnd());
}

void NcclWorkload::issue(cudaStream_t origin) {
  fork_streams(origin, fork_.get(), raw_);
  enqueue();
  join_streams(origin, raw_joins_, raw_);
}

// One graph per GPU, as nccl-tests -G captures: NCCL's group call across the GPUs' streams.
std::unique_ptr<Replay> NcclWorkload::capture(cudaStream_t, int iters) {
  return capture_per_device(comm_, raw_, iters, [this] { enqueue(); });
}

// The group that issue() runs, simulated: the same communicators, buffers, streams and arguments.
std::optional<double> NcclWorkload::nccl_estimate_us() {
  return nccl_simulated_us(spec_.coll, spec_.nranks, [this] { enqueue(); });
}

std::string NcclWorkload::note() const {
  return "NCCL " + nccl_.version() + (nccl_.pins().empty() ? std::string() : " " + nccl_.pins());
}

}  // namespace cclab::exec
