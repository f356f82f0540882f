// libcclab_nccl.so: NCCL's C API, forwarded to the real NCCL loaded with dlopen, with one exception
// (ncclAllReduce, decided by route.hpp, run by clique.hpp where the route says cclab). Loaded with LD_PRELOAD
// in front of, or instead of, libnccl.so.2. The communicator calls (init, destroy, abort, async error) are
// forwarded too, and tell clique.hpp which communicators exist and where their ranks are.
//
// Environment:
//   CCLAB_NCCL_LIB  the real NCCL to load (default libnccl.so.2); this library itself is refused
//   CCLAB_DISABLE=1 forward every call, the all-reduce included (and set nothing up)
//   CCLAB_DEBUG=1   one line on stderr per decision (the library loaded, each communicator's setup, each
//                   ncclAllReduce's route)
//   CCLAB_TUNE      allreduce.bidir's settings, as `cclab run --tune` takes them (e.g. lamport_max_bytes=64M)
//
// Symbols of the real library are resolved on first use; a function the real library lacks returns
// ncclSystemError with one line on stderr. When the real library cannot be loaded every call returns
// ncclSystemError (ncclGetErrorString and ncclGetLastError still answer).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "shim/api.hpp"
#include "shim/clique.hpp"
#include "shim/mp.hpp"
#include "shim/route.hpp"

#if NCCL_VERSION_CODE < 21900
#error "libcclab_nccl needs the nccl.h of NCCL 2.19 or newer"
#endif

#define CCLAB_EXPORT __attribute__((visibility("default")))

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

struct Shim {
  std::once_flag once;
  void* real = nullptr;  // handle of the real NCCL; null when it could not be loaded
  std::string path;      // what was asked for
  std::string error;     // why `real` is null
  bool disabled = false;
  bool debug = false;
};

Shim& shim() {
  static Shim s;
  return s;
}

void self_anchor() {}  // an address inside this library, for dladdr

void load(Shim& s) {
  s.disabled = env_on("CCLAB_DISABLE");
  s.debug = env_on("CCLAB_DEBUG");
  const char* lib = std::getenv("CCLAB_NCCL_LIB");
  s.path = lib != nullptr && lib[0] != '\0' ? lib : "libnccl.so.2";
  void* h = dlopen(s.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    s.error = "cannot load the real NCCL " + s.path + ": " + (e != nullptr ? e : "dlopen failed") +
              " (set CCLAB_NCCL_LIB to its path)";
  } else {
    // Never this library itself (CCLAB_NCCL_LIB pointing here, or the shim installed as libnccl.so.2):
    // every call would come back here. Compare the object that defines ncclGetVersion with ours.
    Dl_info self{}, other{};
    void* sym = dlsym(h, "ncclGetVersion");
    const bool have_self = dladdr(reinterpret_cast<void*>(&self_anchor), &self) != 0;
    const bool have_other = sym != nullptr && dladdr(sym, &other) != 0;
    if (have_self && have_other && self.dli_fbase == other.dli_fbase) {
      s.error = "CCLAB_NCCL_LIB/" + s.path + " is libcclab_nccl.so itself, not the real NCCL";
      dlclose(h);
    } else if (sym == nullptr) {
      s.error = s.path + " has no ncclGetVersion: not an NCCL library";
      dlclose(h);
    } else {
      s.real = h;
    }
  }
  if (s.real != nullptr && !s.disabled) {
    // The real library's own entry points for the shim's handle exchange (never this library's wrappers,
    // which count groups and complete joins).
    cclab::shim::RealNccl real;
    real.allgather = reinterpret_cast<decltype(real.allgather)>(dlsym(s.real, "ncclAllGather"));
    real.group_start = reinterpret_cast<decltype(real.group_start)>(dlsym(s.real, "ncclGroupStart"));
    real.group_end = reinterpret_cast<decltype(real.group_end)>(dlsym(s.real, "ncclGroupEnd"));
    cclab::shim::configure(s.debug, real);
  }
  if (s.real == nullptr) {
    std::fprintf(stderr, "cclab: %s\n", s.error.c_str());
  } else if (s.debug) {
    Dl_info info{};
    void* sym = dlsym(s.real, "ncclGetVersion");
    const char* where = sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname ? info.dli_fname : s.path.c_str();
    std::fprintf(stderr, "cclab: forwarding to the real NCCL %s%s\n", where,
                 s.disabled ? " (CCLAB_DISABLE=1: every call)" : "");
  }
}

