#include "exec/runtime/harness.hpp"

#include <chrono>
#include <thread>

#include "exec/runtime/cuda_check.hpp"
#include "exec/runtime/kernels.hpp"

namespace cclab::exec {

// ---- RankBuffers ---------------------------------------------------------------------------------

RankBuffers::RankBuffers(const Communicator& comm, const std::vector<BufferSizes>& sizes, size_t reserve_bytes) {
  if (int(sizes.size()) != comm.nranks())
    throw_internal(__FILE__, __LINE__,
                   "buffer sizes for " + std::to_string(sizes.size()) + " ranks, communicator has " +
                       std::to_string(comm.nranks()));
  // Align every buffer to 256 bytes worth of rounding, as cudaMalloc does; sum per GPU first.
  std::vector<size_t> need(size_t(visible_devices()), 0);
  auto round = [](int64_t b) { return (size_t(std::max<int64_t>(b, 0)) + 255) & ~size_t(255); };
  for (int r = 0; r < comm.nranks(); ++r)
    need[size_t(comm.device_of(r))] +=
        round(sizes[size_t(r)].input) + round(sizes[size_t(r)].output) + round(sizes[size_t(r)].scratch);
  for (int d : comm.devices()) {
    const size_t free = comm.free_bytes(d);
    if (need[size_t(d)] + reserve_bytes > free)
      throw_input("the buffers need " + std::to_string(need[size_t(d)] >> 20) + " MiB on GPU " + std::to_string(d) +
                  " but only " + std::to_string(free >> 20) + " MiB are free (keeping " +
                  std::to_string(reserve_bytes >> 20) + " MiB for the runtime): use a smaller size (-e)");
  }
  bufs_.resize(sizes.size());
  for (int r = 0; r < comm.nranks(); ++r) {
    const int d = comm.device_of(r);
    bufs_[size_t(r)].input = DeviceBuffer(d, size_t(sizes[size_t(r)].input));
    bufs_[size_t(r)].output = DeviceBuffer(d, size_t(sizes[size_t(r)].output));
    bufs_[size_t(r)].scratch = DeviceBuffer(d, size_t(sizes[size_t(r)].scratch));
  }
}

void* RankBuffers::base(int rank, Buf b) const {
  const auto& t = bufs_.at(size_t(rank));
  return b == Buf::input ? t.input.get() : b == Buf::output ? t.output.get() : t.scratch.get();
}

int64_t RankBuffers::size(int rank, Buf b) const {
  const auto& t = bufs_.at(size_t(rank));
  return int64_t(b == Buf::input ? t.input.bytes() : b == Buf::output ? t.output.bytes() : t.scratch.bytes());
}

// ---- graph capture --------------------------------------------------------------------------------

namespace {

class MultiDeviceReplay : public Replay {
 public:
  MultiDeviceReplay(cudaGraphExec_t exec, cudaGraph_t graph) : exec_(exec), graph_(graph) {
    CCLAB_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes_));
  }
  // A large graph's launch can block the host until the stream drains (its work does not fit the
  // launch queue), which a blocking kernel in front of it would never let happen. On 2 x H200
  // multi-thousand-node graphs stalled behind the hold; 20 iterations of a small schedule did not
  // (docs/findings/2026-11-22-executor-first-measurements.md). Large graphs run long enough that launch gaps do
  // not matter.
  bool holdable() const override { return nodes_ <= 512; }
  ~MultiDeviceReplay() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  void launch(cudaStream_t origin) override { CCLAB_CUDA(cudaGraphLaunch(exec_, origin)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  size_t nodes_ = 0;
};

}  // namespace

namespace {

// When a multi-GPU capture is refused, iterations are issued from the host instead (and timed as
// such): the sweep goes on and the record's note says why.
class IssueReplay : public Replay {
 public:
  IssueReplay(int iters, std::function<void(cudaStream_t)> issue, std::string why)
      : iters_(iters), issue_(std::move(issue)), why_(std::move(why)) {}
  void launch(cudaStream_t origin) override {
    for (int i = 0; i < iters_; ++i) issue_(origin);
  }
  bool holdable() const override { return false; }
  std::string fallback() const override { return why_; }

 private:
  int iters_;
  std::function<void(cudaStream_t)> issue_;
  std::string why_;
};

}  // namespace

std::unique_ptr<Replay> capture_multi_device(cudaStream_t origin, int iters,
                                             const std::function<void(cudaStream_t)>& issue) {
  CCLAB_CUDA(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    for (int i = 0; i < iters; ++i) issue(origin);
    CCLAB_CUDA(cudaStreamEndCapture(origin, &graph));
    cudaGraphExec_t exec = nullptr;
    CCLAB_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    return std::make_unique<MultiDeviceReplay>(exec, graph);
  } catch (const Error& e) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(origin, &st);
    if (st != cudaStreamCaptureStatusNone) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(origin, &g);
      if (g) cudaGraphDestroy(g);
    }
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    if (e.kind() != ErrorKind::environment) throw;
    return std::make_unique<IssueReplay>(iters, issue,
                                         std::string("graph capture failed, issued op by op: ") + e.what());
  }
}

