// libcclab_nccl.so on the CPU: every NCCL name is exported, and with a stub real library (stub_nccl.cpp,
// through CCLAB_NCCL_LIB) each call arrives there with its arguments and its result comes back.
// Each test runs in a fresh child process: the shim reads its environment and loads the real library
// once per process. A child reports failed checks on stderr and exits with their count.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stub_nccl.hpp"

namespace {

int failures = 0;  // in the child
#define CHILD_CHECK(c)                                                     \
  do {                                                                     \
    if (!(c)) {                                                            \
      std::fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #c); \
      ++failures;                                                          \
    }                                                                      \
  } while (0)

struct Child {
  int status = -1;
  std::string err;  // the child's stderr
  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs `body` in a child with `env` set, its stderr captured; the child has 20 s.
Child in_child(const std::vector<std::pair<std::string, std::string>>& env, const std::function<void()>& body) {
  char path[] = "/tmp/cclab_shim_test_XXXXXX";
  const int fd = mkstemp(path);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    alarm(20);
    unsetenv("CCLAB_DISABLE");
    unsetenv("CCLAB_DEBUG");
    unsetenv("CCLAB_NCCL_LIB");
    unsetenv("NCCL_COMM_BLOCKING");
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    failures = 0;
    body();
    std::fflush(nullptr);
    _exit(failures > 100 ? 100 : failures);
  }
  Child c;
  waitpid(pid, &c.status, 0);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  c.err = ss.str();
  close(fd);
  unlink(path);
  return c;
}

void* open_shim() {
  void* h = dlopen(CCLAB_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", CCLAB_SHIM_PATH, dlerror());
    _exit(99);
  }
  return h;
}

template <class F>
F sym(void* h, const char* name) {
  void* f = dlsym(h, name);
  if (f == nullptr) {
    std::fprintf(stderr, "the shim has no %s\n", name);
    _exit(98);
  }
  return reinterpret_cast<F>(f);
}

// The stub as the shim loaded it (the same path gives the same handle).
struct Stub {
  void* h = dlopen(CCLAB_STUB_PATH, RTLD_NOW | RTLD_LOCAL);
  int calls() const { return reinterpret_cast<int (*)()>(dlsym(h, "stub_calls"))(); }
  const StubCall& last() const { return *reinterpret_cast<const StubCall* (*)()>(dlsym(h, "stub_last"))(); }
  void set_result(int r) const { reinterpret_cast<void (*)(int)>(dlsym(h, "stub_set_result"))(r); }
};

const std::vector<std::pair<std::string, std::string>> kStub = {{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}};

int count_lines(const std::string& s, const std::string& needle) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);

// Fake handles: the stub never dereferences them.
const auto kComm = reinterpret_cast<ncclComm_t>(0x1000);
const auto kStream = reinterpret_cast<cudaStream_t>(0x2000);
const auto kSend = reinterpret_cast<const void*>(0x10000);
const auto kRecv = reinterpret_cast<void*>(0x20000);

}  // namespace

