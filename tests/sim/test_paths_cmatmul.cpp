// The executor's collective matmul model (sim/paths_cmatmul.cpp) on synthetic tables: the products and copies
// follow the executor's streams (exec/mmsp/cmatmul.cu), copies hidden behind products where shorter, products
// slowed beside copies by the measured matmul.<dtype>.ce_both ratio, the reduce-scatter's product not
// waiting for the arriving partial (it is added after).
#include <gtest/gtest.h>

#include <tuple>

#include "model/params.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "sim/paths.hpp"
#include "sim/paths_cmatmul.hpp"
#include "sim/predict.hpp"
#include "sim/simulator.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

constexpr int64_t kM = 1024, kK = 4096, kN = 4096;
constexpr double kShardFlops = 2.0 * kM * kK * kN;

model::PathTable flat(double seconds) {
  model::PathTable t;
  t.points = {{8, seconds}, {int64_t(1) << 40, seconds}};
  return t;
}

// Products: shard 50 us, gathered (2 shards) 100 us; copies of anything: `copy` seconds.
model::ModelParams params(const topo::Topology& t, double copy, double busy_ratio) {
  model::ModelParams p = model::defaults_for(t);
  model::PathTable mm;
  mm.points = {{int64_t(kShardFlops), 50e-6}, {int64_t(2 * kShardFlops), 100e-6}};
  p.tables["matmul.half"] = mm;
  if (busy_ratio > 0) {
    model::PathTable busy;
    busy.points = {{int64_t(kShardFlops), 50e-6 * busy_ratio}, {int64_t(2 * kShardFlops), 100e-6 * busy_ratio}};
    p.tables["matmul.half.ce_both"] = busy;
  }
  p.tables["p2p.ce.bidir"] = flat(copy);
  p.tables["p2p.ce.uni"] = flat(copy);
  p.tables["reduce.local.half"] = flat(5e-6);
  p.tables["nccl.p2p.bidir"] = flat(30e-6);
  return p;
}

// A half-precision collective matmul of the shard shape on D ranks (count: the gathered A).
AlgoArgs shards(int D) {
  AlgoArgs a;
  a.nranks = D;
  a.dtype = DType::f16;
  a.shape = {kM, kK, kN};
  a.count = D * kM * kK;
  return a;
}

double predict_us(const model::ModelParams& p, const std::string& algo) {
  const topo::Topology t = topo::load_topology("h200x2");
  Simulator sim(t, p);
  const AlgoArgs a = shards(2);
  const auto pred = predict_cmatmul_exec(sim, algo, a);
  EXPECT_TRUE(pred) << algo;
  return pred ? pred->result.time.us() : 0;
}

TEST(PathsCmatmul, RingHidesShortCopiesAndWaitsForLongOnes) {
  const topo::Topology t = topo::load_topology("h200x2");
  EXPECT_NEAR(predict_us(params(t, 20e-6, 0), "allgather_matmul.ring"), 100, 1e-6);
  EXPECT_NEAR(predict_us(params(t, 70e-6, 0), "allgather_matmul.ring"), 120, 1e-6);
  // On 2 GPUs ring_bidir sends both halves to the one peer: the same steps.
  EXPECT_NEAR(predict_us(params(t, 20e-6, 0), "allgather_matmul.ring_bidir"), 100, 1e-6);
}

TEST(PathsCmatmul, ProductsBesideCopiesRunAtTheMeasuredRatio) {
  const topo::Topology t = topo::load_topology("h200x2");
  // 20 us of the first product beside the copy at 1/1.2 speed: 20 + (50 - 20 / 1.2) us, then 50 us alone.
  EXPECT_NEAR(predict_us(params(t, 20e-6, 1.2), "allgather_matmul.ring"), 20 + (50 - 20 / 1.2) + 50, 1e-6);
}

