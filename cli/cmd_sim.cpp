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
#include "sim/predict.hpp"
#include "sim/sweep.hpp"
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

  // Topology and ranks (the sweep checks the selection against the topology).
  sim::SweepRequest req;
  req.topology = topo::load_topology(*args.get("--topo"));
  if (auto g = args.get("--gpus")) {
    req.gpus = parse_int_list("--gpus", *g);
  } else if (auto g = args.get("-g")) {
    req.ngpus = int(parse_int("-g", *g, 1, 1 << 24));
  }
  if (auto w = args.get("--without")) {
    if (*w != "nvlink") throw_input("cclab sim: --without takes 'nvlink' (got '" + *w + "')");
    req.without_nvlink = true;
  }
  req.no_p2p = args.has("--no-p2p");

  // Sizes.
  const int64_t minb = parse_size("-b", args.get_or("-b", "8"));
  const int64_t maxb = parse_size("-e", args.get_or("-e", "1G"));
  const int64_t factor = parse_int("-f", args.get_or("-f", "2"), 2, 1 << 20);
  req.sizes = sim::sweep_sizes(minb, maxb, factor);

  AlgoArgs& base = req.base;
  base.dtype = parse_dtype(args.get_or("-d", "float"));
  base.redop = parse_redop(args.get_or("-o", "sum"));
  base.root = int(parse_int("-r", args.get_or("-r", "0"), 0, 1 << 24));
  if (args.has("--node-size")) base.node_size = int(parse_int("--node-size", *args.get("--node-size"), 1, 1 << 24));
  base.tune = args.get_or("--tune", "");
  lower::parse_settings(base.tune);  // an unknown key or a bad value is an input error before any row
  if (args.has("--shape")) {
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
  req.algo = *args.get("--algo");
  if (auto prof = args.get("--profile")) req.profile = *prof;
  req.trace = args.has("--trace");

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
  const auto save = [&](const std::vector<Record>& records, bool at_end) {
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

  // The sweep prints its notes on stderr, each algorithm's table on stdout when it is done, and saves the
  // files after finished rows; SIGINT / SIGTERM stop it after the row in progress.
  class Printer final : public sim::SweepObserver {
   public:
    Printer(const StopOnSignal& stop, decltype(save)& save_rows) : stop_(stop), save_(save_rows) {}
    bool stop_requested() override { return stop_.raised(); }
    void note(const std::string& line) override { std::cerr << line << "\n"; }
    void algorithm_started(size_t index, size_t count, const Algorithm& a, double elapsed_s) override {
      if (count > 1)
        std::fprintf(stderr, "cclab sim: [%zu/%zu] %s (%.1f s)\n", index + 1, count, a.name.c_str(), elapsed_s);
    }
    void row_done(const std::vector<Record>& records) override { save_(records, /*at_end=*/false); }
    void algorithm_done(const Algorithm& a, const sim::SweepResult& so_far, size_t first_row) override {
      const std::vector<Record>& records = so_far.records;
      std::cout << "# " << a.name << " on " << so_far.topo_label << ", " << so_far.nranks << " ranks (sim)";
      if (a.needs_shape) std::cout << ", shape " << records[first_row].shape;
      std::cout << "\n";
      print_table_header(std::cout, false);
      for (size_t i = first_row; i < records.size(); ++i) print_table_row(std::cout, records[i], false);
      std::cout << "\n";
    }

   private:
    const StopOnSignal& stop_;
    decltype(save)& save_;
  };

  const StopOnSignal stop_signal;  // SIGINT / SIGTERM: finish the row in progress, then stop
  Printer printer(stop_signal, save);
  sim::SweepResult result = sim::simulate_sweep(std::move(req), &printer);
  const std::vector<Record>& records = result.records;
  const auto write_trace = [&] {
    if (auto f = args.get("--trace")) {
      std::vector<sim::TraceRun> runs;
      for (auto& [name, p] : result.traces) runs.push_back({name, &p.schedule, &p.result});
      sim::write_chrome_trace(*f, runs);
    }
  };
  std::cout.flush();  // before a --csv /dev/stdout gets the records
  if (!records.empty()) save(records, /*at_end=*/true);
  if (!result.stopped_before.empty()) {
    if (!result.traces.empty()) write_trace();  // the algorithms that reached their largest size
    std::string kept;
    for (const auto& f : {csv_path, json_path})
      if (f) kept += (kept.empty() ? " in " : " and ") + *f;
    std::cerr << "cclab sim: interrupted by " << stop_signal.name() << ": stopped before " << result.stopped_before
              << "; " << records.size() << " finished rows kept"
              << (kept.empty() ? " (printed above; no --csv/--json)" : kept) << "\n";
    return 128 + stop_signal.number();
  }
  write_trace();
  return 0;
}

}  // namespace cclab::cli
