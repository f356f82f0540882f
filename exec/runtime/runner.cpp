#include "exec/runtime/runner.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>

#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "exec/kernels/bidir.hpp"
#include "exec/mmsp/run_mmsp.hpp"
#include "exec/nccl/nccl_workload.hpp"
#include "exec/runtime/fused_workload.hpp"
#include "exec/runtime/harness.hpp"
#include "exec/runtime/mpi_env.hpp"
#include "exec/runtime/plan_workload.hpp"
#include "lower/lowering.hpp"

#ifndef CCLAB_GIT_COMMIT
#define CCLAB_GIT_COMMIT "unknown"
#endif

namespace cclab::exec {

namespace {

// The signal that asked the sweep to stop (SIGINT: Ctrl-C, SIGTERM: a batch system), 0: none.
std::atomic<int> g_interrupted{0};
extern "C" void on_run_stop_signal(int sig) { g_interrupted = sig; }  // C linkage: a name of its own

}  // namespace

// Helpers shared with the MPI sweep (mpi_runner.cpp), declared in runner.hpp.
namespace detail {

bool needs_split(Coll c) {
  return c == Coll::allgather || c == Coll::reducescatter || c == Coll::alltoall || c == Coll::gather ||
         c == Coll::scatter;
}

std::string iso_date() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

std::string commit() {
  if (const char* c = std::getenv("CCLAB_COMMIT"); c && *c) return c;
  return CCLAB_GIT_COMMIT;
}

std::string driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..."
  std::istringstream ss(line);
  std::string w;
  while (ss >> w)
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0])) && w.find('.') != std::string::npos) return w;
  return "";
}

// Schedule::resolve for a collective without building its ops.
std::function<Ref(Ref)> resolver(const std::string& collective, int nranks, int64_t count, DType dtype, bool in_place) {
  auto s = std::make_shared<Schedule>();
  s->collective = collective;
  s->nranks = nranks;
  s->count = count;
  s->dtype = dtype;
  s->in_place = in_place;
  return [s](Ref r) { return s->resolve(r); };
}

std::map<std::string, std::string> tune_map(const std::string& tune) {
  std::map<std::string, std::string> m;
  std::stringstream ss(tune);
  std::string kv;
  while (std::getline(ss, kv, ',')) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos) m[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return m;
}

}  // namespace detail

using namespace detail;

namespace {

// Everything shared by the algorithms of one sweep (created lazily: NCCL init takes a second).
struct Session {
  const RunOptions& opt;
  Communicator comm;
  Harness harness;
  lower::Settings settings;  // --tune, read once
  lower::Machine machine;
  std::unique_ptr<NcclComms> nccl;
  std::unique_ptr<BidirContext> bidir;
  std::string driver;