Shim& loaded() {
  Shim& s = shim();
  std::call_once(s.once, load, s);
  return s;
}

// The real library's `name` (for a pncclX, its pncclX, else its ncclX), or null with one line on stderr.
void* resolve(const char* name) {
  Shim& s = loaded();
  if (s.real == nullptr) return nullptr;
  void* f = dlsym(s.real, name);
  if (f == nullptr && name[0] == 'p') f = dlsym(s.real, name + 1);
  if (f == nullptr) std::fprintf(stderr, "cclab: the real NCCL %s has no %s\n", s.path.c_str(), name);
  return f;
}

// One slot per symbol, filled on first use (a race only resolves twice to the same address).
template <class F>
F lookup(std::atomic<void*>& slot, const char* name) {
  void* f = slot.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = resolve(name);
    if (f != nullptr) slot.store(f, std::memory_order_release);
  }
  return reinterpret_cast<F>(f);
}

thread_local int group_depth = 0;

// ncclCommInitRank inside a group returns before the ranks have met (the group's end initialises them): its
// join completes at the outermost ncclGroupEnd, with the group's result.
struct DeferredJoin {
  cclab::shim::Joining j;
  ncclComm_t* comm;
};
thread_local std::vector<DeferredJoin> deferred_joins;

// Whether the shim follows communicators and may run the cclab path: a real NCCL to forward the rest to, and
// CCLAB_DISABLE unset.
bool follow() {
  const Shim& s = loaded();
  return s.real != nullptr && !s.disabled;
}

const char* own_error_string(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error (cclab: is the real NCCL loaded?)";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

ncclResult_t allreduce(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  using Fn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  static std::atomic<void*> slot[2];
  const bool pmpi = name[0] == 'p';
  Shim& s = loaded();
  if (s.debug || follow()) {
    cclab::shim::CommView v;
    if (follow()) v = cclab::shim::view(comm);
    // A communicator the shim could not set up (ranks in other processes, created by a call it does not
    // follow) forwards at once: without CCLAB_DEBUG the call costs one lookup more than NCCL's own.
    if (s.debug || v.probed) {
      cclab::shim::RouteInput in;
      in.dtype = datatype;
      in.op = op;
      in.bytes = count * cclab::shim::dtype_size(datatype);
      in.alignment = cclab::shim::common_alignment(sendbuff, recvbuff);
      in.in_group = group_depth > 0;
      in.disabled = s.disabled;
      in.comm_probed = v.probed;
      in.comm_note = v.note;
      in.nranks = v.nranks;
      in.one_node_p2p = v.ready;
      in.lamport_cap = size_t(v.lamport_cap);
      // Each rank's kernel is launched as its own call arrives (it needs no peer's user buffer), on the
      // caller's stream, with its epochs in device memory: groups need nothing more.
      in.path_built = true;
      in.group_supported = true;
      const cclab::lower::BidirMode mode = cclab::shim::size_mode(in.bytes);
      in.mode = cclab::lower::bidir_mode_name(mode);
      // Every mode the shim runs (route.cpp) may be captured: the kernels' epochs (and lamport's buffer parity)
      // live in device memory, and a captured launch keeps the lamport buffers it was given (none is freed
      // before the communicator).
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      in.capturing = cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone;
      in.capture_supported = true;
      const cclab::shim::Route r = cclab::shim::route_allreduce(in);
      if (s.debug) {
        std::fprintf(stderr, "cclab: %s count=%zu dtype=%s op=%s bytes=%zu -> %s (%s)\n", name, count,
                     cclab::shim::dtype_name(datatype).c_str(), cclab::shim::op_name(op).c_str(), in.bytes,
                     r.path == cclab::shim::Path::cclab ? "cclab" : "nccl", r.reason.c_str());
      }
      if (r.path == cclab::shim::Path::cclab)
        return cclab::shim::run_allreduce(v, mode, sendbuff, recvbuff, count, datatype, stream);
    }
  }
  Fn f = lookup<Fn>(slot[pmpi ? 1 : 0], name);
  if (f == nullptr) return ncclSystemError;
  return f(sendbuff, recvbuff, count, datatype, op, comm, stream);
}

// The communicator's life, forwarded, with what clique.hpp needs to know around it.
ncclResult_t init_all(const char* name, ncclComm_t* comm, int ndev, const int* devlist) {
  using Fn = ncclResult_t (*)(ncclComm_t*, int, const int*);
  static std::atomic<void*> slot[2];
  Fn f = lookup<Fn>(slot[name[0] == 'p' ? 1 : 0], name);
  if (f == nullptr) return ncclSystemError;
  const ncclResult_t r = f(comm, ndev, devlist);
  if (r == ncclSuccess && follow()) cclab::shim::comms_created(comm, ndev, devlist);
  return r;
}

ncclResult_t init_rank(const char* name, ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config,
                       bool with_config) {
  using Fn = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int);
  using FnConfig = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
  static std::atomic<void*> slot[2], slot_config[2];
  const int which = name[0] == 'p' ? 1 : 0;
  void* f = with_config ? reinterpret_cast<void*>(lookup<FnConfig>(slot_config[which], name))
                        : reinterpret_cast<void*>(lookup<Fn>(slot[which], name));
  if (f == nullptr) return ncclSystemError;
  // A non-blocking communicator returns before its ranks have met: the shim does not follow it. Blocking is
  // NCCL's default (PyTorch's ncclCommInitRankConfig), unless the config or NCCL_COMM_BLOCKING says otherwise.
  const bool follows =
      follow() && comm != nullptr && cclab::shim::config_blocking(config, std::getenv("NCCL_COMM_BLOCKING"));
  cclab::shim::Joining j;
  if (follows) j = cclab::shim::join(id, nranks, rank);
  const ncclResult_t r = with_config ? reinterpret_cast<FnConfig>(f)(comm, nranks, id, rank, config)
                                     : reinterpret_cast<Fn>(f)(comm, nranks, id, rank);
  if (follows && group_depth > 0 && r == ncclSuccess)
    deferred_joins.push_back({j, comm});
  else if (follows)
    cclab::shim::joined(j, r, r == ncclSuccess ? *comm : nullptr);
  return r;
}

