#include "exec/mmsp/run_mmsp.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/parse.hpp"
#include "exec/mmsp/cmatmul.hpp"
#include "exec/mmsp/sparse.hpp"
#include "exec/runtime/device.hpp"

namespace cclab::exec {

namespace {

constexpr const char* kDenseTable = "allreduce.nccl";
constexpr const char* kHostStaged = "allreduce.sparse_hoststaged";
// allreduce.sparse, the dense table, and the registry's executor baselines (algorithms/registry.hpp).
const std::vector<std::string>& sparse_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"allreduce.sparse", kDenseTable};
    for (const auto& b : executor_baselines()) n.push_back(b.name);
    return n;
  }();
  return names;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Names that exist only for sparse runs (allreduce.nccl without --rows is the ordinary sweep's).
bool is_sparse_only(const std::string& n) { return n != kDenseTable && contains(sparse_names(), n); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return v;
  return "";
}

bool sparse_flags_given(const RunOptions& o) {
  return !o.rows.empty() || !o.dim.empty() || !o.density.empty() || !o.dist.empty();
}

// --tune key=value,... with the keys this family knows.
std::map<std::string, std::string> tune_keys(const std::string& tune, const std::set<std::string>& known,
                                             const std::string& family) {
  std::map<std::string, std::string> m;
  if (tune.empty()) return m;
  for (const auto& kv : split(tune, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) throw_input("--tune: '" + kv + "' is not key=value");
    const std::string key = kv.substr(0, eq);
    if (!known.count(key)) {
      std::vector<std::string> k(known.begin(), known.end());
      throw_input("--tune: unknown key '" + key + "' for " + family + " runs (known: " + join(k) + ")");
    }
    m[key] = kv.substr(eq + 1);
  }
  return m;
}

// The names a family serves, `all` expanded; any other name is refused with the reason.
std::vector<std::string> family_names(const RunOptions& o, const std::vector<std::string>& served,
                                      const std::string& what) {
  std::vector<std::string> out;
  for (const auto& n : o.algos) {
    if (n == "all") {
      for (const auto& s : served)
        if (!contains(out, s)) out.push_back(s);
      continue;
    }
    if (!contains(served, n)) {
      (void)find_algorithm(n);  // unknown names: the registry's error, with close names
      throw_input(n + " does not run with " + what + " (these do: " + join(served) + ")");
    }
    if (!contains(out, n)) out.push_back(n);
  }
  if (out.empty()) throw_input("--algo is required (a name from `cclab list`, or all)");
  return out;
}

SparseMode parse_path(const std::string& s) {
  if (s == "auto") return SparseMode::automatic;
  if (s == "sparse") return SparseMode::sparse;
  if (s == "dense") return SparseMode::dense;
  throw_input("--tune path: '" + s + "' is not auto, sparse or dense");
}

const char* path_label(SparseMode m) {
  return m == SparseMode::sparse ? "sparse" : m == SparseMode::dense ? "dense" : "auto";
}

std::string fixed(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string wrong_text(const Record& r) { return r.wrong < 0 ? "N/A" : std::to_string(r.wrong); }

void predict_row(const RunOptions& o, Record& r) {
  if (!o.predictor) return;
  try {
    o.predictor(r);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::input) throw;  // rows the simulator cannot run keep no prediction
  }
}

std::string pred_cols(const Record& r, bool pred) {
  if (!pred) return "";
  if (!r.pred_time_us) return "          -        -";
  char b[64];
  std::snprintf(b, sizeof b, " %10.2f %+8.1f", *r.pred_time_us, r.error().value_or(0) * 100);
  return b;
}

void print_matmul_header(std::ostream& os, bool pred) {
  char b[512];
  std::snprintf(b, sizeof b, "#%-33s %12s %11s %9s %10s %8s %8s %7s %8s %7s %6s %6s %9s%s\n", " algo", "size", "count",
                "type", "time", "algbw", "busbw", "#wrong", "TFLOP/s", "tc_util", "/full", "x_nccl", "relerr",
                pred ? "  pred_time    error" : "");
  os << b;
  std::snprintf(b, sizeof b, "#%-33s %12s %11s %9s %10s %8s %8s %7s %8s %7s %6s %6s %9s%s\n", "", "(B)", "(elements)",
                "", "(us)", "(GB/s)", "(GB/s)", "", "per GPU", "(bound)", "", "", "",
                pred ? "       (us)      (%)" : "");
  os << b;
}

void print_matmul_row(std::ostream& os, const Record& r, bool pred) {
  char b[512];
  std::snprintf(b, sizeof b, " %-33s %12lld %11lld %9s %10.2f %8.2f %8.2f %7s %8s %7s %6s %6s %9s", r.algo.c_str(),
                (long long)r.bytes, (long long)r.count, r.dtype.c_str(), r.time_us, r.algbw_gbps, r.busbw_gbps,
                wrong_text(r).c_str(), extra(r, "tflops").c_str(), extra(r, "util_vs_bound").c_str(),
                extra(r, "ratio_vs_cublas_full").c_str(), extra(r, "speedup_vs_nccl_cublas").c_str(),
                extra(r, "relerr").c_str());
  os << b << pred_cols(r, pred) << "\n";
}

void print_sparse_header(std::ostream& os, bool pred) {
  char b[512];
  std::snprintf(b, sizeof b, "#%-27s %8s %8s %6s %6s %12s %12s %11s %10s %9s %9s %7s %8s %8s%s\n", " algo", "density",
                "dist", "mode", "path", "union", "size", "count", "time", "algbw", "busbw", "#wrong", "x_dense",
                "x_quad", pred ? "  pred_time    error" : "");
  os << b;
  std::snprintf(b, sizeof b, "#%-27s %8s %8s %6s %6s %12s %12s %11s %10s %9s %9s %7s %8s %8s%s\n", "", "", "", "", "",
                "", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "", "", "", pred ? "       (us)      (%)" : "");
  os << b;
}

void print_sparse_row(std::ostream& os, const Record& r, bool pred) {
  char b[512];
  std::snprintf(b, sizeof b, " %-27s %8s %8s %6s %6s %12s %12lld %11lld %10.2f %9.2f %9.2f %7s %8s %8s", r.algo.c_str(),
                extra(r, "density").c_str(), extra(r, "dist").c_str(), extra(r, "mode").c_str(),
                extra(r, "path").c_str(), extra(r, "union_mode").c_str(), (long long)r.bytes, (long long)r.count,
                r.time_us, r.algbw_gbps, r.busbw_gbps, wrong_text(r).c_str(), extra(r, "speedup_vs_dense_nccl").c_str(),
                extra(r, "speedup_vs_quadratic").c_str());
  os << b << pred_cols(r, pred) << "\n";
}

// Columns every row of this run carries besides the runner's own.
void stamp(const RunOptions& o, const RankGpus& gpus, Record& r) {
  r.topology = o.topology;
  if (gpus.shared() && r.note.find("share") == std::string::npos)
    r.note = "ranks share GPUs: timing not meaningful" + (r.note.empty() ? "" : "; " + r.note);
  r.extra.emplace_back("warmup", std::to_string(o.warmup));
  r.extra.emplace_back("iters", std::to_string(o.iters));
  r.extra.emplace_back("tune", o.tune);
}

}  // namespace

