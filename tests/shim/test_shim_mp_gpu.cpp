// libcclab_nccl.so on GPUs with one process per GPU (label gpu), as torchrun or nccl-tests under MPI run:
// two children forked before any CUDA call, each loads the shim (dlopen) in front of the real NCCL and
// initialises its rank with ncclCommInitRank on its own GPU; the shim sets up the multi-process path (CUDA IPC,
// agreed through the real NCCL). Every element is checked against a host reference for float, half and
// bfloat16, ll and lamport sizes, in place and out of place; a size above the preallocated lamport buffers
// runs in chunks of them and must still be right. A dead peer: one child exits before an all-reduce, and the other must
// see an error within the kernel timeout, not hang. Skips with a message where fewer than 2 GPUs with P2P are present.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.hpp"
#include "tests/shim/shim_gpu_common.hpp"

namespace {

using namespace cclab::shim_test;  // the shared GPU-test pieces

int failures = 0;  // in a child
// A failed check in a child: one line on stderr, counted; `c` is evaluated once (it may be a call: a second
// ncclCommInitRank would wait for a peer that never comes). CHILD_REQUIRE also ends the child.
#define CHILD_FAIL(text, ...)                                                                               \
  (std::fprintf(stderr, "check failed at line %d: %s ", __LINE__, text), std::fprintf(stderr, __VA_ARGS__), \
   std::fprintf(stderr, "\n"), ++failures)
#define CHILD_CHECK(c, ...)                \
  do {                                     \
    if (!(c)) CHILD_FAIL(#c, __VA_ARGS__); \
  } while (0)
#define CHILD_REQUIRE(c, ...)                          \
  do {                                                 \
    if (!(c)) _exit(CHILD_FAIL(#c, __VA_ARGS__) + 50); \
  } while (0)

// 8 bytes, odd counts on both sides of ll's 128 KiB limit, 1 MiB and 64 MiB (lamport, within the 64 MiB
// preallocated per peer), 96 MiB (lamport's size, above them: two chunks, the second a half).
std::vector<size_t> counts_of(const Type& t) {
  return {8 / t.size,
          1,
          37,
          (128 << 10) / t.size - 1,
          (128 << 10) / t.size + 1,
          100003,
          (1 << 20) / t.size,
          (64 << 20) / t.size,
          (96 << 20) / t.size};
}

struct Result {
  int status = -1;
  std::string log;
  bool ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string how() const {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
  }
};

// Runs `body(rank, id_pipe)` in 2 children, each with stderr into a file; waits at most `limit_s`, then kills.
std::vector<Result> run_two(const std::function<void(int, int*)>& body, int limit_s,
                            const std::vector<std::pair<std::string, std::string>>& env = {}) {
  int id_pipe[2];
  if (pipe(id_pipe) != 0) return {};
  std::vector<pid_t> pids;
  std::vector<std::string> paths;
  std::fflush(nullptr);
  for (int r = 0; r < 2; ++r) {
    char path[] = "/tmp/cclab_shim_mp_gpu_XXXXXX";
    const int fd = mkstemp(path);
    paths.push_back(path);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(fd, 2);
      alarm(unsigned(limit_s));
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      failures = 0;
      body(r, id_pipe);
      std::fflush(nullptr);
      _exit(failures > 40 ? 40 : failures);
    }
    close(fd);
    pids.push_back(pid);
  }
  close(id_pipe[0]);
  close(id_pipe[1]);
  std::vector<Result> out(2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s + 5);
  for (int r = 0; r < 2; ++r) {
    for (;;) {
      const pid_t w = waitpid(pids[size_t(r)], &out[size_t(r)].status, WNOHANG);
      if (w == pids[size_t(r)]) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[size_t(r)], SIGKILL);
        waitpid(pids[size_t(r)], &out[size_t(r)].status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::ifstream in(paths[size_t(r)]);
    std::stringstream ss;
    ss << in.rdbuf();
    out[size_t(r)].log = ss.str();
    unlink(paths[size_t(r)].c_str());
  }
  return out;
}

// In a child of its own (the test process never initialises CUDA, so that its children can): "" where 2 GPUs
// with P2P access between them are present, else why not.
std::string two_gpus() {
  int p[2];
  if (pipe(p) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::string why;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
      why = std::string("needs 2 GPUs with P2P access: no CUDA device (") + cudaGetErrorString(e) + ")";
    else if (n < 2)
      why = "needs 2 GPUs with P2P access, found " + std::to_string(n) + " GPU(s)";
    else {
      int a = 0, b = 0;
      cudaDeviceCanAccessPeer(&a, 0, 1);
      cudaDeviceCanAccessPeer(&b, 1, 0);
      if (!a || !b) why = "needs 2 GPUs with P2P access: GPUs 0 and 1 have none between them";
    }
    if (!why.empty() && write(p[1], why.data(), why.size()) < 0) _exit(2);
    _exit(0);
  }
  close(p[1]);
  std::string why;
  char buf[256];
  for (ssize_t k; (k = read(p[0], buf, sizeof(buf))) > 0;) why.append(buf, size_t(k));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the GPU probe died";
  return why;
}

// Rank 0 makes the unique id and hands it to rank 1 through the pipe.
ncclUniqueId share_id(const ShimApi& api, int rank, int* id_pipe) {
  ncclUniqueId id{};
  if (rank == 0) {
    CHILD_REQUIRE(api.unique_id(&id) == ncclSuccess, "ncclGetUniqueId");
    CHILD_REQUIRE(write(id_pipe[1], &id, sizeof(id)) == ssize_t(sizeof(id)), "write id");
  } else {
    size_t got = 0;
    while (got < sizeof(id)) {
      const ssize_t k = read(id_pipe[0], reinterpret_cast<char*>(&id) + got, sizeof(id) - got);
      CHILD_REQUIRE(k > 0, "read id");
      got += size_t(k);
    }
  }
  close(id_pipe[0]);
  close(id_pipe[1]);
  return id;
}

// One rank of the correctness run.
void correctness_rank(int rank, int* id_pipe, int device) {
  const ShimApi api = open_shim();
  const ncclUniqueId id = share_id(api, rank, id_pipe);
  CHILD_REQUIRE(cudaSetDevice(device) == cudaSuccess, "cudaSetDevice(%d)", device);
  ncclComm_t comm = nullptr;
  const ncclResult_t ir = api.init_rank(&comm, 2, id, rank);
  CHILD_REQUIRE(ir == ncclSuccess, "ncclCommInitRank: %s", api.error_string(ir));
  const size_t max_bytes = size_t(96) << 20;
  void *in = nullptr, *out = nullptr;
  cudaStream_t s = nullptr;
  CHILD_REQUIRE(cudaMalloc(&in, max_bytes) == cudaSuccess && cudaMalloc(&out, max_bytes) == cudaSuccess, "cudaMalloc");
  CHILD_REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  for (const Type& t : kTypes)
    for (size_t count : counts_of(t))
      for (bool in_place : {false, true}) {
        std::vector<uint8_t> h(count * t.size);
        for (size_t i = 0; i < count; ++i) cclab::store_from_float(t.dtype, h.data(), int64_t(i), input_value(rank, i));
        CHILD_REQUIRE(cudaMemcpy(in, h.data(), h.size(), cudaMemcpyHostToDevice) == cudaSuccess, "H2D");
        if (!in_place) CHILD_REQUIRE(cudaMemset(out, 0x5b, h.size()) == cudaSuccess, "memset");
        // The copy's DMA and the memset run on the legacy stream, which the non-blocking stream does not wait for.
        CHILD_REQUIRE(cudaDeviceSynchronize() == cudaSuccess, "sync before %s count %zu", t.name, count);
        void* dst = in_place ? in : out;
        const ncclResult_t r = api.all_reduce(in, dst, count, t.nccl, ncclSum, comm, s);
        CHILD_CHECK(r == ncclSuccess, "ncclAllReduce %s count %zu: %s", t.name, count, api.error_string(r));
        CHILD_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess, "sync %s count %zu", t.name, count);
        CHILD_REQUIRE(cudaMemcpy(h.data(), dst, h.size(), cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
        size_t wrong = 0, first = 0;
        for (size_t i = 0; i < count; ++i) {
          const float want = input_value(0, i) + input_value(1, i);
          if (cclab::load_as_float(t.dtype, h.data(), int64_t(i)) != want && wrong++ == 0) first = i;
        }
        CHILD_CHECK(wrong == 0, "rank %d %s count %zu %s: %zu wrong elements, the first %zu", rank, t.name, count,
                    in_place ? "in place" : "out of place", wrong, first);
      }
  ncclResult_t async = ncclInternalError;
  CHILD_CHECK(api.async_error(comm, &async) == ncclSuccess && async == ncclSuccess, "async error %d", int(async));
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
  CHILD_CHECK(api.destroy(comm) == ncclSuccess, "ncclCommDestroy");
}

int count_lines(const std::string& s, const std::string& needle) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST(ShimMpGpu, OneProcessPerGpuMatchesTheHostReference) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto res = run_two([](int rank, int* id_pipe) { correctness_rank(rank, id_pipe, rank); }, 240);
  ASSERT_EQ(res.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const std::string& log = res[size_t(r)].log;
    EXPECT_TRUE(res[size_t(r)].ok()) << "rank " << r << " (" << res[size_t(r)].how() << "):\n" << log;
    EXPECT_EQ(count_lines(log, "the others in other processes: cclab path ready (CUDA IPC"), 1) << log;
    // Every size takes the cclab path, 96 MiB in chunks of the preallocated buffers.
    EXPECT_EQ(count_lines(log, "-> cclab (allreduce.bidir ll)"), 3 * 2 * 4) << log;
    EXPECT_EQ(count_lines(log, "-> cclab (allreduce.bidir lamport)"), 3 * 2 * 4) << log;
    EXPECT_EQ(count_lines(log, "-> cclab (allreduce.bidir lamport in chunks of the 67108864 bytes preallocated"), 3 * 2)
        << log;
    EXPECT_EQ(count_lines(log, "-> nccl"), 0) << log;
    EXPECT_EQ(log.find("allreduce.bidir failed"), std::string::npos) << log;
  }
}

// Each process sees only its own GPU (CUDA_VISIBLE_DEVICES): P2P between the two cannot be asked, so every
// rank forwards, and the results are NCCL's, still exact.
TEST(ShimMpGpu, GpusInvisibleToEachOtherForwardOnEveryRank) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto res = run_two(
      [](int rank, int* id_pipe) {
        setenv("CUDA_VISIBLE_DEVICES", std::to_string(rank).c_str(), 1);
        correctness_rank(rank, id_pipe, 0);
      },
      240);
  ASSERT_EQ(res.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const std::string& log = res[size_t(r)].log;
    EXPECT_TRUE(res[size_t(r)].ok()) << "rank " << r << " (" << res[size_t(r)].how() << "):\n" << log;
    EXPECT_EQ(count_lines(log, "forwarded to NCCL (multi-process setup: "), 1) << log;
    EXPECT_EQ(count_lines(log, "-> cclab"), 0) << log;
  }
}

// Rank 1 runs a few all-reduces and exits before the next; rank 0's next cclab all-reduce must end in an error
// (its kernel's wait times out after kernel_timeout, 10 s), reported by ncclCommGetAsyncError and the call
// after it, within 20 s, and ncclCommAbort must return.
TEST(ShimMpGpu, ADeadPeerIsAnErrorNotAHang) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto res = run_two(
      [](int rank, int* id_pipe) {
        const ShimApi api = open_shim();
        const ncclUniqueId id = share_id(api, rank, id_pipe);
        CHILD_REQUIRE(cudaSetDevice(rank) == cudaSuccess, "cudaSetDevice");
        ncclComm_t comm = nullptr;
        CHILD_REQUIRE(api.init_rank(&comm, 2, id, rank) == ncclSuccess, "ncclCommInitRank");
        const size_t count = size_t(1) << 18;  // 1 MiB of float: lamport
        void* buf = nullptr;
        cudaStream_t s = nullptr;
        CHILD_REQUIRE(cudaMalloc(&buf, count * 4) == cudaSuccess, "cudaMalloc");
        CHILD_REQUIRE(cudaMemset(buf, 0, count * 4) == cudaSuccess, "cudaMemset");
        CHILD_REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
        CHILD_REQUIRE(cudaDeviceSynchronize() == cudaSuccess, "sync after the memset");
        std::fprintf(stderr, "rank %d: warm-up\n", rank);
        for (int i = 0; i < 3; ++i) {
          CHILD_REQUIRE(api.all_reduce(buf, buf, count, ncclFloat, ncclSum, comm, s) == ncclSuccess, "warm-up");
          CHILD_REQUIRE(api.all_reduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s) == ncclSuccess, "warm-up ll");
        }
        CHILD_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess, "warm-up sync");
        if (rank == 1) {
          std::fprintf(stderr, "rank 1 exits without its next all-reduce\n");
          _exit(0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // rank 1 gone
        const auto t0 = std::chrono::steady_clock::now();
        const ncclResult_t r = api.all_reduce(buf, buf, count, ncclFloat, ncclSum, comm, s);
        const cudaError_t e = cudaStreamSynchronize(s);
        ncclResult_t async = ncclSuccess;
        const ncclResult_t ar = api.async_error(comm, &async);
        const ncclResult_t next = api.all_reduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "rank 0: call %d, sync %s, async %d (%d), next call %d after %.1f s\n", int(r),
                     cudaGetErrorString(e), int(async), int(ar), int(next), waited);
        // Either the kernel timed out (the error word) or the CUDA context failed (a store into the dead peer's
        // memory faulted): both are errors; neither may hang.
        CHILD_CHECK(
            r != ncclSuccess || e != cudaSuccess || (ar == ncclSuccess && async != ncclSuccess) || ar != ncclSuccess,
            "no error after the peer died");
        CHILD_CHECK(next != ncclSuccess, "the call after the failure succeeded");
        CHILD_CHECK(waited < 20, "%.1f s", waited);
        const ncclResult_t ab = api.abort(comm);  // its result after a failure is NCCL's business; it must return
        std::fprintf(stderr, "rank 0: aborted (%d) after %.1f s\n", int(ab),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      },
      90);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_TRUE(res[0].ok()) << "rank 0 (" << res[0].how() << "):\n" << res[0].log;
  EXPECT_TRUE(res[1].ok()) << "rank 1 (" << res[1].how() << "):\n" << res[1].log;
  EXPECT_NE(res[0].log.find("rank 0: aborted ("), std::string::npos) << res[0].log;
  EXPECT_NE(res[0].log.find("allreduce.bidir failed"), std::string::npos) << res[0].log;
}
