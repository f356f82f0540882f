// On a uniform fully connected network with the ideal α-β model (no protocol or sync overheads, local
// work free), every algorithm's simulated time equals its textbook closed form (ALGORITHMS.md) within 0.1%.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "algorithms/registry.hpp"
#include "model/closed_form.hpp"
#include "model/params.hpp"
#include "sim/predict.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

constexpr double kBw = 100e9;
constexpr double kAlpha = 3e-6;

struct Case {
  std::string algo;
  int n;
  int64_t bytes;      // S as the closed form counts it
  int64_t chunk = 0;  // AlgoArgs::chunk_bytes (pipelines)
  std::function<Seconds(const model::AlphaBeta&, int, int64_t)> form;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.algo << " n=" << c.n << " S=" << c.bytes; }

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.algo + "_n" + std::to_string(info.param.n) + "_" + std::to_string(info.param.bytes);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class ClosedForm : public ::testing::TestWithParam<Case> {};

TEST_P(ClosedForm, SimulatedTimeEqualsTextbookCost) {
  const Case& c = GetParam();
  const topo::Topology t = topo::make_uniform(c.n, BytesPerSec(kBw), Seconds(kAlpha));
  Simulator sim(t, model::ModelParams::ideal());
  const Algorithm& a = find_algorithm(c.algo);
  AlgoArgs args;
  args.nranks = c.n;
  args.dtype = DType::f32;
  args.count = c.bytes / 4;
  args.chunk_bytes = c.chunk;
  const Prediction p = predict(sim, a, args);
  const double expect = c.form(model::AlphaBeta{Seconds(kAlpha), BytesPerSec(kBw)}, c.n, c.bytes).value;
  EXPECT_NEAR(p.result.time.value, expect, 1e-3 * expect)
      << c.algo << " n=" << c.n << " S=" << c.bytes << ": simulated " << p.result.time.us() << " us, closed form "
      << expect * 1e6 << " us";
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int n : {2, 3, 4, 8, 16}) {
    for (int64_t S : {int64_t(n) * 1024 * 64, int64_t(n) << 24}) {  // small (latency-bound) and 16 MiB/rank
      v.push_back({"allreduce.ring", n, S, 0, model::allreduce_ring});
      v.push_back({"allgather.ring", n, S, 0, model::allgather_ring});
      v.push_back({"reducescatter.ring", n, S, 0, model::reducescatter_ring});
      v.push_back({"alltoall.direct", n, S, 0, model::alltoall_direct});
      v.push_back({"broadcast.binomial", n, S, 0, model::broadcast_binomial});
      if ((n & (n - 1)) == 0) {
        // The textbook's ⌈log2 n⌉ rounds hold for powers of two; for other n a binomial gather overlaps
        // rounds that the formula keeps apart (the root receives from two children at once).
        v.push_back({"gather.binomial", n, S, 0, model::gather_binomial});
        v.push_back({"scatter.binomial", n, S, 0, model::gather_binomial});
        v.push_back({"allreduce.rhd", n, S, 0, model::allreduce_rhd});
      }
      v.push_back({"allreduce.bidir.flash", n, S, 0, model::allreduce_oneshot});
      if (n >= 3) {
        const int64_t chunk = S / 16;
        v.push_back({"broadcast.pipeline", n, S, chunk, [](const model::AlphaBeta& ab, int n, int64_t S) {
                       return model::broadcast_pipeline(ab, n, S, 16);
                     }});
      }
    }
  }
  // The double binary tree as ALGORITHMS.md states it, ~2⌈log2 n⌉α + Sβ: exact for two ranks with one
  // chunk per tree (each tree's half goes up then down), and Sβ in the bandwidth limit (α = 0, many chunks).
  for (int64_t S : {int64_t(1) << 16, int64_t(1) << 26})
    v.push_back({"allreduce.tree", 2, S, S / 2, model::allreduce_tree_stated});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Uniform, ClosedForm, ::testing::ValuesIn(cases()), case_name);

TEST(ClosedFormTree, BandwidthLimitIsSBeta) {
  const int n = 2;
  const int64_t S = int64_t(1) << 26;
  const topo::Topology t = topo::make_uniform(n, BytesPerSec(kBw), Seconds(0));
  Simulator sim(t, model::ModelParams::ideal());
  AlgoArgs args;
  args.nranks = n;
  args.count = S / 4;
  args.chunk_bytes = 64 << 10;  // 512 chunks per tree
  const Prediction p = predict(sim, find_algorithm("allreduce.tree"), args);
  const double expect = model::allreduce_tree_stated({Seconds(0), BytesPerSec(kBw)}, n, S).value;
  EXPECT_NEAR(p.result.time.value, expect, 1e-3 * expect);
}

}  // namespace
}  // namespace cclab::sim
