#include "sim/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

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
  if (double(bytes_[i - 1]) == b) return seconds_[i - 1];  // a table size: its time, exactly
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
  std::map<int64_t, double> points;  // bytes (the records') -> seconds
  const auto add = [&](const SweepResult& r) {
    for (const Record& rec : r.records)
      if (rec.bytes > 0 && rec.time_us > 0) points.emplace(rec.bytes, rec.time_us * 1e-6);
  };
  add(simulate_sweep(req));
  if (points.empty()) throw_input(req.algo + ": no size could be simulated for an estimate");

  // Steps: a time that grows faster than the size between two neighbours (log-log slope above 1), or falls,
  // or a slope that drops from one interval to the next, is a switch (a protocol, an algorithm, a chunk
  // count), which a power law would smear over the whole octave. Such intervals are halved (geometric
  // midpoint) until the step lies within grid.step_ratio, so the interpolation is off only there.
  std::set<int64_t> settled;  // left ends of intervals that cannot be halved further
  int added = 0;
  for (int round = 0; round < 16 && added < grid.max_step_points; ++round) {
    std::vector<std::pair<int64_t, int64_t>> split;
    req.sizes.clear();
    // The intervals and their log-log slopes; which to halve.
    std::vector<std::pair<int64_t, int64_t>> spans;
    std::vector<double> slopes;
    for (auto it = points.begin(); std::next(it) != points.end(); ++it) {
      const auto nx = std::next(it);
      spans.emplace_back(it->first, nx->first);
      slopes.push_back(std::log(nx->second / it->second) / std::log(double(nx->first) / double(it->first)));
    }
    std::vector<bool> halve(spans.size(), false);
    for (size_t i = 0; i < spans.size(); ++i) {
      if (slopes[i] > 1.0 + 1e-9 || slopes[i] < -1e-9) halve[i] = true;
      // An alpha-beta time's slope only grows with the size; where it drops, a switch to a faster way lies in
      // this interval or the one before.
      if (i > 0 && slopes[i] < slopes[i - 1] - grid.slope_drop) halve[i] = halve[i - 1] = true;
    }
    for (size_t i = 0; i < spans.size(); ++i) {
      const auto [lo, hi] = spans[i];
      if (!halve[i] || settled.count(lo) || double(hi) / double(lo) <= grid.step_ratio) continue;
      const auto mid = int64_t(std::llround(std::sqrt(double(lo) * double(hi))));
      if (mid <= lo || mid >= hi || added + int(req.sizes.size()) >= grid.max_step_points) {
        settled.insert(lo);
        continue;
      }
      split.emplace_back(lo, hi);
      req.sizes.push_back(mid);
    }
    if (req.sizes.empty()) break;
    const size_t before = points.size();
    try {
      add(simulate_sweep(req));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::input) throw;  // no midpoint could be simulated: they stay unsplit
    }
    added += int(points.size() - before);
    for (const auto& [lo, hi] : split) {
      const auto in = points.upper_bound(lo);
      if (in == points.end() || in->first >= hi) settled.insert(lo);  // its midpoint gave no new size
    }
  }
  std::vector<int64_t> bytes;
  std::vector<double> seconds;
  for (const auto& [b, t] : points) {
    bytes.push_back(b);
    seconds.push_back(t);
  }
  return TimeTable(std::move(bytes), std::move(seconds));
}

}  // namespace cclab::sim