MatmulShape parse_matmul_shape(std::string_view flag, const std::string& text) {
  const auto dims = split(text, ',');
  if (dims.size() != 3) throw_input(std::string(flag) + " takes M,K,N (three positive integers), got '" + text + "'");
  MatmulShape s{parse_int(flag, dims[0], 1, INT32_MAX), parse_int(flag, dims[1], 1, INT32_MAX),
                parse_int(flag, dims[2], 1, INT32_MAX)};
  return s;
}

MmspFamily mmsp_family(const RunOptions& o) {
  const auto& mm = collective_matmul_algos();
  bool matmul = !o.shape.empty(), sparse = sparse_flags_given(o);
  for (const auto& n : o.algos) {
    if (contains(mm, n)) matmul = true;
    if (is_sparse_only(n)) sparse = true;
  }
  if (matmul) return MmspFamily::matmul;  // plan_mmsp refuses sparse flags or names beside it
  return sparse ? MmspFamily::sparse : MmspFamily::none;
}

MmspRun plan_mmsp(const RunOptions& o) {
  MmspRun p;
  p.family = mmsp_family(o);
  CCLAB_ASSERT(p.family != MmspFamily::none, "plan_mmsp: neither collective matmul nor sparse inputs");
  if (o.nranks < 0) throw_input("-g must be at least 1");
  if (p.family == MmspFamily::matmul) {
    if (sparse_flags_given(o))
      throw_input("--rows/--dim/--density/--dist are sparse all-reduce inputs; collective matmul takes --shape only");
    for (const auto& n : o.algos)
      if (is_sparse_only(n)) throw_input(n + " is a sparse all-reduce part: run it apart from collective matmul");
    p.algos = family_names(o, collective_matmul_algos(), "--shape (collective matmul)");
    if (o.shape.empty())
      throw_input(p.algos.front() + " needs --shape M,K,N (A_d is M x K on each rank, B_d is K x N)");
    p.shape = parse_matmul_shape("--shape", o.shape);
    if (o.op != RedOp::sum) throw_input("-o: collective matmul sums (reduce-scatter) or gathers; no other reduction");
    const auto t = tune_keys(o.tune, {"seed", "matmul_autotune", "ring_chunks"}, "collective matmul");
    if (t.count("seed")) p.seed = uint64_t(parse_int("--tune seed", t.at("seed"), 0, INT64_MAX));
    if (t.count("matmul_autotune"))
      p.matmul_autotune = parse_int("--tune matmul_autotune", t.at("matmul_autotune"), 0, 1) == 1;
    if (t.count("ring_chunks")) p.ring_chunks = int(parse_int("--tune ring_chunks", t.at("ring_chunks"), 1, 64));
    return p;
  }
  // Sparse all-reduce.
  std::vector<std::string> served = sparse_names();
  p.algos = family_names(o, served, "--rows/--dim (sparse all-reduce)");
  if (o.rows.empty() || o.dim.empty())
    throw_input(p.algos.front() + " needs --rows R and --dim D (a table of R rows of D floats)");
  if (o.dtype != DType::f32)
    throw_input("-d: the sparse all-reduce runs on float rows (got " + std::string(dtype_name(o.dtype)) + ")");
  if (o.op != RedOp::sum)
    throw_input("-o: the sparse all-reduce sums rows (got " + std::string(redop_name(o.op)) + ")");
  const int64_t rows = parse_int("--rows", o.rows, 1, INT32_MAX);
  const int64_t dim = parse_int("--dim", o.dim, 1, 1 << 20);
  std::vector<double> densities;
  for (const auto& d : split(o.density.empty() ? "0.01" : o.density, ','))
    densities.push_back(parse_double("--density", d, 0.0, 1.0));
  std::vector<IndexDist> dists;
  for (const auto& d : split(o.dist.empty() ? "uniform" : o.dist, ',')) {
    if (d != "uniform" && d != "zipf") throw_input("--dist: '" + d + "' is not uniform or zipf");
    dists.push_back(d == "zipf" ? IndexDist::zipf : IndexDist::uniform);
  }
  const auto t = tune_keys(o.tune, {"path", "union", "dense_iters", "seed"}, "sparse all-reduce");
  if (t.count("seed")) p.seed = uint64_t(parse_int("--tune seed", t.at("seed"), 0, INT64_MAX));
  if (t.count("dense_iters")) p.dense_iters = int(parse_int("--tune dense_iters", t.at("dense_iters"), 1, 1000));
  if (t.count("path")) {
    p.paths.clear();
    for (const auto& s : split(t.at("path"), '+')) {
      const SparseMode m = parse_path(s);
      if (std::find(p.paths.begin(), p.paths.end(), m) == p.paths.end()) p.paths.push_back(m);
    }
  }
  if (t.count("union")) {
    p.unions.clear();
    for (const auto& u : split(t.at("union"), '+')) {
      if (u != "allgather" && u != "gather_bcast")
        throw_input("--tune union: '" + u + "' is not allgather or gather_bcast");
      if (!contains(p.unions, u)) p.unions.push_back(u);
    }
  }
  for (IndexDist dist : dists)
    for (double d : densities) {
      SparseSpec s;
      s.rows = rows;
      s.dim = dim;
      s.density = d;
      s.dist = dist;
      s.seed = p.seed;
      p.sparse.push_back(s);
    }
  return p;
}