namespace {

class PerDeviceReplay : public Replay {
 public:
  PerDeviceReplay(const Communicator& comm, std::vector<cudaStream_t> streams, std::vector<cudaGraphExec_t> execs,
                  std::vector<cudaGraph_t> graphs)
      : streams_(std::move(streams)),
        execs_(std::move(execs)),
        graphs_(std::move(graphs)),
        fork_(comm.device_of(0), false) {
    for (cudaStream_t s : streams_) {
      int dev = 0;
      CCLAB_CUDA(cudaStreamGetDevice(s, &dev));
      joins_.emplace_back(dev, false);
      raw_joins_.push_back(joins_.back().get());
    }
  }
  ~PerDeviceReplay() override {
    for (auto e : execs_)
      if (e) cudaGraphExecDestroy(e);
    for (auto g : graphs_)
      if (g) cudaGraphDestroy(g);
  }
  void launch(cudaStream_t origin) override {
    fork_streams(origin, fork_.get(), streams_);
    for (size_t i = 0; i < streams_.size(); ++i) CCLAB_CUDA(cudaGraphLaunch(execs_[i], streams_[i]));
    join_streams(origin, raw_joins_, streams_);
  }

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cudaGraphExec_t> execs_;
  std::vector<cudaGraph_t> graphs_;
  Event fork_;
  std::vector<Event> joins_;
  std::vector<cudaEvent_t> raw_joins_;
};

}  // namespace

std::unique_ptr<Replay> capture_per_device(const Communicator& comm, const std::vector<cudaStream_t>& streams,
                                           int iters, const std::function<void()>& enqueue) {
  std::vector<cudaGraph_t> graphs(streams.size(), nullptr);
  std::vector<cudaGraphExec_t> execs(streams.size(), nullptr);
  for (auto s : streams) CCLAB_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < iters; ++i) enqueue();
  } catch (...) {
    for (size_t i = 0; i < streams.size(); ++i) {
      cudaStreamEndCapture(streams[i], &graphs[i]);
      if (graphs[i]) cudaGraphDestroy(graphs[i]);
    }
    cudaGetLastError();
    throw;
  }
  for (size_t i = 0; i < streams.size(); ++i) CCLAB_CUDA(cudaStreamEndCapture(streams[i], &graphs[i]));
  for (size_t i = 0; i < streams.size(); ++i) CCLAB_CUDA(cudaGraphInstantiate(&execs[i], graphs[i], 0));
  return std::make_unique<PerDeviceReplay>(comm, streams, std::move(execs), std::move(graphs));
}

std::unique_ptr<Replay> Workload::capture(cudaStream_t origin, int iters) {
  return capture_multi_device(origin, iters, [this](cudaStream_t o) { issue(o); });
}

void fork_streams(cudaStream_t origin, cudaEvent_t fork, const std::vector<cudaStream_t>& streams) {
  CCLAB_CUDA(cudaEventRecord(fork, origin));
  for (cudaStream_t s : streams) CCLAB_CUDA(cudaStreamWaitEvent(s, fork, 0));
}

void join_streams(cudaStream_t origin, const std::vector<cudaEvent_t>& joins,
                  const std::vector<cudaStream_t>& streams) {
  for (size_t i = 0; i < streams.size(); ++i) {
    CCLAB_CUDA(cudaEventRecord(joins[i], streams[i]));
    CCLAB_CUDA(cudaStreamWaitEvent(origin, joins[i], 0));
  }
}

// ---- Harness ----------------------------------------------------------------------------------------

Harness::Harness(const Communicator& comm, TimingOptions options)
    : comm_(comm),
      opt_(options),
      control_(64),
      start_(comm.device_of(0), true),
      stop_(comm.device_of(0), true),
      done_(comm.device_of(0), false) {
  for (int d = 0; d < visible_devices(); ++d) {
    const bool used = std::find(comm.devices().begin(), comm.devices().end(), d) != comm.devices().end();
    util_.push_back(used ? Stream(d) : Stream());
    wrong_.push_back(used ? DeviceBuffer(d, sizeof(unsigned long long)) : DeviceBuffer());
  }
}