TEST(ShimExports, EveryNameOfTheIssueIsExported) {
  const Child c = in_child({}, [] {
    void* h = open_shim();
    std::vector<std::string> names = {"ncclGetVersion",
                                      "ncclGetUniqueId",
                                      "ncclCommInitRank",
                                      "ncclCommInitRankConfig",
                                      "ncclCommInitAll",
                                      "ncclCommSplit",
                                      "ncclCommFinalize",
                                      "ncclCommDestroy",
                                      "ncclCommAbort",
                                      "ncclCommCount",
                                      "ncclCommCuDevice",
                                      "ncclCommUserRank",
                                      "ncclCommGetAsyncError",
                                      "ncclGetErrorString",
                                      "ncclGetLastError",
                                      "ncclGroupStart",
                                      "ncclGroupEnd",
                                      "ncclAllReduce",
                                      "ncclBroadcast",
                                      "ncclBcast",
                                      "ncclReduce",
                                      "ncclAllGather",
                                      "ncclReduceScatter",
                                      "ncclSend",
                                      "ncclRecv",
                                      "ncclMemAlloc",
                                      "ncclMemFree",
                                      "ncclCommRegister",
                                      "ncclCommDeregister",
                                      "ncclRedOpCreatePreMulSum",
                                      "ncclRedOpDestroy"};
#if NCCL_VERSION_CODE >= 22800
    names.push_back("ncclAlltoAll");
#endif
    for (const std::string& n : names) {
      CHILD_CHECK(dlsym(h, n.c_str()) != nullptr);
      CHILD_CHECK(dlsym(h, ("p" + n).c_str()) != nullptr);
      if (dlsym(h, n.c_str()) == nullptr) std::fprintf(stderr, "missing %s\n", n.c_str());
    }
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
}

TEST(ShimExports, EveryFunctionOfTheNcclHeaderIsExported) {
  // Every function nccl.h declares (the header the build found), by reading it.
  std::ifstream in(CCLAB_NCCL_HEADER);
  ASSERT_TRUE(in) << CCLAB_NCCL_HEADER;
  const std::regex decl(R"(^\s*(?:ncclResult_t|const\s+char\s*\*)\s+(p?nccl\w+)\s*\()");
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, decl)) names.insert(m[1]);
  }
  ASSERT_GE(names.size(), 50u) << "nccl.h parsed to too few functions";
  const Child c = in_child({}, [&] {
    void* h = open_shim();
    for (const std::string& n : names) {
      if (dlsym(h, n.c_str()) == nullptr) {
        std::fprintf(stderr, "nccl.h declares %s, the shim does not export it\n", n.c_str());
        ++failures;
      }
    }
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
}

TEST(ShimForward, CallsArriveWithTheirArguments) {
  // Non-blocking communicators (NCCL_COMM_BLOCKING=0) are not followed: the shim adds no NCCL call of its own
  // (a followed ncclCommInitRank with ranks elsewhere adds its setup's allgathers where a GPU is present).
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"NCCL_COMM_BLOCKING", "0"}}, [] {
    void* h = open_shim();
    Stub stub;
    CHILD_CHECK(stub.h != nullptr);
    int version = 0;
    CHILD_CHECK(sym<ncclResult_t (*)(int*)>(h, "ncclGetVersion")(&version) == ncclSuccess);
    CHILD_CHECK(version == 22809);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclGetVersion") == 0);
    CHILD_CHECK(stub.last().extra == &version);

    ncclUniqueId id;
    CHILD_CHECK(sym<ncclResult_t (*)(ncclUniqueId*)>(h, "ncclGetUniqueId")(&id) == ncclSuccess);
    CHILD_CHECK(static_cast<unsigned char>(id.internal[127]) == 0x5a);
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id.internal[i] = static_cast<char>(i * 7);
    ncclComm_t comm = nullptr;
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(h, "ncclCommInitRank")(&comm, 4, id, 3) ==
                ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclCommInitRank") == 0);
    CHILD_CHECK(stub.last().nranks == 4 && stub.last().rank == 3 && stub.last().extra == &comm);
    CHILD_CHECK(std::memcmp(stub.last().id, id.internal, NCCL_UNIQUE_ID_BYTES) == 0);
    CHILD_CHECK(comm == reinterpret_cast<ncclComm_t>(0xc033));

    const int devs[2] = {0, 1};
    ncclComm_t comms[2];
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t*, int, const int*)>(h, "ncclCommInitAll")(comms, 2, devs) ==
                ncclSuccess);
    CHILD_CHECK(stub.last().root == 2 && stub.last().comm == comms && stub.last().extra == devs);

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclComm_t sub = nullptr;
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*)>(h, "ncclCommSplit")(
                    kComm, 5, 6, &sub, &config) == ncclSuccess);
    CHILD_CHECK(stub.last().root == 5 && stub.last().rank == 6 && stub.last().comm == kComm);
    CHILD_CHECK(stub.last().stream == &sub && stub.last().extra == &config);

    int n = 0;
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t, int*)>(h, "ncclCommCount")(kComm, &n) == ncclSuccess);
    CHILD_CHECK(n == 2 && stub.last().comm == kComm);

    CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 1000, ncclFloat, ncclSum, kComm, kStream) ==
                ncclSuccess);
    const StubCall& a = stub.last();
    CHILD_CHECK(std::strcmp(a.name, "ncclAllReduce") == 0);
    CHILD_CHECK(a.send == kSend && a.recv == kRecv && a.count == 1000 && a.dtype == ncclFloat && a.op == ncclSum);
    CHILD_CHECK(a.comm == kComm && a.stream == kStream);

    using BcastFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    CHILD_CHECK(sym<BcastFn>(h, "ncclBroadcast")(kSend, kRecv, 77, ncclHalf, 1, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclBroadcast") == 0);
    CHILD_CHECK(stub.last().send == kSend && stub.last().recv == kRecv && stub.last().count == 77);
    CHILD_CHECK(stub.last().dtype == ncclHalf && stub.last().root == 1 && stub.last().stream == kStream);

    using ReduceFn =
        ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
    CHILD_CHECK(sym<ReduceFn>(h, "ncclReduce")(kSend, kRecv, 9, ncclInt64, ncclMax, 1, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(stub.last().dtype == ncclInt64 && stub.last().op == ncclMax && stub.last().root == 1);

    using GatherFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    CHILD_CHECK(sym<GatherFn>(h, "ncclAllGather")(kSend, kRecv, 33, ncclBfloat16, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclAllGather") == 0 && stub.last().count == 33);

    CHILD_CHECK(sym<AllReduceFn>(h, "ncclReduceScatter")(kSend, kRecv, 44, ncclDouble, ncclMin, kComm, kStream) ==
                ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclReduceScatter") == 0 && stub.last().op == ncclMin);

    using SendFn = ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    using RecvFn = ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupStart")() == ncclSuccess);
    CHILD_CHECK(sym<SendFn>(h, "ncclSend")(kSend, 5, ncclInt8, 1, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclSend") == 0 && stub.last().root == 1 && stub.last().send == kSend);
    CHILD_CHECK(sym<RecvFn>(h, "ncclRecv")(kRecv, 6, ncclUint8, 0, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclRecv") == 0 && stub.last().root == 0 && stub.last().recv == kRecv);
    CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupEnd")() == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclGroupEnd") == 0);

    CHILD_CHECK(std::strcmp(sym<const char* (*)(ncclResult_t)>(h, "ncclGetErrorString")(ncclInvalidUsage),
                            "stub error string") == 0);
    CHILD_CHECK(stub.last().root == ncclInvalidUsage);
    CHILD_CHECK(std::strcmp(sym<const char* (*)(ncclComm_t)>(h, "ncclGetLastError")(kComm), "stub last error") == 0);
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t)>(h, "ncclCommDestroy")(kComm) == ncclSuccess);
    CHILD_CHECK(stub.last().comm == kComm);
    // One stub call per shim call: the shim adds none of its own.
    CHILD_CHECK(stub.calls() == 18);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
}

TEST(ShimForward, ResultsComeBackUnchanged) {
  const Child c = in_child(kStub, [] {
    void* h = open_shim();
    Stub stub;
    for (int r : {ncclUnhandledCudaError, ncclSystemError, ncclInternalError, ncclInvalidArgument, ncclInvalidUsage,
                  ncclRemoteError, ncclInProgress, ncclSuccess}) {
      stub.set_result(r);
      int v = 0;
      CHILD_CHECK(sym<ncclResult_t (*)(int*)>(h, "ncclGetVersion")(&v) == r);
      CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 8, ncclFloat, ncclSum, kComm, kStream) == r);
      CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 8, ncclInt32, ncclProd, kComm, kStream) == r);
      CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupStart")() == r);
      CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupEnd")() == r);
      CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t)>(h, "ncclCommDestroy")(kComm) == r);
    }
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
}

TEST(ShimForward, PmpiNamesForwardToTheirTwinOrThePlainName) {
  const Child c = in_child(kStub, [] {
    void* h = open_shim();
    Stub stub;
    // The stub has pncclAllReduce: it gets the call.
    CHILD_CHECK(sym<AllReduceFn>(h, "pncclAllReduce")(kSend, kRecv, 3, ncclHalf, ncclSum, kComm, kStream) ==
                ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "pncclAllReduce") == 0 && stub.last().count == 3);
    // The stub has no pncclBroadcast: its ncclBroadcast gets the call.
    using BcastFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    CHILD_CHECK(sym<BcastFn>(h, "pncclBroadcast")(kSend, kRecv, 4, ncclFloat, 0, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclBroadcast") == 0 && stub.last().count == 4);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
}

TEST(ShimForward, AFunctionTheRealLibraryLacksIsAnError) {
  const Child c = in_child(kStub, [] {
    void* h = open_shim();
    Stub stub;
    using BcastFn = ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    CHILD_CHECK(sym<BcastFn>(h, "ncclBcast")(kRecv, 4, ncclFloat, 0, kComm, kStream) == ncclSystemError);
    CHILD_CHECK(stub.calls() == 0);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "has no ncclBcast"), 1) << c.err;
}

TEST(ShimForward, AllReduceForwardsAndDebugSaysWhy) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"CCLAB_DEBUG", "1"}}, [] {
    void* h = open_shim();
    Stub stub;
    auto ar = sym<AllReduceFn>(h, "ncclAllReduce");
    // A call the cclab path covers, on a communicator the shim did not see created: it forwards, with the reason.
    CHILD_CHECK(ar(kSend, kRecv, 1 << 20, ncclFloat, ncclSum, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(stub.calls() == 1 && stub.last().count == size_t(1) << 20);
    CHILD_CHECK(ar(kSend, kRecv, 10, ncclInt32, ncclSum, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(ar(kSend, kRecv, 10, ncclBfloat16, ncclMax, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupStart")() == ncclSuccess);
    CHILD_CHECK(ar(kSend, kRecv, 10, ncclHalf, ncclSum, kComm, kStream) == ncclSuccess);
    CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupEnd")() == ncclSuccess);
    CHILD_CHECK(stub.calls() == 6);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: forwarding to the real NCCL"), 1) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: ncclAllReduce"), 4) << c.err;
  EXPECT_NE(c.err.find("count=1048576 dtype=float op=sum bytes=4194304 -> nccl (communicator not probed"),
            std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find("dtype=int32 op=sum bytes=40 -> nccl (dtype int32"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("-> nccl (op max"), std::string::npos) << c.err;
  // Inside a group the route is the same (the cclab path runs in groups).
  EXPECT_NE(c.err.find("dtype=half op=sum bytes=20 -> nccl (communicator not probed (not created by ncclCommInitAll"),
            std::string::npos)
      << c.err;
}

// ncclCommInitRank with fewer ranks in this process than the communicator has: the ranks are in other
// processes (one process per GPU), set up collectively through the real NCCL. Here the stub stands in for it:
// without a GPU the setup fails before the exchange, with one the stub's allgather returns no peer's record;
// either way the communicator forwards, and the debug lines say why.
TEST(ShimForward, RanksInOtherProcessesForwardWhenTheSetupFails) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"CCLAB_DEBUG", "1"}}, [] {
    void* h = open_shim();
    Stub stub;
    ncclUniqueId id;
    std::memset(id.internal, 3, sizeof(id.internal));
    ncclComm_t comm = nullptr;
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(h, "ncclCommInitRank")(&comm, 2, id, 1) ==
                ncclSuccess);
    CHILD_CHECK(comm == reinterpret_cast<ncclComm_t>(0xc033));
    const int before = stub.calls();
    CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 1 << 18, ncclFloat, ncclSum, comm, kStream) ==
                ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclAllReduce") == 0 && stub.last().comm == comm);
    CHILD_CHECK(stub.calls() == before + 1);
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t)>(h, "ncclCommDestroy")(comm) == ncclSuccess);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclCommDestroy") == 0);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: communicator of 2 ranks, rank 1 in this process on GPU "), 1) << c.err;
  EXPECT_EQ(count_lines(c.err, "the others in other processes: forwarded to NCCL (multi-process setup: "), 1) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab path ready"), 0) << c.err;
  EXPECT_NE(c.err.find("bytes=1048576 -> nccl (communicator not probed (multi-process setup: "), std::string::npos)
      << c.err;
}