  explicit Session(const RunOptions& o)
      : opt(o),
        comm(CommOptions{o.nranks, o.share_gpus}),
        harness(comm, TimingOptions{o.warmup, o.iters, o.graph, o.timeout_s}),
        settings(lower::parse_settings(o.tune)),
        driver(driver_version()) {
    machine.sms = comm.sm_count();
    machine.rank_device = comm.rank_device();
    machine.resident = [this](BidirMode m, int threads, int unroll) {
      return bidir_resident_ctas(m, threads, unroll, opt.dtype, opt.op, comm.device_of(0));
    };
  }
  NcclComms& get_nccl() {
    if (!nccl) nccl = std::make_unique<NcclComms>(comm, NcclOptions{opt.nccl_algo, opt.nccl_proto});
    return *nccl;
  }
  BidirContext& get_bidir() {
    if (!bidir) bidir = std::make_unique<BidirContext>(comm, settings.bidir);
    return *bidir;
  }
};

// The registry entry of a name `cclab run` takes, checked for this executor.
const Algorithm& gpu_algorithm(const std::string& name) {
  const Algorithm& a = find_algorithm(name);
  if (a.needs_shape || a.needs_sparse)
    throw_input(name + " needs collective-matmul or sparse inputs (--shape, or --rows and --dim)");
  if (a.library && !name.ends_with(".nccl")) throw_input(name + ": only NCCL baselines run in this harness");
  if (!(a.backends & kGpu)) throw_input(name + " does not run on the GPU backend (see cclab list)");
  checked_coll(a.collective);
  return a;
}

// The workload that runs a lowered plan.
std::unique_ptr<Workload> make_workload(Session& ss, const Algorithm& algo, const lower::LoweredPlan& plan,
                                        const AlgoArgs& args) {
  const Coll c = checked_coll(algo.collective);
  CollSpec spec{
      c,
      args.nranks,
      args.count,
      args.dtype,
      args.redop,
      args.root,
      args.in_place,
      resolver(c == Coll::exchange ? "exchange" : algo.collective, args.nranks, args.count, args.dtype, args.in_place)};
  switch (plan.path) {
    case lower::Path::library:
      return std::make_unique<NcclWorkload>(ss.comm, ss.get_nccl(), spec);
    case lower::Path::kernel:
      return std::make_unique<BidirWorkload>(ss.get_bidir(), plan.kernel, spec);
    case lower::Path::fused:
      return std::make_unique<FusedWorkload>(ss.comm, plan.schedule, ss.settings.fused, plan.fused);
    case lower::Path::general:
      return std::make_unique<PlanWorkload>(ss.comm, plan.schedule, plan.general, plan.reduce_blocks, plan.held);
  }
  return nullptr;
}

}  // namespace

std::vector<int64_t> sweep_sizes(const RunOptions& o) {
  if (o.min_bytes < 0 || o.max_bytes < o.min_bytes)
    throw_input("-b " + std::to_string(o.min_bytes) + " and -e " + std::to_string(o.max_bytes) +
                ": the minimum size must not exceed the maximum");
  if (o.step_bytes <= 0 && o.step_factor < 2 && o.min_bytes != o.max_bytes)
    throw_input("-f must be at least 2 (or give -i for an additive step)");
  std::vector<int64_t> sizes;
  for (int64_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    if (o.min_bytes == o.max_bytes) break;
    const int64_t next = o.step_bytes > 0 ? s + o.step_bytes : (s == 0 ? 1 : s * o.step_factor);
    if (next <= s) break;
    s = next;
  }
  return sizes;
}

std::vector<std::string> gpu_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& a : algorithms()) {
    try {
      gpu_algorithm(a.name);
    } catch (const Error&) {
      continue;
    }
    names.push_back(a.name);
  }
  return names;
}

void print_run_header(std::ostream& os, bool pred) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "#%54s %36s %36s\n", "", "out-of-place", "in-place");
  os << buf;
  std::snprintf(buf, sizeof buf, "#%12s %12s %9s %6s %5s %10s %8s %8s %7s %10s %8s %8s %7s%s\n", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
                pred ? "  pred_time pred_bus    error" : "");
  os << buf;
  std::snprintf(buf, sizeof buf, "#%12s %12s %9s %6s %5s %10s %8s %8s %7s %10s %8s %8s %7s%s\n", "(B)", "(elements)",
                "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
                pred ? "       (us)   (GB/s)      (%)" : "");
  os << buf;
}

void print_run_line(std::ostream& os, const Record* oop, const Record* ip, bool pred) {
  const Record* any = oop ? oop : ip;
  if (!any) return;
  char buf[512];
  auto group = [](const Record* r) {
    char g[96];
    if (!r) return std::string("        N/A      N/A      N/A     N/A");
    const std::string wrong = r->wrong < 0 ? "N/A" : std::to_string(r->wrong);
    std::snprintf(g, sizeof g, " %10.2f %8.2f %8.2f %7s", r->time_us, r->algbw_gbps, r->busbw_gbps, wrong.c_str());
    return std::string(g);
  };
  std::snprintf(buf, sizeof buf, " %12lld %12lld %9s %6s %5d", (long long)any->bytes, (long long)any->count,
                any->dtype.c_str(), any->redop.c_str(), any->root);
  os << buf << group(oop) << group(ip);
  if (pred) {
    if (any->pred_time_us) {
      std::snprintf(buf, sizeof buf, " %10.2f %8.2f %+8.1f", *any->pred_time_us, any->pred_busbw_gbps.value_or(0),
                    any->error().value_or(0) * 100);
      os << buf;
    } else {
      os << "          -        -        -";
    }
  }
  os << "\n";
}

