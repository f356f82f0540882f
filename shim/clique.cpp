#include "shim/clique.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "core/dtype.hpp"
#include "exec/kernels/bidir.hpp"
#include "exec/runtime/device.hpp"

namespace cclab::shim {

using lower::BidirMode;

namespace {

struct Settings {
  bool debug = false;
  lower::BidirParams params;
  std::string error;  // CCLAB_TUNE could not be applied
};
// Never destroyed (as the registry below): cliques may be freed from static destructors of the program.
Settings& settings() {
  static auto* s = new Settings;
  return *s;
}

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(e));
}
#define SHIM_CUDA(call) check_cuda((call), #call)

// The current device, restored when the guard goes (exec::DeviceGuard throws where the shim wants a code).
struct CurrentDevice {
  int previous = -1;
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (device != previous) SHIM_CUDA(cudaSetDevice(device));
  }
  ~CurrentDevice() {
    int now = -1;
    if (previous >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous) cudaSetDevice(previous);
  }
};

}  // namespace

// The lamport receive buffers of one size: every rank's 2 parities x (nranks - 1) sources x stride bytes.
struct LamportGen {
  int64_t start = 0;  // the first lamport launch (counted per rank) that uses them
  int64_t stride = 0;
  std::vector<exec::DeviceBuffer> bufs;  // per rank
  bool ready = false;                    // allocated and all sentinel (under the clique's mutex)
  std::string error;                     // the allocation failed
};

struct Clique {
  explicit Clique(int n, std::string k = {})
      : nranks(n), key(std::move(k)), devices(size_t(n), -1), joined(size_t(n), false), lamport_calls(size_t(n), 0) {}
  const int nranks;
  const std::string key;  // the unique id's clique in the registry's pending map ("" for ncclCommInitAll)
  std::vector<int> devices;

  // ncclCommInitRank bookkeeping (under the registry's mutex).
  std::vector<bool> joined;
  int joins = 0, returns = 0;

  // Decided once, under `mu`, before any of the clique's communicators is mapped; read-only afterwards.
  std::mutex mu;
  bool decided = false, probed = false, ready = false;
  std::string note;
  std::vector<exec::DeviceBuffer> ctrl, ll;
  std::vector<exec::Stream> side;  // per rank: memsets of fresh buffers, apart from the program's streams
  std::unique_ptr<exec::MappedHost> err;
  exec::BidirRankPeers peers;  // ctrl, ll and the error word; lamport buffers per launch
  std::vector<int> sms;
  std::vector<std::array<int, 3>> lamport_resident;  // [rank][DType]: CTAs of the lamport kernel that fit

  // Lamport buffers grow as sizes do (under `mu`). A launch uses the buffers of the newest generation that
  // started at or before its own index among the rank's lamport launches: every rank runs the same launches
  // in the same order, so every rank picks the same buffers for one all-reduce, whichever rank comes first.
  // Old generations stay allocated until the clique goes: a captured graph, or a peer's launch still in
  // flight, may address them.
  // A generation is allocated outside the mutex (the allocation may wait for the GPU, whose kernels may wait for
  // a peer's launch that needs the mutex for an earlier generation); launches that need it wait on gen_ready.
  std::vector<std::unique_ptr<LamportGen>> gens;
  std::vector<int64_t> lamport_calls;
  std::condition_variable gen_ready;

  std::atomic<bool> failed{false}, reported{false};
  std::mutex fail_mu;
  std::string failure;  // under fail_mu
};

namespace {

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<ncclComm_t, std::pair<std::shared_ptr<Clique>, int>> comms;  // comm -> clique, rank
  std::map<std::string, std::shared_ptr<Clique>> pending;  // ncclCommInitRank in flight, by nranks and id
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

DType to_dtype(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
      return DType::f16;
    case ncclBfloat16:
      return DType::bf16;
    default:
      return DType::f32;
  }
}

std::string devices_text(const Clique& c) {
  std::string s;
  for (size_t i = 0; i < c.devices.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(c.devices[i]);
  }
  return s;
}

