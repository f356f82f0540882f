// The one place where every executor choice is made: a collective (algorithm, ranks, count, dtype, redop,
// in place, tune settings) on a machine (SMs per GPU, GPU of each rank) becomes a lowered plan: which path
// runs it (a graph of copies and kernels, one fused kernel per GPU, an all-reduce kernel, or the NCCL
// library), the launch of that path, the graph it makes and how many launches one graph replay holds.
// The executor runs the plan; the simulator prices the same plan (DESIGN.md, "The flow").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "lower/bidir.hpp"
#include "lower/fused.hpp"
#include "lower/general.hpp"

namespace cclab::lower {

enum class Path : uint8_t {
  general,  // a CUDA graph of copy-engine copies and kernels on streams, events between them
  fused,    // one kernel per GPU runs the whole schedule (lanes of CTAs, flags in peer memory)
  kernel,   // one of allreduce.bidir's all-reduce kernels per GPU
  library,  // NCCL
};
std::string_view path_name(Path p);

// The settings `--tune key=value,...` carries, read once. Unknown keys are input errors, except NCCL's own
// (NCCL_*), which the NCCL model and the library read.
struct Settings {
  BidirParams bidir;
  FusedParams fused;
  std::optional<BidirMode> mode;  // mode=: allreduce.bidir's mode, whatever the size
  int streams = 16;               // streams per rank of the general lowering (channels beyond share them)
  int reduce_blocks = 0;          // CTAs of the general lowering's reduce kernels; 0: the kernel's default
  int channels = 0;               // the algorithm's channels; 0: its default
  int64_t chunk_bytes = 0;        // the algorithm's pipeline chunk; 0: its default
  int sol_chunks = 1;             // sol.bidir_copy: copies per rank
  int launches = 0;               // launches per replayed graph; 0: the plan's default (launches_for)
  // copies=: how the general lowering moves data (copy_engine or kernel: SM loads and stores); unset: as the
  // schedule says (copy engines where it says nothing).
  std::optional<Lowering> copies;
};
// Throws an input error naming an unknown key or a bad value. Where `lenient` (a record's settings, which
// other harnesses write too), text without '=' and unknown keys are ignored.
Settings parse_settings(const std::string& tune, bool lenient = false);

// The facts of the machine the plan runs on.
struct Machine {
  int sms = 132;                 // SMs per GPU
  std::vector<int> rank_device;  // GPU of each rank; empty: rank r on GPU r
  // CTAs of an all-reduce kernel that fit on a GPU at once (LaunchLimits::resident); empty: no limit.
  std::function<int(BidirMode mode, int threads, int unroll)> resident;
};

// SMs of a GPU by its model name (NVIDIA's datasheets and CUDA's device properties); 132 (H100/H200 SXM)
// where the model is not known.
int sms_of_gpu(std::string_view model);

struct LoweredPlan {
  std::string algo;
  Path path = Path::general;
  std::optional<BidirMode> mode;  // allreduce.bidir and its modes
  BidirLaunch kernel;             // Path::kernel
  Schedule schedule;              // what runs (general, fused); NCCL's algorithm as modelled (library)
  Plan general;                   // Path::general: streams, steps (copies coalesced) and events
  FusedProgram fused;             // Path::fused
  int reduce_blocks = 0;          // Path::general: CTAs of the reduce kernels (0: the kernel's default)
  int launches = 1;               // launches of the collective per replayed CUDA graph
  // Path::general: whether the replayed graph is small enough for the harness to hold its start behind a
  // spinning kernel until the host has launched all of it (else the host's launch is timed too).
  bool held = true;
  std::string why;  // a choice worth knowing (e.g. why auto did not take the fused path)

