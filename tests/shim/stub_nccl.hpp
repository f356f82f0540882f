// The test stub of the real NCCL (stub_nccl.cpp): what it records of the last call it received.
#pragma once

#include <cstddef>

extern "C" {

struct StubCall {
  char name[48];  // the stub's function that ran, e.g. "ncclAllReduce" or "pncclAllReduce"
  const void* send;
  const void* recv;
  size_t count;
  int dtype, op, root;  // root: also peer, color, ndev
  int nranks, rank;     // also key
  const void* comm;
  const void* stream;
  const void* extra;  // config, devlist, out-pointer
  unsigned char id[128];
};

// Calls received since the stub was loaded, the last one, and the result every function returns.
int stub_calls();
const StubCall* stub_last();
void stub_set_result(int result);
}
