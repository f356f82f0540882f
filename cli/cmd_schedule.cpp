// cclab schedule --algo A -g N -b SIZE [-d dtype] [-o redop] [--root R] [--inplace] [--summary] ...
// Prints the schedule an algorithm emits, as JSON (one op per line), after checking it (structure
// and happens-before); --summary prints per-rank messages and bytes instead.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

namespace cclab::cli {

namespace {

// The size is nccl-tests' (count x element size, after rounding count to whole blocks).
void print_summary(const Schedule& s) {
  const int64_t bytes = s.count * dtype_size(s.dtype);
  int max_step = 0, channels = 0;
  for (const Op& op : s.ops) {
    max_step = std::max(max_step, op.step);
    channels = std::max(channels, int(op.channel) + 1);
  }
  std::printf("# %s  collective %s  ranks %d  size %lld B  count %lld  %s  %s  root %d  %s\n", s.algo.c_str(),
              s.collective.c_str(), s.nranks, static_cast<long long>(bytes), static_cast<long long>(s.count),
              std::string(dtype_name(s.dtype)).c_str(), std::string(redop_name(s.redop)).c_str(), s.root,
              s.in_place ? "in-place" : "out-of-place");
  std::printf("# %zu ops, %d steps, %d channels\n", s.ops.size(), s.ops.empty() ? 0 : max_step + 1, channels);
  std::vector<int64_t> ops(static_cast<size_t>(s.nranks), 0);
  for (const Op& op : s.ops) ++ops[size_t(op.rank)];
  std::printf("%6s %8s %12s %12s %8s %12s %12s %12s %12s\n", "rank", "ops", "sent_msgs", "sent_bytes", "recv_msgs",
              "recv_bytes", "input_B", "output_B", "scratch_B");
  const std::vector<RankTraffic> t = traffic(s);
  for (int r = 0; r < s.nranks; ++r) {
    const RankTraffic& x = t[size_t(r)];
    const BufferSizes& b = s.buffers[size_t(r)];
    std::printf("%6d %8lld %12lld %12lld %8lld %12lld %12lld %12lld %12lld\n", r,
                static_cast<long long>(ops[size_t(r)]), static_cast<long long>(x.sends),
                static_cast<long long>(x.send_bytes), static_cast<long long>(x.recvs),
                static_cast<long long>(x.recv_bytes), static_cast<long long>(b.input), static_cast<long long>(b.output),
                static_cast<long long>(b.scratch));
  }
}

}  // namespace

int cmd_schedule(const Argv& argv) {
  Args args("schedule", argv,
            {{{"-h", "--help"}, false, "this help"},
             {{"--algo", "-a"}, true, "algorithm name (see cclab list)"},
             {{"-g", "--ngpus"}, true, "number of ranks (default 2)"},
             {{"-b", "--bytes"}, true, "message size in bytes, K/M/G suffixes (nccl-tests' size; default 8)"},
             {{"-d", "--datatype"}, true, "float | half | bfloat16 (default float)"},
             {{"-o", "--op"}, true, "sum | prod | min | max | avg (default sum)"},
             {{"-r", "--root"}, true, "root rank of rooted collectives (default 0)"},
             {{"--inplace"}, false, "in-place: input aliases output (nccl-tests layout)"},
             {{"--channels"}, true, "channels the algorithm may spread over (default 1)"},
             {{"--chunk"}, true, "pipeline chunk size in bytes (default: the algorithm's)"},
             {{"--node-size"}, true, "ranks per node for hierarchical algorithms (default: all ranks)"},
             {{"--shape"}, true, "M,K,N per-device shard shape (collective matmul)"},
             {{"--rows"}, true, "sparse all-reduce: rows of the table"},
             {{"--dim"}, true, "sparse all-reduce: elements per row"},
             {{"--density"}, true, "sparse all-reduce: fraction of rows each rank holds (default 0.01)"},
             {{"--dist"}, true, "sparse all-reduce: uniform | zipf row indices (default uniform)"},
             {{"--summary"}, false, "print per-rank messages and bytes instead of the JSON"}});
  if (args.has("--help")) {
    std::cout << "usage: cclab schedule --algo A -g N -b SIZE [options]\n" << args.usage();
    return 0;
  }
  const auto name = args.get("--algo");
  if (!name) throw_input("cclab schedule: --algo is required (see cclab list)");
  const Algorithm& algo = find_algorithm(*name);
  AlgoArgs a;
  a.nranks = int(parse_int("-g", args.get_or("-g", "2"), 1, 1 << 20));
  a.dtype = parse_dtype(args.get_or("-d", "float"));
  a.redop = parse_redop(args.get_or("-o", "sum"));
  a.root = int(parse_int("--root", args.get_or("--root", "0"), 0, a.nranks - 1));
  a.in_place = args.has("--inplace");
  a.channels = int(parse_int("--channels", args.get_or("--channels", "1"), 1, 255));
  if (auto c = args.get("--chunk")) a.chunk_bytes = parse_size("--chunk", *c);
  if (auto c = args.get("--node-size")) a.node_size = int(parse_int("--node-size", *c, 1, a.nranks));
  if (auto shape = args.get("--shape")) {
    std::vector<int64_t> v;  // not parse_int_list: M, K and N may repeat
    for (size_t start = 0; start <= shape->size();) {
      const size_t comma = std::min(shape->find(',', start), shape->size());
      v.push_back(parse_int("--shape", shape->substr(start, comma - start), 1, int64_t(1) << 40));
      start = comma + 1;
    }
    if (v.size() != 3) throw_input("cclab schedule: --shape needs M,K,N (got '" + *shape + "')");
    a.shape = MatmulShape{v[0], v[1], v[2]};
  }
  if (auto v = args.get("--rows")) a.sparse.rows = parse_int("--rows", *v, 1, int64_t(1) << 40);
  if (auto v = args.get("--dim")) a.sparse.dim = parse_int("--dim", *v, 1, int64_t(1) << 30);
  if (auto v = args.get("--density")) a.sparse.density = parse_double("--density", *v, 0.0, 1.0);
  if (auto v = args.get("--dist")) {
    if (*v != "uniform" && *v != "zipf")
      throw_input("cclab schedule: --dist must be uniform or zipf (got '" + *v + "')");
    a.sparse.dist = *v == "zipf" ? IndexDist::zipf : IndexDist::uniform;
  }
  const int64_t bytes = parse_size("-b", args.get_or("-b", "8"));
  a.count = count_for_bytes(algo.collective, bytes, a.dtype, a.nranks);
  const Schedule s = make_schedule(algo, a);
  validate_dataflow(s);
  if (args.has("--summary")) {
    print_summary(s);
  } else {
    std::cout << to_json(s);
  }
  return 0;
}

}  // namespace cclab::cli