  int64_t graph_nodes() const;  // nodes of one replayed graph (general path)
  // The plan as structured record columns (name, value): lowering, bidir_mode, grid, threads, unroll, pdl (the
  // kernels), lanes, ctas (fused), streams, steps, events (graphs), launches. Two runs of the same plan have the
  // same columns.
  std::vector<std::pair<std::string, std::string>> columns() const;
};

// Graphs of more nodes than this run without the harness's hold kernel (exec/runtime/harness.cpp): the hold's
// spin would outlast the host's launch of a larger graph, so the launch is timed with it.
constexpr int64_t kMaxHeldGraphNodes = 512;

// Launches per replayed graph where `--tune launches=` does not say: one replay has a fixed cost (the
// graph's launch on each GPU, the fork and join events: ~15 us on 2 x H200), spread over its launches.
// One-kernel-per-GPU plans (NCCL's, the all-reduce kernels, the fused path) take 100, so that cost adds
// ~0.15 us to each; general plans take 20, so that a replay stays a graph the hold kernel can cover (on more than
// 2 GPUs fewer where their steps need it: held_launches).
int launches_for(Path p);
// The launches per replay a plan of path `p` takes under `set`: `--tune launches=` where given, else launches_for
// (general plans on more than 2 GPUs may take fewer: held_launches).
int replay_launches(Path p, const Settings& set);

// Launches per replay of a general plan of `steps` nodes on more than 2 GPUs (one rank each), at most `most`: as many
// as keep the graph held (kMaxHeldGraphNodes), at least 1. There the host's launch of a larger, unheld multi-GPU graph
// is timed and grows faster than its nodes (4 x H100: ~14 us per node at 960 nodes, ~27 at 1920;
// docs/findings/2026-11-27-four-gpus-large-sizes-held-graphs.md).
int held_launches(int64_t steps, int most);

// Rings whose every step copies a partial sum and then reduces it (allreduce.ring, reducescatter.ring). On one
// channel a step's copy and its reduction run one after the other on the channel's stream; on more than 2 GPUs the
// general path (one rank per GPU) gives them kRingOverlapChannels channels, so that one part's copy runs beside another
// part's reduction (held graphs on 4 x H200 at 256 MiB: reducescatter.ring 0.91 -> 1.01 x NCCL, allreduce.ring 0.94 ->
// 1.01 x; same findings). 2 GPUs keep one channel (their records ran one; not measured there).
bool ring_reduces(std::string_view algo);
constexpr int kRingOverlapChannels = 2;

// The record columns `columns()` writes, in order (the CSV's plan columns).
const std::vector<std::string>& plan_column_names();

// The chunk of a pipelined chain (broadcast.pipeline) of `nranks` ranks carrying `bytes` on the general path,
// where `--tune chunk_bytes=` does not say (the fused path's steps cost far less: it keeps the default). C chunks over
// n - 1 hops take (n - 2 + C)(a + S / (C B)): the fill of n - 2 steps against a step's fixed cost a per chunk, least at
// C = sqrt((n - 2) S / (a B)), i.e. chunks of sqrt(S a B / (n - 2)) bytes. a B is kPipelineStepBytes; chunks are at
// least the default (NCCL's step, classic::kDefaultChunkBytes) and at most the message. Chains of one hop (2 ranks)
// overlap nothing: 0, the default.
int64_t pipeline_chunk_bytes(int64_t bytes, int nranks);
// What one NVLink 4 direction moves in a general plan's step fixed cost: a copy node and a cross-GPU event in a
// replayed CUDA graph, ~2.5 + ~6.8 us on 2 x H200 (profile terms exec.copy_node_us, exec.event_peer_us) at
// ~385 GB/s of copy-engine bandwidth (18 links x 25 GB/s, NVIDIA H100/H200 datasheets, times the copy engines'
// measured efficiency): ~3.6 MB.
constexpr double kPipelineStepBytes = 9.4e-6 * 385e9;

// The plan for one collective. `algo` is a registry entry (`cclab list`); args.count is set. Throws an
// input error where the algorithm cannot run these arguments.
LoweredPlan lower_collective(const Algorithm& algo, const AlgoArgs& args, const Machine& machine);

}  // namespace cclab::lower
