#include "sim/paths_cmatmul.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "sim/paths_detail.hpp"

namespace cclab::sim {

namespace {

struct Interval {
  double begin, end;
};

// A product of `work` seconds (alone) started at `start`: it runs 1/slow as fast while a copy of `copies`
// is in flight. Returns its end.
double run_product(double start, double work, const std::vector<Interval>& copies, double slow) {
  double t = start, left = work;
  std::vector<Interval> w = copies;
  std::sort(w.begin(), w.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  for (const Interval& c : w) {
    if (left <= 0) break;
    if (c.end <= t) continue;
    if (c.begin > t) {  // alone until the copy starts
      const double alone = std::min(left, c.begin - t);
      t += alone;
      left -= alone;
      if (left <= 0) break;
    }
    const double span = c.end - t, done = span / slow;  // beside the copy
    if (done >= left) return t + left * slow;
    t = c.end;
    left -= done;
  }
  return t + std::max(left, 0.0);
}

// NCCL's collective of `count` elements (nccl-tests' count: the gathered A, the D blocks of partials) on the
// row's ranks and settings, priced as a record of that NCCL baseline would be (more than 2 GPUs: NCCL's plan
// on the topology, its launch as measured on 2 of them).
double nccl_baseline_seconds(Simulator& sim, const std::string& baseline, const AlgoArgs& args, int64_t count,
                             std::string& how) {
  AlgoArgs a = args;
  a.shape = MatmulShape{};
  a.count = count;
  a.tune.clear();  // of the row's settings NCCL's collective reads its own (NCCL_*); the rest are the products'
  std::stringstream list(args.tune);
  for (std::string kv; std::getline(list, kv, ',');)
    if (kv.starts_with("NCCL_")) a.tune += (a.tune.empty() ? "" : ",") + kv;
  const Prediction p = predict(sim, find_algorithm(baseline), a);
  how = baseline + "(" + std::to_string(count * int64_t(dtype_size(args.dtype))) + " B): " + p.record.note;
  return p.record.time_us * 1e-6;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::optional<Prediction> predict_cmatmul_exec(Simulator& sim, const std::string& algo, const AlgoArgs& args) {
  const bool ring = algo == "allgather_matmul.ring", bidir = algo == "allgather_matmul.ring_bidir",
             rs = algo == "matmul_reducescatter.ring", nccl = algo == "allgather_matmul.nccl_cublas",
             rs_nccl = algo == "matmul_reducescatter.nccl_cublas";
  if (!ring && !bidir && !rs && !nccl && !rs_nccl) return std::nullopt;
  const model::ModelParams& P = sim.params();
  const std::string dt(dtype_name(args.dtype));
  const model::PathTable* mm = P.table("matmul." + dt);
  const model::PathTable* uni = P.table("p2p.ce.uni");
  const model::PathTable* bi = P.table("p2p.ce.bidir");
  if (!mm || !uni || !bi) return std::nullopt;
  const int D = args.nranks;
  const double m = double(args.shape.m), k = double(args.shape.k), n = double(args.shape.n);
  const double E = double(dtype_size(args.dtype));
  auto product = [&](double rows) { return mm->time(2.0 * rows * k * n).value; };
  // Slowdown of a product beside copies: the measured ratio at its FLOPs (1 where not measured).
  const model::PathTable* busy = P.table("matmul." + dt + ".ce_both");
  auto slow_for = [&](double rows) {
    if (!busy) return 1.0;
    const double f = 2.0 * rows * k * n;
    return std::max(1.0, busy->time(f).value / mm->time(f).value);
  };
  // On 2 GPUs both ranks copy towards each other at once; on more, each link direction carries one copy.
  auto copy = [&](double bytes) { return (D == 2 ? bi : uni)->time(bytes).value; };

  double t = 0;
  std::string how;
  if (nccl) {
    // NCCL's all-gather of the shards, then one product of the gathered rows, on one stream.
    std::string nccl_how;
    double gather = 0;
    if (const model::PathTable* nb = P.table("nccl.p2p.bidir"); nb && D == 2) {
      gather = nb->time(m * k * E).value;  // each rank's shard crosses once each way
      nccl_how = "nccl.p2p.bidir(shard)";
    } else if (auto g = nccl_two_gpus(P, sim.topology(), "allgather", int64_t(m * k * E) * D, D, nccl_how)) {
      gather = g->value;
    } else {
      gather = nccl_baseline_seconds(sim, "allgather.nccl", args, int64_t(m * k) * D, nccl_how);
    }
    t = gather + product(m * D);
    how = "NCCL all-gather (" + nccl_how + ") + matmul." + dt + "((m D) k n)";
  } else if (rs_nccl) {
    // One product of all D blocks' rows, then NCCL's reduce-scatter of the D m x n partials, on one stream.
    std::string nccl_how;
    double scatter = 0;
    if (const model::PathTable* nb = P.table("nccl.p2p.bidir"); nb && D == 2) {
      scatter = nb->time(m * n * E).value;  // each rank's block of partials crosses once each way
      nccl_how = "nccl.p2p.bidir(block)";
    } else if (auto g = nccl_two_gpus(P, sim.topology(), "reducescatter", int64_t(m * n * E) * D, D, nccl_how)) {
      scatter = g->value;
    } else {
      scatter = nccl_baseline_seconds(sim, "reducescatter.nccl", args, int64_t(m * n) * D, nccl_how);
    }
    t = product(m * D) + scatter;
    how = "matmul." + dt + "((m D) k n) + NCCL reduce-scatter (" + nccl_how + ")";
  } else if (ring || bidir) {
    // Step i multiplies the shard that arrived at step i-1 while a copy engine forwards it to the previous
    // rank (ring_bidir: half of the rows each way; on 2 GPUs both halves go to the one peer on two streams,
    // and both steps multiply whole shards). Copies run back to back: each forwards what just arrived.
    const double shard = m * k * E;
    const double c = bidir && D > 2 ? copy(shard / 2) : copy(shard);
    std::vector<Interval> copies;
    for (int i = 0; i + 1 < D; ++i) copies.push_back({i * c, (i + 1) * c});
    const double slow = slow_for(m);
    double end = 0;
    for (int i = 0; i < D; ++i) {
      const double start = std::max(end, i == 0 ? 0.0 : copies[size_t(i - 1)].end);
      const bool halves = bidir && D > 2 && i > 0 && 2 * i != D;  // two half products at this step
      end = halves ? run_product(run_product(start, product(m / 2), copies, slow_for(m / 2)), product(m - m / 2),
                                 copies, slow_for(m - m / 2))
                   : run_product(start, product(m), copies, slow);
    }
    t = std::max(end, copies.empty() ? 0.0 : copies.back().end);
    how = std::string(bidir ? "ring_bidir" : "ring") + ": " + std::to_string(D) + " x matmul." + dt +
          "(m k n), copies of the shard at p2p.ce." + (D == 2 ? "bidir" : "uni") + ", products beside copies x" +
          fmt(slow) + (busy ? " (matmul." + dt + ".ce_both)" : " (not measured)");
  } else {
    // matmul_reducescatter.ring: step s computes a block's partial into its own buffer (no wait), then adds
    // the partial the previous rank sent at step s-1, then copies the sum to the next rank; the copy of step
    // s runs beside the product of step s+1.
    const double block = m * n * E;
    const double c = copy(block), slow = slow_for(m);
    const model::PathTable* add = P.table("reduce.local." + dt);
    const double a = add ? add->time(block).value : 0;
    std::vector<Interval> copies;
    double end = 0;
    for (int s = 0; s < D; ++s) {
      end = run_product(end, product(m), copies, slow);
      if (s > 0) end = std::max(end, copies.back().end) + a;
      if (s + 1 < D) copies.push_back({end, end + c});
    }
    t = end;
    how = "ring: " + std::to_string(D) + " x (matmul." + dt + "(m k n) + reduce.local." + dt +
          "(block)), block copies at p2p.ce." + (D == 2 ? "bidir" : "uni") +
          " beside the next product, products beside copies x" + fmt(slow);
  }

  Prediction p;
  p.result.time = Seconds(t);
  Record& r = p.record;
  r.algo = algo;
  r.collective = rs || rs_nccl ? "matmul_reducescatter" : "allgather_matmul";
  r.backend = "sim";
  r.topology = sim.topology().name;
  r.ranks = D;
  r.count = args.shape.m * D * args.shape.k;
  r.bytes = r.count * dtype_size(args.dtype);
  r.dtype = dt;
  r.redop = rs || rs_nccl ? "sum" : "none";
  r.root = -1;
  r.time_us = Seconds(t).us();
  r.wrong = -1;
  r.shape = std::to_string(args.shape.m) + "," + std::to_string(args.shape.k) + "," + std::to_string(args.shape.n);
  fill_bandwidths(r);
  r.note = "executor collective matmul model, " + how;
  return p;
}

}  // namespace cclab::sim
