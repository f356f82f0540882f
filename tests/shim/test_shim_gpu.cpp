// libcclab_nccl.so on GPUs (label gpu): one process drives two GPUs through the shim, loaded with dlopen in
// front of the real NCCL (CCLAB_NCCL_LIB, default the NCCL the build found), as nccl-tests -g 2 does:
// ncclCommInitAll, then one ncclAllReduce per GPU inside ncclGroupStart/ncclGroupEnd; and as threads that
// each call ncclCommInitRank with one shared unique id. Every element is checked against a host reference
// (inputs are small integers, so every sum is exact in float, half and bfloat16), eager and replayed from
// CUDA graphs, in place and out of place; CCLAB_DEBUG's lines say which route each call took.
// Skips with a message where fewer than 2 GPUs with P2P access between them are present.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.hpp"
#include "tests/shim/shim_gpu_common.hpp"

namespace {

using namespace cclab::shim_test;  // the shared GPU-test pieces

#define CUDA_OK(call)                                                      \
  do {                                                                     \
    const cudaError_t e_ = (call);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)
#define NCCL_OK(call)                                                      \
  do {                                                                     \
    const ncclResult_t r_ = (call);                                        \
    ASSERT_EQ(r_, ncclSuccess) << #call << ": " << api().error_string(r_); \
  } while (0)

// Loaded once per process (the shim reads its environment once).
const ShimApi& api() {
  static const ShimApi a = open_shim();
  return a;
}

// stderr (the shim's debug lines) into a file while the test runs; text() reads what came so far.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = dup(2);
    const int fd = mkstemp(path_);
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() {
    restore();
    unlink(path_);
  }
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  std::string text() const {
    std::fflush(stderr);
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  char path_[64] = "/tmp/cclab_shim_gpu_XXXXXX";
  int saved_ = -1;
};

// Two GPUs with P2P access between them, or the reason to skip.
std::string two_gpus() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("needs 2 GPUs with P2P access: no CUDA device (") + cudaGetErrorString(e) + ")";
  }
  if (n < 2) return "needs 2 GPUs with P2P access, found " + std::to_string(n) + " GPU(s)";
  int a = 0, b = 0;
  cudaDeviceCanAccessPeer(&a, 0, 1);
  cudaDeviceCanAccessPeer(&b, 1, 0);
  if (!a || !b) return "needs 2 GPUs with P2P access: GPUs 0 and 1 have none between them";
  return "";
}

std::vector<uint8_t> host_input(const Type& t, int r, size_t count) {
  std::vector<uint8_t> h(count * t.size);
  for (size_t i = 0; i < count; ++i) cclab::store_from_float(t.dtype, h.data(), int64_t(i), input_value(r, i));
  return h;
}

// Elements of `out` (rank r's result) that differ from the sum over `nranks` ranks; the first one described.
size_t count_wrong(const Type& t, const std::vector<uint8_t>& out, size_t count, int nranks, std::string& first) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += input_value(r, i);
    const float got = cclab::load_as_float(t.dtype, out.data(), int64_t(i));
    if (got != want) {
      if (wrong == 0)
        first = "element " + std::to_string(i) + ": " + std::to_string(got) + ", want " + std::to_string(want);
      ++wrong;
    }
  }
  return wrong;
}

// Two communicators from one ncclCommInitAll, a stream and buffers per GPU.
class TwoGpus {
 public:
  static constexpr int kRanks = 2;
  ncclComm_t comms[kRanks] = {};
  cudaStream_t streams[kRanks] = {};
  void* in[kRanks] = {};
  void* out[kRanks] = {};
  size_t capacity = 0;
  size_t offset = 0;  // bytes past each allocation's start where the calls' buffers begin (nccl-tests' shift)

  void* src(int r) const { return static_cast<char*>(in[r]) + offset; }
  void* dst(int r, bool in_place) const { return static_cast<char*>(in_place ? in[r] : out[r]) + offset; }