ncclResult_t end_comm(const char* name, std::atomic<void*>* slot, ncclComm_t comm) {
  using Fn = ncclResult_t (*)(ncclComm_t);
  Fn f = lookup<Fn>(slot[name[0] == 'p' ? 1 : 0], name);
  if (f == nullptr) return ncclSystemError;
  // A kernel that timed out is reported here at the latest (once per clique).
  if (follow()) cclab::shim::failed(comm, name);
  const ncclResult_t r = f(comm);
  if (r == ncclSuccess && follow()) cclab::shim::forget(comm);
  return r;
}

ncclResult_t async_error(const char* name, ncclComm_t comm, ncclResult_t* async) {
  using Fn = ncclResult_t (*)(ncclComm_t, ncclResult_t*);
  static std::atomic<void*> slot[2];
  Fn f = lookup<Fn>(slot[name[0] == 'p' ? 1 : 0], name);
  if (f == nullptr) return ncclSystemError;
  const ncclResult_t r = f(comm, async);
  // The error word lives in host memory: reading it costs no GPU call. A failed cclab all-reduce is the
  // communicator's asynchronous error, as a failed NCCL kernel would be.
  if (r == ncclSuccess && async != nullptr && *async == ncclSuccess && follow() && cclab::shim::failed(comm, name))
    *async = ncclInternalError;
  return r;
}

ncclResult_t group_call(const char* name, std::atomic<void*>& slot, int step) {
  using Fn = ncclResult_t (*)();
  Fn f = lookup<Fn>(slot, name);
  if (f == nullptr) return ncclSystemError;
  const ncclResult_t r = f();
  if (step > 0 && (r == ncclSuccess || r == ncclInProgress)) ++group_depth;
  if (step < 0 && group_depth > 0) --group_depth;
  if (step < 0 && group_depth == 0 && !deferred_joins.empty()) {
    // At once: ranks of a communicator with ranks in other processes set up collectively, and this thread
    // drives all of the group's.
    std::vector<cclab::shim::Joining> js;
    std::vector<ncclComm_t> comms;
    for (const DeferredJoin& d : deferred_joins) {
      js.push_back(d.j);
      comms.push_back(r == ncclSuccess ? *d.comm : nullptr);
    }
    deferred_joins.clear();
    cclab::shim::joined_group(js, r, comms);
  }
  return r;
}

}  // namespace

