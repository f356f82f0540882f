#include "exec/runtime/mpi_world.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "exec/runtime/cuda_check.hpp"

namespace cclab::exec {

namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw_env(std::string(call) + " failed: " + std::string(msg, size_t(len)));
}
#define CCLAB_MPI(call) check_mpi((call), #call)

// cudaIpcGetMemHandle of every non-empty slot, exchanged with every rank, opened on every peer.
struct Exported {
  cudaIpcMemHandle_t handle[MpiBuffers::kSlots];
  int64_t bytes[MpiBuffers::kSlots];
};

// cudaMalloc may sub-allocate small buffers from one larger block, and CUDA IPC then shares (and
// maps) the whole block; the CUDA C++ Programming Guide (Interprocess Communication) recommends
// sharing only allocations of a 2 MiB-aligned size, which are never sub-allocated.
constexpr size_t kIpcGranularity = size_t(2) << 20;
size_t ipc_size(int64_t bytes) {
  return bytes <= 0 ? 0 : (size_t(bytes) + kIpcGranularity - 1) / kIpcGranularity * kIpcGranularity;
}

void* open_handle(const cudaIpcMemHandle_t& h) {
  void* p = nullptr;
  CCLAB_CUDA(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  return p;
}

}  // namespace

// ---- MpiWorld ------------------------------------------------------------------------------------

MpiWorld::MpiWorld() {
  int inited = 0;
  CCLAB_MPI(MPI_Initialized(&inited));
  if (!inited) {
    CCLAB_MPI(MPI_Init(nullptr, nullptr));
    initialised_mpi_ = true;
  }
  // Errors come back as codes (then thrown as one line) instead of MPI's default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CCLAB_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  CCLAB_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm node = MPI_COMM_NULL;
  CCLAB_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  CCLAB_MPI(MPI_Comm_rank(node, &local_rank_));
  CCLAB_MPI(MPI_Comm_size(node, &local_size_));
  MPI_Comm_free(&node);

  const int visible = visible_devices();
  if (visible == 0) throw_env("no CUDA device found");
  if (local_size_ > visible)
    throw_input(std::to_string(local_size_) + " processes on this node but " + std::to_string(visible) +
                " GPUs are visible: the MPI mode runs one process per GPU (several ranks per GPU: run without "
                "mpirun, with --share-gpus)");
  device_ = local_rank_ % visible;
  CCLAB_CUDA(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  CCLAB_CUDA(cudaGetDeviceProperties(&prop, device_));
  sm_count_ = prop.multiProcessorCount;
  label_ = std::string(prop.name) + " x" + std::to_string(size_);
  versions_ = runtime_versions();
  origin_ = Stream(device_);
  err_ = std::make_unique<MappedHost>(sizeof(MpiErrWord));

  // The ranks' GPUs by PCI bus id: two ranks on one GPU, or a pair without peer access, is refused.
  char bus[32] = {};
  CCLAB_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, device_));
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int host_len = 0;
  MPI_Get_processor_name(host, &host_len);
  char key[sizeof bus + MPI_MAX_PROCESSOR_NAME] = {};
  std::snprintf(key, sizeof key, "%s/%s", host, bus);
  const auto keys = allgather(key, sizeof key);
  for (int p = 0; p < size_; ++p)
    if (p != rank_ && std::strncmp(&keys[size_t(p) * sizeof key], key, sizeof key) == 0)
      throw_env("ranks " + std::to_string(std::min(p, rank_)) + " and " + std::to_string(std::max(p, rank_)) +
                " would share GPU " + bus + ": the MPI mode needs one GPU per process");
  if (!single_node()) return;  // across nodes only NCCL runs (no IPC, no device barrier)

  const auto buses = allgather(bus, sizeof bus);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    int peer_dev = -1;
    CCLAB_CUDA(cudaDeviceGetByPCIBusId(&peer_dev, &buses[size_t(p) * sizeof bus]));
    int can = 0;
    CCLAB_CUDA(cudaDeviceCanAccessPeer(&can, device_, peer_dev));
    if (!can)
      throw_env("peer access from GPU " + std::string(bus) + " (rank " + std::to_string(rank_) + ") to GPU " +
                &buses[size_t(p) * sizeof bus] + " (rank " + std::to_string(p) +
                ") is unavailable (cudaDeviceCanAccessPeer = 0): the executor needs P2P between its GPUs");
  }
  if (size_ > kMpiMaxRanks)
    throw_input(std::to_string(size_) + " processes on one node: the MPI mode's device barrier handles up to " +
                std::to_string(kMpiMaxRanks));

  ctrl_ = DeviceBuffer(device_, ipc_size(sizeof(MpiCtrl)));
  CCLAB_CUDA(cudaMemset(ctrl_.get(), 0, sizeof(MpiCtrl)));
  const unsigned long long first_epoch = 1;  // flags start at 0: the first iteration waits for 1
  CCLAB_CUDA(
      cudaMemcpy(&static_cast<MpiCtrl*>(ctrl_.get())->epoch, &first_epoch, sizeof first_epoch, cudaMemcpyHostToDevice));
  CCLAB_CUDA(cudaDeviceSynchronize());
  cudaIpcMemHandle_t h{};
  CCLAB_CUDA(cudaIpcGetMemHandle(&h, ctrl_.get()));
  const auto handles = allgather(&h, sizeof h);
  ctrls_.assign(size_t(size_), nullptr);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) {
      ctrls_[size_t(p)] = static_cast<MpiCtrl*>(ctrl_.get());
      continue;
    }
    cudaIpcMemHandle_t ph{};
    std::memcpy(&ph, &handles[size_t(p) * sizeof h], sizeof h);
    opened_.push_back(open_handle(ph));
    ctrls_[size_t(p)] = static_cast<MpiCtrl*>(opened_.back());
  }
  barrier();  // every rank's ctrl is zeroed and mapped before the first device barrier
}

