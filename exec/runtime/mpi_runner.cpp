// `cclab run` under mpirun: the sweep of runner.cpp, one process per GPU. Every rank builds the same
// workloads in the same order (so the collectives inside them match), checks and times its share;
// rank 0 prints the table and writes the CSV. An error on any rank is one line naming the rank, then
// MPI_Abort ends every rank.
#include <cstdio>
#include <memory>
#include <ostream>

#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "exec/kernels/bidir.hpp"
#include "exec/runtime/fused_workload.hpp"
#include "exec/runtime/mpi_env.hpp"
#include "exec/runtime/mpi_workload.hpp"
#include "lower/lowering.hpp"

namespace cclab::exec {

namespace {

struct MpiAlgo {
  std::string name, collective;
  enum Kind { schedule, nccl, bidir } kind = schedule;
  const Algorithm* algo = nullptr;
};

// The names the MPI mode runs: registry schedules as one process lowers them (the copy-engine all-reduce and the
// link test among them), allreduce.bidir and its kernel modes, and `<collective>.nccl`. Throws an input error
// otherwise.
MpiAlgo classify_mpi(const std::string& name) {
  MpiAlgo m;
  m.name = name;
  if ((name == "allreduce.bidir" || name.starts_with("allreduce.bidir.")) && name != "allreduce.bidir.copy") {
    m.kind = MpiAlgo::bidir;
    m.collective = "allreduce";
    return m;
  }
  const Algorithm* a = nullptr;
  try {
    a = &find_algorithm(name);
  } catch (const Error&) {
    if (name.size() > 5 && name.ends_with(".nccl")) {
      m.kind = MpiAlgo::nccl;
      m.collective = name.substr(0, name.size() - 5);
      parse_coll(m.collective);
      return m;
    }
    throw;
  }
  m.algo = a;
  m.collective = a->collective;
  if (a->needs_shape || a->needs_sparse)
    throw_input(name + ": collective matmul and sparse runs are single-process only (not under mpirun)");
  if (a->library) {
    if (!name.ends_with(".nccl")) throw_input(name + ": only NCCL baselines run in this harness");
    m.kind = MpiAlgo::nccl;
    return m;
  }
  checked_coll(m.collective);
  if (!(a->backends & kGpu)) throw_input(name + " does not run on the GPU backend (see cclab list)");
  return m;
}

class MpiSweep {
 public:
  MpiSweep(const RunOptions& o, MpiWorld& world, lower::Settings settings)
      : o_(o),
        world_(world),
        harness_(world, TimingOptions{o.warmup, o.iters, o.graph, o.timeout_s}),
        set_(std::move(settings)) {}

  int run(const std::vector<MpiAlgo>& algos, const std::vector<int64_t>& sizes, std::ostream& out);

