// NCCL's C API as the shim forwards it: X(return type, name, (parameters), (arguments)) for every
// function of the nccl.h the build finds, apart from those the shim writes by hand (see nccl_shim.cpp:
// ncclAllReduce, ncclGroupStart, ncclGroupEnd, ncclGetErrorString, ncclGetLastError, and the communicator's
// life: ncclCommInitAll, ncclCommInitRank, ncclCommInitRankConfig, ncclCommDestroy, ncclCommAbort,
// ncclCommGetAsyncError). Each name is
// exported twice, as ncclX and as its PMPI-style twin pncclX. Entries newer than NCCL 2.19 are guarded
// by the version that introduced them, so the list follows the header it is compiled against.
#pragma once

#include <nccl.h>

#if NCCL_VERSION_CODE >= 22200
#define CCLAB_NCCL_API_2_22(X) X(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo), (simInfo))
#else
#define CCLAB_NCCL_API_2_22(X)
#endif

#if NCCL_VERSION_CODE >= 22300
#define CCLAB_NCCL_API_2_23(X)                                                                            \
  X(ncclResult_t, ncclCommInitRankScalable,                                                               \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config), \
    (newcomm, nranks, myrank, nId, commIds, config))
#else
#define CCLAB_NCCL_API_2_23(X)
#endif

#if NCCL_VERSION_CODE >= 22700
#define CCLAB_NCCL_API_2_27(X)                                                                                         \
  X(ncclResult_t, ncclCommShrink,                                                                                      \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config,         \
     int shrinkFlags),                                                                                                 \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags))                                         \
  X(ncclResult_t, ncclCommWindowRegister, (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags), \
    (comm, buff, size, win, winFlags))                                                                                 \
  X(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win))
#else
#define CCLAB_NCCL_API_2_27(X)
#endif

#if NCCL_VERSION_CODE >= 22800
#define CCLAB_NCCL_API_2_28(X)                                                                               \
  X(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags))                   \
  X(ncclResult_t, ncclAlltoAll,                                                                              \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,           \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, comm, stream))                                                     \
  X(ncclResult_t, ncclGather,                                                                                \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                               \
  X(ncclResult_t, ncclScatter,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))
#else
#define CCLAB_NCCL_API_2_28(X)
#endif

#define CCLAB_NCCL_API(X)                                                                                              \
  X(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size), (ptr, size))                                                \
  X(ncclResult_t, ncclMemFree, (void* ptr), (ptr))                                                                     \
  X(ncclResult_t, ncclGetVersion, (int* version), (version))                                                           \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId), (uniqueId))                                              \
  X(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm))                                                         \
  X(ncclResult_t, ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),     \
    (comm, color, key, newcomm, config))                                                                               \
  X(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count), (comm, count))                                   \
  X(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device), (comm, device))                              \
  X(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank), (comm, rank))                                  \
  X(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle),                   \
    (comm, buff, size, handle))                                                                                        \
  X(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle), (comm, handle))                           \
  X(ncclResult_t, ncclRedOpCreatePreMulSum,                                                                            \
    (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm),       \
    (op, scalar, datatype, residence, comm))                                                                           \
  X(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm), (op, comm))                                     \
  X(ncclResult_t, ncclReduce,                                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,            \
     ncclComm_t comm, cudaStream_t stream),                                                                            \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream))                                                     \
  X(ncclResult_t, ncclBcast,                                                                                           \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream),               \
    (buff, count, datatype, root, comm, stream))                                                                       \
  X(ncclResult_t, ncclBroadcast,                                                                                       \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,           \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                                         \
  X(ncclResult_t, ncclReduceScatter,                                                                                   \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))                                                       \
  X(ncclResult_t, ncclAllGather,                                                                                       \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                                           \
  X(ncclResult_t, ncclSend,                                                                                            \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream),     \
    (sendbuff, count, datatype, peer, comm, stream))                                                                   \
  X(ncclResult_t, ncclRecv,                                                                                            \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream),           \
    (recvbuff, count, datatype, peer, comm, stream))                                                                   \
  CCLAB_NCCL_API_2_22(X)                                                                                               \
  CCLAB_NCCL_API_2_23(X)                                                                                               \
  CCLAB_NCCL_API_2_27(X)                                                                                               \
  CCLAB_NCCL_API_2_28(X)
