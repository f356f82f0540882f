// What the shim's GPU tests share: the shim's entry points bound by name, the element types, and inputs whose
// sum over two ranks is exact in every type.
#pragma once

#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "core/dtype.hpp"

namespace cclab::shim_test {

// Binds `f` to the shim's `name`; a missing symbol ends the process (the shim exports every one of them).
template <class F>
void bind(void* h, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(h, name));
  if (f == nullptr) {
    std::fprintf(stderr, "the shim has no %s\n", name);
    std::abort();
  }
}

// The shim's entry points the GPU tests call.
struct ShimApi {
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetUniqueId) unique_id = nullptr;
  decltype(&ncclCommInitAll) init_all = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
};

// Loads the shim in front of the real NCCL the build found (CCLAB_NCCL_LIB, unless the caller names another),
// with CCLAB_DEBUG on and nothing disabled or tuned (the shim reads its environment once), NVLink multicast off.
inline ShimApi open_shim() {
  setenv("CCLAB_NCCL_LIB", CCLAB_REAL_NCCL, 0);
  setenv("CCLAB_DEBUG", "1", 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  unsetenv("CCLAB_DISABLE");
  unsetenv("CCLAB_TUNE");
  void* h = dlopen(CCLAB_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", CCLAB_SHIM_PATH, dlerror());
    std::abort();
  }
  ShimApi a;
  bind(h, a.error_string, "ncclGetErrorString");
  bind(h, a.unique_id, "ncclGetUniqueId");
  bind(h, a.init_all, "ncclCommInitAll");
  bind(h, a.init_rank, "ncclCommInitRank");
  bind(h, a.destroy, "ncclCommDestroy");
  bind(h, a.abort, "ncclCommAbort");
  bind(h, a.async_error, "ncclCommGetAsyncError");
  bind(h, a.all_reduce, "ncclAllReduce");
  bind(h, a.group_start, "ncclGroupStart");
  bind(h, a.group_end, "ncclGroupEnd");
  return a;
}

struct Type {
  ncclDataType_t nccl;
  cclab::DType dtype;
  const char* name;
  size_t size;
};
inline const Type kTypes[] = {{ncclFloat32, cclab::DType::f32, "float", 4},
                              {ncclFloat16, cclab::DType::f16, "half", 2},
                              {ncclBfloat16, cclab::DType::bf16, "bfloat16", 2}};

// Rank r's element i: an integer in [-8, 8]; two ranks' sum is exact in every type.
inline float input_value(int r, size_t i) { return float(int((i * 7 + size_t(r) * 13) % 17) - 8); }

}  // namespace cclab::shim_test
