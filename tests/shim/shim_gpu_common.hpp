// What the shim's GPU tests share: the shim's entry points bound by name, the element types, and inputs whose
// sum over two ranks is exact in every type.
#pragma once

#include <dlfcn.h>
#include <nccl.h>

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
