// Where one algorithm stops beating another: sweeps a parameter (message size, sparse density) on the
// simulator and returns the crossover. Used by the tests (hierarchical against flat all-to-all, sparse
// against dense all-reduce) and handy in notebooks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

struct SweepPoint {
  double x = 0;  // the swept value (bytes, density)
  Seconds a, b;  // simulated times of the two algorithms
};

struct Crossover {
  std::vector<SweepPoint> points;
  // The first bracket [lo, hi] of consecutive points where the faster algorithm changes, and the
  // crossing estimated by interpolating log(t_a / t_b) linearly in log(x). Empty when one algorithm
  // wins everywhere (or the winner changes only at the first point).
  std::optional<double> lo, hi, at;
  bool a_wins_below = false;  // a is the faster one before the crossing
};

// Generic: times(x) gives (t_a, t_b); xs ascending.
Crossover find_crossover(const std::vector<double>& xs,
                         const std::function<std::pair<Seconds, Seconds>(double)>& times);

// Message size (bytes, as nccl-tests counts them) at which algorithm b starts beating a (or the
// reverse), sweeping min_bytes, min_bytes * factor, ... <= max_bytes. base gives everything but count.
Crossover find_size_crossover(Simulator& sim, const Algorithm& a, const Algorithm& b, const AlgoArgs& base,
                              int64_t min_bytes, int64_t max_bytes, int factor = 2);

// Sparse all-reduce against a dense all-reduce of the whole table: the density (fraction of rows each
// rank holds) above which the dense one is faster. base.sparse gives rows, dim and the index
// distribution; the sparse algorithm runs with SparseMode::sparse (no automatic switch).
Crossover find_density_crossover(Simulator& sim, const Algorithm& sparse_algo, const Algorithm& dense_algo,
                                 const AlgoArgs& base, const std::vector<double>& densities);

}  // namespace cclab::sim