// ncclCommInitRankConfig (PyTorch's init): followed when the communicator is blocking, by the config or by
// NCCL's default; a non-blocking one is forwarded without a setup.
TEST(ShimForward, CommInitRankConfigIsFollowedWhenBlocking) {
  using InitConfigFn = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
  auto run = [](std::vector<std::pair<std::string, std::string>> env, int blocking, bool with_config) {
    env.push_back({"CCLAB_NCCL_LIB", CCLAB_STUB_PATH});
    env.push_back({"CCLAB_DEBUG", "1"});
    return in_child(env, [blocking, with_config] {
      void* h = open_shim();
      ncclUniqueId id;
      std::memset(id.internal, 9, sizeof(id.internal));
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      if (blocking >= 0) config.blocking = blocking;
      ncclComm_t comm = nullptr;
      CHILD_CHECK(sym<InitConfigFn>(h, "ncclCommInitRankConfig")(&comm, 2, id, 0, with_config ? &config : nullptr) ==
                  ncclSuccess);
      CHILD_CHECK(comm == reinterpret_cast<ncclComm_t>(0xc034));
    });
  };
  const std::string followed = "cclab: communicator of 2 ranks, rank 0 in this process";
  Child c = run({}, -1, true);  // NCCL_CONFIG_INITIALIZER: blocking unset, NCCL's default
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, followed), 1) << c.err;
  c = run({}, 1, true);
  EXPECT_EQ(count_lines(c.err, followed), 1) << c.err;
  c = run({}, -1, false);
  EXPECT_EQ(count_lines(c.err, followed), 1) << c.err;
  c = run({}, 0, true);
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: communicator of"), 0) << c.err;
  c = run({{"NCCL_COMM_BLOCKING", "0"}}, -1, true);
  EXPECT_EQ(count_lines(c.err, "cclab: communicator of"), 0) << c.err;
  c = run({{"NCCL_COMM_BLOCKING", "0"}}, 1, true);  // the config's own setting wins
  EXPECT_EQ(count_lines(c.err, followed), 1) << c.err;
}

