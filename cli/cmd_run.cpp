// cclab run: algorithms on this node's GPUs (the CUDA/NCCL executor), nccl-tests style.
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

#if CCLAB_HAVE_EXEC
#include <memory>

#include "exec/runtime/runner.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#endif

namespace cclab::cli {

namespace {

std::vector<FlagSpec> run_flags() {
  return {
      {{"--algo", "-a"}, true, "algorithm name(s), comma separated, or all (cclab list)"},
      {{"-g", "--ngpus"}, true, "ranks (default: one per visible GPU)"},
      {{"-b", "--minbytes"}, true, "smallest size (default 32M; K/M/G suffixes)"},
      {{"-e", "--maxbytes"}, true, "largest size (default 32M)"},
      {{"-f", "--stepfactor"}, true, "size multiplier between sizes (default 2)"},
      {{"-i", "--stepbytes"}, true, "additive size step instead of -f"},
      {{"-w", "--warmup_iters"}, true, "warm-up iterations (default 5)"},
      {{"-n", "--iters"}, true, "timed iterations, one graph replay of them (default: the plan's launches per replay)"},
      {{"-c", "--check"}, true, "check results: 1 (default) or 0"},
      {{"-d", "--datatype"}, true, "float|half|bfloat16 (default float)"},
      {{"-o", "--op"}, true, "sum|prod|min|max|avg (default sum)"},
      {{"-r", "--root"}, true, "root rank of rooted collectives (default 0)"},
      {{"--node-size"}, true, "ranks per node for hierarchical algorithms (default: all ranks form one node)"},
      {{"--graph", "-G"}, true, "CUDA-graph replay: 1 (default) or 0 (op by op)"},
      {{"--inplace"}, true, "0: out-of-place only, 1: in-place only, 2: both (default)"},
      {{"--share-gpus"}, false, "allow more ranks than GPUs (timings then not meaningful)"},
      {{"--csv"}, true, "write the records to this CSV file (atomically)"},
      {{"--predict"}, true, "a topology preset or profile: the simulator's prediction beside each row"},
      {{"--nccl-algo"}, true, "pin NCCL_ALGO for the .nccl baselines (e.g. Ring, Tree)"},
      {{"--nccl-proto"}, true, "pin NCCL_PROTO for the .nccl baselines (e.g. Simple, LL, LL128)"},
      {{"--tune"}, true, "key=value,... launch parameters (see exec/kernels/bidir.hpp, e.g. mode=flash,lanes=64)"},
      {{"--topology"}, true, "topology column of the records (default local)"},
      {{"--timeout"}, true, "seconds any single wait may take before the run reports a hang (default 60)"},
      {{"--shape"}, true, "collective matmul per-rank shard M,K,N (A_d is MxK, B_d is KxN); no sizes then"},
      {{"--rows"}, true, "sparse all-reduce: table rows (no sizes then; see exec/mmsp/run_mmsp.hpp)"},
      {{"--dim"}, true, "sparse all-reduce: elements (float) per row"},
      {{"--density"}, true, "sparse all-reduce: fraction of rows each rank holds, or a list (default 0.01)"},
      {{"--dist"}, true, "sparse all-reduce: uniform|zipf, or both comma separated (default uniform)"},
      {{"--mpi"}, false, "one process per GPU (implied under mpirun -np N with N > 1): mpirun -np N cclab run ..."},
      {{"-h", "--help"}, false, "this help"},
  };
}

}  // namespace

int cmd_run(const Argv& argv) {
  Args args("run", argv, run_flags());
  if (args.has("--help")) {
    std::cout << "usage: cclab run --algo <name|all> [-g N] [-b SIZE] [-e SIZE] [-f F] [-w W] [-n N] [-c 0|1]\n"
                 "                 [-d dtype] [-o redop] [-r root] [--graph 0|1] [--share-gpus] [--csv FILE]\n"
                 "       cclab run --algo allgather_matmul.ring [-g N] --shape M,K,N [-d half]\n"
                 "       cclab run --algo allreduce.sparse --rows R --dim D [--density p] [--dist uniform|zipf]\n"
              << args.usage();
    return 0;
  }
#if CCLAB_HAVE_EXEC
  exec::RunOptions o;
  const std::string algos = args.get_or("--algo", "");
  if (algos.empty()) throw_input("cclab run: --algo is required (a name from `cclab list`, or all)");
  for (size_t start = 0; start <= algos.size();) {
    const size_t comma = algos.find(',', start);
    const std::string name = algos.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) throw_input("cclab run: empty name in --algo '" + algos + "'");
    o.algos.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (auto g = args.get("-g")) o.nranks = int(parse_int("-g", *g, 1, 64));
  if (auto b = args.get("-b")) o.min_bytes = parse_size("-b", *b);
  if (auto e = args.get("-e")) o.max_bytes = parse_size("-e", *e);
  if (args.has("-b") && !args.has("-e")) o.max_bytes = std::max(o.max_bytes, o.min_bytes);
  if (args.has("-e") && !args.has("-b")) o.min_bytes = std::min(o.min_bytes, o.max_bytes);
  if (auto f = args.get("-f")) o.step_factor = parse_int("-f", *f, 2, 1 << 20);
  if (auto i = args.get("-i")) o.step_bytes = parse_size("-i", *i);
  if (auto w = args.get("-w")) o.warmup = int(parse_int("-w", *w, 0, 1 << 20));
  if (auto n = args.get("-n")) {
    o.iters = int(parse_int("-n", *n, 1, 1 << 20));
    o.iters_given = true;
  }
  if (auto c = args.get("-c")) o.check = parse_int("-c", *c, 0, 1) != 0;
  if (auto d = args.get("-d")) o.dtype = parse_dtype(*d);
  if (auto op = args.get("-o")) o.op = parse_redop(*op);
  if (auto r = args.get("-r")) o.root = int(parse_int("-r", *r, 0, 1 << 20));
  if (auto g = args.get("--graph")) o.graph = parse_int("--graph", *g, 0, 1) != 0;
  if (auto ip = args.get("--inplace")) o.inplace = int(parse_int("--inplace", *ip, 0, 2));
  o.share_gpus = args.has("--share-gpus");
  o.mpi = args.has("--mpi");
  o.csv = args.get_or("--csv", "");
  o.predict = args.get_or("--predict", "");
  o.nccl_algo = args.get_or("--nccl-algo", "");
  o.nccl_proto = args.get_or("--nccl-proto", "");
  o.tune = args.get_or("--tune", "");
  if (auto ns = args.get("--node-size")) o.node_size = int(parse_int("--node-size", *ns, 1, 1 << 20));
  o.topology = args.get_or("--topology", "local");
  if (auto t = args.get("--timeout")) o.timeout_s = parse_double("--timeout", *t, 0.1, 86400);
  o.shape = args.get_or("--shape", "");
  o.rows = args.get_or("--rows", "");
  o.dim = args.get_or("--dim", "");
  o.density = args.get_or("--density", "");
  o.dist = args.get_or("--dist", "");
  if (args.has("--shape") || args.has("--rows") || args.has("--dim") || args.has("--density") || args.has("--dist"))
    for (const char* f : {"-b", "-e", "-f", "-i", "--inplace", "-r", "--graph", "--nccl-algo", "--nccl-proto"})
      if (args.has(f)) throw_input(std::string("cclab run: ") + f + " does not apply to --shape / --rows runs");
  if (!o.predict.empty()) {
    // Resolved before any GPU work, so a bad preset or profile is an input error (exit 1).
    auto predictor = std::make_shared<sim::RowPredictor>(model::resolve_target(o.predict));
    o.predictor = [predictor](Record& r) { r = predictor->with_prediction(r); };
  }
  if (o.nranks > 0 && o.root >= o.nranks)
    throw_input("cclab run: -r " + std::to_string(o.root) + " is not a rank of " + std::to_string(o.nranks));
  return exec::run_sweep(o, std::cout);
#else
  throw_env("'cclab run' needs the CUDA/NCCL executor, and this cclab was built without CUDA (no nvcc or NCCL found)");
#endif
}

}  // namespace cclab::cli