TEST(PathsCmatmul, ReduceScatterAddsTheArrivedPartialAfterItsProduct) {
  const topo::Topology t = topo::load_topology("h200x2");
  // Product 50, its copy (20) beside the second product (50), then the addition (5).
  EXPECT_NEAR(predict_us(params(t, 20e-6, 0), "matmul_reducescatter.ring"), 105, 1e-6);
  // A copy longer than the product: the addition waits for it.
  EXPECT_NEAR(predict_us(params(t, 70e-6, 0), "matmul_reducescatter.ring"), 50 + 70 + 5, 1e-6);
}

TEST(PathsCmatmul, NcclBaselineGathersThenMultiplies) {
  const topo::Topology t = topo::load_topology("h200x2");
  EXPECT_NEAR(predict_us(params(t, 20e-6, 0), "allgather_matmul.nccl_cublas"), 30 + 100, 1e-6);
  EXPECT_NEAR(predict_us(params(t, 20e-6, 0), "matmul_reducescatter.nccl_cublas"), 100 + 30, 1e-6);
}

// On more than 2 GPUs NCCL's collective is what the NCCL baseline's own record would be priced at (the gathered A,
// the D blocks of partials), beside the product of the D shards' rows.
TEST(PathsCmatmul, NcclBaselineOnFourGpusIsTheNcclCollectivesPrice) {
  const topo::Topology t = topo::load_topology("hgx-h200");
  const model::ModelParams p = params(t, 20e-6, 0);
  Simulator sim(t, p);
  AlgoArgs a = shards(4);
  a.tune = "matmul_autotune=0";  // the products' setting: not NCCL's
  const double product = p.tables.at("matmul.half").time(4 * kShardFlops).us();
  for (const auto& [algo, nccl, count] :
       {std::tuple{"allgather_matmul.nccl_cublas", "allgather.nccl", 4 * kM * kK},
        std::tuple{"matmul_reducescatter.nccl_cublas", "reducescatter.nccl", 4 * kM * kN}}) {
    AlgoArgs c = a;
    c.shape = {};
    c.count = count;
    c.tune = "";
    const double collective = predict(sim, find_algorithm(nccl), c).record.time_us;
    const auto pred = predict_cmatmul_exec(sim, algo, a);
    ASSERT_TRUE(pred) << algo;
    EXPECT_GT(collective, 0) << nccl;
    EXPECT_NEAR(pred->result.time.us(), collective + product, 1e-6) << algo;
  }
  // The reference of the D shard products, whatever D.
  EXPECT_TRUE(is_matmul_reference("matmul.cublas_shard_x4"));
  EXPECT_FALSE(is_matmul_reference("matmul.cublas"));
}

TEST(PathsCmatmul, CompareNamesTheExecutorsReduceScatterBaseline) {
  const topo::Topology t = topo::load_topology("h200x2");
  RowPredictor pred(model::Target{t, params(t, 20e-6, 0), std::nullopt, "h200x2"});
  Record r{.algo = "matmul_reducescatter.nccl_cublas",
           .collective = "matmul_reducescatter",
           .backend = "gpu",
           .ranks = 2,
           .time_us = 130};
  r.count = 2 * kM * kK;
  r.bytes = r.count * 2;
  r.dtype = "half";
  r.redop = "sum";
  r.shape = "1024,4096,4096";
  EXPECT_NEAR(pred.predict(r).time_us, 130, 1e-6);
}

TEST(PathsCmatmul, OtherNamesAndProfilesWithoutMatmulsAreNotModelled) {
  const topo::Topology t = topo::load_topology("h200x2");
  Simulator sim(t, model::defaults_for(t));
  const AlgoArgs a = shards(2);
  EXPECT_FALSE(predict_cmatmul_exec(sim, "allgather_matmul.ring", a));
  Simulator sim2(t, params(t, 20e-6, 0));
  EXPECT_FALSE(predict_cmatmul_exec(sim2, "allreduce.ring", a));
}

}  // namespace
}  // namespace cclab::sim
