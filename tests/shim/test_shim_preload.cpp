// LD_PRELOAD=libcclab_nccl.so in front of a program linked to libnccl.so.2 (preload_app.cpp, with the test
// stub as its libnccl.so.2): the shim takes the calls, finds the real library by its default name, and
// hands every call and result through.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

std::string run(const std::string& env) {
  const std::string cmd =
      "env -u CCLAB_DISABLE -u CCLAB_DEBUG -u CCLAB_NCCL_LIB " + env + " " CCLAB_PRELOAD_APP " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::array<char, 512> buf;
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = pclose(p);
  if (status != 0) out += "exit status " + std::to_string(status) + "\n";
  return out;
}

const char* kApp =
    "app: version 22809 rc 0; allreduce rc 0 count 4096 dtype 9 op 0 same-buffers 1\n"
    "app: broadcast rc 5 root 1; stub calls 3\n";

}  // namespace

TEST(ShimPreload, WithoutTheShimTheProgramTalksToItsLibnccl) { EXPECT_EQ(run(""), kApp); }

TEST(ShimPreload, ThePreloadedShimForwardsEveryCallAndResult) {
  EXPECT_EQ(run("LD_PRELOAD=" CCLAB_SHIM_PATH), kApp);
  const std::string debug = run("LD_PRELOAD=" CCLAB_SHIM_PATH " CCLAB_DEBUG=1");
  EXPECT_NE(debug.find("cclab: forwarding to the real NCCL "), std::string::npos) << debug;
  EXPECT_NE(debug.find("fake_nccl/libnccl.so.2"), std::string::npos) << debug;
  EXPECT_NE(debug.find("cclab: ncclAllReduce count=4096 dtype=bfloat16 op=sum bytes=8192 -> nccl ("), std::string::npos)
      << debug;
  EXPECT_NE(debug.find(kApp), std::string::npos) << debug;
}

TEST(ShimPreload, DisabledStillForwards) {
  const std::string out = run("LD_PRELOAD=" CCLAB_SHIM_PATH " CCLAB_DISABLE=1 CCLAB_DEBUG=1");
  EXPECT_NE(out.find("-> nccl (CCLAB_DISABLE=1)"), std::string::npos) << out;
  EXPECT_NE(out.find(kApp), std::string::npos) << out;
}
