// The shim's cclab path for ranks in other processes on one node (one process per GPU: torchrun, nccl-tests
// under MPI): the decisions, as pure functions of what the ranks exchange, so they are tested on the CPU
// (tests/shim/test_shim_mp.cpp). clique.cpp supplies the transport (the real NCCL's ncclAllGather on the
// communicator itself) and the CUDA work (buffers, IPC handles, P2P checks).
//
// The setup is collective: every rank of such a communicator publishes a PeerInfo (its GPU, host, settings
// and the CUDA IPC handles of its receive buffers), checks everyone's, opens its peers' buffers, and then
// the ranks exchange one "ok" byte each and take the AND, so every rank takes the same route: none waits in
// a cclab kernel for a peer that went to NCCL.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cclab::shim {

constexpr uint32_t kPeerMagic = 0x63636c62;  // "cclb": zeros (a peer without the shim) never match
constexpr uint32_t kPeerVersion = 1;         // the layout of PeerInfo and the kernels' buffer layout

// The lamport receive buffers a rank preallocates when its peers are in other processes (growing them would
// need another collective handle exchange): 64 MiB per peer and parity unless CCLAB_TUNE names
// lamport_max_bytes; larger lamport sizes forward to NCCL.
constexpr int64_t kMpLamportDefault = int64_t(64) << 20;

// What one rank publishes: fixed size, no pointers, the same on every rank of one build.
struct PeerInfo {
  uint32_t magic = 0;
  uint32_t version = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
  uint64_t host = 0;           // host_id(): ranks on one node agree
  uint64_t settings = 0;       // hash of CCLAB_TUNE: every rank must choose the same mode per size
  int64_t lamport_stride = 0;  // bytes per peer and parity of the preallocated lamport buffers
  int32_t pid = 0;             // for messages
  int32_t device = -1;         // ordinal in its own process, for messages
  char bus[32] = {};           // PCI bus id of its GPU (cudaDeviceGetPCIBusId)
  uint8_t willing = 0;         // 0: this rank cannot take part, `why` says why
  char why[127] = {};
  cudaIpcMemHandle_t ll{};       // its ll receive buffer
  cudaIpcMemHandle_t lamport{};  // its lamport receive buffers
};

// A stable id of this machine's running kernel (hostname and boot id), and the hash it is built from.
uint64_t host_id();
uint64_t host_id_of(const std::string& hostname, const std::string& boot_id);
// FNV-1a, for the settings string.
uint64_t hash_text(const std::string& s);

// The lamport stride a multi-process rank preallocates: lamport_max_bytes when CCLAB_TUNE (`tune`, may be
// null) sets it, else the smaller of it and kMpLamportDefault; a multiple of 256 bytes.
int64_t mp_lamport_bytes(const char* tune, int64_t lamport_max_bytes);

// Whether the real NCCL will create the communicator blocking (its init returns once the ranks have met):
// no config or config->blocking unset (NCCL_CONFIG_UNDEF_INT) take NCCL_COMM_BLOCKING (`env`, may be null;
// default blocking); a set blocking field decides; a config without NCCL_CONFIG_INITIALIZER's magic is not
// followed (NCCL rejects it).
bool config_blocking(const ncclConfig_t* config, const char* env);

// The first reason, seen from rank `me`, why the ranks of `all` cannot run the cclab path together ("" when
// they can): a record not the shim's, ranks out of order, a rank not willing, another host, other settings,
// two ranks on one GPU.
std::string check_peers(const std::vector<PeerInfo>& all, int me);

// The collective setup of the ranks this thread drives (one per communicator, or several ranks of one
// communicator initialised in one group). `allgather(bytes, send, recv)` runs one allgather of `bytes` per
// entry, on that entry's communicator, all at once (they may depend on each other), and returns false when
// it failed; `open(i, all)` opens entry i's peers' buffers and checks access, returning "" or why not.
// Each entry's result is the same on every rank of its communicator: ok only where every rank was ok.
struct Agreement {
  bool ok = false;
  std::string why;  // why not, as this rank sees it
  std::vector<PeerInfo> all;
};
using AllGather =
    std::function<bool(size_t bytes, const std::vector<const void*>& send, const std::vector<void*>& recv)>;
using OpenPeers = std::function<std::string(size_t entry, const std::vector<PeerInfo>& all)>;
std::vector<Agreement> agree(const std::vector<PeerInfo>& mine, const AllGather& allgather, const OpenPeers& open);

}  // namespace cclab::shim