  // ncclCommInitAll (nccl-tests -g 2), or ncclCommInitRank per GPU from this thread inside one group.
  void init(size_t max_bytes, bool grouped_init_rank = false) {
    const int devs[kRanks] = {0, 1};
    if (grouped_init_rank) {
      ncclUniqueId id;
      NCCL_OK(api().unique_id(&id));
      NCCL_OK(api().group_start());
      for (int r = 0; r < kRanks; ++r) {
        CUDA_OK(cudaSetDevice(devs[r]));
        NCCL_OK(api().init_rank(&comms[r], kRanks, id, r));
      }
      NCCL_OK(api().group_end());
    } else {
      NCCL_OK(api().init_all(comms, kRanks, devs));
    }
    capacity = max_bytes;
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
      CUDA_OK(cudaMalloc(&in[r], max_bytes));
      CUDA_OK(cudaMalloc(&out[r], max_bytes));
    }
  }
  void finish() {
    for (int r = 0; r < kRanks; ++r) {
      ncclResult_t async = ncclInternalError;
      NCCL_OK(api().async_error(comms[r], &async));
      EXPECT_EQ(async, ncclSuccess) << "rank " << r;
      cudaSetDevice(r);
      cudaFree(in[r]);
      cudaFree(out[r]);
      cudaStreamDestroy(streams[r]);
      NCCL_OK(api().destroy(comms[r]));
    }
  }
  // Inputs written, outputs poisoned.
  void prepare(const Type& t, size_t count, bool in_place) {
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      const auto h = host_input(t, r, count);
      CUDA_OK(cudaMemcpy(src(r), h.data(), h.size(), cudaMemcpyHostToDevice));
      if (!in_place) CUDA_OK(cudaMemset(dst(r, false), 0x5b, count * t.size));
      // The copy's DMA and the memset run on the legacy stream, which the non-blocking streams of the
      // all-reduce do not wait for.
      CUDA_OK(cudaDeviceSynchronize());
    }
  }
  // One all-reduce per GPU in a group, as nccl-tests -g 2 issues it.
  void issue(const Type& t, size_t count, bool in_place) {
    NCCL_OK(api().group_start());
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      NCCL_OK(api().all_reduce(src(r), dst(r, in_place), count, t.nccl, ncclSum, comms[r], streams[r]));
    }
    NCCL_OK(api().group_end());
  }
  // One all-reduce per GPU captured as nccl-tests -G does (every GPU's stream, thread-local mode, one group),
  // instantiated into exec[rank].
  void capture(const Type& t, size_t count, bool in_place, cudaGraphExec_t* exec) {
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeThreadLocal));
    }
    issue(t, count, in_place);
    // Every capture ends before the first instantiation: instantiating is not permitted while this thread
    // still captures another stream.
    cudaGraph_t graph[kRanks] = {};
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaStreamEndCapture(streams[r], &graph[r]));
    }
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaGraphInstantiate(&exec[r], graph[r], 0));
      CUDA_OK(cudaGraphDestroy(graph[r]));
    }
  }
  void replay(cudaGraphExec_t* exec) {
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaGraphLaunch(exec[r], streams[r]));
    }
  }
  void check(const Type& t, size_t count, bool in_place, const std::string& what) {
    for (int r = 0; r < kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaStreamSynchronize(streams[r]));
      std::vector<uint8_t> h(count * t.size);
      CUDA_OK(cudaMemcpy(h.data(), dst(r, in_place), h.size(), cudaMemcpyDeviceToHost));
      std::string first;
      const size_t wrong = count_wrong(t, h, count, kRanks, first);
      EXPECT_EQ(wrong, 0u) << what << " rank " << r << ": " << first;
    }
  }
};

// Counts of each type's elements: 8 bytes, odd counts on both sides of ll's 128 KiB limit, 1 MiB, 64 MiB.
std::vector<size_t> counts_of(const Type& t) {
  return {8 / t.size,
          1,
          3,
          37,
          1001,
          (128 << 10) / t.size - 1,
          (128 << 10) / t.size + 1,
          100003,
          (1 << 20) / t.size,
          (64 << 20) / t.size};
}

std::string what_of(const Type& t, size_t count, bool in_place, const char* how) {
  return std::string(how) + " " + t.name + " count " + std::to_string(count) +
         (in_place ? " in place" : " out of place");
}

}  // namespace

TEST(ShimGpu, AllReduceEagerMatchesTheHostReference) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  TwoGpus g;
  g.init(64 << 20);
  for (const Type& t : kTypes)
    for (size_t count : counts_of(t))
      for (bool in_place : {false, true}) {
        g.prepare(t, count, in_place);
        g.issue(t, count, in_place);
        g.check(t, count, in_place, what_of(t, count, in_place, "eager"));
      }
  g.finish();
  const std::string log = err.text();
  err.restore();
  EXPECT_NE(log.find("cclab: communicator of 2 ranks on GPUs 0,1: cclab path ready"), std::string::npos) << log;
  EXPECT_EQ(log.find("-> nccl"), std::string::npos) << "every call here is one the cclab path covers:\n" << log;
  EXPECT_EQ(log.find("allreduce.bidir failed"), std::string::npos) << log;
}

