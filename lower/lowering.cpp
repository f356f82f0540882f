#include "lower/lowering.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "algorithms/classic_common.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

namespace cclab::lower {

namespace {

// The keys of the BidirParams and FusedParams readers (their apply() read them) and of Settings itself.
const std::set<std::string, std::less<>>& known_keys() {
  static const std::set<std::string, std::less<>> keys = {
      // allreduce.bidir (BidirParams::apply)
      "flash_blocks", "flash_threads", "flash_stages", "flash_unroll", "lanes", "slots", "slot_bytes", "stream_threads",
      "ll_blocks", "ll_threads", "ll_max_bytes", "ll_pdl", "flash_pdl", "ce_pieces", "ce_chunk", "ce_slots", "ce_push",
      "ce_reduce_blocks", "ce_split", "flash_engine", "flash_ldg_unroll", "auto_ll_max", "auto_flash_max", "auto_large",
      "auto_mid", "push_blocks", "push_threads", "push_unroll", "push_pdl", "lamport_blocks", "lamport_threads",
      "lamport_unroll", "lamport_ahead", "lamport_split", "lamport_pdl", "lamport_max_bytes", "kernel_timeout",
      "wide_ll_max", "wide_mid_max", "wide_mid", "wide_large", "wide_ring_min", "twoshot_blocks", "twoshot_threads",
      "twoshot_unroll", "twoshot_load_unroll", "twoshot_pdl", "twoshot_push", "twoshot_load_max",
      // the fused path (FusedParams::apply)
      "lowering", "fused_max", "wide_fused_max", "wide_round_fused_max", "wide_sliced_fused_max", "sliced_op_min",
      "fused_threads", "fused_cta_bytes", "fused_ctas", "fused_fence", "fused_pdl", "fused_slices", "fused_timeout",
      // Settings
      "mode", "streams", "reduce_blocks", "channels", "chunk_bytes", "sol_chunks", "launches", "copies"};
  return keys;
}

bool is_bidir_family(std::string_view name) {
  return name == "allreduce.bidir" || name.starts_with("allreduce.bidir.");
}

}  // namespace

std::string_view path_name(Path p) {
  switch (p) {
    case Path::general:
      return "general";
    case Path::fused:
      return "fused";
    case Path::kernel:
      return "kernel";
    case Path::library:
      return "library";
  }
  return "?";
}

int64_t pipeline_chunk_bytes(int64_t bytes, int nranks) {
  if (nranks < 3 || bytes <= 0) return 0;
  const double best = std::sqrt(double(bytes) * kPipelineStepBytes / double(nranks - 2));
  return std::clamp<int64_t>(int64_t(best), classic::kDefaultChunkBytes, std::max(bytes, classic::kDefaultChunkBytes));
}

int held_launches(int64_t steps, int most) {
  return int(std::clamp<int64_t>(kMaxHeldGraphNodes / std::max<int64_t>(steps, 1), 1, std::max(most, 1)));
}

bool ring_reduces(std::string_view algo) { return algo == "allreduce.ring" || algo == "reducescatter.ring"; }

int sms_of_gpu(std::string_view model) {
  // cudaDeviceProp::multiProcessorCount of each part (NVIDIA's architecture whitepapers and datasheets).
  static const std::pair<std::string_view, int> kParts[] = {
      {"H100 PCIe", 114}, {"H100", 132}, {"H200", 132},       {"H20", 78},   {"GH200", 132}, {"B200", 148},
      {"A100", 108},      {"V100", 80},  {"RTX 2080 Ti", 68}, {"L40S", 142}, {"L4", 58}};
  for (const auto& [name, sms] : kParts)
    if (model.find(name) != std::string_view::npos) return sms;
  return 132;
}

Settings parse_settings(const std::string& tune, bool lenient) {
  Settings s;
  std::stringstream ss(tune);
  std::string kv;
  while (std::getline(ss, kv, ',')) {
    if (kv.empty()) continue;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      if (lenient) continue;
      throw_input("--tune: expected key=value, got '" + kv + "'");
    }
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1), flag = "--tune " + k;
    if (k.starts_with("NCCL_")) continue;  // NCCL's own settings: the library and the NCCL model read them
    if (!known_keys().count(k)) {
      if (lenient) continue;
      throw_input("--tune: unknown key '" + k + "'");
    }
    if (k == "mode")
      s.mode = parse_bidir_mode(v);
    else if (k == "streams")
      s.streams = int(parse_int(flag, v, 1, 1 << 10));
    else if (k == "reduce_blocks")
      s.reduce_blocks = int(parse_int(flag, v, 0, 1 << 20));
    else if (k == "channels")
      s.channels = int(parse_int(flag, v, 0, 1 << 10));
    else if (k == "chunk_bytes")
      s.chunk_bytes = parse_size(flag, v);
    else if (k == "sol_chunks")
      s.sol_chunks = int(parse_int(flag, v, 1, 1 << 20));
    else if (k == "launches")
      s.launches = int(parse_int(flag, v, 1, 1 << 20));
    else if (k == "copies") {
      if (v != "copy_engine" && v != "kernel")
        throw_input("--tune copies=" + v + ": copy_engine or kernel (how the general lowering moves data)");
      s.copies = v == "kernel" ? Lowering::kernel : Lowering::copy_engine;
    }
  }
  s.bidir.apply(s.fused.apply(tune));
  return s;
}

