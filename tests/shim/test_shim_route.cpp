// The shim's all-reduce route (shim/route.hpp): the cclab path only where every condition holds, and
// the first failing condition named otherwise.
#include <gtest/gtest.h>
#include <nccl.h>

#include "shim/route.hpp"

using cclab::shim::Path;
using cclab::shim::route_allreduce;
using cclab::shim::RouteInput;

namespace {

// Every condition met: float sum, 4 MiB (lamport), two ranks on one NVLink node, the path built.
RouteInput covered() {
  RouteInput in;
  in.dtype = ncclFloat32;
  in.op = ncclSum;
  in.bytes = 4 << 20;
  in.alignment = 16;
  in.comm_probed = true;
  in.nranks = 2;
  in.one_node_p2p = true;
  in.path_built = true;
  in.capture_supported = true;
  in.group_supported = true;
  in.mode = "lamport";
  return in;
}

std::string reason_of(const RouteInput& in) {
  const auto r = route_allreduce(in);
  return r.path == Path::cclab ? "cclab: " + r.reason : r.reason;
}

// Ranks in other processes preallocate lamport's buffers (lamport_cap): larger lamport sizes run in chunks of them.
TEST(ShimRoute, LamportAboveThePreallocatedBuffersRunsInChunks) {
  RouteInput in = covered();
  in.capture_supported = false;
  in.lamport_cap = size_t(64) << 20;
  in.bytes = size_t(64) << 20;
  EXPECT_EQ(reason_of(in), "cclab: allreduce.bidir lamport");
  in.bytes += 4;
  EXPECT_EQ(route_allreduce(in).path, Path::cclab);
  EXPECT_NE(reason_of(in).find("in chunks of the 67108864 bytes preallocated"), std::string::npos) << reason_of(in);
  in.lamport_cap = 0;  // one process: the buffers grow
  EXPECT_EQ(route_allreduce(in).path, Path::cclab);
  in.lamport_cap = 1024;
  in.mode = "ll";
  in.bytes = 4096;
  EXPECT_EQ(route_allreduce(in).path, Path::cclab);
}

}  // namespace

TEST(ShimRoute, CoveredCallsRunCclab) {
  for (int dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    for (int nranks : {2, 4, 8}) {
      for (size_t bytes : {size_t(8), size_t(1) << 20, size_t(1) << 30}) {
        RouteInput in = covered();
        in.dtype = dtype;
        in.nranks = nranks;
        in.bytes = bytes;
        const auto r = route_allreduce(in);
        EXPECT_EQ(r.path, Path::cclab) << dtype << " " << nranks << " " << bytes << ": " << r.reason;
        EXPECT_EQ(r.reason, "allreduce.bidir lamport");
      }
    }
  }
  RouteInput in = covered();
  in.capturing = true;  // capturable where the path says so
  EXPECT_EQ(route_allreduce(in).path, Path::cclab);
  in.in_group = true;  // and inside a group where it says so
  EXPECT_EQ(route_allreduce(in).path, Path::cclab);
  in.mode = "ll";
  EXPECT_EQ(route_allreduce(in).reason, "allreduce.bidir ll");
}

TEST(ShimRoute, EachUncoveredConditionForwardsWithItsReason) {
  struct Case {
    const char* what;
    void (*change)(RouteInput&);
    const char* reason;
  };
  const Case cases[] = {
      {"disabled", [](RouteInput& in) { in.disabled = true; }, "CCLAB_DISABLE=1"},
      {"int32", [](RouteInput& in) { in.dtype = ncclInt32; }, "dtype int32 (cclab covers float, half, bfloat16)"},
      {"double", [](RouteInput& in) { in.dtype = ncclFloat64; }, "dtype double (cclab covers float, half, bfloat16)"},
      {"int8", [](RouteInput& in) { in.dtype = ncclInt8; }, "dtype int8 (cclab covers float, half, bfloat16)"},
      {"unknown dtype", [](RouteInput& in) { in.dtype = 99; }, "dtype type99 (cclab covers float, half, bfloat16)"},
      {"prod", [](RouteInput& in) { in.op = ncclProd; }, "op prod (cclab covers sum)"},
      {"max", [](RouteInput& in) { in.op = ncclMax; }, "op max (cclab covers sum)"},
      {"min", [](RouteInput& in) { in.op = ncclMin; }, "op min (cclab covers sum)"},
      {"avg", [](RouteInput& in) { in.op = ncclAvg; }, "op avg (cclab covers sum)"},
      {"premulsum", [](RouteInput& in) { in.op = ncclNumOps; }, "op custom5 (cclab covers sum)"},
      {"empty", [](RouteInput& in) { in.bytes = 0; }, "empty message"},
      {"lamport 8-byte aligned", [](RouteInput& in) { in.alignment = 8; },
       "buffers not 16-byte aligned (lamport needs it)"},
      {"ll 2-byte aligned",
       [](RouteInput& in) {
         in.mode = "ll";
         in.alignment = 2;
       },
       "buffers not 4-byte aligned (ll needs it)"},
      {"group unsupported",
       [](RouteInput& in) {
         in.in_group = true;
         in.group_supported = false;
       },
       "inside ncclGroupStart/ncclGroupEnd"},
      {"capture unsupported",
       [](RouteInput& in) {
         in.capturing = true;
         in.capture_supported = false;
       },
       "stream capture not supported by the cclab path"},
      {"not probed", [](RouteInput& in) { in.comm_probed = false; },
       "communicator not probed (node, P2P, peer buffers)"},
      {"not probed, with the shim's finding",
       [](RouteInput& in) {
         in.comm_probed = false;
         in.comm_note = "ranks in other processes";
       },
       "communicator not probed (ranks in other processes)"},
      {"one rank", [](RouteInput& in) { in.nranks = 1; }, "single rank"},
      {"16 ranks", [](RouteInput& in) { in.nranks = 16; }, "16 ranks (cclab covers up to 8)"},
      {"no p2p", [](RouteInput& in) { in.one_node_p2p = false; }, "ranks not all on one node with NVLink P2P"},
      {"not built", [](RouteInput& in) { in.path_built = false; }, "cclab path not built in this library"},
      {"copy-engine size", [](RouteInput& in) { in.mode = "copy"; },
       "mode copy at this size (the shim runs ll and lamport)"},
      {"flash tuned in", [](RouteInput& in) { in.mode = "flash"; },
       "mode flash at this size (the shim runs ll and lamport)"},
      {"no mode", [](RouteInput& in) { in.mode.clear(); }, "mode none at this size (the shim runs ll and lamport)"},
  };
  for (const Case& c : cases) {
    RouteInput in = covered();
    c.change(in);
    const auto r = route_allreduce(in);
    EXPECT_EQ(r.path, Path::nccl) << c.what;
    EXPECT_EQ(r.reason, c.reason) << c.what;
  }
}