TEST(ShimGpu, AllReduceReplayedFromCudaGraphsMatchesTheHostReference) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  TwoGpus g;
  g.init(64 << 20);
  for (const Type& t : kTypes)
    for (size_t count : counts_of(t))
      for (bool in_place : {false, true}) {
        cudaGraphExec_t exec[TwoGpus::kRanks] = {};
        g.capture(t, count, in_place, exec);
        // Several replays: the kernels' epochs (and lamport's buffer parity) advance in device memory.
        for (int replay = 0; replay < 3; ++replay) {
          g.prepare(t, count, in_place);
          g.replay(exec);
          g.check(t, count, in_place, what_of(t, count, in_place, "graph replay") + " #" + std::to_string(replay));
        }
        // And an eager call between graphs.
        g.prepare(t, count, in_place);
        g.issue(t, count, in_place);
        g.check(t, count, in_place, what_of(t, count, in_place, "eager after graphs"));
        for (int r = 0; r < TwoGpus::kRanks; ++r) cudaGraphExecDestroy(exec[r]);
      }
  g.finish();
  const std::string log = err.text();
  err.restore();
  // Captured, ll and lamport sizes both take the cclab path.
  EXPECT_NE(log.find("-> cclab (allreduce.bidir ll)"), std::string::npos) << log;
  EXPECT_NE(log.find("-> cclab (allreduce.bidir lamport)"), std::string::npos) << log;
  EXPECT_EQ(log.find("stream capture not supported"), std::string::npos) << log;
  EXPECT_EQ(log.find("allreduce.bidir failed"), std::string::npos) << log;
}

// Above lamport's sizes (auto_flash_max, 256 MiB) the size table picks the copy-engine schedule, which the shim does
// not run: lamport goes on in launches over chunks of its buffers (lamport_max_bytes, 256 MiB), the last one short
// and not a whole number of vectors.
TEST(ShimGpu, AboveLamportsBuffersRunsInChunks) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  TwoGpus g;
  const size_t bytes = (size_t(257) << 20) + 12;
  g.init(bytes);
  for (const Type& t : kTypes)
    for (bool in_place : {false, true}) {
      if (in_place && t.size != 4) continue;  // in place once
      const size_t count = bytes / t.size;
      g.prepare(t, count, in_place);
      g.issue(t, count, in_place);
      g.check(t, count, in_place, what_of(t, count, in_place, "chunked"));
    }
  g.finish();
  const std::string log = err.text();
  err.restore();
  EXPECT_NE(log.find("dtype=float op=sum bytes=269484044 -> cclab (allreduce.bidir lamport)"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("-> nccl"), std::string::npos) << log;
  EXPECT_EQ(log.find("allreduce.bidir failed"), std::string::npos) << log;
}

// nccl-tests shifts its buffers by the message size on every other call: an 8-byte all-reduce alternates 16- and
// 8-byte aligned buffers. ll (4-byte words) runs them on the cclab path; lamport (16-byte vectors) forwards them.
// Both exact, out of place and in place, eager and through a graph.
TEST(ShimGpu, BuffersShiftedAsNcclTestsShiftsThem) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  TwoGpus g;
  g.init((1 << 20) + 64);
  for (size_t offset : {8, 4, 12})
    for (const Type& t : kTypes)
      for (size_t bytes : {size_t(8), size_t(24), size_t(4096) + 4, size_t(1) << 20})
        for (bool in_place : {false, true}) {
          g.offset = offset;
          const size_t count = bytes / t.size;
          const std::string what = what_of(t, count, in_place, "shifted") + " by " + std::to_string(offset);
          g.prepare(t, count, in_place);
          g.issue(t, count, in_place);
          g.check(t, count, in_place, what);
        }
  g.offset = 8;  // captured and replayed, as nccl-tests -G runs the shifted calls
  const Type& f = kTypes[0];
  cudaGraphExec_t exec[TwoGpus::kRanks] = {};
  g.capture(f, 2, false, exec);
  for (int replay = 0; replay < 3; ++replay) {
    g.prepare(f, 2, false);
    g.replay(exec);
    g.check(f, 2, false, "shifted by 8, graph replay #" + std::to_string(replay));
  }
  for (int r = 0; r < TwoGpus::kRanks; ++r) cudaGraphExecDestroy(exec[r]);
  g.finish();
  const std::string log = err.text();
  err.restore();
  EXPECT_NE(log.find("bytes=8 -> cclab (allreduce.bidir ll)"), std::string::npos) << log;
  EXPECT_NE(log.find("bytes=1048576 -> nccl (buffers not 16-byte aligned (lamport needs it))"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("4-byte aligned"), std::string::npos) << log;
  EXPECT_EQ(log.find("allreduce.bidir failed"), std::string::npos) << log;
}