// ncclCommInitRank for every rank from one thread inside a group (NCCL initialises them at ncclGroupEnd): the
// shim decides at the group's end, when every rank has joined, so the ranks are not taken for ranks in other
// processes. (Both land on the current GPU here: no cclab path either way.)
TEST(ShimForward, CommInitRankInAGroupIsDecidedAtTheGroupsEnd) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"CCLAB_DEBUG", "1"}}, [] {
    void* h = open_shim();
    Stub stub;
    ncclUniqueId id;
    std::memset(id.internal, 4, sizeof(id.internal));
    ncclComm_t comms[2] = {};
    auto init = sym<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(h, "ncclCommInitRank");
    CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupStart")() == ncclSuccess);
    CHILD_CHECK(init(&comms[0], 2, id, 0) == ncclSuccess);
    CHILD_CHECK(init(&comms[1], 2, id, 1) == ncclSuccess);
    std::fprintf(stderr, "before the group's end\n");
    CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupEnd")() == ncclSuccess);
    CHILD_CHECK(stub.calls() == 4);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: communicator of 2 ranks"), 1) << c.err;
  EXPECT_GT(c.err.find("cclab: communicator of 2 ranks"), c.err.find("before the group's end")) << c.err;
  EXPECT_EQ(c.err.find("ranks in other processes"), std::string::npos) << c.err;
}

