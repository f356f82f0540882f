#include "shim/route.hpp"

#include <nccl.h>

#include <cstdint>

namespace cclab::shim {

namespace {
Route nccl(std::string reason) { return {Path::nccl, std::move(reason)}; }
bool covered_dtype(int t) { return t == ncclFloat32 || t == ncclFloat16 || t == ncclBfloat16; }
}  // namespace

Route route_allreduce(const RouteInput& in) {
  if (in.disabled) return nccl("CCLAB_DISABLE=1");
  if (!covered_dtype(in.dtype)) return nccl("dtype " + dtype_name(in.dtype) + " (cclab covers float, half, bfloat16)");
  if (in.op != ncclSum) return nccl("op " + op_name(in.op) + " (cclab covers sum)");
  if (in.bytes == 0) return nccl("empty message");
  if (in.in_group && !in.group_supported) return nccl("inside ncclGroupStart/ncclGroupEnd");
  if (in.capturing && !in.capture_supported) return nccl("stream capture not supported by the cclab path");
  if (!in.comm_probed)
    return nccl("communicator not probed (" + (in.comm_note.empty() ? "node, P2P, peer buffers" : in.comm_note) + ")");
  if (in.nranks < 2) return nccl("single rank");
  if (in.nranks > in.max_ranks)
    return nccl(std::to_string(in.nranks) + " ranks (cclab covers up to " + std::to_string(in.max_ranks) + ")");
  if (!in.one_node_p2p) return nccl("ranks not all on one node with NVLink P2P");
  if (!in.path_built) return nccl("cclab path not built in this library");
  if (in.mode != "ll" && in.mode != "lamport")
    return nccl("mode " + (in.mode.empty() ? std::string("none") : in.mode) +
                " at this size (the shim runs ll and lamport)");
  if (in.alignment < alignment_needed(in.mode))
    return nccl("buffers not " + std::to_string(alignment_needed(in.mode)) + "-byte aligned (" + in.mode +
                " needs it)");
  if (in.mode == "lamport" && in.lamport_cap > 0 && in.bytes > in.lamport_cap)
    return {Path::cclab, "allreduce.bidir lamport in chunks of the " + std::to_string(in.lamport_cap) +
                             " bytes preallocated for ranks in other processes"};
  return {Path::cclab, "allreduce.bidir " + in.mode};
}

size_t alignment_needed(const std::string& mode) { return mode == "ll" ? 4 : 16; }

size_t common_alignment(const void* a, const void* b) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | uintptr_t(16);
  return size_t(bits & (~bits + 1));  // the lowest set bit
}

std::string dtype_name(int dtype) {
  switch (dtype) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "half";
    case ncclFloat32:
      return "float";
    case ncclFloat64:
      return "double";
    case ncclBfloat16:
      return "bfloat16";
#if NCCL_VERSION_CODE >= 22400
    case ncclFloat8e4m3:
      return "f8e4m3";
    case ncclFloat8e5m2:
      return "f8e5m2";
#endif
    default:
      return "type" + std::to_string(dtype);
  }
}

std::string op_name(int op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return op >= ncclNumOps ? "custom" + std::to_string(op) : "op" + std::to_string(op);
  }
}

size_t dtype_size(int dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
#if NCCL_VERSION_CODE >= 22400
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
#endif
    default:
      return 0;
  }
}

}  // namespace cclab::shim