 private:
  std::unique_ptr<MpiWorkload> make(const MpiAlgo& a, int64_t count, bool in_place);
  std::unique_ptr<MpiWorkload> make_bidir(const MpiAlgo& a, int64_t count, bool in_place, uint64_t timeout_ns);
  std::unique_ptr<MpiWorkload> make_lowered(const Algorithm& algo, AlgoArgs args, uint64_t timeout_ns);
  // A schedule's arguments for this sweep's options at one size.
  AlgoArgs args_of(int64_t count, bool in_place) const {
    AlgoArgs args;
    args.nranks = world_.size();
    args.count = count;
    args.dtype = o_.dtype;
    args.redop = o_.op;
    args.root = o_.root;
    args.in_place = in_place;
    return args;
  }
  const RunOptions& o_;
  MpiWorld& world_;
  MpiHarness harness_;
  lower::Settings set_;  // --tune, read once
  std::unique_ptr<MpiNcclComm> nccl_;
};

std::unique_ptr<MpiWorkload> MpiSweep::make(const MpiAlgo& a, int64_t count, bool in_place) {
  const int n = world_.size();
  const uint64_t timeout_ns = uint64_t(o_.timeout_s * 0.8e9);  // kernel waits give up before the host does
  switch (a.kind) {
    case MpiAlgo::bidir:
      return make_bidir(a, count, in_place, timeout_ns);
    case MpiAlgo::nccl: {
      CollSpec spec{parse_coll(a.collective),
                    n,
                    count,
                    o_.dtype,
                    o_.op,
                    o_.root,
                    in_place,
                    detail::resolver(a.collective, n, count, o_.dtype, in_place)};
      if (!nccl_) nccl_ = std::make_unique<MpiNcclComm>(world_, NcclOptions{o_.nccl_algo, o_.nccl_proto});
      return std::make_unique<MpiNcclWorkload>(world_, *nccl_, spec);
    }
    case MpiAlgo::schedule:
      return make_lowered(*a.algo, args_of(count, in_place), timeout_ns);
  }
  return nullptr;
}

// allreduce.bidir's mode as the single-process lowering picks it (lower::bidir_mode_for, --tune mode=), run by
// this rank's process: the kernel modes as this rank's kernel (MpiBidirWorkload: the peers' buffers through CUDA
// IPC), copy and ring as the general plans lower_collective makes of them.
std::unique_ptr<MpiWorkload> MpiSweep::make_bidir(const MpiAlgo& a, int64_t count, bool in_place, uint64_t timeout_ns) {
  using lower::BidirMode;
  const int n = world_.size();
  const int64_t bytes = count * dtype_size(o_.dtype);
  const BidirMode m = lower::bidir_mode_for(a.name, bytes, n, set_.mode, set_.bidir);
  if (m == BidirMode::copy || m == BidirMode::ring)
    return make_lowered(find_algorithm(a.name), args_of(count, in_place), timeout_ns);
  CollSpec spec{Coll::allreduce, n,       count,    o_.dtype,
                o_.op,           o_.root, in_place, detail::resolver("allreduce", n, count, o_.dtype, in_place)};
  return std::make_unique<MpiBidirWorkload>(world_, set_.bidir, m, spec, o_.timeout_s * 0.8);
}

// A registry schedule lowered as one process lowers it (lower::lower_collective, with rank r on GPU r): the fused
// program's kernel on this rank's GPU, or this rank's steps of the general plan.
std::unique_ptr<MpiWorkload> MpiSweep::make_lowered(const Algorithm& algo, AlgoArgs args, uint64_t timeout_ns) {
  args.tune = o_.tune;
  if (algo.hierarchical) args.node_size = o_.node_size;
  lower::Machine machine;
  machine.sms = world_.sm_count();
  const lower::LoweredPlan plan = lower::lower_collective(algo, args, machine);
  if (plan.path == lower::Path::fused) {
    FusedParams fp = set_.fused;
    fp.timeout_s = double(timeout_ns) * 1e-9;
    return std::make_unique<MpiFusedWorkload>(world_, plan.schedule, fp, plan.fused);
  }
  return std::make_unique<MpiPlanWorkload>(world_, plan.schedule, plan.general, plan.reduce_blocks, timeout_ns);
}

int MpiSweep::run(const std::vector<MpiAlgo>& algos, const std::vector<int64_t>& sizes, std::ostream& out) {
  const bool pred = static_cast<bool>(o_.predictor);
  const int n = world_.size();
  const std::string date = detail::iso_date(), sha = detail::commit(), driver = detail::driver_version();
  out << "# cclab run: " << n << " ranks on " << world_.device_label() << " (MPI: one process per GPU; "
      << world_.versions() << (driver.empty() ? "" : " driver=" + driver) << "), "
      << (o_.graph ? "graph replay" : "op by op") << ", warmup " << o_.warmup << ", iters " << o_.iters
      << (o_.check ? ", checked" : ", not checked") << "\n";
  std::vector<Record> rows;
  int64_t total_wrong = 0, skipped = 0;
  for (const auto& a : algos) {
    out << "#\n# algo " << a.name << (pred ? "  (prediction: " + o_.predict + ", out-of-place rows)" : "") << "\n";
    print_run_header(out, pred);
    for (int64_t bytes : sizes) {
      const int64_t e = dtype_size(o_.dtype);
      int64_t count = bytes / e;
      const Coll c = checked_coll(a.collective);
      if (detail::needs_split(c)) count = count / n * n;
      if (count == 0 && bytes > 0) continue;
      Record rec[2];
      bool have[2] = {false, false};
      for (int ip = 0; ip < 2; ++ip) {
        if ((o_.inplace == 0 && ip == 1) || (o_.inplace == 1 && ip == 0)) continue;
        if (c == Coll::exchange && ip == 1) continue;  // the link test has no in-place form
        std::unique_ptr<MpiWorkload> w;
        std::string why;
        try {
          w = make(a, count, ip == 1);
        } catch (const Error& err) {
          if (err.kind() != ErrorKind::input) throw;
          why = err.what();
        }
        // Every rank skips when any rank cannot build the workload (the same schedule on every rank
        // fails alike; the agreement keeps the ranks' collectives matched regardless).
        if (const std::string any = world_.first_failure(why); !any.empty()) {
          out << "# " << a.name << " " << count * e << " B" << (ip ? " in place" : "") << ": skipped: " << any << "\n";
          ++skipped;
          continue;
        }
        Record& r = rec[ip];
        r.algo = a.name;
        r.collective = a.collective;
        r.backend = "gpu";
        r.topology = o_.topology;
        r.ranks = n;
        r.count = count;
        r.bytes = count * e;
        r.dtype = std::string(dtype_name(o_.dtype));
        r.redop = std::string(redop_name(o_.op));
        r.root = (c == Coll::broadcast || c == Coll::reduce || c == Coll::gather || c == Coll::scatter) ? o_.root : -1;
        r.in_place = ip == 1;
        r.wrong = o_.check ? harness_.check(*w) : -1;
        r.time_us = harness_.time_us(*w);
        if (a.kind == MpiAlgo::nccl) {
          // Each process simulates its own rank's call, after the timing as in one process; the row takes the
          // largest (-1: none on any rank).
          const double est = world_.max(w->nccl_estimate_us().value_or(-1));
          if (est >= 0) r.nccl_estimate_us = est;
        }
        w->buffers().release();  // peers' mappings closed before any rank frees its buffers
        fill_bandwidths(r);
        r.device = world_.device_label();
        r.commit = sha;
        r.date = date;
        r.note = w->note() + (harness_.last_fallback().empty() ? "" : "; " + harness_.last_fallback());
        r.extra = {{"graph", o_.graph ? "1" : "0"},
                   {"iters", std::to_string(o_.iters)},
                   {"cuda", world_.versions()},
                   {"driver", driver},
                   {"tune", o_.tune}};
        if (pred && world_.rank() == 0) {
          try {
            o_.predictor(r);
          } catch (const Error& err) {
            if (err.kind() != ErrorKind::input) throw;
          }
        }
        if (r.wrong > 0) total_wrong += r.wrong;
        have[ip] = true;
      }
      print_run_line(out, have[0] ? &rec[0] : nullptr, have[1] ? &rec[1] : nullptr, pred);
      out.flush();
      for (int ip = 0; ip < 2; ++ip)
        if (have[ip]) rows.push_back(rec[ip]);
      if (!o_.csv.empty() && world_.rank() == 0) write_csv_atomic(o_.csv, rows);
    }
  }
  if (skipped) out << "# " << skipped << " runs skipped (see above)\n";
  out << "# out of bounds values : " << total_wrong << (total_wrong ? " FAILED" : " OK") << "\n";
  return total_wrong > 0 ? 3 : 0;
}

}  // namespace

int run_sweep_mpi(const RunOptions& o, std::ostream& out) {
  const MpiLaunch launch = mpi_launch_from_env();
  // Validation before MPI_Init gives every rank the same answer: rank 0 reports it, the others only
  // exit with its code (one line, not one per process).
  std::vector<MpiAlgo> algos;
  std::vector<int64_t> sizes;
  lower::Settings settings;
  try {
    if (!o.shape.empty() || !o.rows.empty() || !o.dim.empty() || !o.density.empty() || !o.dist.empty())
      throw_input("--shape / --rows runs (collective matmul, sparse) are single-process only (not under mpirun)");
    if (const std::string why = mpi_option_refusal(o, launch); !why.empty()) throw_input(why);
    if (launch.world_size > 0 && o.root >= launch.world_size)
      throw_input("-r " + std::to_string(o.root) + " is not a rank of the " + std::to_string(launch.world_size) +
                  " processes");
    settings = lower::parse_settings(o.tune);  // bad --tune values are input errors, before any GPU work
    for (const auto& name : o.algos) {
      if (name != "all") {
        algos.push_back(classify_mpi(name));
        continue;
      }
      for (const auto& n : gpu_algorithm_names()) algos.push_back(classify_mpi(n));
    }
    if (algos.empty()) throw_input("--algo is required (a name from `cclab list`, or all)");
    sizes = sweep_sizes(o);
  } catch (const Error& e) {
    if (launch.world_rank <= 0) throw;
    return exit_code(e.kind());
  }

  std::unique_ptr<MpiWorld> world;
  int rank = launch.world_rank;
  auto fail = [&](int code, const std::string& what) -> int {
    // One write, so the ranks' lines do not interleave on a shared terminal.
    const std::string line = "cclab run: error: rank " + std::to_string(rank) + ": " + what + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Abort(MPI_COMM_WORLD, code);
    return code;
  };
  try {
    world = std::make_unique<MpiWorld>();
    rank = world->rank();
    if (o.root >= world->size())
      throw_input("-r " + std::to_string(o.root) + " is not a rank of the " + std::to_string(world->size()) +
                  " processes");
    std::ostream none(nullptr);  // ranks other than 0 print nothing
    return MpiSweep(o, *world, settings).run(algos, sizes, world->rank() == 0 ? out : none);
  } catch (const Error& e) {
    return fail(exit_code(e.kind()), e.what());
  } catch (const std::exception& e) {
    return fail(exit_code(ErrorKind::internal), e.what());
  }
}

}  // namespace cclab::exec
