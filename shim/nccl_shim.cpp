// libcclab_nccl.so: NCCL's C API, forwarded to the real NCCL loaded with dlopen, with one exception
// (ncclAllReduce, decided by route.hpp). Loaded with LD_PRELOAD in front of, or instead of, libnccl.so.2.
//
// Environment:
//   CCLAB_NCCL_LIB  the real NCCL to load (default libnccl.so.2); this library itself is refused
//   CCLAB_DISABLE=1 forward every call, the all-reduce included
//   CCLAB_DEBUG=1   one line on stderr per decision (the library loaded, each ncclAllReduce's route)
//
// Symbols of the real library are resolved on first use; a function the real library lacks returns
// ncclSystemError with one line on stderr. When the real library cannot be loaded every call returns
// ncclSystemError (ncclGetErrorString and ncclGetLastError still answer).
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "shim/api.hpp"
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

// Whether this library contains the cclab all-reduce path (per-communicator setup and launch). Until it
// does the route can only be NCCL, so without CCLAB_DEBUG the all-reduce skips the decision and adds
// nothing to a forwarded call.
constexpr bool kPathBuilt = false;

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
  if (s.debug || (kPathBuilt && !s.disabled)) {
    cclab::shim::RouteInput in;
    in.dtype = datatype;
    in.op = op;
    in.bytes = count * cclab::shim::dtype_size(datatype);
    in.aligned = (reinterpret_cast<uintptr_t>(sendbuff) | reinterpret_cast<uintptr_t>(recvbuff)) % 16 == 0;
    in.in_group = group_depth > 0;
    in.disabled = s.disabled;
    // Not yet in this library (issue 22): the per-communicator probe (node, P2P, peer buffers), stream
    // capture detection, and the launch of allreduce.bidir. Until they are, every call routes to NCCL.
    in.comm_probed = false;
    in.capturing = false;
    in.path_built = kPathBuilt;
    const cclab::shim::Route r = cclab::shim::route_allreduce(in);
    if (s.debug) {
      std::fprintf(stderr, "cclab: %s count=%zu dtype=%s op=%s bytes=%zu -> %s (%s)\n", name, count,
                   cclab::shim::dtype_name(datatype).c_str(), cclab::shim::op_name(op).c_str(), in.bytes,
                   r.path == cclab::shim::Path::cclab ? "cclab" : "nccl", r.reason.c_str());
    }
  }
  Fn f = lookup<Fn>(slot[pmpi ? 1 : 0], name);
  if (f == nullptr) return ncclSystemError;
  return f(sendbuff, recvbuff, count, datatype, op, comm, stream);
}

ncclResult_t group_call(const char* name, std::atomic<void*>& slot, int step) {
  using Fn = ncclResult_t (*)();
  Fn f = lookup<Fn>(slot, name);
  if (f == nullptr) return ncclSystemError;
  const ncclResult_t r = f();
  if (step > 0 && (r == ncclSuccess || r == ncclInProgress)) ++group_depth;
  if (step < 0 && group_depth > 0) --group_depth;
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