void fail(Clique& c, const std::string& why) {
  {
    std::lock_guard lk(c.fail_mu);
    if (c.failure.empty()) c.failure = why;
  }
  c.failed = true;
}

// Allocates the clique's buffers: BidirContext's layout, per rank on its own GPU.
void allocate(Clique& c) {
  const auto& p = settings().params;
  for (int r = 0; r < c.nranks; ++r) {
    const int d = c.devices[size_t(r)];
    CurrentDevice g(d);
    c.ctrl.emplace_back(d, exec::bidir_ctrl_bytes());
    c.ll.emplace_back(d, exec::bidir_ll_bytes(p));
    c.side.emplace_back(d);
    SHIM_CUDA(cudaMemsetAsync(c.ctrl.back().get(), 0, exec::bidir_ctrl_bytes(), c.side.back().get()));
    SHIM_CUDA(cudaMemsetAsync(c.ll.back().get(), 0, exec::bidir_ll_bytes(p), c.side.back().get()));
    int sms = 0;
    SHIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
    c.sms.push_back(sms);
    // The lamport grid stays resident (every CTA polls data the same CTA of each peer stores): the
    // occupancy of the instance that will run, per type, asked once here rather than per call.
    const int unroll =
        lower::bidir_launch(BidirMode::lamport, 256, c.nranks, false, p, lower::LaunchLimits{sms, 1, {}}).unroll;
    std::array<int, 3> res{};
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      res[size_t(t)] = exec::bidir_resident_ctas(BidirMode::lamport, p.lamport_threads, unroll, t, RedOp::sum, d);
    c.lamport_resident.push_back(res);
  }
  for (auto& s : c.side) SHIM_CUDA(cudaStreamSynchronize(s.get()));
  c.err = std::make_unique<exec::MappedHost>(exec::bidir_error_bytes());
  c.peers.nranks = c.nranks;
  for (int r = 0; r < c.nranks; ++r) {
    c.peers.ctrl[r] = c.ctrl[size_t(r)].get();
    c.peers.ll[r] = c.ll[size_t(r)].get();
  }
  c.peers.err = c.err->device();
  c.peers.timeout_s = p.kernel_timeout_s;
}

// The clique's facts and state, decided once for all of its ranks.
void decide(Clique& c, bool all_here) {
  std::lock_guard lk(c.mu);
  if (c.decided) return;
  c.decided = true;
  std::string detail;
  if (!settings().error.empty()) {
    c.note = settings().error;
  } else if (!all_here) {
    c.note = "ranks in other processes: the shim runs cclab for ranks of one process (CUDA IPC not built)";
  } else {
    c.probed = true;
    if (c.nranks < 2 || c.nranks > lower::kBidirMaxRanks) {
      detail = std::to_string(c.nranks) + " ranks";
    } else {
      try {
        int count = 0;
        SHIM_CUDA(cudaGetDeviceCount(&count));
        for (int i = 0; i < c.nranks && detail.empty(); ++i) {
          const int di = c.devices[size_t(i)];
          if (di < 0 || di >= count) detail = "rank " + std::to_string(i) + " on no visible GPU";
          for (int j = 0; j < c.nranks && detail.empty(); ++j) {
            const int dj = c.devices[size_t(j)];
            if (j == i) continue;
            if (dj == di) {
              detail = "ranks " + std::to_string(i) + " and " + std::to_string(j) + " share GPU " + std::to_string(di);
              break;
            }
            int can = 0;
            if (dj >= 0 && dj < count) SHIM_CUDA(cudaDeviceCanAccessPeer(&can, di, dj));
            if (!can) detail = "no P2P access from GPU " + std::to_string(di) + " to GPU " + std::to_string(dj);
          }
        }
        if (detail.empty()) {
          // Each rank's kernel stores into its peers' buffers: its GPU needs access to theirs.
          for (int i = 0; i < c.nranks; ++i) {
            CurrentDevice g(c.devices[size_t(i)]);
            for (int j = 0; j < c.nranks; ++j) {
              if (j == i) continue;
              const cudaError_t e = cudaDeviceEnablePeerAccess(c.devices[size_t(j)], 0);
              if (e == cudaErrorPeerAccessAlreadyEnabled)
                cudaGetLastError();  // the program (or NCCL) enabled it already
              else
                SHIM_CUDA(e);
            }
          }
          allocate(c);
          c.ready = true;
        }
      } catch (const std::exception& e) {
        cudaGetLastError();  // leave no error of ours for the program's next check
        c.ctrl.clear();
        c.ll.clear();
        c.side.clear();
        c.err.reset();
        c.probed = false;
        c.note = std::string("setup failed: ") + e.what();
      }
    }
  }
  if (settings().debug) {
    const std::string head =
        "cclab: communicator of " + std::to_string(c.nranks) + " ranks on GPUs " + devices_text(c) + ": ";
    if (c.ready)
      std::fprintf(stderr, "%scclab path ready (P2P between every pair, allreduce.bidir buffers allocated)\n",
                   head.c_str());
    else if (c.probed)
      std::fprintf(stderr, "%sforwarded to NCCL (%s)\n", head.c_str(), detail.c_str());
    else
      std::fprintf(stderr, "%snot probed (%s)\n", head.c_str(), c.note.c_str());
  }
}

