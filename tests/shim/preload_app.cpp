// An "unmodified program" for the LD_PRELOAD test: linked to libnccl.so.2 (here the test stub built under
// NCCL's name), it calls NCCL as any program would and prints what it got back.
#include <nccl.h>

#include <cstdio>

#include "stub_nccl.hpp"

int main() {
  int version = 0;
  const ncclResult_t v = ncclGetVersion(&version);
  const auto send = reinterpret_cast<const void*>(0x10000);
  const auto recv = reinterpret_cast<void*>(0x20000);
  const auto comm = reinterpret_cast<ncclComm_t>(0x1000);
  const auto stream = reinterpret_cast<cudaStream_t>(0x2000);
  const ncclResult_t a = ncclAllReduce(send, recv, 4096, ncclBfloat16, ncclSum, comm, stream);
  const StubCall& last = *stub_last();
  std::printf("app: version %d rc %d; allreduce rc %d count %zu dtype %d op %d same-buffers %d\n", version, v, a,
              last.count, last.dtype, last.op, last.send == send && last.recv == recv && last.stream == stream);
  stub_set_result(ncclInvalidUsage);
  const ncclResult_t b = ncclBroadcast(send, recv, 8, ncclFloat, 1, comm, stream);
  std::printf("app: broadcast rc %d root %d; stub calls %d\n", b, stub_last()->root, stub_calls());
  return 0;
}
