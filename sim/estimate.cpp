#include "sim/estimate.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace cclab::sim {

TimeTable::TimeTable(std::vector<int64_t> bytes, std::vector<double> seconds)
    : bytes_(std::move(bytes)), seconds_(std::move(seconds)) {
  CCLAB_ASSERT(bytes_.size() == seconds_.size(), "a time table needs one time per size");
  for (size_t i = 0; i < bytes_.size(); ++i) {
    CCLAB_ASSERT(bytes_[i] > 0 && seconds_[i] > 0, "a time table's sizes and times are positive");
    CCLAB_ASSERT(i == 0 || bytes_[i] > bytes_[i - 1], "a time table's sizes ascend");
    log_bytes_.push_back(std::log(double(bytes_[i])));
    log_seconds_.push_back(std::log(seconds_[i]));
  }
}

double TimeTable::seconds(double b) const {
  const size_t n = bytes_.size();
  if (n == 0) return 0;
  if (b <= double(bytes_[0])) return seconds_[0];
  if (b >= double(bytes_[n - 1])) {
    if (n == 1) return seconds_[0];
    const double x0 = double(bytes_[n - 2]), x1 = double(bytes_[n - 1]);
    const double slope = (seconds_[n - 1] - seconds_[n - 2]) / (x1 - x0);
    return seconds_[n - 1] + std::max(slope, 0.0) * (b - x1);
  }
  // The first size above b (b lies strictly inside the table here).
  const size_t i =
      size_t(std::upper_bound(bytes_.begin(), bytes_.end(), b, [](double v, int64_t x) { return v < double(x); }) -
             bytes_.begin());
  const double f = (std::log(b) - log_bytes_[i - 1]) / (log_bytes_[i] - log_bytes_[i - 1]);
  return std::exp(log_seconds_[i - 1] + f * (log_seconds_[i] - log_seconds_[i - 1]));
}

TimeTable build_time_table(SweepRequest req, const TableGrid& grid) {
  if (req.algo.empty() || req.algo == "all" || req.algo.find(',') != std::string::npos)
    throw_input("an estimate's table is of one algorithm (got '" + req.algo + "')");
  if (grid.max_log2 < 0 || grid.max_log2 > 40 || grid.points_per_octave < 1 || grid.points_per_octave > 16)
    throw_input("an estimate's table spans 1 B to 2^max_log2 B (max_log2 0..40), 1..16 points per octave");
  const Algorithm& algo = find_algorithm(req.algo);
  if (algo.needs_shape || algo.needs_sparse)
    throw_input(algo.name + " has one size, set by its shape or table: simulate it instead of estimating");
  req.sizes.clear();
  for (int k = 0; k <= grid.max_log2 * grid.points_per_octave; ++k) {
    const auto b = int64_t(std::llround(std::exp2(double(k) / grid.points_per_octave)));
    if (req.sizes.empty() || b > req.sizes.back()) req.sizes.push_back(b);
  }
  req.trace = false;
  const SweepResult r = simulate_sweep(req);
  std::vector<int64_t> bytes;
  std::vector<double> seconds;
  for (const Record& rec : r.records) {
    if (rec.bytes <= 0 || rec.time_us <= 0) continue;
    if (!bytes.empty() && rec.bytes <= bytes.back()) continue;  // a size rounded onto its neighbour
    bytes.push_back(rec.bytes);
    seconds.push_back(rec.time_us * 1e-6);
  }
  if (bytes.empty()) throw_input(req.algo + ": no size could be simulated for an estimate");
  return TimeTable(std::move(bytes), std::move(seconds));
}

}  // namespace cclab::sim