int launches_for(Path p) { return p == Path::general ? 20 : 100; }

int replay_launches(Path p, const Settings& set) { return set.launches > 0 ? set.launches : launches_for(p); }

const std::vector<std::string>& plan_column_names() {
  static const std::vector<std::string> names = {"lowering", "bidir_mode", "grid",    "threads", "unroll", "pdl",
                                                 "lanes",    "ctas",       "streams", "steps",   "events", "launches"};
  return names;
}

int64_t LoweredPlan::graph_nodes() const { return int64_t(general.steps.size()) * launches; }

std::vector<std::pair<std::string, std::string>> LoweredPlan::columns() const {
  std::vector<std::pair<std::string, std::string>> c;
  for (const auto& n : plan_column_names()) c.emplace_back(n, "");
  auto set = [&](const std::string& name, const std::string& v) {
    for (auto& [k, val] : c)
      if (k == name) val = v;
  };
  set("lowering", std::string(path_name(path)));
  if (mode) set("bidir_mode", std::string(bidir_mode_name(*mode)));
  set("launches", std::to_string(launches));
  switch (path) {
    case Path::kernel:
      set("grid", std::to_string(kernel.grid));
      set("threads", std::to_string(kernel.threads));
      set("unroll", std::to_string(kernel.unroll));
      set("pdl", kernel.pdl ? "1" : "0");
      break;
    case Path::fused: {
      int ctas = 0;
      for (const auto& d : fused.devices) ctas = std::max(ctas, int(d.ctas));
      set("lanes", std::to_string(fused.lanes.size()));
      set("ctas", std::to_string(ctas));
      set("steps", std::to_string(schedule.ops.size()));
      set("events", std::to_string(fused.waits));
      break;
    }
    case Path::general:
      set("streams", std::to_string(general.streams.size()));
      set("steps", std::to_string(general.steps.size()));
      set("events", std::to_string(general.num_events()));
      break;
    case Path::library:
      break;
  }
  return c;
}