// ncclCommInitAll on one GPU twice: never the cclab path (on a machine without GPUs the setup fails, on one with
// GPUs the ranks share one), and the all-reduce forwards unchanged.
TEST(ShimForward, CommInitAllWithoutDistinctGpusForwards) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"CCLAB_DEBUG", "1"}}, [] {
    void* h = open_shim();
    Stub stub;
    // The stub writes no communicators: these stand in for them.
    ncclComm_t comms[2] = {reinterpret_cast<ncclComm_t>(0x3000), reinterpret_cast<ncclComm_t>(0x3001)};
    const int devs[2] = {0, 0};
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t*, int, const int*)>(h, "ncclCommInitAll")(comms, 2, devs) ==
                ncclSuccess);
    for (ncclComm_t comm : comms) {
      CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 4096, ncclHalf, ncclSum, comm, kStream) ==
                  ncclSuccess);
      CHILD_CHECK(std::strcmp(stub.last().name, "ncclAllReduce") == 0 && stub.last().comm == comm);
    }
    ncclResult_t async = ncclInProgress;
    using AsyncFn = ncclResult_t (*)(ncclComm_t, ncclResult_t*);
    stub.set_result(ncclSuccess);
    // The stub has no ncclCommGetAsyncError: the shim says so and returns ncclSystemError, as for any name.
    CHILD_CHECK(sym<AsyncFn>(h, "ncclCommGetAsyncError")(comms[0], &async) == ncclSystemError);
    CHILD_CHECK(stub.calls() == 3);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: communicator of 2 ranks on GPUs 0,0: "), 1) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab path ready"), 0) << c.err;
  EXPECT_EQ(count_lines(c.err, "dtype=half op=sum bytes=8192 -> nccl ("), 2) << c.err;
}

