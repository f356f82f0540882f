// cclab_mmsp_bench: measures collective matmul and sparse all-reduce on the GPUs of this node and
// writes contract records. Since `cclab run --shape / --rows` (exec/mmsp/run_mmsp.hpp) drives the same runners
// and scripts/measure_matmul_sparse.sh records through it, this driver is kept for direct use of the
// runners without the CLI (e.g. several shapes or dtypes in one process). Each configuration's rows are
// written to the CSV as soon as they exist (atomically), so a later failure loses nothing measured.
//
//   cclab_mmsp_bench matmul --ranks 2 --shape 1024,4096,4096 [--shape ...] [--dtype half,bfloat16]
//                    [--algo a,b] [-w 5] [-n 20] [--check 0|1] [--share] --csv FILE
//   cclab_mmsp_bench sparse --ranks 2 --rows R --dim D --density 0.001,0.01 [--dist uniform,zipf]
//                    [--paths auto,sparse,dense] [--union allgather,gather_bcast] [--host-at 0.01]
//                    [--match-at 0.01] [--dense-baseline 0|1] [--crossover] [-w 2] [-n 5]
//                    [--dense-iters 3] [--share] --csv FILE
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/parse.hpp"
#include "exec/mmsp/cmatmul.hpp"
#include "exec/mmsp/sparse.hpp"

namespace {

using namespace cclab;
using namespace cclab::exec;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// --flag value pairs and bare switches, only those declared.
class Flags {
 public:
  Flags(const std::vector<std::string>& argv, const std::set<std::string>& with_value,
        const std::set<std::string>& switches) {
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (switches.count(a)) {
        single_[a] = "1";
      } else if (with_value.count(a)) {
        if (i + 1 >= argv.size()) throw_input(a + " needs a value");
        if (a == "--shape")
          shapes_.push_back(argv[++i]);
        else
          single_[a] = argv[++i];
      } else {
        throw_input("unknown flag '" + a + "'");
      }
    }
  }
  bool has(const std::string& f) const { return single_.count(f) > 0; }
  std::string get(const std::string& f, const std::string& dflt) const {
    auto it = single_.find(f);
    return it == single_.end() ? dflt : it->second;
  }
  const std::vector<std::string>& shapes() const { return shapes_; }

 private:
  std::map<std::string, std::string> single_;
  std::vector<std::string> shapes_;
};

std::string extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return v;
  return "";
}

void write_rows(const std::string& csv, const std::vector<Record>& rows) {
  if (!csv.empty() && !rows.empty()) write_csv_atomic(csv, rows);
}

int cmd_matmul(const std::vector<std::string>& argv) {
  Flags f(argv, {"--ranks", "--shape", "--dtype", "--algo", "-w", "-n", "--check", "--csv", "--seed"}, {"--share"});
  const int ranks = int(parse_int("--ranks", f.get("--ranks", "2"), 1, 64));
  RankGpus gpus = RankGpus::create(ranks, f.has("--share"));
  std::vector<Record> all;
  int failures = 0;
  if (f.shapes().empty()) throw_input("matmul needs at least one --shape M,K,N");
  for (const std::string& shape_text : f.shapes()) {
    auto dims = split(shape_text, ',');
    if (dims.size() != 3) throw_input("--shape wants M,K,N (got '" + shape_text + "')");
    MatmulShape shape{parse_int("--shape", dims[0], 1, INT32_MAX), parse_int("--shape", dims[1], 1, INT32_MAX),
                      parse_int("--shape", dims[2], 1, INT32_MAX)};
    for (const std::string& dt : split(f.get("--dtype", "half"), ',')) {
      CmatmulConfig cfg;
      cfg.shape = shape;
      cfg.dtype = parse_dtype(dt);
      cfg.algos = split(f.get("--algo", ""), ',');
      cfg.warmup = int(parse_int("-w", f.get("-w", "5"), 0, 1000));
      cfg.iters = int(parse_int("-n", f.get("-n", "20"), 1, 100000));
      cfg.check = f.get("--check", "1") != "0";
      cfg.seed = uint64_t(parse_int("--seed", f.get("--seed", "1"), 0, INT64_MAX));
      try {
        std::vector<std::string> failed;
        auto rows = run_collective_matmul(gpus, cfg, &failed);
        for (const auto& f : failed)
          std::cerr << "cclab_mmsp_bench: matmul " << shape_text << " " << dt << ": " << f << "\n";
        failures += int(failed.size());
        all.insert(all.end(), rows.begin(), rows.end());
        write_rows(f.get("--csv", ""), all);
      } catch (const Error& e) {
        std::cerr << "cclab_mmsp_bench: matmul " << shape_text << " " << dt << ": " << e.what() << "\n";
        ++failures;
      }
    }
  }
  std::cout << "\n# collective matmul (" << gpus.device_label() << ", " << ranks << " ranks)\n";
  std::cout << std::left << std::setw(34) << "# algo" << std::setw(18) << "shape" << std::setw(10) << "dtype"
            << std::right << std::setw(11) << "time_us" << std::setw(9) << "TFLOP/s" << std::setw(10) << "util_bnd"
            << std::setw(10) << "vs_full" << std::setw(10) << "vs_nccl" << std::setw(10) << "relerr" << std::setw(8)
            << "wrong"
            << "\n";
  for (const auto& r : all)
    std::cout << std::left << std::setw(34) << r.algo << std::setw(18) << r.shape << std::setw(10) << r.dtype
              << std::right << std::fixed << std::setprecision(1) << std::setw(11) << r.time_us << std::setw(9)
              << extra(r, "tflops") << std::setw(10) << extra(r, "util_vs_bound") << std::setw(10)
              << extra(r, "ratio_vs_cublas_full") << std::setw(10) << extra(r, "speedup_vs_nccl_cublas")
              << std::setw(10) << extra(r, "relerr") << std::setw(8) << r.wrong << "\n";
  int64_t wrong = 0;
  for (const auto& r : all) wrong += std::max<int64_t>(0, r.wrong);
  if (wrong > 0) std::cerr << "cclab_mmsp_bench: " << wrong << " wrong elements\n";
  return failures ? 1 : (wrong ? 3 : 0);
}

