#include <cstdlib>
#include <ctime>
#include <set>
#include <sstream>

#include "exec/mmsp/cmatmul_gpus.hpp"
#include "exec/mmsp/cmatmul_util.cuh"

namespace cclab::exec {
namespace detail {

void cuda_fail(const char* call, const char* file, int line, cudaError_t e) {
  std::ostringstream os;
  os << file << ":" << line << ": " << call << ": " << cudaGetErrorString(e);
  // Allocation failures are the user's size not fitting in GPU memory (an input problem).
  if (e == cudaErrorMemoryAllocation)
    throw Error(ErrorKind::input, os.str() + " (the size does not fit in GPU memory)");
  throw Error(ErrorKind::environment, os.str());
}

void cublas_fail(const char* call, const char* file, int line, cublasStatus_t s) {
  std::ostringstream os;
  os << file << ":" << line << ": " << call << ": " << cublasGetStatusName(s) << " (" << cublasGetStatusString(s)
     << ")";
  throw Error(ErrorKind::environment, os.str());
}

void nccl_fail(const char* call, const char* file, int line, ncclResult_t r) {
  std::ostringstream os;
  os << file << ":" << line << ": " << call << ": NCCL error: " << ncclGetErrorString(r);
  throw Error(ErrorKind::environment, os.str());
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string commit_label() {
  const char* c = std::getenv("CCLAB_COMMIT");
  if (c && *c) return c;
#ifdef CCLAB_GIT_COMMIT
  return CCLAB_GIT_COMMIT;  // the commit the build was configured at
#else
  return "unknown";
#endif
}

}  // namespace detail

RankGpus RankGpus::create(int nranks, bool allow_share) {
  if (nranks < 1) throw_input("ranks must be at least 1 (got " + std::to_string(nranks) + ")");
  int ngpus = 0;
  cudaError_t e = cudaGetDeviceCount(&ngpus);
  if (e != cudaSuccess || ngpus == 0)
    throw_env(std::string("no CUDA GPU visible (") + (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + ")");
  if (nranks > ngpus && !allow_share)
    throw_input(std::to_string(nranks) + " ranks but only " + std::to_string(ngpus) +
                " GPUs: pass the flag that lets ranks share GPUs (timings are then not meaningful)");
  std::vector<int> dev(nranks);
  for (int r = 0; r < nranks; ++r) dev[r] = r % ngpus;
  return RankGpus(std::move(dev));
}

RankGpus::RankGpus(std::vector<int> device_of_rank, std::vector<ncclComm_t> comms)
    : device_(std::move(device_of_rank)), comms_(std::move(comms)) {
  if (device_.empty()) throw_input("RankGpus: no ranks");
  if (!comms_.empty() && comms_.size() != device_.size())
    throw_input("RankGpus: " + std::to_string(comms_.size()) + " communicators for " + std::to_string(device_.size()) +
                " ranks");
  std::set<int> distinct(device_.begin(), device_.end());
  shared_ = distinct.size() < device_.size();
  // Peer access between every pair of distinct devices: the copy engines then move shards directly
  // over NVLink and kernels may load from peer memory.
  for (int a : distinct) {
    detail::DeviceScope scope(a);
    for (int b : distinct) {
      if (a == b) continue;
      int can = 0;
      MMSP_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) throw_env("peer access unavailable from GPU " + std::to_string(a) + " to GPU " + std::to_string(b));
      cudaError_t pe = cudaDeviceEnablePeerAccess(b, 0);
      if (pe == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // clear the sticky-free "already enabled" status: another owner enabled it
      } else if (pe != cudaSuccess) {
        detail::cuda_fail("cudaDeviceEnablePeerAccess", __FILE__, __LINE__, pe);
      }
    }
  }
}

RankGpus::RankGpus(RankGpus&& o) noexcept
    : device_(std::move(o.device_)), comms_(std::move(o.comms_)), own_comms_(o.own_comms_), shared_(o.shared_) {
  o.own_comms_ = false;
  o.comms_.clear();
}

RankGpus::~RankGpus() {
  if (own_comms_)
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
}

ncclComm_t RankGpus::nccl(int rank) {
  if (shared_) throw_env("NCCL needs one rank per GPU: these ranks share GPUs");
  if (comms_.empty()) {
    // NVLink multicast (NVLS) must stay off on the lent machines (KINDS.md); force it whatever the caller set.
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    comms_.resize(device_.size());
    MMSP_NCCL(ncclCommInitAll(comms_.data(), nranks(), device_.data()));
    own_comms_ = true;
  }
  return comms_.at(rank);
}

std::string RankGpus::device_label() const {
  std::set<int> distinct(device_.begin(), device_.end());
  cudaDeviceProp prop{};
  MMSP_CUDA(cudaGetDeviceProperties(&prop, device_.front()));
  return std::string(prop.name) + " x" + std::to_string(distinct.size());
}

}  // namespace cclab::exec