TEST(ShimRoute, TheFirstReasonWins) {
  RouteInput in = covered();
  in.path_built = false;
  in.one_node_p2p = false;
  in.op = ncclMax;
  EXPECT_EQ(reason_of(in), "op max (cclab covers sum)");
  in.disabled = true;
  EXPECT_EQ(reason_of(in), "CCLAB_DISABLE=1");
  // A communicator the shim could not set up forwards before its size is looked at.
  in = covered();
  in.comm_probed = false;
  in.mode = "copy";
  EXPECT_EQ(reason_of(in), "communicator not probed (node, P2P, peer buffers)");
  // A communicator the shim knows nothing about forwards a covered call.
  RouteInput unknown;
  unknown.dtype = ncclFloat32;
  unknown.op = ncclSum;
  unknown.bytes = 1 << 20;
  unknown.alignment = 16;
  EXPECT_EQ(reason_of(unknown), "communicator not probed (node, P2P, peer buffers)");
}

// nccl-tests shifts its buffers by the message size on every other call: at 8 B they are 8-byte aligned there, and
// ll (4-byte words) runs them, where lamport (16-byte vectors) forwards.
TEST(ShimRoute, LlRunsBuffersAlignedToItsWords) {
  RouteInput in = covered();
  in.mode = "ll";
  in.bytes = 8;
  for (size_t a : {4, 8, 16}) {
    in.alignment = a;
    EXPECT_EQ(reason_of(in), "cclab: allreduce.bidir ll") << a;
  }
  in.mode = "lamport";
  in.alignment = 8;
  EXPECT_EQ(route_allreduce(in).path, Path::nccl);
}

TEST(ShimRoute, CommonAlignmentIsTheLowestBitOfBothAddresses) {
  using cclab::shim::common_alignment;
  alignas(16) static char buf[64];
  EXPECT_EQ(common_alignment(buf, buf + 32), 16u);
  EXPECT_EQ(common_alignment(buf + 8, buf), 8u);
  EXPECT_EQ(common_alignment(buf, buf + 4), 4u);
  EXPECT_EQ(common_alignment(buf + 2, buf + 2), 2u);
  EXPECT_EQ(common_alignment(buf + 1, buf + 16), 1u);
  EXPECT_EQ(common_alignment(buf + 12, buf + 12), 4u);
}

TEST(ShimRoute, NamesAndSizes) {
  EXPECT_EQ(cclab::shim::dtype_name(ncclFloat), "float");
  EXPECT_EQ(cclab::shim::dtype_name(ncclHalf), "half");
  EXPECT_EQ(cclab::shim::dtype_name(ncclBfloat16), "bfloat16");
  EXPECT_EQ(cclab::shim::op_name(ncclSum), "sum");
  EXPECT_EQ(cclab::shim::dtype_size(ncclFloat), 4u);
  EXPECT_EQ(cclab::shim::dtype_size(ncclHalf), 2u);
  EXPECT_EQ(cclab::shim::dtype_size(ncclBfloat16), 2u);
  EXPECT_EQ(cclab::shim::dtype_size(ncclDouble), 8u);
  EXPECT_EQ(cclab::shim::dtype_size(ncclUint8), 1u);
  EXPECT_EQ(cclab::shim::dtype_size(99), 0u);
}