SparseMode parse_path(const std::string& s) {
  if (s == "auto") return SparseMode::automatic;
  if (s == "sparse") return SparseMode::sparse;
  if (s == "dense") return SparseMode::dense;
  throw_input("--paths: '" + s + "' is not auto, sparse or dense");
}

bool in_list(double v, const std::vector<double>& list) {
  for (double x : list)
    if (std::fabs(x - v) <= 1e-12 * std::max(1.0, std::fabs(v))) return true;
  return false;
}

// The measured crossover of one distribution: the density where the forced-sparse and forced-dense
// times cross, linearly interpolated between the two measured densities that bracket it.
std::string crossover(const std::vector<Record>& rows, const std::string& dist) {
  std::map<double, double> ts, td;
  for (const auto& r : rows) {
    if (r.algo != "allreduce.sparse" || extra(r, "dist") != dist) continue;
    const double p = std::stod(extra(r, "density"));
    if (extra(r, "mode") == "sparse") ts[p] = r.time_us;
    if (extra(r, "mode") == "dense") td[p] = r.time_us;
  }
  double prev_p = -1, prev_d = 0;
  for (auto [p, t] : ts) {
    if (!td.count(p)) continue;
    const double d = t - td[p];  // > 0: dense is faster
    if (d >= 0) {
      if (prev_p < 0) return "<=" + std::to_string(p);
      return std::to_string(prev_p + (p - prev_p) * (-prev_d) / (d - prev_d));
    }
    prev_p = p;
    prev_d = d;
  }
  return prev_p < 0 ? "" : ">" + std::to_string(prev_p);
}

