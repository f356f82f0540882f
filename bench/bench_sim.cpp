// Simulator throughput: flows simulated per second (Google Benchmark). "flows/s" counts the flows the
// engine actually ran; "represented_flows/s" counts every rank's flows, which a folded (symmetric) run
// covers by simulating one group of ranks.
#include <benchmark/benchmark.h>

#include "algorithms/registry.hpp"
#include "model/params.hpp"
#include "sim/predict.hpp"
#include "topology/topology.hpp"

namespace {

using namespace cclab;

void run(benchmark::State& state, const char* preset, const char* algo, int64_t bytes, sim::Symmetry sym) {
  const topo::Topology t = topo::make_preset(preset);
  sim::Simulator s(t, model::defaults_for(t));
  const Algorithm& a = find_algorithm(algo);
  AlgoArgs args;
  args.nranks = t.num_gpus();
  args.node_size = t.gpus_per_server();
  args.count = sim::count_for_bytes(a, bytes, DType::f32, args.nranks);
  sim::PredictOptions po;
  po.symmetry = sym;
  int64_t flows = 0, represented = 0;
  double simulated_us = 0;
  for (auto _ : state) {
    const sim::Prediction p = sim::predict(s, a, args, po);
    flows += p.result.flows;
    represented += p.fold_period > 0 ? p.result.flows * (args.nranks / p.fold_period) : p.result.flows;
    simulated_us = p.result.time.us();
  }
  state.counters["flows/s"] = benchmark::Counter(double(flows), benchmark::Counter::kIsRate);
  state.counters["represented_flows/s"] = benchmark::Counter(double(represented), benchmark::Counter::kIsRate);
  state.counters["simulated_us"] = simulated_us;
}

void BM_RingAllReduce_DgxH100_1GiB(benchmark::State& st) {
  run(st, "dgx-h100", "allreduce.ring", int64_t(1) << 30, sim::Symmetry::automatic);
}
void BM_NcclAllReduce_DgxH100_1GiB(benchmark::State& st) {
  run(st, "dgx-h100", "allreduce.nccl", int64_t(1) << 30, sim::Symmetry::automatic);
}
void BM_RingAllReduce_16xDgxH100_64MiB(benchmark::State& st) {
  run(st, "16xdgx-h100", "allreduce.ring", int64_t(64) << 20, sim::Symmetry::off);
}
void BM_RingAllReduce_128xDgxH100_1GiB_Full(benchmark::State& st) {
  run(st, "128xdgx-h100", "allreduce.ring", int64_t(1) << 30, sim::Symmetry::off);
}
void BM_RingAllReduce_128xDgxH100_1GiB_Folded(benchmark::State& st) {
  run(st, "128xdgx-h100", "allreduce.ring", int64_t(1) << 30, sim::Symmetry::automatic);
}
void BM_HierAllToAll_128xDgxH100_1GiB_Folded(benchmark::State& st) {
  run(st, "128xdgx-h100", "alltoall.hier", int64_t(1) << 30, sim::Symmetry::automatic);
}

BENCHMARK(BM_RingAllReduce_DgxH100_1GiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NcclAllReduce_DgxH100_1GiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingAllReduce_16xDgxH100_64MiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingAllReduce_128xDgxH100_1GiB_Full)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_RingAllReduce_128xDgxH100_1GiB_Folded)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_HierAllToAll_128xDgxH100_1GiB_Folded)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
