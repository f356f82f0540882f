#include "sim/crossover.hpp"

#include <cmath>

#include "core/error.hpp"
#include "sim/predict.hpp"

namespace cclab::sim {

Crossover find_crossover(const std::vector<double>& xs,
                         const std::function<std::pair<Seconds, Seconds>(double)>& times) {
  Crossover c;
  for (double x : xs) {
    auto [ta, tb] = times(x);
    c.points.push_back({x, ta, tb});
  }
  for (size_t i = 1; i < c.points.size(); ++i) {
    const auto &p = c.points[i - 1], &q = c.points[i];
    const bool a_before = p.a < p.b, a_after = q.a < q.b;
    if (a_before == a_after) continue;
    c.lo = p.x;
    c.hi = q.x;
    c.a_wins_below = a_before;
    // log(ta/tb) changes sign between p and q: interpolate in log x.
    const double f0 = std::log(p.a.value / p.b.value), f1 = std::log(q.a.value / q.b.value);
    const double l0 = std::log(p.x), l1 = std::log(q.x);
    const double w = f0 == f1 ? 0.5 : f0 / (f0 - f1);
    c.at = std::exp(l0 + w * (l1 - l0));
    break;
  }
  return c;
}

Crossover find_size_crossover(Simulator& sim, const Algorithm& a, const Algorithm& b, const AlgoArgs& base,
                              int64_t min_bytes, int64_t max_bytes, int factor) {
  if (min_bytes < 1 || max_bytes < min_bytes || factor < 2) throw_input("crossover sweep: bad size range");
  std::vector<double> xs;
  for (int64_t s = min_bytes; s <= max_bytes; s *= factor) {
    xs.push_back(double(s));
    if (s > max_bytes / factor) break;
  }
  return find_crossover(xs, [&](double bytes) {
    AlgoArgs aa = base, ab = base;
    aa.count = count_for_bytes(a, int64_t(bytes), base.dtype, base.nranks);
    ab.count = count_for_bytes(b, int64_t(bytes), base.dtype, base.nranks);
    return std::pair{predict(sim, a, aa).result.time, predict(sim, b, ab).result.time};
  });
}

Crossover find_density_crossover(Simulator& sim, const Algorithm& sparse_algo, const Algorithm& dense_algo,
                                 const AlgoArgs& base, const std::vector<double>& densities) {
  return find_crossover(densities, [&](double d) {
    AlgoArgs sp = base, de = base;
    sp.sparse.density = d;
    sp.sparse.mode = SparseMode::sparse;
    sp.count = base.sparse.rows * base.sparse.dim;
    de.count = base.sparse.rows * base.sparse.dim;
    return std::pair{predict(sim, sparse_algo, sp).result.time, predict(sim, dense_algo, de).result.time};
  });
}

}  // namespace cclab::sim
