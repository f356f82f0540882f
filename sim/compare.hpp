// Predicted against measured: the simulator's prediction for a measured record (same algorithm, ranks,
// size, dtype, reduction, root, in-place, shape), and error statistics over a sweep.
//
// Error of a prediction: (predicted time - measured time) / measured time (DESIGN.md). Summaries give,
// per algorithm and rank count, the median and geometric mean of |error| over sizes, and the worst size.
// `cclab compare` prints them; `cclab run --predict` fills the prediction beside each row it measures.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/record.hpp"
#include "model/profile.hpp"

namespace cclab::sim {

class Simulator;

// Predicts measured rows on one target (a topology with its parameters, e.g. from a profile). One
// simulator is kept per target, so its routes are computed once for a whole sweep.
class RowPredictor {
 public:
  explicit RowPredictor(model::Target target);
  ~RowPredictor();
  RowPredictor(const RowPredictor&) = delete;
  RowPredictor& operator=(const RowPredictor&) = delete;

  // The simulated record for a measured row (backend "sim", topology the target's label). Throws an input
  // error naming the row when it cannot be simulated: unknown algorithm, one the simulator cannot run,
  // more ranks than the topology has GPUs, a collective matmul row without a shape, a sparse row without
  // rows / dim / density.
  Record predict(const Record& measured);
  // The measured row with pred_time_us and pred_busbw_gbps filled, and a `plan_mismatch` column where the plan
  // the row says ran (its plan columns) is not the plan the prediction priced.
  Record with_prediction(const Record& measured);

  const model::Target& target() const { return target_; }

 private:
  model::Target target_;
  std::unique_ptr<Simulator> sim_;
};

// One-shot form for `cclab run --predict`: resolves nothing, builds a simulator for the call.
Record predict(const Record& measured_row, const model::Target& target);

// The plan columns (lower::plan_column_names) where the measured row's plan differs from the predicted
// record's, as "name ran X, priced Y, ..."; nullopt where they agree or the row records no plan.
std::optional<std::string> plan_difference(const Record& measured, const Record& predicted);

// Adds settings the row ran under but its record does not carry (`compare --tune`) to its tune column; they
// follow the column's own, so they win where both name a setting.
void add_tune(Record& r, const std::string& settings);

// Why compare leaves a measured row out (nullopt: it is compared): not a GPU measurement, ranks shared
// GPUs (timing not meaningful), wrong results, no time.
std::optional<std::string> skip_reason(const Record& r);

struct Goals {
  double median = 0.05, geomean = 0.07, max = 0.20;  // issue 8's goals, per algorithm
};

struct ErrorSummary {
  std::string algo;  // "" for the overall summary
  int ranks = 0;
  int sizes = 0;                            // rows compared
  double median = 0, geomean = 0, max = 0;  // of |error|
  int64_t worst_bytes = 0;                  // the size with the largest |error|
  double worst_error = 0;                   // signed error there
  bool goals_met = false;
};

// Median, geometric mean and maximum of |error| over (bytes, signed error) pairs. The geometric mean
// floors |error| at 1e-6 (a perfect prediction would make it 0 whatever the other sizes).
ErrorSummary summarize(const std::vector<std::pair<int64_t, double>>& errors, const Goals& goals = {});

// NCCL's own estimate (the rows' nccl_estimate_us, from ncclGroupSimulateEnd) beside cclab's prediction, for
// one NCCL baseline: both against the same measured rows, those that carry NCCL's estimate.
struct NcclEstimateSummary {
  std::string algo;
  int ranks = 0;
  ErrorSummary nccl;   // (NCCL's estimate - measured) / measured
  ErrorSummary cclab;  // (cclab's prediction - measured) / measured on the same rows
  // The goal "cclab below NCCL's own estimate": cclab's median and max of |error| both lower than NCCL's.
  bool cclab_below() const { return cclab.median < nccl.median && cclab.max < nccl.max; }
};

struct Comparison {
  std::vector<Record> rows;                                 // compared rows, prediction filled
  std::vector<ErrorSummary> per_algo;                       // by (algorithm, ranks), in name order
  std::vector<NcclEstimateSummary> nccl_estimate;           // per (algorithm, ranks) whose rows carry one, same order
  ErrorSummary overall;                                     // every compared row
  std::map<std::string, int> skipped;                       // reason -> rows
  std::vector<std::pair<std::string, std::string>> failed;  // (row description, why it could not be predicted)
  // Rows whose plan that ran differs from the plan priced: (row description, the columns that differ).
  std::vector<std::pair<std::string, std::string>> plan_mismatches;
  bool goals_met() const;
};

// Compares every measured row that skip_reason() keeps. Rows that carry NCCL's estimate get a `nccl_error`
// column beside `error`, and their algorithm an NcclEstimateSummary. Where a series has both out-of-place and
// in-place rows, the out-of-place ones are compared (nccl-tests reports both; they agree closely).
// Rows that cannot be predicted are listed in `failed`, not thrown.
Comparison compare(const std::vector<Record>& measured, RowPredictor& predictor, const Goals& goals = {});

}  // namespace cclab::sim
