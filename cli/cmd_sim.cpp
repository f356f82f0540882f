// cclab sim: predict what algorithms cost on a topology (DESIGN.md "The command line").
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "algorithms/registry.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/record.hpp"
#include "lower/lowering.hpp"
#include "model/params.hpp"
#include "sim/predict.hpp"
#include "sim/trace.hpp"
#include "topology/topology.hpp"

namespace cclab::cli {

namespace {

std::vector<FlagSpec> sim_flags() {
  return {
      {{"--topo", "-t"}, true, "topology: preset (dgx-h100, 128xdgx-h100, ...) or file"},
      {{"--algo", "-a"}, true, "algorithm name, a comma-separated list, or 'all'"},
      {{"-g", "--ngpus"}, true, "ranks: the first N GPUs (default: all GPUs of the topology)"},
      {{"--gpus"}, true, "ranks on these GPUs, e.g. 0,1,4,5"},
      {{"-b", "--minbytes"}, true, "smallest size (default 8)"},
      {{"-e", "--maxbytes"}, true, "largest size (default 1G)"},
      {{"-f", "--stepfactor"}, true, "size multiplier between rows (default 2)"},
      {{"-d", "--datatype"}, true, "float | half | bfloat16 (default float)"},
      {{"-o", "--op"}, true, "reduction: sum | prod | min | max | avg (default sum)"},
      {{"-r", "--root"}, true, "root rank of rooted collectives (default 0)"},
      {{"--without"}, true, "'nvlink': route around NVLink (PCIe, host bridges, UPI)"},
      {{"--no-p2p"}, false, "stage GPU-to-GPU transfers through host memory"},
      {{"--shape"}, true, "collective matmul per-device shard M,K,N (A_d is MxK, B_d is KxN)"},
      {{"--rows"}, true, "sparse all-reduce: table rows"},
      {{"--dim"}, true, "sparse all-reduce: elements per row"},
      {{"--density"}, true, "sparse all-reduce: fraction of rows each rank holds (default 0.01)"},
      {{"--dist"}, true, "sparse all-reduce: uniform | zipf (default uniform)"},
      {{"--node-size"}, true, "ranks per node for hierarchical algorithms (default: GPUs per server)"},
      {{"--csv"}, true, "write the records (contract columns, backend=sim) to this file"},
      {{"--json"}, true, "write the records as JSON to this file"},
      {{"--trace"}, true, "write a Chrome trace (Perfetto) of the largest size of each algorithm"},
      {{"--profile"}, true, "model profile overriding the defaults (JSON, see model/params.hpp)"},
      {{"--tune"}, true, "key=value,... the settings `cclab run --tune` takes (lowering, bidir modes, NCCL_ALGO=...)"},
      {{"-h", "--help"}, false, "this help"},
  };
}

// The signal that asked the sweep to stop (0: none). Set by the handler, read between rows.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  // write(2) is async-signal-safe; iostreams are not.
  static constexpr char kMsg[] = "cclab sim: stopping after the row in progress (send the signal again to stop now)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
}

// While alive, SIGINT (Ctrl-C) and SIGTERM (a batch system's stop) only set g_stop_signal, so the sweep
// ends after the row in progress with its finished rows on disk. SA_RESETHAND restores the default
// action at once: a second signal kills the process, which is safe because every file written so far
// was written atomically.
class StopOnSignal {
 public:
  StopOnSignal() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopOnSignal() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  bool raised() const { return g_stop_signal != 0; }
  int number() const { return g_stop_signal; }
  const char* name() const { return g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM"; }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

nlohmann::ordered_json record_json(const Record& r) {
  nlohmann::ordered_json j;
  j["algo"] = r.algo;
  j["collective"] = r.collective;
  j["backend"] = r.backend;
  j["topology"] = r.topology;
  j["ranks"] = r.ranks;
  j["bytes"] = r.bytes;
  j["count"] = r.count;
  j["dtype"] = r.dtype;
  j["redop"] = r.redop;
  j["root"] = r.root;
  j["inplace"] = r.in_place ? 1 : 0;
  j["time_us"] = r.time_us;
  j["algbw_gbps"] = r.algbw_gbps;
  j["busbw_gbps"] = r.busbw_gbps;
  j["wrong"] = r.wrong;
  if (!r.shape.empty()) j["shape"] = r.shape;
  if (!r.note.empty()) j["note"] = r.note;
  for (const auto& [k, v] : r.extra) j[k] = v;
  return j;
}

}  // namespace

int cmd_sim(const Argv& argv) {
  Args args("sim", argv, sim_flags());
  if (args.has("--help")) {
    std::cout << "usage: cclab sim --topo <preset|file> --algo <name|all> [options]\n"
              << args.usage()
              << "--csv/--json files are rewritten atomically after every row. SIGINT (Ctrl-C) or SIGTERM stops the\n"
                 "sweep after the row in progress: the finished rows are kept, one line says where it stopped, and\n"
                 "the exit code is 128 + the signal (130, 143). A second signal stops at once.\n";
    return 0;
  }
  if (!args.has("--topo")) throw_input("cclab sim: --topo is required (a preset such as dgx-h100, or a file)");
  if (!args.has("--algo")) throw_input("cclab sim: --algo is required (a name from 'cclab list', or 'all')");
  if (args.has("-g") && args.has("--gpus")) throw_input("cclab sim: give either -g or --gpus, not both");

  // Topology and ranks.
  topo::Topology topo = topo::load_topology(*args.get("--topo"));
  std::string topo_label = topo.name;
  int nranks = topo.num_gpus();
  if (auto g = args.get("--gpus")) {
    const std::vector<int> list = parse_int_list("--gpus", *g);
    for (int x : list)
      if (x >= topo.num_gpus())
        throw_input("cclab sim: --gpus " + *g + ": GPU " + std::to_string(x) + " is beyond topology '" + topo.name +
                    "' (" + std::to_string(topo.num_gpus()) + " GPUs)");
    topo = topo::select_gpus(topo, list);
    topo_label += "[" + join_ints(list) + "]";
    nranks = int(list.size());
  } else if (auto g = args.get("-g")) {
    nranks = int(parse_int("-g", *g, 1, 1 << 24));
    if (nranks > topo.num_gpus())
      throw_input("cclab sim: -g " + std::to_string(nranks) + ": topology '" + topo.name + "' has only " +
                  std::to_string(topo.num_gpus()) + " GPUs");
  }
  topo::RouteOptions route;
  if (auto w = args.get("--without")) {
    if (*w != "nvlink") throw_input("cclab sim: --without takes 'nvlink' (got '" + *w + "')");
    route.without_nvlink = true;
    topo_label += "+without-nvlink";
  }
  if (args.has("--no-p2p")) {
    route.no_p2p = true;
    topo_label += "+no-p2p";
  }

  // Sizes.
  const int64_t minb = parse_size("-b", args.get_or("-b", "8"));
  const int64_t maxb = parse_size("-e", args.get_or("-e", "1G"));
  const int64_t factor = parse_int("-f", args.get_or("-f", "2"), 2, 1 << 20);
  if (minb < 1) throw_input("cclab sim: -b must be at least 1 byte");
  if (minb > maxb) throw_input("cclab sim: -b " + std::to_string(minb) + " is larger than -e " + std::to_string(maxb));
  std::vector<int64_t> sizes;
  for (int64_t b = minb; b <= maxb; b *= factor) {
    sizes.push_back(b);
    if (b > maxb / factor) break;
  }

  AlgoArgs base;
  base.nranks = nranks;
  base.dtype = parse_dtype(args.get_or("-d", "float"));
  base.redop = parse_redop(args.get_or("-o", "sum"));
  base.root = int(parse_int("-r", args.get_or("-r", "0"), 0, 1 << 24));
  base.node_size = args.has("--node-size") ? int(parse_int("--node-size", *args.get("--node-size"), 1, 1 << 24))
                                           : std::min(topo.gpus_per_server(), nranks);
  if (base.node_size <= 0) base.node_size = nranks;
  base.tune = args.get_or("--tune", "");
  lower::parse_settings(base.tune);  // an unknown key or a bad value is an input error before any row
  const bool have_shape = args.has("--shape");
  if (have_shape) {
    // M,K,N may repeat values (parse_int_list rejects duplicates), so split by hand.
    const std::string text = *args.get("--shape");
    std::vector<int64_t> mkn;
    size_t pos = 0;
    while (pos <= text.size()) {
      const size_t comma = std::min(text.find(',', pos), text.size());
      mkn.push_back(parse_int("--shape", text.substr(pos, comma - pos), 1, int64_t(1) << 31));
      pos = comma + 1;
    }
    if (mkn.size() != 3) throw_input("cclab sim: --shape takes M,K,N (three positive integers), got '" + text + "'");
    base.shape = {mkn[0], mkn[1], mkn[2]};
  }
  const bool have_sparse = args.has("--rows") || args.has("--dim");
  if (have_sparse) {
    if (!args.has("--rows") || !args.has("--dim"))
      throw_input("cclab sim: sparse all-reduce needs both --rows and --dim");
    base.sparse.rows = parse_int("--rows", *args.get("--rows"), 1, int64_t(1) << 40);
    base.sparse.dim = parse_int("--dim", *args.get("--dim"), 1, int64_t(1) << 30);
    // rows x dim is the dense element count: keep it (and its bytes) far inside int64.
    if (base.sparse.rows > (int64_t(1) << 50) / base.sparse.dim)
      throw_input("cclab sim: --rows " + std::to_string(base.sparse.rows) + " x --dim " +
                  std::to_string(base.sparse.dim) + " elements is too large (at most 2^50)");
    base.sparse.density = parse_double("--density", args.get_or("--density", "0.01"), 0.0, 1.0);
    const std::string dist = args.get_or("--dist", "uniform");
    if (dist == "uniform")
      base.sparse.dist = IndexDist::uniform;
    else if (dist == "zipf")
      base.sparse.dist = IndexDist::zipf;
    else
      throw_input("cclab sim: --dist takes uniform or zipf (got '" + dist + "')");
  } else if (args.has("--density") || args.has("--dist")) {
    throw_input("cclab sim: --density / --dist need --rows and --dim");
  }

  // Algorithms.
  std::vector<const Algorithm*> algos;
  const std::string algo_arg = *args.get("--algo");
  if (algo_arg == "all") {
    std::vector<std::string> skipped;
    for (const auto& a : algorithms()) {
      if (!(a.backends & kSim)) continue;
      if ((a.needs_shape && !have_shape) || (a.needs_sparse && !have_sparse)) {
        skipped.push_back(a.name);
        continue;
      }
      algos.push_back(&a);
    }
    if (!skipped.empty()) {
      std::string s;
      for (const auto& n : skipped) s += (s.empty() ? "" : ", ") + n;
      std::cerr << "cclab sim: skipping " << s << " (need --shape M,K,N or --rows/--dim)\n";
    }
  } else {
    // One name or a comma-separated list.
    size_t pos = 0;
    while (pos <= algo_arg.size()) {
      const size_t comma = std::min(algo_arg.find(',', pos), algo_arg.size());
      const Algorithm& a = find_algorithm(algo_arg.substr(pos, comma - pos));
      if (!(a.backends & kSim)) throw_input("cclab sim: " + a.name + " cannot run on the simulator");
      if (a.needs_shape && !have_shape) throw_input("cclab sim: " + a.name + " needs --shape M,K,N");
      if (a.needs_sparse && !have_sparse) throw_input("cclab sim: " + a.name + " needs --rows R --dim D");
      algos.push_back(&a);
      pos = comma + 1;
    }
  }
  if (nranks > topo.num_gpus())
    throw_input("cclab sim: " + std::to_string(nranks) + " ranks but topology '" + topo.name + "' has " +
                std::to_string(topo.num_gpus()) + " GPUs");

  model::ModelParams params = model::defaults_for(topo);
  if (auto prof = args.get("--profile")) params = model::load_profile(*prof, params);
  topo.name = topo_label;
  sim::Simulator simulator(topo, params, route);

  const bool single = algos.size() == 1;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Record> records;
  std::vector<std::pair<std::string, sim::Prediction>> traces;
  // Records on disk after finished rows (atomically: temp file, then rename), so an interrupted or killed
  // sweep leaves the rows it finished, never half a file. Every file write rewrites all rows so far, so
  // after row k it is skipped while less than 10 x the last write's time has passed since that write:
  // rewriting costs at most ~10% of the sweep (without this, 730 fast rows on dgx-h100 took 20 x longer),
  // and a row slower than that is always saved. A stop by signal and the end always save. A stream
  // (--csv /dev/stdout, a pipe) cannot be replaced whole: it gets the records once, at the end.
  const auto csv_path = args.get("--csv");
  const auto json_path = args.get("--json");
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_save_end{};
  Clock::duration last_save_cost{};
  const auto save = [&](bool at_end) {
    const auto start = Clock::now();
    if (!at_end && start - last_save_end < 10 * last_save_cost) return;
    if (csv_path && (at_end || replaceable_file(*csv_path))) write_csv_atomic(*csv_path, records);
    if (json_path && (at_end || replaceable_file(*json_path))) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const auto& r : records) j.push_back(record_json(r));
      write_file_atomic(*json_path, j.dump(1) + "\n");
    }
    last_save_end = Clock::now();
    last_save_cost = last_save_end - start;
  };
  const auto write_trace = [&] {
    if (auto f = args.get("--trace")) {
      std::vector<sim::TraceRun> runs;
      for (auto& [name, p] : traces) runs.push_back({name, &p.schedule, &p.result});
      sim::write_chrome_trace(*f, runs);
    }
  };
  const StopOnSignal stop_signal;  // SIGINT / SIGTERM: finish the row in progress, then stop
  std::string stopped_before;      // "<algo> at <bytes> B": the first row not simulated
  for (size_t ai = 0; ai < algos.size() && stopped_before.empty(); ++ai) {
    const Algorithm& a = *algos[ai];
    if (!single) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "cclab sim: [%zu/%zu] %s (%.1f s)\n", ai + 1, algos.size(), a.name.c_str(), el);
    }
    // Collective matmul and sparse all-reduce have one size, set by their shape / table.
    std::vector<int64_t> algo_sizes = sizes;
    if (a.needs_shape || a.needs_sparse) algo_sizes = {sizes.back()};
    const size_t first_row = records.size();  // this algorithm's rows are records[first_row..]
    std::string first_error;
    int64_t skipped_below = 0;
    for (size_t si = 0; si < algo_sizes.size(); ++si) {
      if (stop_signal.raised()) {
        stopped_before = a.name + " at " + std::to_string(algo_sizes[si]) + " B";
        break;
      }
      AlgoArgs aa = base;
      if (a.needs_sparse)
        aa.count = base.sparse.rows * base.sparse.dim;
      else if (!a.needs_shape)
        aa.count = sim::count_for_bytes(a, algo_sizes[si], aa.dtype, nranks);
      if (!a.needs_shape && !a.needs_sparse && aa.count == 0) {
        skipped_below = algo_sizes[si];
        continue;
      }
      const bool last = si + 1 == algo_sizes.size();
      sim::PredictOptions po;
      po.keep_schedule = last && args.has("--trace");
      po.record_timeline = po.keep_schedule;
      try {
        sim::Prediction p = sim::predict(simulator, a, aa, po);
        records.push_back(p.record);
        if (po.keep_schedule) traces.emplace_back(a.name, std::move(p));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::input) throw;
        if (single && algo_sizes.size() == 1) throw;
        if (first_error.empty()) first_error = e.what();
        continue;
      }
      save(/*at_end=*/false);
    }
    // The next algorithm's first size, when the signal came between two algorithms.
    if (stopped_before.empty() && stop_signal.raised() && ai + 1 < algos.size()) {
      const Algorithm& next = *algos[ai + 1];
      stopped_before = next.name + " at " +
                       std::to_string(next.needs_shape || next.needs_sparse ? sizes.back() : sizes.front()) + " B";
    }
    if (skipped_below > 0)
      std::cerr << "cclab sim: " << a.name << ": sizes up to " << skipped_below << " B hold no element per rank ("
                << nranks << " ranks), skipped\n";
    if (records.size() == first_row) {
      if (!stopped_before.empty()) break;
      if (single) throw_input(first_error.empty() ? a.name + ": no size to simulate" : first_error);
      std::cerr << "cclab sim: skipping " << a.name << ": " << first_error << "\n";
      continue;
    }
    if (!first_error.empty()) std::cerr << "cclab sim: " << a.name << ": some sizes skipped: " << first_error << "\n";
    std::cout << "# " << a.name << " on " << topo_label << ", " << nranks << " ranks (sim)";
    if (a.needs_shape) std::cout << ", shape " << records[first_row].shape;
    std::cout << "\n";
    print_table_header(std::cout, false);
    for (size_t i = first_row; i < records.size(); ++i) print_table_row(std::cout, records[i], false);
    std::cout << "\n";
  }
  std::cout.flush();  // before a --csv /dev/stdout gets the records
  if (!records.empty()) save(/*at_end=*/true);
  if (!stopped_before.empty()) {
    if (!traces.empty()) write_trace();  // the algorithms that reached their largest size
    std::string kept;
    for (const auto& f : {csv_path, json_path})
      if (f) kept += (kept.empty() ? " in " : " and ") + *f;
    std::cerr << "cclab sim: interrupted by " << stop_signal.name() << ": stopped before " << stopped_before << "; "
              << records.size() << " finished rows kept" << (kept.empty() ? " (printed above; no --csv/--json)" : kept)
              << "\n";
    return 128 + stop_signal.number();
  }
  if (records.empty()) throw_input("cclab sim: nothing could be simulated");
  write_trace();
  return 0;
}

}  // namespace cclab::cli
