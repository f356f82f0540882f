// Microbenchmarks for the fused path's model (sim/paths.cpp): synthetic programs (algorithms/fused_probes.hpp:
// one-way and two-way puts, with chains of local copies, extra puts or reductions; never a collective) run by
// the executor's own fused kernel (exec/runtime/fused_workload.cu) as `cclab run` times it: one graph per GPU of
// kFusedProbeLaunches (100) launches, as scripts/measure.sh times the fused sizes (the model spreads the replay's
// fixed cost over other counts with bidir.replay), 20 warm-up launches, the median of 5 replays.
//   fused.prog.<kind>.<n>   time per launch of the probe <kind>.<n>, at 8 B and 2 KiB per op (the ring, chain
//                           and fanout probes on 4 GPUs, where the machine has them)
// The kernel's fixed cost (launch, start and end flags) comes with the exact code the executor runs, which the
// flag-chain and per-op kernels of microbench.cu only approximate.
#include <algorithm>
#include <utility>
#include <vector>

#include "algorithms/fused_probes.hpp"
#include "core/error.hpp"
#include "exec/microbench/microbench.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/fused_workload.hpp"
#include "exec/runtime/harness.hpp"

namespace cclab::exec {

void run_fused_microbenchmarks(const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                               std::vector<std::string>& warnings) {
  if (opt.gpus < 2) return;
  auto log = [&](const std::string& m) {
    if (opt.log) opt.log(m);
  };
  log("fused programs (the executor's fused kernel on synthetic one-way / two-way programs)");
  TimingOptions t;
  t.warmup = 20;
  t.iters = kFusedProbeLaunches;
  t.graph = true;
  t.timeout_s = 30;
  FusedParams fp;
  fp.lowering = LoweringMode::fused;
  constexpr int kTrials = 5;
  auto run = [&](int ranks, const std::vector<FusedProbeRun>& probes) {
    Communicator comm(CommOptions{ranks, false});
    Harness h(comm, t);
    for (const auto& [kind, n] : probes) {
      const std::string name = fused_probe_series(kind, n);
      BenchSeries s{name,
                    "time per launch of the executor's fused kernel running the synthetic program " + name +
                        " (algorithms/fused_probes.hpp) on " + std::to_string(ranks) + " GPUs, one graph per GPU of " +
                        std::to_string(kFusedProbeLaunches) + " launches, median of 5 replays",
                    {}};
      try {
        for (int64_t bytes : {int64_t(8), int64_t(2048)}) {
          FusedWorkload w(comm, fused_probe(kind, n, bytes), fp);
          std::vector<double> us;
          for (int i = 0; i < kTrials; ++i) us.push_back(h.time_us(w));
          std::sort(us.begin(), us.end());
          s.points.push_back(BenchPoint{bytes, us[us.size() / 2] * 1e-6, t.iters});
        }
        out.push_back(std::move(s));
      } catch (const Error& e) {
        warnings.push_back(name + " failed: " + e.what());
      }
    }
  };
  run(2, fused_calibration_probes(false));
  // Several GPUs making hops at once against one at a time.
  if (opt.gpus >= kFusedWideProbeRanks) run(kFusedWideProbeRanks, fused_calibration_probes(true));
}
}  // namespace cclab::exec