extern "C" {

// The plain forwarders: ncclX and pncclX for every entry of api.hpp.
#define CCLAB_FORWARD_ONE(ret, name, params, args) \
  CCLAB_EXPORT ret name params {                   \
    using Fn = ret(*) params;                      \
    static std::atomic<void*> slot{nullptr};       \
    Fn f = lookup<Fn>(slot, #name);                \
    if (f == nullptr) return ncclSystemError;      \
    return f args;                                 \
  }
#define CCLAB_FORWARD(ret, name, params, args) \
  CCLAB_FORWARD_ONE(ret, name, params, args)   \
  CCLAB_FORWARD_ONE(ret, p##name, params, args)
CCLAB_NCCL_API(CCLAB_FORWARD)
#undef CCLAB_FORWARD
#undef CCLAB_FORWARD_ONE

CCLAB_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return allreduce("ncclAllReduce", sendbuff, recvbuff, count, datatype, op, comm, stream);
}
CCLAB_EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return allreduce("pncclAllReduce", sendbuff, recvbuff, count, datatype, op, comm, stream);
}

CCLAB_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return init_all("ncclCommInitAll", comm, ndev, devlist);
}
CCLAB_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return init_all("pncclCommInitAll", comm, ndev, devlist);
}
CCLAB_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank("ncclCommInitRank", comm, nranks, commId, rank, nullptr, false);
}
CCLAB_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank("pncclCommInitRank", comm, nranks, commId, rank, nullptr, false);
}
CCLAB_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                 ncclConfig_t* config) {
  return init_rank("ncclCommInitRankConfig", comm, nranks, commId, rank, config, true);
}
CCLAB_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                  ncclConfig_t* config) {
  return init_rank("pncclCommInitRankConfig", comm, nranks, commId, rank, config, true);
}
CCLAB_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  static std::atomic<void*> slot[2];
  return end_comm("ncclCommDestroy", slot, comm);
}
CCLAB_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  static std::atomic<void*> slot[2];
  return end_comm("pncclCommDestroy", slot, comm);
}
CCLAB_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  static std::atomic<void*> slot[2];
  return end_comm("ncclCommAbort", slot, comm);
}
CCLAB_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  static std::atomic<void*> slot[2];
  return end_comm("pncclCommAbort", slot, comm);
}
CCLAB_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return async_error("ncclCommGetAsyncError", comm, asyncError);
}
CCLAB_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return async_error("pncclCommGetAsyncError", comm, asyncError);
}

CCLAB_EXPORT ncclResult_t ncclGroupStart() {
  static std::atomic<void*> slot{nullptr};
  return group_call("ncclGroupStart", slot, +1);
}
CCLAB_EXPORT ncclResult_t pncclGroupStart() {
  static std::atomic<void*> slot{nullptr};
  return group_call("pncclGroupStart", slot, +1);
}
CCLAB_EXPORT ncclResult_t ncclGroupEnd() {
  static std::atomic<void*> slot{nullptr};
  return group_call("ncclGroupEnd", slot, -1);
}
CCLAB_EXPORT ncclResult_t pncclGroupEnd() {
  static std::atomic<void*> slot{nullptr};
  return group_call("pncclGroupEnd", slot, -1);
}

CCLAB_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  using Fn = const char* (*)(ncclResult_t);
  static std::atomic<void*> slot{nullptr};
  Fn f = lookup<Fn>(slot, "ncclGetErrorString");
  return f != nullptr ? f(result) : own_error_string(result);
}
CCLAB_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  using Fn = const char* (*)(ncclResult_t);
  static std::atomic<void*> slot{nullptr};
  Fn f = lookup<Fn>(slot, "pncclGetErrorString");
  return f != nullptr ? f(result) : own_error_string(result);
}
CCLAB_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  using Fn = const char* (*)(ncclComm_t);
  static std::atomic<void*> slot{nullptr};
  Fn f = lookup<Fn>(slot, "ncclGetLastError");
  return f != nullptr ? f(comm) : shim().error.c_str();
}
CCLAB_EXPORT const char* pncclGetLastError(ncclComm_t comm) {
  using Fn = const char* (*)(ncclComm_t);
  static std::atomic<void*> slot{nullptr};
  Fn f = lookup<Fn>(slot, "pncclGetLastError");
  return f != nullptr ? f(comm) : shim().error.c_str();
}

}  // extern "C"
