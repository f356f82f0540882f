// A stand-in for the real NCCL, loaded by libcclab_nccl.so through CCLAB_NCCL_LIB in the shim's tests:
// a few of NCCL's entry points that record their arguments and return a chosen result. Functions it
// lacks (ncclAlltoAll, ...) test the shim's answer to a real library without them.
#include "stub_nccl.hpp"

#include <nccl.h>

#include <cstring>

namespace {
StubCall last_call;
int calls = 0;
int result = ncclSuccess;

ncclResult_t record(const char* name, StubCall c) {
  std::strncpy(c.name, name, sizeof(c.name) - 1);
  last_call = c;
  ++calls;
  return static_cast<ncclResult_t>(result);
}
}  // namespace

extern "C" {

int stub_calls() { return calls; }
const StubCall* stub_last() { return &last_call; }
void stub_set_result(int r) { result = r; }

ncclResult_t ncclGetVersion(int* version) {
  *version = 22809;
  return record("ncclGetVersion", StubCall{.extra = version});
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0x5a, sizeof(id->internal));
  return record("ncclGetUniqueId", StubCall{.extra = id});
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  StubCall c{.nranks = nranks, .rank = rank, .extra = comm};
  std::memcpy(c.id, id.internal, sizeof(c.id));
  *comm = reinterpret_cast<ncclComm_t>(0xc033);
  return record("ncclCommInitRank", c);
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  StubCall c{.nranks = nranks, .rank = rank, .stream = comm, .extra = config};
  std::memcpy(c.id, id.internal, sizeof(c.id));
  *comm = reinterpret_cast<ncclComm_t>(0xc034);
  return record("ncclCommInitRankConfig", c);
}
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return record("ncclCommInitAll", StubCall{.root = ndev, .comm = comm, .extra = devlist});
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return record("ncclCommSplit",
                StubCall{.root = color, .rank = key, .comm = comm, .stream = newcomm, .extra = config});
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = 2;
  return record("ncclCommCount", StubCall{.comm = comm, .extra = count});
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return record("ncclCommDestroy", StubCall{.comm = comm}); }
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return record(
      "ncclAllReduce",
      StubCall{.send = send, .recv = recv, .count = count, .dtype = dtype, .op = op, .comm = comm, .stream = stream});
}
ncclResult_t pncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream) {
  return record(
      "pncclAllReduce",
      StubCall{.send = send, .recv = recv, .count = count, .dtype = dtype, .op = op, .comm = comm, .stream = stream});
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t dtype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return record(
      "ncclBroadcast",
      StubCall{
          .send = send, .recv = recv, .count = count, .dtype = dtype, .root = root, .comm = comm, .stream = stream});
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return record("ncclReduce", StubCall{.send = send,
                                       .recv = recv,
                                       .count = count,
                                       .dtype = dtype,
                                       .op = op,
                                       .root = root,
                                       .comm = comm,
                                       .stream = stream});
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclComm_t comm,
                           cudaStream_t stream) {
  return record("ncclAllGather",
                StubCall{.send = send, .recv = recv, .count = count, .dtype = dtype, .comm = comm, .stream = stream});
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return record(
      "ncclReduceScatter",
      StubCall{.send = send, .recv = recv, .count = count, .dtype = dtype, .op = op, .comm = comm, .stream = stream});
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return record("ncclSend",
                StubCall{.send = send, .count = count, .dtype = dtype, .root = peer, .comm = comm, .stream = stream});
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm, cudaStream_t stream) {
  return record("ncclRecv",
                StubCall{.recv = recv, .count = count, .dtype = dtype, .root = peer, .comm = comm, .stream = stream});
}
ncclResult_t ncclGroupStart() { return record("ncclGroupStart", StubCall{}); }
ncclResult_t ncclGroupEnd() { return record("ncclGroupEnd", StubCall{}); }
const char* ncclGetErrorString(ncclResult_t r) {
  record("ncclGetErrorString", StubCall{.root = r});
  return "stub error string";
}
const char* ncclGetLastError(ncclComm_t comm) {
  record("ncclGetLastError", StubCall{.comm = comm});
  return "stub last error";
}

}  // extern "C"