int cmd_sparse(const std::vector<std::string>& argv) {
  Flags f(argv,
          {"--ranks", "--rows", "--dim", "--density", "--dist", "--paths", "--union", "--host-at", "--match-at",
           "--dense-baseline", "-w", "-n", "--dense-iters", "--csv", "--seed", "--check"},
          {"--share", "--crossover"});
  const int ranks = int(parse_int("--ranks", f.get("--ranks", "2"), 1, 64));
  RankGpus gpus = RankGpus::create(ranks, f.has("--share"));
  std::vector<double> densities, host_at, match_at;
  for (const auto& d : split(f.get("--density", "0.01"), ',')) densities.push_back(parse_double("--density", d, 0, 1));
  for (const auto& d : split(f.get("--host-at", ""), ',')) host_at.push_back(parse_double("--host-at", d, 0, 1));
  for (const auto& d : split(f.get("--match-at", ""), ',')) match_at.push_back(parse_double("--match-at", d, 0, 1));
  std::vector<SparseMode> paths;  // --paths: the modes to measure
  for (const auto& p : split(f.get("--paths", "auto"), ',')) paths.push_back(parse_path(p));
  std::vector<UnionMode> unions;
  for (const auto& u : split(f.get("--union", "allgather"), ',')) {
    if (u == "allgather")
      unions.push_back(UnionMode::allgather);
    else if (u == "gather_bcast")
      unions.push_back(UnionMode::gather_bcast);
    else
      throw_input("--union: '" + u + "' is not allgather or gather_bcast");
  }
  std::vector<Record> all;
  int failures = 0;
  double dense_us = 0;
  bool dense_wanted = f.get("--dense-baseline", "1") != "0";
  for (const std::string& dist : split(f.get("--dist", "uniform"), ',')) {
    if (dist != "uniform" && dist != "zipf") throw_input("--dist: '" + dist + "' is not uniform or zipf");
    for (double p : densities) {
      SparseConfig cfg;
      cfg.spec.rows = parse_int("--rows", f.get("--rows", "1000000"), 1, INT32_MAX);
      cfg.spec.dim = parse_int("--dim", f.get("--dim", "256"), 1, 1 << 20);
      cfg.spec.density = p;
      cfg.spec.dist = dist == "zipf" ? IndexDist::zipf : IndexDist::uniform;
      cfg.spec.seed = uint64_t(parse_int("--seed", f.get("--seed", "1"), 0, INT64_MAX));
      cfg.warmup = int(parse_int("-w", f.get("-w", "2"), 0, 1000));
      cfg.iters = int(parse_int("-n", f.get("-n", "5"), 1, 100000));
      cfg.dense_iters = int(parse_int("--dense-iters", f.get("--dense-iters", "3"), 1, 1000));
      cfg.check = f.get("--check", "1") != "0";
      cfg.modes = paths;
      cfg.union_modes = unions;
      cfg.dense_baseline = dense_wanted && dense_us == 0;  // the table does not change with density: once
      cfg.dense_ref_us = dense_us;
      cfg.host_baseline = in_list(p, host_at);
      cfg.match_bench = in_list(p, match_at);
      try {
        std::vector<std::string> failed;
        auto rows = run_sparse_allreduce(gpus, cfg, &failed);
        for (const auto& f : failed)
          std::cerr << "cclab_mmsp_bench: sparse " << dist << " density " << p << ": " << f << "\n";
        failures += int(failed.size());
        for (const auto& r : rows)
          if (r.algo == "allreduce.nccl") dense_us = r.time_us;
        all.insert(all.end(), rows.begin(), rows.end());
        write_rows(f.get("--csv", ""), all);
      } catch (const Error& e) {
        std::cerr << "cclab_mmsp_bench: sparse " << dist << " density " << p << ": " << e.what() << "\n";
        ++failures;
      }
    }
  }
  if (f.has("--crossover")) {
    std::map<std::string, std::string> cx;
    for (const std::string& dist : {std::string("uniform"), std::string("zipf")}) cx[dist] = crossover(all, dist);
    for (auto& r : all) r.extra.emplace_back("measured_crossover", cx[extra(r, "dist")]);
    write_rows(f.get("--csv", ""), all);
    for (auto& [d, v] : cx)
      if (!v.empty()) std::cout << "# measured crossover density (" << d << "): " << v << "\n";
  }
  std::cout << "\n# sparse all-reduce (" << gpus.device_label() << ", " << ranks << " ranks)\n";
  std::cout << std::left << std::setw(28) << "# algo" << std::setw(10) << "rows" << std::setw(6) << "dim"
            << std::setw(9) << "density" << std::setw(9) << "dist" << std::setw(8) << "mode" << std::setw(8) << "path"
            << std::setw(13) << "union" << std::right << std::setw(12) << "time_us" << std::setw(11) << "vs_dense"
            << std::setw(10) << "vs_quad" << std::setw(10) << "union_rows" << std::setw(8) << "wrong"
            << "\n";
  for (const auto& r : all)
    std::cout << std::left << std::setw(28) << r.algo << std::setw(10) << extra(r, "rows") << std::setw(6)
              << extra(r, "dim") << std::setw(9) << extra(r, "density") << std::setw(9) << extra(r, "dist")
              << std::setw(8) << extra(r, "mode") << std::setw(8) << extra(r, "path") << std::setw(13)
              << extra(r, "union_mode") << std::right << std::fixed << std::setprecision(1) << std::setw(12)
              << r.time_us << std::setw(11) << extra(r, "speedup_vs_dense_nccl") << std::setw(10)
              << extra(r, "speedup_vs_quadratic") << std::setw(10) << extra(r, "union_rows") << std::setw(8) << r.wrong
              << "\n";
  int64_t wrong = 0;
  for (const auto& r : all) wrong += std::max<int64_t>(0, r.wrong);
  if (wrong > 0) std::cerr << "cclab_mmsp_bench: " << wrong << " wrong elements\n";
  return failures ? 1 : (wrong ? 3 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty())
      throw_input("usage: cclab_mmsp_bench matmul|sparse [flags] (see the header of cmatmul_sparse_main.cu)");
    const std::string mode = args.front();
    args.erase(args.begin());
    if (mode == "matmul") return cmd_matmul(args);
    if (mode == "sparse") return cmd_sparse(args);
    throw_input("unknown mode '" + mode + "' (matmul or sparse)");
  } catch (const Error& e) {
    std::cerr << "cclab_mmsp_bench: " << e.what() << "\n";
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "cclab_mmsp_bench: internal error: " << e.what() << "\n";
    return 4;
  }
}