std::string measured_sparse_crossover(const std::vector<Record>& rows, const std::string& dist) {
  std::map<double, double> ts, td;  // density -> time of the forced sparse / dense path
  for (const auto& r : rows) {
    if (r.algo != "allreduce.sparse" || extra(r, "dist") != dist) continue;
    const std::string d = extra(r, "density"), mode = extra(r, "mode");
    if (d.empty()) continue;
    const double p = parse_double("density", d, 0.0, 1.0);
    if (mode == "sparse") ts[p] = r.time_us;
    if (mode == "dense") td[p] = r.time_us;
  }
  double prev_p = -1, prev_diff = 0;
  for (const auto& [p, t] : ts) {
    if (!td.count(p)) continue;
    const double diff = t - td[p];  // > 0: dense is faster
    if (diff >= 0) {
      if (prev_p < 0) return std::string("<=").append(fixed(p, 4));
      return fixed(prev_p + (p - prev_p) * (-prev_diff) / (diff - prev_diff), 4);
    }
    prev_p = p;
    prev_diff = diff;
  }
  return prev_p < 0 ? std::string() : std::string(">").append(fixed(prev_p, 4));
}

int run_mmsp(const RunOptions& o, std::ostream& out) {
  const MmspRun p = plan_mmsp(o);
  const bool pred = static_cast<bool>(o.predictor);
  const int visible = visible_devices();
  if (visible == 0) throw_env("no CUDA device found");
  const int n = o.nranks > 0 ? o.nranks : visible;
  if (n > visible && !o.share_gpus)
    throw_input("-g " + std::to_string(n) + ": only " + std::to_string(visible) +
                " GPUs are visible (add --share-gpus to run several ranks per GPU; timings are then not meaningful)");
  RankGpus gpus = RankGpus::create(n, o.share_gpus);
  const bool explicit_all = contains(o.algos, "all");
  std::vector<std::string> algos = p.algos;
  if (gpus.shared()) {
    for (const auto& a : algos) {
      const bool nccl = a.find("nccl") != std::string::npos;
      if (nccl && !explicit_all) throw_input(a + " needs one GPU per rank (NCCL): drop --share-gpus or this baseline");
    }
    std::erase_if(algos, [](const std::string& a) { return a.find("nccl") != std::string::npos; });
  }

  out << "# cclab run: " << n << " ranks on " << gpus.device_label() << ", "
      << (p.family == MmspFamily::matmul ? "collective matmul" : "sparse all-reduce") << ", warmup " << o.warmup
      << ", iters " << o.iters << (o.check ? ", checked" : ", not checked")
      << (gpus.shared() ? ", ranks share GPUs: timings not meaningful" : "") << "\n";

  std::vector<Record> rows;
  std::vector<std::string> failures;
  auto keep = [&](Record r) -> const Record& {
    stamp(o, gpus, r);
    predict_row(o, r);
    rows.push_back(std::move(r));
    return rows.back();
  };

  if (p.family == MmspFamily::matmul) {
    CmatmulConfig cfg;
    cfg.algos = algos;
    cfg.shape = p.shape;
    cfg.dtype = o.dtype;
    cfg.warmup = o.warmup;
    cfg.iters = o.iters;
    cfg.check = o.check;
    cfg.seed = p.seed;
    cfg.autotune = p.matmul_autotune;
    cfg.ring_chunks = p.ring_chunks;
    cfg.reference_rows = true;
    out << "#\n# shape per rank " << o.shape << " (A_d " << p.shape.m << " x " << p.shape.k << ", B_d " << p.shape.k
        << " x " << p.shape.n << "), " << dtype_name(o.dtype) << "; tc_util = " << n
        << " x (shard matmul time) / time; /full = time / one cuBLAS matmul of the gathered"
        << " shape; x_nccl = nccl_cublas time / time" << (pred ? "; prediction: " + o.predict : "") << "\n";
    print_matmul_header(out, pred);
    for (Record& r : run_collective_matmul(gpus, cfg, &failures)) print_matmul_row(out, keep(std::move(r)), pred);
    if (!o.csv.empty()) write_csv_atomic(o.csv, rows);
  } else {
    const bool want_sparse = contains(algos, "allreduce.sparse");
    const bool want_dense = contains(algos, kDenseTable);
    const bool want_host = contains(algos, kHostStaged);
    std::set<std::string> match_rows;
    for (const auto& a : algos)
      if (a.starts_with("index_match.")) match_rows.insert(a);
    std::string paths;
    for (auto m : p.paths) paths.append(paths.empty() ? "" : "+").append(path_label(m));
    out << "#\n# table " << p.sparse.front().rows << " rows x " << p.sparse.front().dim
        << " float (size = the dense table); x_dense = allreduce.nccl time of the table / time"
        << (want_sparse ? "; paths " + paths : "") << (pred ? "; prediction: " + o.predict : "") << "\n";
    print_sparse_header(out, pred);
    double dense_us = 0;
    bool dense_done = false;
    for (const SparseSpec& spec : p.sparse) {
      SparseConfig cfg;
      cfg.spec = spec;
      cfg.warmup = o.warmup;
      cfg.iters = o.iters;
      cfg.check = o.check;
      cfg.modes = want_sparse ? p.paths : std::vector<SparseMode>{};
      cfg.union_modes.clear();
      for (const auto& u : p.unions)
        cfg.union_modes.push_back(u == "allgather" ? UnionMode::allgather : UnionMode::gather_bcast);
      cfg.dense_baseline = want_dense && !dense_done;  // the table does not change with density: once
      cfg.dense_ref_us = dense_us;
      cfg.host_baseline = want_host;
      cfg.match_bench = !match_rows.empty();
      cfg.dense_iters = p.dense_iters;
      for (Record& r : run_sparse_allreduce(gpus, cfg, &failures)) {
        if (r.algo.starts_with("index_match.") && !match_rows.count(r.algo)) continue;
        if (r.algo == kDenseTable) {
          dense_us = r.time_us;
          dense_done = true;
        }
        print_sparse_row(out, keep(std::move(r)), pred);
      }
      if (cfg.dense_baseline) dense_done = true;  // measured (or failed: not again)
      out.flush();
      if (!o.csv.empty()) write_csv_atomic(o.csv, rows);
    }
    const bool both = std::count(p.paths.begin(), p.paths.end(), SparseMode::sparse) &&
                      std::count(p.paths.begin(), p.paths.end(), SparseMode::dense);
    if (want_sparse && both) {
      std::map<std::string, std::string> cx;
      for (const char* d : {"uniform", "zipf"}) cx[d] = measured_sparse_crossover(rows, d);
      for (auto& r : rows) r.extra.emplace_back("measured_crossover", cx[extra(r, "dist")]);
      for (const auto& [d, v] : cx)
        if (!v.empty()) out << "# measured crossover density (" << d << "): " << v << "\n";
      if (!o.csv.empty()) write_csv_atomic(o.csv, rows);
    }
  }
  for (const auto& f : failures) out << "# FAILED: " << f << "\n";
  int64_t wrong = 0;
  for (const auto& r : rows) wrong += std::max<int64_t>(0, r.wrong);
  out << "# out of bounds values : " << wrong << (wrong ? " FAILED" : " OK") << "\n";
  if (!failures.empty()) return 2;
  return wrong > 0 ? 3 : 0;
}

}  // namespace cclab::exec