TEST(ShimGpu, DebugShowsTheRouteOfEachCall) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  TwoGpus g;
  g.init(1 << 20);
  const Type& f = kTypes[0];
  for (size_t count : {size_t(2), size_t(1) << 18}) {
    g.prepare(f, count, false);
    g.issue(f, count, false);
    g.check(f, count, false, what_of(f, count, false, "debug"));
  }
  // A call the cclab path does not cover (int32) forwards to NCCL, and its result is NCCL's.
  {
    std::vector<int32_t> h(1000);
    for (int r = 0; r < TwoGpus::kRanks; ++r) {
      for (size_t i = 0; i < h.size(); ++i) h[i] = int32_t(i) + r;
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaMemcpy(g.in[r], h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    }
    NCCL_OK(api().group_start());
    for (int r = 0; r < TwoGpus::kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      NCCL_OK(api().all_reduce(g.in[r], g.out[r], h.size(), ncclInt32, ncclSum, g.comms[r], g.streams[r]));
    }
    NCCL_OK(api().group_end());
    for (int r = 0; r < TwoGpus::kRanks; ++r) {
      CUDA_OK(cudaSetDevice(r));
      CUDA_OK(cudaStreamSynchronize(g.streams[r]));
      CUDA_OK(cudaMemcpy(h.data(), g.out[r], h.size() * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(h[i], int32_t(2 * i + 1)) << "rank " << r << " element " << i;
    }
  }
  g.finish();
  const std::string log = err.text();
  err.restore();
  EXPECT_NE(log.find("cclab: ncclAllReduce count=2 dtype=float op=sum bytes=8 -> cclab (allreduce.bidir ll)"),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find("cclab: ncclAllReduce count=262144 dtype=float op=sum bytes=1048576 -> cclab (allreduce.bidir lamport)"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("dtype=int32 op=sum bytes=4000 -> nccl (dtype int32"), std::string::npos) << log;
}

TEST(ShimGpu, GroupedCommInitRankFromOneThreadRunsTheCclabPath) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  TwoGpus g;
  g.init(4 << 20, true);
  for (const Type& t : kTypes)
    for (size_t count : {size_t(8) / t.size, size_t(1001), (4 << 20) / t.size})
      for (bool in_place : {false, true}) {
        g.prepare(t, count, in_place);
        g.issue(t, count, in_place);
        g.check(t, count, in_place, what_of(t, count, in_place, "grouped init"));
      }
  g.finish();
  const std::string log = err.text();
  err.restore();
  EXPECT_NE(log.find("cclab: communicator of 2 ranks on GPUs 0,1: cclab path ready"), std::string::npos) << log;
  EXPECT_EQ(log.find("-> nccl"), std::string::npos) << log;
}

// Threads of one process, one GPU each, that each create their communicator with ncclCommInitRank and one
// shared unique id, then call ncclAllReduce on their own (no group).
TEST(ShimGpu, ThreadsSharingOneUniqueIdRunTheCclabPath) {
  const std::string skip = two_gpus();
  if (!skip.empty()) GTEST_SKIP() << skip;
  StderrCapture err;
  ncclUniqueId id;
  NCCL_OK(api().unique_id(&id));
  constexpr int kRanks = 2;
  std::string failures[kRanks];
  auto rank_main = [&](int r) {
    std::string& fail = failures[r];
    auto ok = [&](bool c, const std::string& what) {
      if (!c && fail.empty()) fail = what;
      return c;
    };
    if (!ok(cudaSetDevice(r) == cudaSuccess, "cudaSetDevice")) return;
    ncclComm_t comm = nullptr;
    if (!ok(api().init_rank(&comm, kRanks, id, r) == ncclSuccess, "ncclCommInitRank")) return;
    cudaStream_t s = nullptr;
    void *in = nullptr, *out = nullptr;
    const Type& f = kTypes[0];
    const size_t max_count = (4 << 20) / f.size;
    ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
    ok(cudaMalloc(&in, max_count * f.size) == cudaSuccess && cudaMalloc(&out, max_count * f.size) == cudaSuccess,
       "cudaMalloc");
    for (size_t count : {size_t(2), size_t(1001), (1 << 20) / f.size, max_count}) {
      if (!fail.empty()) break;
      const auto h = host_input(f, r, count);
      ok(cudaMemcpy(in, h.data(), h.size(), cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy");
      ok(api().all_reduce(in, out, count, f.nccl, ncclSum, comm, s) == ncclSuccess, "ncclAllReduce");
      ok(cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize");
      std::vector<uint8_t> got(count * f.size);
      ok(cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy back");
      std::string first;
      ok(count_wrong(f, got, count, kRanks, first) == 0, "count " + std::to_string(count) + ": " + first);
    }
    cudaFree(in);
    cudaFree(out);
    cudaStreamDestroy(s);
    ok(api().destroy(comm) == ncclSuccess, "ncclCommDestroy");
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  const std::string log = err.text();
  err.restore();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(failures[r], "") << "rank " << r << "\n" << log;
  EXPECT_NE(log.find("cclab: communicator of 2 ranks on GPUs 0,1: cclab path ready"), std::string::npos) << log;
  EXPECT_NE(log.find("bytes=1048576 -> cclab (allreduce.bidir lamport)"), std::string::npos) << log;
  EXPECT_EQ(log.find("-> nccl"), std::string::npos) << log;
}
