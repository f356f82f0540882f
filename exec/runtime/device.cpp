#include "exec/runtime/device.hpp"

#include <algorithm>
#include <cstring>

#include "exec/runtime/cuda_check.hpp"

namespace cclab::exec {

DeviceGuard::DeviceGuard(int device) {
  CCLAB_CUDA(cudaGetDevice(&previous_));
  if (device != previous_) CCLAB_CUDA(cudaSetDevice(device));
}
DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : device_(device), bytes_(bytes) {
  if (bytes == 0) return;
  DeviceGuard g(device);
  CCLAB_CUDA(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(device_);
  cudaFree(ptr_);
  cudaSetDevice(prev);
}

MappedHost::MappedHost(size_t bytes) {
  CCLAB_CUDA(cudaHostAlloc(&ptr_, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(ptr_, 0, bytes);
}
MappedHost::~MappedHost() {
  if (ptr_) cudaFreeHost(ptr_);
}
void* MappedHost::device() const {
  void* d = nullptr;
  CCLAB_CUDA(cudaHostGetDevicePointer(&d, ptr_, 0));
  return d;
}

Stream::Stream(int device) : device_(device) {
  DeviceGuard g(device);
  CCLAB_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

Event::Event(int device, bool timing) : device_(device) {
  DeviceGuard g(device);
  CCLAB_CUDA(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}

std::string runtime_versions() {
  int driver = 0, runtime = 0;
  CCLAB_CUDA(cudaDriverGetVersion(&driver));
  CCLAB_CUDA(cudaRuntimeGetVersion(&runtime));
  int nccl = 0;
  ncclGetVersion(&nccl);
  auto ver = [](int v, int div) { return std::to_string(v / div) + "." + std::to_string(v % div / 10); };
  return "cuda_driver=" + ver(driver, 1000) + " cuda_runtime=" + ver(runtime, 1000) +
         " nccl=" + std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
         std::to_string(nccl % 100);
}

int visible_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

Communicator::Communicator(CommOptions options) {
  const int visible = visible_devices();
  if (visible == 0) throw_env("no CUDA device found");
  nranks_ = options.nranks > 0 ? options.nranks : visible;
  const int ngpus = std::min(nranks_, visible);
  if (nranks_ > visible && !options.share_gpus)
    throw_input(std::to_string(nranks_) + " ranks need " + std::to_string(nranks_) + " GPUs but " +
                std::to_string(visible) +
                " are visible (add --share-gpus to run several ranks per GPU; timings are then not meaningful)");
  for (int d = 0; d < ngpus; ++d) devices_.push_back(d);
  for (int r = 0; r < nranks_; ++r) rank_device_.push_back(int(int64_t(r) * ngpus / nranks_));

  // Peer access between every pair of GPUs in use (NVLink or PCIe P2P); kernels and copy engines
  // then address peer buffers directly.
  for (int a : devices_)
    for (int b : devices_) {
      if (a == b) continue;
      int can = 0;
      CCLAB_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can)
        throw_env("peer access from GPU " + std::to_string(a) + " to GPU " + std::to_string(b) +
                  " is unavailable (cudaDeviceCanAccessPeer = 0): the executor needs P2P between its GPUs");
      DeviceGuard g(a);
      cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else
        CCLAB_CUDA(e);
    }

  cudaDeviceProp prop{};
  CCLAB_CUDA(cudaGetDeviceProperties(&prop, 0));
  sm_count_ = prop.multiProcessorCount;
  label_ = std::string(prop.name) + " x" + std::to_string(ngpus);
  versions_ = runtime_versions();
  origin_ = Stream(rank_device_[0]);
}

int Communicator::ranks_on_device(int device) const {
  int n = 0;
  for (int d : rank_device_) n += d == device;
  return n;
}

size_t Communicator::free_bytes(int device) const {
  DeviceGuard g(device);
  size_t free = 0, total = 0;
  CCLAB_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace cclab::exec