// Allocates generation `g` of the lamport buffers (outside the clique's mutex: one at a time, see below).
void allocate_gen(Clique& c, LamportGen& g) {
  const size_t bytes = size_t(2) * size_t(c.nranks - 1) * size_t(g.stride);
  // This thread may be capturing a graph: allocating is then refused (and ends the capture) unless the
  // thread's capture mode is relaxed, as it is here for the allocation only.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  SHIM_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  struct Restore {
    cudaStreamCaptureMode m;
    ~Restore() { cudaThreadExchangeStreamCaptureMode(&m); }
  } restore{mode};
  for (int q = 0; q < c.nranks; ++q) {
    const int d = c.devices[size_t(q)];
    CurrentDevice dg(d);
    g.bufs.emplace_back(d, bytes);
    // All sentinel before any peer's launch can store into them: on the clique's own stream (the program's
    // streams may be capturing), waited for here.
    SHIM_CUDA(cudaMemsetAsync(g.bufs.back().get(), 0xFF, bytes, c.side[size_t(q)].get()));
  }
  for (auto& s : c.side) SHIM_CUDA(cudaStreamSynchronize(s.get()));
  if (settings().debug)
    std::fprintf(stderr, "cclab: lamport receive buffers of %lld bytes per peer and parity on GPUs %s\n",
                 static_cast<long long>(g.stride), devices_text(c).c_str());
}

// The lamport buffers rank r's next launch uses, for a message of `bytes`.
void lamport_buffers(Clique& c, int r, int64_t bytes, exec::BidirRankPeers& peers) {
  std::unique_lock lk(c.mu);
  const int64_t call = c.lamport_calls[size_t(r)]++;
  const int64_t need = std::max<int64_t>(256, (bytes + 255) / 256 * 256);
  LamportGen* g = nullptr;
  for (;;) {
    g = nullptr;
    for (auto it = c.gens.rbegin(); it != c.gens.rend() && g == nullptr; ++it)
      if ((*it)->start <= call) g = it->get();
    if (g == nullptr || g->ready || !g->error.empty()) break;
    c.gen_ready.wait(lk);  // another rank is allocating the generation this launch uses
  }
  if (g != nullptr && !g->error.empty()) throw std::runtime_error(g->error);
  if (g == nullptr || g->stride < need) {
    // Only the first rank to reach this launch can find its buffers too small, and no rank is past it yet
    // (a rank past it would have waited for these buffers). Otherwise the ranks' sequences of all-reduces
    // differ: a program error that NCCL would hang on too.
    if (!c.gens.empty() && c.gens.back()->start >= call)
      throw std::runtime_error("ranks issued different sequences of all-reduces (lamport launch " +
                               std::to_string(call) + " differs in size)");
    const auto& p = settings().params;
    auto fresh = std::make_unique<LamportGen>();
    fresh->start = call;
    // Powers of two from 1 MiB, up to lamport_max_bytes: a sweep of sizes allocates a few times, not per size.
    const int64_t cap = std::max(need, (p.lamport_max_bytes + 255) / 256 * 256);
    fresh->stride = std::min(std::max<int64_t>(int64_t(std::bit_ceil(uint64_t(need))), int64_t(1) << 20), cap);
    g = fresh.get();
    c.gens.push_back(std::move(fresh));
    lk.unlock();
    std::string error;
    try {
      allocate_gen(c, *g);
    } catch (const std::exception& e) {
      error = std::string("lamport buffers: ") + e.what();
    }
    lk.lock();
    g->ready = error.empty();
    g->error = error;
    c.gen_ready.notify_all();
    if (!error.empty()) throw std::runtime_error(error);
  }
  for (int q = 0; q < c.nranks; ++q) peers.lamport[q] = g->bufs[size_t(q)].get();
  peers.lamport_stride = g->stride;
}