int run_sweep(const RunOptions& o, std::ostream& out) {
  if (!o.predict.empty() && !o.predictor)
    throw_env("--predict " + o.predict + ": no simulator was linked into this executor");
  const bool pred = static_cast<bool>(o.predictor);
  // Collective matmul and sparse all-reduce: --shape / --rows inputs, not sizes (exec/mmsp/run_mmsp.hpp).
  if (mmsp_family(o) != MmspFamily::none) return run_mmsp(o, out);
  if (mpi_mode(o, mpi_launch_from_env())) return run_sweep_mpi(o, out);  // one process per GPU (mpirun)
  // Resolve and validate the algorithm names before touching the GPUs.
  std::vector<std::string> names;
  for (const auto& a : o.algos) {
    if (a == "all") {
      for (const auto& n : gpu_algorithm_names()) names.push_back(n);
    } else {
      names.push_back(a);
    }
  }
  if (names.empty()) throw_input("--algo is required (a name from `cclab list`, or all)");
  std::vector<const Algorithm*> plans;
  for (const auto& n : names) plans.push_back(&gpu_algorithm(n));
  const auto sizes = sweep_sizes(o);
  lower::parse_settings(o.tune);  // bad --tune values are input errors, before any GPU work

  Session ss(o);
  const int n = ss.comm.nranks();
  const bool with_nccl = std::any_of(plans.begin(), plans.end(), [](const Algorithm* a) { return a->library; });
  if (with_nccl && ss.comm.shared())
    throw_input("NCCL baselines need one GPU per rank: drop --share-gpus or the .nccl algorithms");

  auto prev_int = std::signal(SIGINT, on_run_stop_signal);
  auto prev_term = std::signal(SIGTERM, on_run_stop_signal);
  g_interrupted = 0;
  const std::string date = iso_date(), sha = commit();
  out << "# cclab run: " << n << " ranks on " << ss.comm.device_label() << " (" << ss.comm.versions()
      << (ss.driver.empty() ? "" : " driver=" + ss.driver) << "), " << (o.graph ? "graph replay" : "op by op")
      << ", warmup " << o.warmup << ", iters " << o.iters << (o.check ? ", checked" : ", not checked")
      << (ss.comm.shared() ? ", ranks share GPUs: timings not meaningful" : "") << "\n";
  std::vector<Record> rows;
  int64_t total_wrong = 0, skipped = 0;
  std::string stopped;
  for (const Algorithm* ap : plans) {
    if (g_interrupted) {
      stopped = ap->name;  // between two algorithms
      break;
    }
    out << "#\n# algo " << ap->name << (pred ? "  (prediction: " + o.predict + ", out-of-place rows)" : "") << "\n";
    print_run_header(out, pred);
    for (int64_t bytes : sizes) {
      if (g_interrupted) {
        stopped = ap->name + " at " + std::to_string(bytes) + " B";
        break;
      }
      const int64_t e = dtype_size(o.dtype);
      int64_t count = bytes / e;
      const Coll c = checked_coll(ap->collective);
      if (needs_split(c)) count = count / n * n;
      if (count == 0 && bytes > 0) continue;  // smaller than one element per rank
      Record rec[2];
      bool have[2] = {false, false};
      for (int ip = 0; ip < 2; ++ip) {
        if ((o.inplace == 0 && ip == 1) || (o.inplace == 1 && ip == 0)) continue;
        if (c == Coll::exchange && ip == 1) continue;  // a link test has no in-place form
        AlgoArgs args;
        args.nranks = n;
        args.count = count;
        args.dtype = o.dtype;
        args.redop = o.op;
        args.root = o.root;
        args.in_place = ip == 1;
        args.tune = o.tune;
        if (ap->hierarchical) args.node_size = o.node_size;
        lower::LoweredPlan plan;
        std::unique_ptr<Workload> w;
        try {
          plan = lower::lower_collective(*ap, args, ss.machine);
          w = make_workload(ss, *ap, plan, args);
        } catch (const Error& err) {
          // A schedule that cannot take this size or rank count: say so and go on with the sweep.
          if (err.kind() != ErrorKind::input) throw;
          out << "# " << ap->name << " " << count * e << " B" << (ip ? " in place" : "") << ": skipped: " << err.what()
              << "\n";
          ++skipped;
          continue;
        }
        const int iters = o.iters_given ? o.iters : plan.launches;
        Record& r = rec[ip];
        r.algo = ap->name;
        r.collective = ap->collective;
        r.backend = "gpu";
        r.topology = o.topology;
        r.ranks = n;
        r.count = count;
        r.bytes = count * e;
        r.dtype = std::string(dtype_name(o.dtype));
        r.redop = std::string(redop_name(o.op));
        r.root = (c == Coll::broadcast || c == Coll::reduce || c == Coll::gather || c == Coll::scatter) ? o.root : -1;
        r.in_place = ip == 1;
        r.wrong = o.check ? ss.harness.check(*w) : -1;
        r.time_us = ss.harness.time_us(*w, iters);
        // NCCL rows: NCCL's own estimate, asked after the timing (a simulated group before it left NCCL's small
        // sizes ~0.9 us faster than a program that never asks: docs/findings/2026-11-28-nccl-estimate-order.md)
        r.nccl_estimate_us = w->nccl_estimate_us();
        fill_bandwidths(r);
        r.device = ss.comm.device_label();
        r.commit = sha;
        r.date = date;
        std::string note = w->note();
        if (!ss.harness.last_fallback().empty()) note += "; " + ss.harness.last_fallback();
        if (!plan.why.empty()) note = plan.why + "; " + note;
        if (ss.comm.shared()) note = "ranks share GPUs: timing not meaningful; " + note;
        r.note = note;
        r.extra = {{"graph", o.graph ? "1" : "0"},
                   {"iters", std::to_string(iters)},
                   {"cuda", ss.comm.versions()},
                   {"driver", ss.driver},
                   {"tune", o.tune},
                   {"node_size", ap->hierarchical && o.node_size > 0 ? std::to_string(o.node_size) : ""}};
        // The plan that ran, as columns: `cclab compare` checks that it is the plan it priced.
        plan.launches = iters;
        for (auto& col : plan.columns()) r.extra.push_back(std::move(col));
        if (pred) {
          try {
            o.predictor(r);
          } catch (const Error& err) {
            if (err.kind() != ErrorKind::input) throw;  // the simulator cannot run this row: none
          }
        }
        if (r.wrong > 0) total_wrong += r.wrong;
        have[ip] = true;
      }
      print_run_line(out, have[0] ? &rec[0] : nullptr, have[1] ? &rec[1] : nullptr, pred);
      out.flush();
      for (int ip = 0; ip < 2; ++ip)
        if (have[ip]) rows.push_back(rec[ip]);
      if (!o.csv.empty()) write_csv_atomic(o.csv, rows);  // an interrupted sweep keeps finished rows
    }
  }
  std::signal(SIGINT, prev_int);
  std::signal(SIGTERM, prev_term);
  if (const int sig = g_interrupted) {
    out << "# interrupted by " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
        << (stopped.empty() ? "" : ": stopped before " + stopped) << "; " << rows.size() << " rows kept"
        << (o.csv.empty() ? "" : " in " + o.csv) << "\n";
    return 128 + sig;  // the shell's code for a process the signal stopped (130, 143): see cli/main.cpp
  }
  if (skipped) out << "# " << skipped << " runs skipped (see above)\n";
  out << "# out of bounds values : " << total_wrong << (total_wrong ? " FAILED" : " OK") << "\n";
  return total_wrong > 0 ? 3 : 0;
}

}  // namespace cclab::exec
