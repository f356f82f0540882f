#include "exec/runtime/cuda_check.hpp"

#include <cstring>

namespace cclab::exec {

namespace {
std::string where(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(base ? base + 1 : file) + ":" + std::to_string(line);
}
}  // namespace

void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a sticky launch error so the next check does not report it again
  throw Error(ErrorKind::environment, std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                                          cudaGetErrorString(err) + ") in " + call + " at " + where(file, line));
}

void throw_nccl(ncclResult_t res, const char* call, const char* file, int line) {
  std::string detail = ncclGetErrorString(res);
  if (const char* last = ncclGetLastError(nullptr); last && *last) detail += ": " + std::string(last);
  throw Error(ErrorKind::environment, "NCCL error (" + detail + ") in " + call + " at " + where(file, line));
}

}  // namespace cclab::exec