void report(Clique& c, int rank, const char* where) {
  std::string why = exec::bidir_timeout_text(c.err ? c.err->host() : nullptr);
  if (!why.empty()) fail(c, why);
  if (c.reported.exchange(true)) return;
  {
    std::lock_guard lk(c.fail_mu);
    why = c.failure;
  }
  std::fprintf(stderr, "cclab: %s (rank %d of %d, GPUs %s): allreduce.bidir failed: %s\n", where, rank, c.nranks,
               devices_text(c).c_str(), why.c_str());
}

bool clique_failed(Clique& c) {
  return c.failed.load(std::memory_order_relaxed) || (c.err && !exec::bidir_timeout_text(c.err->host()).empty());
}

void map_comm(ncclComm_t comm, const std::shared_ptr<Clique>& c, int rank) {
  if (comm == nullptr) return;
  std::unique_lock lk(registry().mu);
  registry().comms[comm] = {c, rank};
}

}  // namespace

void configure(bool debug) {
  Settings& s = settings();
  s.debug = debug;
  const char* tune = std::getenv("CCLAB_TUNE");
  if (tune == nullptr || tune[0] == '\0') return;
  try {
    s.params.apply(tune);
  } catch (const std::exception& e) {
    s.error = std::string("CCLAB_TUNE: ") + e.what();
    std::fprintf(stderr, "cclab: %s (every all-reduce forwards)\n", s.error.c_str());
  }
}

BidirMode size_mode(size_t bytes) { return lower::choose_bidir_mode(int64_t(bytes), 2, settings().params); }

void comms_created(const ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev <= 0) return;
  try {
    auto c = std::make_shared<Clique>(ndev);
    for (int i = 0; i < ndev; ++i) {
      c->devices[size_t(i)] = devlist != nullptr ? devlist[i] : i;
      c->joined[size_t(i)] = true;
    }
    c->joins = ndev;
    decide(*c, true);
    for (int i = 0; i < ndev; ++i) map_comm(comms[i], c, i);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cclab: ncclCommInitAll: %s (its all-reduces forward)\n", e.what());
  }
}

Joining join(const ncclUniqueId& id, int nranks, int rank) {
  if (nranks <= 0 || rank < 0 || rank >= nranks) return {};
  try {
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
      cudaGetLastError();
      device = -1;
    }
    const std::string key = std::to_string(nranks) + ":" + std::string(id.internal, sizeof(id.internal));
    std::unique_lock lk(registry().mu);
    auto& c = registry().pending[key];
    if (!c) c = std::make_shared<Clique>(nranks, key);
    if (c->joined[size_t(rank)]) return {};  // the same rank twice: not a clique the shim follows
    c->joined[size_t(rank)] = true;
    c->devices[size_t(rank)] = device;
    ++c->joins;
    return {c, rank};
  } catch (const std::exception&) {
    return {};
  }
}