MpiWorld::~MpiWorld() {
  for (void* p : opened_) cudaIpcCloseMemHandle(p);
  if (initialised_mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Barrier(MPI_COMM_WORLD);  // no rank frees its ctrl while a peer still maps it
      MPI_Finalize();
    }
  }
}

void MpiWorld::barrier() const { CCLAB_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

int64_t MpiWorld::sum(int64_t v) const {
  long long in = v, out = 0;
  CCLAB_MPI(MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return int64_t(out);
}

double MpiWorld::max(double v) const {
  double out = 0;
  CCLAB_MPI(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return out;
}

std::vector<char> MpiWorld::allgather(const void* mine, size_t bytes) const {
  std::vector<char> all(bytes * size_t(size_));
  CCLAB_MPI(MPI_Allgather(mine, int(bytes), MPI_BYTE, all.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD));
  return all;
}

void MpiWorld::broadcast(void* data, size_t bytes, int root) const {
  CCLAB_MPI(MPI_Bcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD));
}

std::string MpiWorld::first_failure(const std::string& mine) const {
  int in = mine.empty() ? size_ : rank_, first = 0;
  CCLAB_MPI(MPI_Allreduce(&in, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (first == size_) return {};
  int len = first == rank_ ? int(mine.size()) : 0;
  broadcast(&len, sizeof len, first);
  std::string msg(size_t(len), '\0');
  if (first == rank_) msg = mine;
  broadcast(msg.data(), size_t(len), first);
  return msg;
}

void MpiWorld::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; in case it does
}

void MpiWorld::device_barrier(cudaStream_t stream, uint64_t timeout_ns, bool next_epoch) const {
  if (!single_node()) throw_internal(__FILE__, __LINE__, "device barrier across nodes");
  launch_mpi_barrier(stream, ctrls_.data(), size_, rank_, next_epoch, err_device(), timeout_ns);
}

std::string MpiWorld::device_error() const {
  const auto* e = static_cast<const volatile MpiErrWord*>(err_->host());
  if (e->code == 0) return {};
  const std::string want = std::to_string(e->want), got = std::to_string(e->got);
  if (e->code == 2)
    return "rank " + std::to_string(e->rank) + ": the device barrier waited for rank " + std::to_string(e->peer) +
           " and timed out (generation " + want + ", saw " + got + ")";
  return "rank " + std::to_string(e->rank) + " op " + std::to_string(e->op) + " waited for rank " +
         std::to_string(e->peer) + " op " + std::to_string(e->peer_op) + " and timed out (epoch " + want + ", saw " +
         got + ")";
}

// ---- MpiBuffers ----------------------------------------------------------------------------------

MpiBuffers::MpiBuffers(const MpiWorld& world, const std::vector<BufferSizes>& sizes, int64_t flag_bytes, bool share,
                       size_t reserve_bytes)
    : world_(world), rank_(world.rank()) {
  if (int(sizes.size()) != world.size())
    throw_internal(
        __FILE__, __LINE__,
        "buffer sizes for " + std::to_string(sizes.size()) + " ranks, " + std::to_string(world.size()) + " processes");
  const BufferSizes& s = sizes[size_t(rank_)];
  const int64_t want[kSlots] = {s.input, s.output, s.scratch, flag_bytes};
  std::string failure;
  {
    size_t need = 0;
    for (int64_t b : want) need += ipc_size(b);
    size_t free = 0, total = 0;
    CCLAB_CUDA(cudaMemGetInfo(&free, &total));
    if (need + reserve_bytes > free)
      failure = "the buffers need " + std::to_string(need >> 20) + " MiB on rank " + std::to_string(rank_) +
                "'s GPU but only " + std::to_string(free >> 20) + " MiB are free (keeping " +
                std::to_string(reserve_bytes >> 20) + " MiB for the runtime): use a smaller size (-e)";
  }
  if (const std::string any = world.first_failure(failure); !any.empty()) throw_input(any);
  for (int k = 0; k < kSlots; ++k)
    mine_[size_t(k)] = DeviceBuffer(world.device(), share ? ipc_size(want[k]) : size_t(std::max<int64_t>(want[k], 0)));
  if (flag_bytes > 0) CCLAB_CUDA(cudaMemset(mine_[kFlags].get(), 0, size_t(flag_bytes)));
  CCLAB_CUDA(cudaDeviceSynchronize());  // flags zeroed before any peer can signal into them

  ptrs_.assign(size_t(world.size()), {});
  bytes_.assign(size_t(world.size()), {});
  for (int k = 0; k < kSlots; ++k) {
    ptrs_[size_t(rank_)][size_t(k)] = mine_[size_t(k)].get();
    bytes_[size_t(rank_)][size_t(k)] = std::max<int64_t>(want[k], 0);
  }
  if (!share || world.size() == 1) return;
  if (!world.single_node())
    throw_input(
        "the general lowering maps peer buffers through CUDA IPC: it needs every rank on one node (NCCL "
        "baselines run across nodes)");
  Exported ex{};
  for (int k = 0; k < kSlots; ++k) {
    ex.bytes[k] = std::max<int64_t>(want[k], 0);
    if (ex.bytes[k] > 0) CCLAB_CUDA(cudaIpcGetMemHandle(&ex.handle[k], mine_[size_t(k)].get()));
  }
  const auto all = world.allgather(&ex, sizeof ex);
  for (int p = 0; p < world.size(); ++p) {
    if (p == rank_) continue;
    Exported pe{};
    std::memcpy(&pe, &all[size_t(p) * sizeof ex], sizeof ex);
    for (int k = 0; k < kSlots; ++k) {
      bytes_[size_t(p)][size_t(k)] = pe.bytes[k];
      if (pe.bytes[k] == 0) continue;
      opened_.push_back(open_handle(pe.handle[k]));
      ptrs_[size_t(p)][size_t(k)] = opened_.back();
    }
  }
}

MpiBuffers::~MpiBuffers() {
  for (void* p : opened_) cudaIpcCloseMemHandle(p);
}

void MpiBuffers::release() {
  for (void* p : opened_) CCLAB_CUDA(cudaIpcCloseMemHandle(p));
  opened_.clear();
  world_.barrier();
}

int64_t MpiBuffers::size(int rank, Buf b) const {
  return bytes_.at(size_t(rank))[size_t(b == Buf::input ? kInput : b == Buf::output ? kOutput : kScratch)];
}

void* MpiBuffers::slot(int rank, Slot s) const {
  void* p = ptrs_.at(size_t(rank))[size_t(s)];
  if (!p && bytes_.at(size_t(rank))[size_t(s)] > 0)
    throw_internal(__FILE__, __LINE__, "rank " + std::to_string(rank) + "'s buffer is not mapped in this process");
  return p;
}

}  // namespace cclab::exec
