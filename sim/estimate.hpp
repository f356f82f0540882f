// The collective-time estimator behind cclab.estimate: a collective's predicted time at any size, read off
// a table of simulate_sweep's rows (the rows `cclab sim` prints) at log-spaced sizes. One table per
// (topology, algorithm, ranks, dtype, profile), built once; a lookup is a binary search and an
// interpolation in log-log (power law between neighbouring sizes).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sweep.hpp"

namespace cclab::sim {

class TimeTable {
 public:
  TimeTable() = default;
  // Points (bytes ascending, distinct; seconds > 0). Throws an internal error otherwise.
  TimeTable(std::vector<int64_t> bytes, std::vector<double> seconds);

  // Predicted seconds at `bytes`: between two table sizes, t = t0 (b / b0)^k with k the slope of log t
  // against log b between them (exact at the table's sizes); below the first size, the first size's time
  // (the smallest message the algorithm can split); above the last, the straight line through the last two
  // points (time linear in bytes, as bandwidth-bound transfers are).
  double seconds(double bytes) const;

  const std::vector<int64_t>& bytes() const { return bytes_; }
  const std::vector<double>& times() const { return seconds_; }
  bool empty() const { return bytes_.empty(); }

 private:
  std::vector<int64_t> bytes_;
  std::vector<double> seconds_;
  std::vector<double> log_bytes_, log_seconds_;
};

struct TableGrid {
  int max_log2 = 30;           // the largest size: 2^max_log2 bytes (1 GiB)
  int points_per_octave = 1;   // sizes 2^(k / points_per_octave), rounded to whole bytes
  double step_ratio = 1.0443;  // intervals with a step are halved until they span at most this (2^(1/16))
  double slope_drop = 0.05;    // a log-log slope this much below the previous interval's marks a step
  int max_step_points = 64;    // at most this many sizes added around steps
};

// The table of one algorithm (req.algo names one) from simulate_sweep at the grid's sizes (req.sizes is
// replaced), refined around steps: where the time between two neighbouring sizes grows faster than the size
// (or falls), or the log-log slope drops from one interval to the next (it only grows for alpha-beta times), a
// switch lies there (NCCL's protocols, a chunk count), and the intervals are halved until they span at most
// step_ratio. The table's sizes are the records' bytes (nccl-tests' size after the count is
// rounded to whole elements per rank); sizes that hold no element are left out, as `cclab sim` leaves them out.
TimeTable build_time_table(SweepRequest req, const TableGrid& grid = {});

}  // namespace cclab::sim