void Harness::wait(cudaEvent_t done, Workload& w, const char* what) {
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

void Harness::prepare(Workload& w) {
  const CollSpec& s = w.spec();
  const RankBuffers& b = w.buffers();
  // Poison every output buffer (all bits set: NaN in float, half and bfloat16), then the inputs.
  for (int r = 0; r < s.nranks; ++r) {
    DeviceGuard g(comm_.device_of(r));
    const cudaStream_t st = util_[size_t(comm_.device_of(r))].get();
    if (b.size(r, Buf::output) > 0)
      CCLAB_CUDA(cudaMemsetAsync(b.base(r, Buf::output), 0xff, size_t(b.size(r, Buf::output)), st));
    if (b.size(r, Buf::scratch) > 0)
      CCLAB_CUDA(cudaMemsetAsync(b.base(r, Buf::scratch), 0xff, size_t(b.size(r, Buf::scratch)), st));
  }
  for (int r = 0; r < s.nranks; ++r) {
    DeviceGuard g(comm_.device_of(r));
    const cudaStream_t st = util_[size_t(comm_.device_of(r))].get();
    const CollShape shape = coll_shape(s.coll, s.nranks, s.count, r, s.root);
    if (shape.in_elems > 0)
      launch_fill_input(st, s.dtype, s.op, r, b.ptr(s.resolve(Ref{r, Buf::input, 0})), shape.in_elems);
  }
  for (int d : comm_.devices()) CCLAB_CUDA(cudaStreamSynchronize(util_[size_t(d)].get()));
}

int64_t Harness::count_wrong(Workload& w) {
  const CollSpec& s = w.spec();
  const RankBuffers& b = w.buffers();
  for (int d : comm_.devices()) {
    DeviceGuard g(d);
    CCLAB_CUDA(cudaMemsetAsync(wrong_[size_t(d)].get(), 0, sizeof(unsigned long long), util_[size_t(d)].get()));
  }
  int64_t total = 0;
  for (int r = 0; r < s.nranks; ++r) {
    const int d = comm_.device_of(r);
    DeviceGuard g(d);
    const CollShape shape = coll_shape(s.coll, s.nranks, s.count, r, s.root);
    CheckSpec cs{s.coll, s.dtype, s.op, s.nranks, r, s.root, s.count};
    launch_check(util_[size_t(d)].get(), cs, b.ptr(s.resolve(Ref{r, Buf::output, 0})), shape.out_elems,
                 static_cast<unsigned long long*>(wrong_[size_t(d)].get()));
  }
  for (int d : comm_.devices()) {
    unsigned long long n = 0;
    DeviceGuard g(d);
    CCLAB_CUDA(cudaMemcpyAsync(&n, wrong_[size_t(d)].get(), sizeof n, cudaMemcpyDeviceToHost, util_[size_t(d)].get()));
    CCLAB_CUDA(cudaStreamSynchronize(util_[size_t(d)].get()));
    total += int64_t(n);
  }
  return total;
}

int64_t Harness::check(Workload& w) {
  prepare(w);
  const cudaStream_t origin = comm_.origin();
  DeviceGuard g(comm_.device_of(0));
  std::unique_ptr<Replay> once;
  last_fallback_.clear();
  if (opt_.graph) {
    once = w.capture(origin, 1);
    once->launch(origin);
  } else {
    w.issue(origin);
  }
  CCLAB_CUDA(cudaEventRecord(done_.get(), origin));
  wait(done_.get(), w, "the checked iteration");
  return count_wrong(w);
}

double Harness::time_us(Workload& w, int iters_wanted) {
  const cudaStream_t origin = comm_.origin();
  DeviceGuard g(comm_.device_of(0));
  const int iters = std::max(1, iters_wanted > 0 ? iters_wanted : opt_.iters);
  auto* ctl = static_cast<volatile uint32_t*>(control_.host());
  float ms = 0;
  if (opt_.graph) {
    auto replay = w.capture(origin, iters);
    last_fallback_ = replay->fallback();
    // Warm-up: at least one replay (uploads the graph), covering `warmup` iterations.
    const int warm_launches = std::max(1, (opt_.warmup + iters - 1) / iters);
    for (int i = 0; i < warm_launches; ++i) replay->launch(origin);
    CCLAB_CUDA(cudaEventRecord(done_.get(), origin));
    wait(done_.get(), w, "the warm-up");
    ctl[0] = 0;
    ctl[1] = 0;
    auto* dev_ctl = static_cast<uint32_t*>(control_.device());
    if (w.held().value_or(replay->holdable()))
      launch_hold(origin, dev_ctl, dev_ctl + 1, uint64_t(opt_.timeout_s * 0.5e9));
    CCLAB_CUDA(cudaEventRecord(start_.get(), origin));
    replay->launch(origin);
    CCLAB_CUDA(cudaEventRecord(stop_.get(), origin));
    ctl[0] = 1;
    wait(stop_.get(), w, "the timed replay");
    if (ctl[1]) {
      // The launch blocked behind the hold (a full launch queue): time it again without the hold.
      CCLAB_CUDA(cudaEventRecord(start_.get(), origin));
      replay->launch(origin);
      CCLAB_CUDA(cudaEventRecord(stop_.get(), origin));
      wait(stop_.get(), w, "the timed replay");
    }
  } else {
    for (int i = 0; i < opt_.warmup; ++i) w.issue(origin);
    CCLAB_CUDA(cudaEventRecord(done_.get(), origin));
    wait(done_.get(), w, "the warm-up");
    CCLAB_CUDA(cudaEventRecord(start_.get(), origin));
    for (int i = 0; i < iters; ++i) w.issue(origin);
    CCLAB_CUDA(cudaEventRecord(stop_.get(), origin));
    wait(stop_.get(), w, "the timed iterations");
  }
  CCLAB_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return double(ms) * 1e3 / iters;
}

}  // namespace cclab::exec