LoweredPlan lower_collective(const Algorithm& algo, const AlgoArgs& args_in, const Machine& machine) {
  const Settings set = parse_settings(args_in.tune, /*lenient=*/true);
  AlgoArgs args = args_in;
  LoweredPlan p;
  p.algo = algo.name;
  const int n = args.nranks;
  std::vector<int> rank_device = machine.rank_device;
  if (rank_device.empty())
    for (int r = 0; r < n; ++r) rank_device.push_back(r);
  int share = 1;
  for (int d : rank_device) share = std::max<int>(share, int(std::count(rank_device.begin(), rank_device.end(), d)));
  const int64_t bytes = args.count * dtype_size(args.dtype);
  // More than 2 GPUs, one rank each: where held_launches and ring_reduces apply.
  const bool wide = std::set<int>(rank_device.begin(), rank_device.end()).size() > 2 && share == 1;
  auto finish = [&](Path path) -> LoweredPlan& {
    p.path = path;
    p.launches = replay_launches(path, set);
    if (path == Path::general && set.launches == 0 && wide)
      p.launches = held_launches(int64_t(p.general.steps.size()), p.launches);
    if (path == Path::general) p.held = p.graph_nodes() <= kMaxHeldGraphNodes;
    return p;
  };
  auto general = [&](Schedule s, int reduce_blocks) -> LoweredPlan& {
    if (set.copies) s.lowering = *set.copies;
    LowerOptions lo;
    lo.rank_device = rank_device;
    lo.max_streams_per_rank = set.streams;
    p.general = lower(s, lo);
    p.schedule = std::move(s);
    p.reduce_blocks = reduce_blocks;
    return finish(Path::general);
  };

  if (algo.name == "sol.bidir_copy")
    return general(sol_bidir_copy_schedule(n, args.count, args.dtype, set.sol_chunks), set.reduce_blocks);
  if (algo.library) {
    p.schedule = make_schedule(algo, args);
    return finish(Path::library);
  }
  if (is_bidir_family(algo.name) && !algo.needs_sparse) {
    // allreduce.bidir picks its mode by size (or --tune mode=); allreduce.bidir.<mode> forces one.
    BidirMode m = bidir_mode_for(algo.name, bytes, n, set.mode, set.bidir);
    p.mode = m;
    if (m == BidirMode::copy)
      return general(bidir_copy_schedule(n, args.count, args.dtype, args.redop, args.in_place, set.bidir),
                     set.reduce_blocks > 0 ? set.reduce_blocks : set.bidir.ce_reduce_blocks);
    if (m == BidirMode::ring) {  // lowered as allreduce.ring itself is
      LoweredPlan ring = lower_collective(find_algorithm("allreduce.ring"), args_in, machine);
      ring.algo = algo.name;
      ring.mode = m;
      return ring;
    }
    LaunchLimits gpu;
    gpu.sms = machine.sms;
    gpu.share = share;
    gpu.resident = machine.resident;
    p.kernel = bidir_launch(m, bytes, n, args.in_place, set.bidir, gpu);
    return finish(Path::kernel);
  }
  if (set.channels > 0) args.channels = set.channels;
  if (set.chunk_bytes > 0) args.chunk_bytes = set.chunk_bytes;
  Schedule s = make_schedule(algo, args);
  if (set.fused.use_fused(s, rank_device, machine.sms)) {
    try {
      p.fused = encode_fused(s, set.fused.options(rank_device, machine.sms));
      p.schedule = std::move(s);
      return finish(Path::fused);
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::input || set.fused.lowering == LoweringMode::fused) throw;
      p.why = std::string("fused refused: ") + err.what();
    }
  }
  // The general path's steps cost a graph node and a cross-GPU event each: its pipelines take larger chunks.
  if (set.chunk_bytes == 0 && algo.name == "broadcast.pipeline") {
    args.chunk_bytes = pipeline_chunk_bytes(bytes, n);
    if (args.chunk_bytes > 0) s = make_schedule(algo, args);
  }
  if (set.channels == 0 && wide && ring_reduces(algo.name)) {
    args.channels = kRingOverlapChannels;
    s = make_schedule(algo, args);
  }
  return general(std::move(s), set.reduce_blocks);
}

}  // namespace cclab::lower