void joined(const Joining& j, ncclResult_t result, ncclComm_t comm) {
  if (!j.clique) return;
  try {
    bool all_here = false;
    {
      std::unique_lock lk(registry().mu);
      all_here = j.clique->joins == j.clique->nranks;
      // Every rank of this process has joined (see join): once all have returned the id may be used again.
      if (++j.clique->returns == j.clique->joins) {
        auto it = registry().pending.find(j.clique->key);
        if (it != registry().pending.end() && it->second == j.clique) registry().pending.erase(it);
      }
    }
    if (result != ncclSuccess) return;  // no communicator (or a non-blocking one still in progress)
    decide(*j.clique, all_here);
    map_comm(comm, j.clique, j.rank);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cclab: ncclCommInitRank: %s (its all-reduces forward)\n", e.what());
  }
}

CommView view(ncclComm_t comm) {
  CommView v;
  {
    std::shared_lock lk(registry().mu);
    auto it = registry().comms.find(comm);
    if (it == registry().comms.end()) {
      v.note = "not created by ncclCommInitAll or a blocking ncclCommInitRank";
      return v;
    }
    v.clique = it->second.first;
    v.rank = it->second.second;
  }
  const Clique& c = *v.clique;  // decided before it was mapped
  v.nranks = c.nranks;
  v.probed = c.probed;
  v.ready = c.ready;
  v.note = c.note;
  return v;
}

ncclResult_t run_allreduce(const CommView& v, BidirMode mode, const void* send, void* recv, size_t count,
                           ncclDataType_t dtype, cudaStream_t stream) {
  Clique& c = *v.clique;
  const int r = v.rank;
  if (clique_failed(c)) {
    report(c, r, "ncclAllReduce");
    return ncclInternalError;
  }
  try {
    const auto& p = settings().params;
    const DType t = to_dtype(dtype);
    const int64_t bytes = int64_t(count) * dtype_size(t);
    const int resident = c.lamport_resident[size_t(r)][size_t(t)];
    const lower::LaunchLimits gpu{c.sms[size_t(r)], 1,
                                  [resident](BidirMode m, int, int) { return m == BidirMode::lamport ? resident : 0; }};
    const lower::BidirLaunch l = lower::bidir_launch(mode, bytes, c.nranks, send == recv, p, gpu);
    exec::BidirRankPeers peers = c.peers;
    if (mode == BidirMode::lamport) lamport_buffers(c, r, bytes, peers);
    cudaError_t e;
    {
      CurrentDevice g(c.devices[size_t(r)]);
      e = exec::launch_bidir_rank(l, p, peers, r, send, recv, int64_t(count), t, RedOp::sum, stream);
    }
    if (e != cudaSuccess) {
      fail(c, "launch of the " + std::string(lower::bidir_mode_name(mode)) + " kernel on rank " + std::to_string(r) +
                  ": " + cudaGetErrorString(e));
      report(c, r, "ncclAllReduce");
      return ncclUnhandledCudaError;
    }
    return ncclSuccess;
  } catch (const std::exception& e) {
    cudaGetLastError();
    fail(c, e.what());
    report(c, r, "ncclAllReduce");
    return ncclInternalError;
  }
}

bool failed(ncclComm_t comm, const char* where) {
  const CommView v = view(comm);
  if (!v.clique || !v.ready || !clique_failed(*v.clique)) return false;
  report(*v.clique, v.rank, where);
  return true;
}

void forget(ncclComm_t comm) {
  std::shared_ptr<Clique> last;  // freed outside the registry's lock (cudaFree waits for the GPU)
  std::unique_lock lk(registry().mu);
  auto it = registry().comms.find(comm);
  if (it == registry().comms.end()) return;
  last = std::move(it->second.first);
  registry().comms.erase(it);
  lk.unlock();
  try {
    last.reset();
  } catch (...) {
  }
}

}  // namespace cclab::shim
