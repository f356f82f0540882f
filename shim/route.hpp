// The shim's one decision: does an ncclAllReduce call run cclab's allreduce.bidir or go to the real NCCL?
// A pure function of what the shim knows about the call, the communicator and its own state, so the
// whole table is tested on the CPU (tests/shim/test_shim_route.cpp). Anything not known to be safe
// forwards: the cclab path must never give a wrong result or hang.
#pragma once

#include <cstddef>
#include <string>

namespace cclab::shim {

enum class Path { nccl, cclab };

struct RouteInput {
  // the call
  int dtype = -1;          // ncclDataType_t
  int op = -1;             // ncclRedOp_t (values from ncclNumOps up are ncclRedOpCreate* ops)
  size_t bytes = 0;        // count x element size
  size_t alignment = 0;    // the largest power of two (at most 16) both sendbuff and recvbuff are aligned to
  bool in_group = false;   // between ncclGroupStart and ncclGroupEnd on this thread
  bool capturing = false;  // the stream is being captured into a CUDA graph
  // the communicator
  bool comm_probed = false;   // the facts below were established for this communicator
  std::string comm_note;      // why not, when the shim knows (ranks in other processes, a failed setup)
  int nranks = 0;             // ranks in the communicator
  bool one_node_p2p = false;  // every rank on its own GPU of one node, P2P between every pair, buffers ready
  size_t lamport_cap = 0;     // ranks in other processes: lamport bytes preallocated per peer (0: they grow);
                              // a larger lamport message runs in chunks of it
  // the shim
  bool disabled = false;           // CCLAB_DISABLE=1
  bool path_built = false;         // the cclab path (per-communicator buffers, launch) is in this library
  bool capture_supported = false;  // the cclab path may be captured into CUDA graphs
  bool group_supported = false;    // the cclab path may run inside ncclGroupStart/ncclGroupEnd
  int max_ranks = 8;               // the largest communicator the cclab path covers
  // allreduce.bidir's kernel mode for this size (lower::choose_bidir_mode's name for it, from the 2-rank
  // table): the shim runs the rank-local modes only, "ll" and "lamport"; any other forwards.
  std::string mode;
};

struct Route {
  Path path = Path::nccl;
  std::string reason;  // one phrase, for CCLAB_DEBUG ("allreduce.bidir <mode>" on the cclab path)
};

// Checks in a fixed order and returns the first reason to forward, else cclab.
Route route_allreduce(const RouteInput& in);

// The alignment route_allreduce needs of both buffers for a mode: ll loads and stores the user's buffers in
// 4-byte words, lamport in 16-byte vectors. nccl-tests shifts its buffers by the message size on every other
// call, so an 8-byte all-reduce alternates 16- and 8-byte aligned buffers.
size_t alignment_needed(const std::string& mode);
// The largest power of two, at most 16, that divides both addresses.
size_t common_alignment(const void* a, const void* b);

// Names for the debug lines: nccl-tests' spellings ("float", "half", "bfloat16", "sum", ...), or the number.
std::string dtype_name(int dtype);
std::string op_name(int op);
// Element size of an ncclDataType_t in bytes, 0 for an unknown type.
size_t dtype_size(int dtype);

}  // namespace cclab::shim
