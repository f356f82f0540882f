#include "shim/clique.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "exec/kernels/bidir.hpp"
#include "exec/runtime/device.hpp"
#include "shim/mp.hpp"

namespace cclab::shim {

using lower::BidirMode;

namespace {

struct Settings {
  bool debug = false;
  lower::BidirParams params;
  std::string error;       // CCLAB_TUNE could not be applied
  uint64_t hash = 0;       // of CCLAB_TUNE: ranks in other processes must have the same
  int64_t mp_lamport = 0;  // lamport bytes per peer and parity preallocated for ranks in other processes
  RealNccl real;
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

// A peer's buffer mapped into this process with cudaIpcOpenMemHandle, closed when it goes.
struct Imported {
  void* ptr = nullptr;
  int device = -1;
  Imported() = default;
  Imported(void* p, int d) : ptr(p), device(d) {}
  Imported(Imported&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)), device(o.device) {}
  Imported& operator=(Imported&&) = delete;
  ~Imported() {
    if (ptr == nullptr) return;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(device);
    cudaIpcCloseMemHandle(ptr);
    if (prev >= 0) cudaSetDevice(prev);
  }
};

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

  // Ranks in other processes: this clique holds this process's one rank, its own buffers (ctrl, ll, one
  // lamport generation of a fixed stride) and its peers' buffers opened from their CUDA IPC handles.
  bool multi = false;
  int64_t mp_stride = 0;
  std::vector<std::string> buses;  // every rank's GPU (PCI bus id), for messages
  std::vector<Imported> imported;  // closed before the clique's own buffers are freed (declared after them)
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

// One GPU's share of BidirContext's layout, appended to the clique's vectors: control words and ll buffers
// (zeroed on its side stream, not yet waited for), its SM count and the lamport grid's occupancy.
void add_gpu(Clique& c, int d) {
  const auto& p = settings().params;
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

// Allocates the clique's buffers: BidirContext's layout, per rank on its own GPU.
void allocate(Clique& c) {
  const auto& p = settings().params;
  for (int r = 0; r < c.nranks; ++r) add_gpu(c, c.devices[size_t(r)]);
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

// The facts and state of a clique whose ranks are all in this process, decided once for all of its ranks.
void decide(Clique& c) {
  std::lock_guard lk(c.mu);
  if (c.decided) return;
  c.decided = true;
  std::string detail;
  if (!settings().error.empty()) {
    c.note = settings().error;
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

// ---- Ranks in other processes (mp.hpp): this process's one rank of the clique, set up collectively.

std::string text_of(const char* s, size_t cap) { return std::string(s, strnlen(s, cap)); }

void put_why(PeerInfo& info, const std::string& why) {
  info.willing = 0;
  std::snprintf(info.why, sizeof(info.why), "%s", why.c_str());
}

// Rank r's own state as allocate() makes it for one GPU, with the lamport buffers preallocated at a fixed
// stride (growing them would need another handle exchange), and the record it publishes.
PeerInfo mp_prepare(Clique& c, int r, bool alone) {
  PeerInfo info;
  info.magic = kPeerMagic;
  info.version = kPeerVersion;
  info.rank = r;
  info.nranks = c.nranks;
  info.host = host_id();
  info.settings = settings().hash;
  info.lamport_stride = settings().mp_lamport;
  info.pid = int32_t(getpid());
  info.device = c.devices[size_t(r)];
  info.willing = 1;
  {
    std::lock_guard lk(c.mu);  // ranks of one process in several threads (refused below) share the clique
    c.multi = true;
    c.mp_stride = settings().mp_lamport;
  }
  if (!settings().error.empty()) {
    put_why(info, settings().error);
  } else if (!alone) {
    put_why(info, "ranks in this process and in others (the shim covers one process per GPU, or all ranks in one)");
  } else if (c.nranks < 2 || c.nranks > lower::kBidirMaxRanks) {
    put_why(info, std::to_string(c.nranks) + " ranks (cclab covers 2 to 8)");
  } else {
    try {
      const int d = c.devices[size_t(r)];
      if (d < 0) throw std::runtime_error("no current GPU at ncclCommInitRank");
      SHIM_CUDA(cudaDeviceGetPCIBusId(info.bus, int(sizeof(info.bus)), d));
      const auto& p = settings().params;
      add_gpu(c, d);
      // Indexed by rank as in a clique of one process; only this rank's entries are read.
      c.sms.assign(size_t(c.nranks), c.sms.back());
      c.lamport_resident.assign(size_t(c.nranks), c.lamport_resident.back());
      CurrentDevice g(d);
      auto gen = std::make_unique<LamportGen>();
      gen->stride = c.mp_stride;
      gen->bufs.emplace_back(d, size_t(2) * size_t(c.nranks - 1) * size_t(c.mp_stride));
      const cudaStream_t s = c.side.back().get();
      // All sentinel before any peer can store into them: peers launch only after the agreement below.
      SHIM_CUDA(cudaMemsetAsync(gen->bufs.back().get(), 0xFF, gen->bufs.back().bytes(), s));
      SHIM_CUDA(cudaStreamSynchronize(s));
      SHIM_CUDA(cudaIpcGetMemHandle(&info.ll, c.ll.back().get()));
      SHIM_CUDA(cudaIpcGetMemHandle(&info.lamport, gen->bufs.back().get()));
      c.err = std::make_unique<exec::MappedHost>(exec::bidir_error_bytes());
      c.peers.nranks = c.nranks;
      c.peers.ctrl[r] = c.ctrl.back().get();  // the rank-local kernels touch only their own control words
      c.peers.ll[r] = c.ll.back().get();
      c.peers.lamport[r] = gen->bufs.back().get();
      c.peers.lamport_stride = gen->stride;
      c.peers.err = c.err->device();  // this process's own: a kernel records its own waits' timeouts
      c.peers.timeout_s = p.kernel_timeout_s;
      gen->ready = true;
      c.gens.push_back(std::move(gen));
    } catch (const std::exception& e) {
      cudaGetLastError();
      put_why(info, std::string("setup failed: ") + e.what());
    }
  }
  return info;
}

// Rank r opens its peers' buffers; "" when every peer's GPU is reachable with P2P from its own.
std::string mp_open(Clique& c, int r, const std::vector<PeerInfo>& all) {
  const int d = c.devices[size_t(r)];
  c.buses.clear();
  for (const PeerInfo& p : all) c.buses.push_back(text_of(p.bus, sizeof(p.bus)));
  try {
    CurrentDevice g(d);
    for (int q = 0; q < c.nranks; ++q) {
      if (q == r) continue;
      const PeerInfo& p = all[size_t(q)];
      const std::string bus = text_of(p.bus, sizeof(p.bus));
      int pd = -1;
      if (cudaDeviceGetByPCIBusId(&pd, bus.c_str()) != cudaSuccess) {
        cudaGetLastError();
        // P2P between two GPUs is a property of the pair; without the peer's ordinal it cannot be asked.
        return "rank " + std::to_string(q) + "'s GPU " + bus +
               " is not visible in this process (CUDA_VISIBLE_DEVICES): P2P access unknown";
      }
      if (pd == d) return "rank " + std::to_string(q) + " is on this rank's GPU " + bus;
      int can = 0;
      SHIM_CUDA(cudaDeviceCanAccessPeer(&can, d, pd));
      if (!can) return "no P2P access from GPU " + c.buses[size_t(r)] + " to GPU " + bus;
      void* ll = nullptr;
      SHIM_CUDA(cudaIpcOpenMemHandle(&ll, p.ll, cudaIpcMemLazyEnablePeerAccess));
      c.imported.emplace_back(ll, d);
      void* lamport = nullptr;
      SHIM_CUDA(cudaIpcOpenMemHandle(&lamport, p.lamport, cudaIpcMemLazyEnablePeerAccess));
      c.imported.emplace_back(lamport, d);
      c.peers.ll[q] = ll;
      c.peers.lamport[q] = lamport;
      c.devices[size_t(q)] = p.device;
    }
    return "";
  } catch (const std::exception& e) {
    cudaGetLastError();
    return std::string("opening peers' buffers: ") + e.what();
  }
}

// The handle exchange: one allgather per entry, on its own communicator and a private stream, in one NCCL
// group (one thread drives every entry), waited for here.
struct Exchange {
  ncclComm_t comm = nullptr;
  int device = -1;
  int nranks = 0;
  exec::Stream stream;
  exec::DeviceBuffer buf;  // nranks records, then this rank's own
};

bool mp_allgather(std::vector<Exchange>& xs, size_t bytes, const std::vector<const void*>& send,
                  const std::vector<void*>& recv) {
  const RealNccl& real = settings().real;
  if (real.allgather == nullptr || real.group_start == nullptr || real.group_end == nullptr) return false;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto* base = static_cast<uint8_t*>(xs[i].buf.get());
    CurrentDevice g(xs[i].device);
    SHIM_CUDA(cudaMemcpyAsync(base + size_t(xs[i].nranks) * bytes, send[i], bytes, cudaMemcpyHostToDevice,
                              xs[i].stream.get()));
  }
  ncclResult_t r = real.group_start();
  for (size_t i = 0; i < xs.size() && r == ncclSuccess; ++i) {
    auto* base = static_cast<uint8_t*>(xs[i].buf.get());
    CurrentDevice g(xs[i].device);
    r = real.allgather(base + size_t(xs[i].nranks) * bytes, base, bytes, ncclUint8, xs[i].comm, xs[i].stream.get());
  }
  const ncclResult_t end = real.group_end();
  if (r != ncclSuccess || end != ncclSuccess) return false;
  for (size_t i = 0; i < xs.size(); ++i) {
    CurrentDevice g(xs[i].device);
    SHIM_CUDA(cudaMemcpyAsync(recv[i], xs[i].buf.get(), size_t(xs[i].nranks) * bytes, cudaMemcpyDeviceToHost,
                              xs[i].stream.get()));
    SHIM_CUDA(cudaStreamSynchronize(xs[i].stream.get()));
  }
  return true;
}

std::string mp_head(const Clique& c, int r) {
  const std::string bus = r < int(c.buses.size()) && !c.buses[size_t(r)].empty() ? " (" + c.buses[size_t(r)] + ")" : "";
  return "cclab: communicator of " + std::to_string(c.nranks) + " ranks, rank " + std::to_string(r) +
         " in this process on GPU " + std::to_string(c.devices[size_t(r)]) + bus + ", the others in other processes: ";
}

// The collective setup of the multi-process cliques this thread completes (mp.hpp's agree), and their
// decisions: cclab for every rank of a communicator or for none.
void mp_setup(const std::vector<Joining>& js, const std::vector<ncclComm_t>& comms) {
  std::vector<PeerInfo> mine;
  std::vector<Exchange> xs;
  for (size_t i = 0; i < js.size(); ++i) {
    Clique& c = *js[i].clique;
    bool alone = false;
    {
      std::shared_lock lk(registry().mu);
      alone = c.joins == 1;
    }
    mine.push_back(mp_prepare(c, js[i].rank, alone));
    Exchange x;
    x.comm = comms[i];
    x.device = c.devices[size_t(js[i].rank)];
    x.nranks = c.nranks;
    xs.push_back(std::move(x));
  }
  std::vector<Agreement> agreed;
  try {
    for (Exchange& x : xs) {
      if (x.device < 0) throw std::runtime_error("no current GPU at ncclCommInitRank");
      CurrentDevice g(x.device);
      x.stream = exec::Stream(x.device);
      x.buf = exec::DeviceBuffer(x.device, size_t(x.nranks + 1) * sizeof(PeerInfo));
    }
    agreed = agree(
        mine,
        [&](size_t bytes, const std::vector<const void*>& send, const std::vector<void*>& recv) {
          return mp_allgather(xs, bytes, send, recv);
        },
        [&](size_t i, const std::vector<PeerInfo>& all) { return mp_open(*js[i].clique, js[i].rank, all); });
  } catch (const std::exception& e) {
    // Without the exchange this rank cannot agree with its peers: it forwards (a peer that did reach the
    // exchange waits in NCCL's allgather for it, as it would for a rank that never called NCCL).
    cudaGetLastError();
    agreed.assign(js.size(), Agreement{});
    for (auto& a : agreed) a.why = std::string("the exchange of setup records failed: ") + e.what();
  }
  for (size_t i = 0; i < js.size(); ++i) {
    Clique& c = *js[i].clique;
    const int r = js[i].rank;
    {
      std::lock_guard lk(c.mu);
      c.decided = true;
      if (agreed[i].ok) {
        c.probed = true;
        c.ready = true;
      } else {
        c.imported.clear();
        c.gens.clear();
        c.ctrl.clear();
        c.ll.clear();
        c.side.clear();
        c.err.reset();
        c.note = "multi-process setup: " + agreed[i].why;
      }
    }
    if (settings().debug) {
      if (c.ready)
        std::fprintf(stderr,
                     "%scclab path ready (CUDA IPC, P2P to every peer, lamport buffers of %lld bytes per peer "
                     "and parity)\n",
                     mp_head(c, r).c_str(), static_cast<long long>(c.mp_stride));
      else
        std::fprintf(stderr, "%sforwarded to NCCL (%s)\n", mp_head(c, r).c_str(), c.note.c_str());
    }
    map_comm(comms[i], js[i].clique, r);
  }
}

}  // namespace

void configure(bool debug, const RealNccl& real) {
  Settings& s = settings();
  s.debug = debug;
  s.real = real;
  const char* tune = std::getenv("CCLAB_TUNE");
  s.hash = hash_text(tune != nullptr ? tune : "");
  if (tune != nullptr && tune[0] != '\0') {
    try {
      s.params.apply(tune);
    } catch (const std::exception& e) {
      s.error = std::string("CCLAB_TUNE: ") + e.what();
      std::fprintf(stderr, "cclab: %s (every all-reduce forwards)\n", s.error.c_str());
    }
  }
  s.mp_lamport = mp_lamport_bytes(tune, s.params.lamport_max_bytes);
}

BidirMode size_mode(size_t bytes) {
  const auto& p = settings().params;
  const BidirMode m = lower::choose_bidir_mode(int64_t(bytes), 2, p);
  // The table's large mode may be a schedule of copy-engine copies on several streams (copy, ring), which the shim
  // does not run on the caller's stream: there the middle sizes' lamport kernel goes on, in chunks of its buffers
  // (run_allreduce).
  return lower::runs_as_schedule(m) && p.auto_mid == BidirMode::lamport ? BidirMode::lamport : m;
}

void comms_created(const ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev <= 0) return;
  try {
    auto c = std::make_shared<Clique>(ndev);
    for (int i = 0; i < ndev; ++i) {
      c->devices[size_t(i)] = devlist != nullptr ? devlist[i] : i;
      c->joined[size_t(i)] = true;
    }
    c->joins = ndev;
    decide(*c);
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

void joined(const Joining& j, ncclResult_t result, ncclComm_t comm) { joined_group({j}, result, {comm}); }

void joined_group(const std::vector<Joining>& js, ncclResult_t result, const std::vector<ncclComm_t>& comms) {
  std::vector<Joining> mp;
  std::vector<ncclComm_t> mp_comms;
  try {
    for (size_t i = 0; i < js.size(); ++i) {
      const Joining& j = js[i];
      if (!j.clique) continue;
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
      if (result != ncclSuccess) continue;  // no communicator (or a non-blocking one still in progress)
      if (all_here) {
        decide(*j.clique);
        map_comm(comms[i], j.clique, j.rank);
      } else {
        // Set up below, together: one thread drives every rank of the group.
        mp.push_back(j);
        mp_comms.push_back(comms[i]);
      }
    }
    if (!mp.empty()) mp_setup(mp, mp_comms);
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
  v.lamport_cap = c.multi ? c.mp_stride : 0;
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
    const int64_t esize = dtype_size(t), bytes = int64_t(count) * esize;
    const int resident = c.lamport_resident[size_t(r)][size_t(t)];
    const lower::LaunchLimits gpu{c.sms[size_t(r)], 1,
                                  [resident](BidirMode m, int, int) { return m == BidirMode::lamport ? resident : 0; }};
    // lamport receives into buffers of a fixed size (lamport_max_bytes; ranks in other processes: the ones
    // preallocated at setup): a larger message runs in chunks of it (lower::lamport_chunk_bytes).
    const int64_t chunk =
        mode == BidirMode::lamport ? lower::lamport_chunk_bytes(c.multi ? c.mp_stride : p.lamport_max_bytes) : bytes;
    cudaError_t e = cudaSuccess;
    for (int64_t off = 0; off < bytes && e == cudaSuccess; off += chunk) {
      const int64_t n = std::min(chunk, bytes - off);
      const lower::BidirLaunch l = lower::bidir_launch(mode, n, c.nranks, send == recv, p, gpu);
      exec::BidirRankPeers peers = c.peers;
      // Ranks in other processes use the one generation preallocated at setup (c.peers has it).
      if (mode == BidirMode::lamport && !c.multi) lamport_buffers(c, r, n, peers);
      CurrentDevice g(c.devices[size_t(r)]);
      e = exec::launch_bidir_rank(l, p, peers, r, static_cast<const char*>(send) + off, static_cast<char*>(recv) + off,
                                  n / esize, t, RedOp::sum, stream);
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
