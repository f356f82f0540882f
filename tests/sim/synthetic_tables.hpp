// Synthetic measured tables for the executor path-model tests (tests/sim/test_paths*.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "model/params.hpp"

namespace cclab::sim::test {

constexpr int64_t kMiB = 1 << 20;

// t(S) = a + S / r at powers of two from 8 B to `max` (1 GiB by default).
inline model::PathTable line_table(double a, double r, int64_t max = int64_t(1) << 30) {
  model::PathTable t;
  for (int64_t b = 8; b <= max; b *= 2) t.points.push_back({b, a + double(b) / r});
  t.source = "synthetic";
  return t;
}

// The harness conditions a calibration reads from each series' method (model::series_conditions), here from the
// series' names: 100 launches per replayed graph for NCCL's send/recv at a pinned protocol (nccl.p2p.ll.*,
// nccl.p2p.simple.*), the .n100 repeats of older profiles and the fused probes, 20 for the other replayed series
// (bidir.*, nccl.p2p.*graph*).
inline model::ModelParams with_conditions(model::ModelParams p) {
  for (auto& [name, table] : p.tables) {
    const bool bidir = name.rfind("bidir.", 0) == 0 && name != "bidir.replay";
    const bool nccl_graph = name.rfind("nccl.p2p.", 0) == 0 && name.find("graph") != std::string::npos;
    const bool n100 = (name.size() > 5 && name.compare(name.size() - 5, 5, ".n100") == 0) ||
                      name.rfind("nccl.p2p.ll.", 0) == 0 || name.rfind("nccl.p2p.simple.", 0) == 0;
    if (name.rfind("fused.prog.", 0) == 0) table.launches_per_replay = 100;
    if (!bidir && !nccl_graph) continue;
    table.launches_per_replay = n100 ? 100 : 20;
  }
  return p;
}

}  // namespace cclab::sim::test