TEST(ShimForward, DisableSetsNothingUp) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"CCLAB_DISABLE", "1"}, {"CCLAB_DEBUG", "1"}}, [] {
    void* h = open_shim();
    ncclComm_t comms[2] = {reinterpret_cast<ncclComm_t>(0x3000), reinterpret_cast<ncclComm_t>(0x3001)};
    CHILD_CHECK(sym<ncclResult_t (*)(ncclComm_t*, int, const int*)>(h, "ncclCommInitAll")(comms, 2, nullptr) ==
                ncclSuccess);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: communicator of"), 0) << c.err;
}

TEST(ShimForward, QuietWithoutDebug) {
  const Child c = in_child(kStub, [] {
    void* h = open_shim();
    CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 16, ncclFloat, ncclSum, kComm, kStream) ==
                ncclSuccess);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(c.err, "");
}

TEST(ShimForward, DisableForwardsTheAllReduceToo) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", CCLAB_STUB_PATH}, {"CCLAB_DISABLE", "1"}, {"CCLAB_DEBUG", "1"}}, [] {
    void* h = open_shim();
    Stub stub;
    CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 256, ncclFloat, ncclSum, kComm, kStream) ==
                ncclSuccess);
    CHILD_CHECK(stub.calls() == 1);
    CHILD_CHECK(std::strcmp(stub.last().name, "ncclAllReduce") == 0);
    CHILD_CHECK(stub.last().send == kSend && stub.last().recv == kRecv && stub.last().count == 256);
    CHILD_CHECK(stub.last().dtype == ncclFloat && stub.last().op == ncclSum && stub.last().stream == kStream);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_NE(c.err.find("-> nccl (CCLAB_DISABLE=1)"), std::string::npos) << c.err;
}

TEST(ShimLoad, RefusesToLoadItself) {
  // By its own path, and through a symbolic link of another name (as if installed as libnccl.so.2).
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cclab_shim_self_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path link = dir / "libnccl.so.2";
  std::filesystem::remove(link);
  std::filesystem::create_symlink(CCLAB_SHIM_PATH, link);
  for (const std::string& lib : {std::string(CCLAB_SHIM_PATH), link.string()}) {
    const Child c = in_child({{"CCLAB_NCCL_LIB", lib}}, [] {
      void* h = open_shim();
      int v = 0;
      CHILD_CHECK(sym<ncclResult_t (*)(int*)>(h, "ncclGetVersion")(&v) == ncclSystemError);
      CHILD_CHECK(sym<AllReduceFn>(h, "ncclAllReduce")(kSend, kRecv, 8, ncclFloat, ncclSum, kComm, kStream) ==
                  ncclSystemError);
      CHILD_CHECK(sym<ncclResult_t (*)()>(h, "ncclGroupStart")() == ncclSystemError);
      CHILD_CHECK(sym<const char* (*)(ncclResult_t)>(h, "ncclGetErrorString")(ncclSystemError) != nullptr);
      CHILD_CHECK(std::strstr(sym<const char* (*)(ncclComm_t)>(h, "ncclGetLastError")(kComm), "itself") != nullptr);
    });
    EXPECT_TRUE(c.exited_ok()) << lib << ": " << c.err;
    EXPECT_EQ(count_lines(c.err, "cclab: "), 1) << c.err;
    EXPECT_EQ(count_lines(c.err, "is libcclab_nccl.so itself"), 1) << c.err;
  }
  std::filesystem::remove_all(dir);
}

TEST(ShimLoad, AMissingRealLibraryIsAnError) {
  const Child c = in_child({{"CCLAB_NCCL_LIB", "/nonexistent/libnccl.so.2"}}, [] {
    void* h = open_shim();
    int v = 0;
    CHILD_CHECK(sym<ncclResult_t (*)(int*)>(h, "ncclGetVersion")(&v) == ncclSystemError);
    CHILD_CHECK(sym<ncclResult_t (*)(int*)>(h, "ncclGetVersion")(&v) == ncclSystemError);
    CHILD_CHECK(std::strcmp(sym<const char* (*)(ncclResult_t)>(h, "ncclGetErrorString")(ncclSuccess), "no error") == 0);
  });
  EXPECT_TRUE(c.exited_ok()) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: cannot load the real NCCL /nonexistent/libnccl.so.2"), 1) << c.err;
  EXPECT_EQ(count_lines(c.err, "cclab: "), 1) << c.err;
}
