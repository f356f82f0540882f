// Machines we do not own: cclab's predictions of the published nccl-tests (and PyTorch) measurements in
// shared/published/ (beside the source tree), each file on the preset built for its machine from datasheets.
// The goal per file (issue 21): median |error| <= 10% and no point worse than 25%.
//
// Rows believed wrong for a model of NCCL are listed below with the reason; they are still predicted and
// printed, but left out of the goal. Files that miss the goal are listed with the numbers they reach and why;
// the test holds them to those numbers (so a regression fails) and says so, rather than loosening the goal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "core/record.hpp"
#include "model/nccl.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "sim/predict.hpp"

namespace cclab {
namespace {

namespace fs = std::filesystem;

constexpr double kMedianGoal = 0.10, kMaxGoal = 0.25;

struct Machine {
  const char* file;
  const char* target;  // preset (or topology file) the rows are predicted on
  // A file that misses the goal: why, and the numbers it is held to instead (0: the goal).
  const char* miss = nullptr;
  double median_ceiling = 0, max_ceiling = 0;
  // Settings the source says its rows ran under where the file's tune column does not (`compare --tune`), and
  // where the source says so.
  const char* tune = nullptr;
  const char* tune_source = nullptr;
};

// One preset per published machine (topology/presets.cpp, every number from a datasheet with its source).
const Machine kMachines[] = {
    {"h100x8_azure_ndv5_allreduce.csv", "dgx-h100",
     "NVLS at every size, as the source ran it: 64 KiB to 1 MiB take a flat 42 us (30-34 us at 16-32 KiB) where "
     "the model charges NCCL's NVLS latency (25 us) and the pipeline's fill (-14% to -39%); the NVLS kernel's "
     "latency below its first full loop of chunks is not modelled (multicast cannot be measured here). From "
     "1 KiB to 8 KiB and from 2 MiB within 13%",
     0.07, 0.40, "NCCL_ALGO=NVLS",
     "the source's results page says \"NCCL AllReduce (NVLS algorithm)\" and its runner "
     "(Benchmarks/NVIDIA/NCCLBandwidth.py) runs NCCL_ALGO=NVLS all_reduce_perf -b 8 -e 8G -f 2 -g 8; the file's "
     "tune column says NCCL's defaults"},
    {"h20x8_allreduce.csv", "hgx-h20",
     "the measured curve is the ring's (358 GB/s busbw at 1 GiB, the NVLink ring rate), though NCCL picks NVLS on "
     "8 Hopper GPUs of an NVSwitch and cclab follows it (NVLS 29% faster at 1 GiB): the source's machine likely "
     "ran without NVLS (NCCL drops it where the system has no multicast), which its record does not say. With "
     "NCCL_NVLS_ENABLE=0 the file meets the goal (RowsOfH20AreARingWithoutNvls)",
     0.09, 0.26},
    {"rtx2080ti_x2_pcie_nop2p.csv", "rtx2080ti-pcie"},
    {"rtx2080ti_x2_nvlink_bridge_allreduce.csv", "rtx2080ti-nvlink",
     "median met; NCCL 2.6.4 (nccl-tests#44) on Turing takes 13-36 us up to 512 KiB where NCCL 2.28's latency "
     "model gives 10-28 us (-21% to -36%); from 2 MiB within 8%. The source prints these rows in all_gather_perf's "
     "line format (no op column, count = size / 8 floats): as all-gather on both NVLink2 links they would be "
     "predicted ~2x fast (docs/machines.md)",
     0.08, 0.37},
    // Met. Until compare passes each record's tune column to the model (AlgoArgs::tune), the three
    // NCCL_NVLS_ENABLE=0 rows of 6-8 GPUs are priced as NVLS (-11% to -18%); with it, as rings (-5% to -6%).
    {"b200_nvls_and_multinode_allreduce.csv", "4xdgx-b200"},
    {"a100_multinode_ib_allreduce.csv", "3xhgx-a100-4nic"},
};

// Rows believed wrong for a model of NCCL: (file, ranks, bytes, a substring of the tune column or "", why).
struct DoubtedRow {
  const char* file;
  int ranks;
  int64_t bytes;
  const char* tune;
  const char* reason;
};
const DoubtedRow kDoubted[] = {
    {"b200_nvls_and_multinode_allreduce.csv", 32, 32768, "",
     "4 nodes, 32 KiB: 6349 us, 17x the 256 KiB row of the same sweep (382 us): a first-call outlier (connection "
     "setup) of PyTorch's all_reduce_bench, not a steady-state time"},
    {"a100_multinode_ib_allreduce.csv", 16, 1073741824, "",
     "2 nodes: the source (NVIDIA/nccl#1048) reports 86 GB/s busbw as below the 96 GB/s its 4 x HDR 200G NICs "
     "should give, i.e. a node performing under its hardware; cclab predicts the hardware"},
};

const std::string* extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return &v;
  return nullptr;
}

// Rows timed by PyTorch's all_reduce_bench (their note says "not nccl-tests") carry the harness's per-call cost:
// the sweep itself shows it as a flat floor at its smallest sizes (48-51 us on one node from 32 KiB to 1 MiB,
// 378-382 us across 4 nodes from 256 KiB to 1 MiB). Where that floor is more than 10% of a row's time, the row
// measures the harness more than NCCL: left out of the goal (still predicted and printed).
const char* kHarnessFloorReason =
    "PyTorch all_reduce_bench, not nccl-tests: the harness's per-call floor (the sweep's smallest time at this "
    "rank count) is more than 10% of this row's time";
double harness_floor(const std::vector<Record>& rows, const Record& r) {
  double floor = 0;
  for (const Record& o : rows)
    if (o.ranks == r.ranks && o.note == r.note && (floor == 0 || o.time_us < floor)) floor = o.time_us;
  return floor;
}

const DoubtedRow* doubted(const std::string& file, const Record& r) {
  for (const DoubtedRow& d : kDoubted) {
    if (file != d.file || r.ranks != d.ranks || r.bytes != d.bytes) continue;
    const std::string* tune = extra(r, "tune");
    if (*d.tune && (!tune || tune->find(d.tune) == std::string::npos)) continue;
    return &d;
  }
  return nullptr;
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}

// shared/published beside the source tree (the project's checkout is <workspace>/<tree>, the shared folder
// <workspace>/shared).
fs::path published_dir() { return fs::path(CCLAB_SOURCE_DIR) / ".." / "shared" / "published"; }

// NCCL's settings from a tune string: its own variables and the free text of published records.
TEST(NcclSettings, VariablesAndPublishedText) {
  using model::NcclAlgo;
  using model::Proto;
  const auto a = model::parse_nccl_settings("NCCL_ALGO=Ring,NCCL_PROTO=Simple,NCCL_NVLS_ENABLE=0,NCCL_P2P_DISABLE=1");
  EXPECT_TRUE(a.allows(NcclAlgo::ring));
  EXPECT_FALSE(a.allows(NcclAlgo::tree));
  EXPECT_TRUE(a.allows(Proto::simple));
  EXPECT_FALSE(a.allows(Proto::ll));
  EXPECT_EQ(a.nvls, false);
  EXPECT_TRUE(a.p2p_disable);
  // A list value keeps its commas; settings of the lowering beside it are ignored.
  const auto b = model::parse_nccl_settings("lowering=fused,NCCL_ALGO=Tree,Ring,mode=ll");
  EXPECT_TRUE(b.allows(NcclAlgo::tree));
  EXPECT_TRUE(b.allows(NcclAlgo::ring));
  EXPECT_FALSE(b.allows(NcclAlgo::nvls));
  EXPECT_EQ(b.protos, 0);
  EXPECT_FALSE(model::parse_nccl_settings("NCCL_PROTO=^LL128").allows(Proto::ll128));
  EXPECT_TRUE(model::parse_nccl_settings("NCCL_PROTO=^LL128").allows(Proto::ll));
  const auto c = model::parse_nccl_settings("NCCL 2.18.5 defaults (NVLS enabled)");
  EXPECT_EQ(c.nvls, true);
  EXPECT_EQ(c.version, "2.18.5");
  EXPECT_EQ(model::parse_nccl_settings("NVLS disabled").nvls, false);
  EXPECT_TRUE(model::parse_nccl_settings("P2P not supported by the GPUs (NCCL SHM transport)").p2p_disable);
  const auto d = model::parse_nccl_settings("NCCL defaults (old nccl-tests output)");
  EXPECT_FALSE(d.nvls.has_value());
  EXPECT_EQ(d.algos, 0);
  EXPECT_TRUE(model::parse_nccl_settings("").describe().empty());
}

// The choices NCCL makes on the published machines, from their presets.
TEST(NcclChoice, NvlsByArchitectureAndGpuCountAndTransportByPeerAccess) {
  auto comm = [](const char* preset, int n, const char* tune = "") {
    const model::Target t = model::resolve_target(preset);
    return model::nccl_comm_for(t.topology, t.params, n, std::min(n, t.topology.gpus_per_server()),
                                model::parse_nccl_settings(tune));
  };
  EXPECT_TRUE(comm("dgx-h100", 5).nvls);  // Hopper: 5 or more GPUs
  EXPECT_FALSE(comm("dgx-h100", 4).nvls);
  EXPECT_FALSE(comm("dgx-b200", 5).nvls);  // Blackwell: 6 or more
  EXPECT_TRUE(comm("dgx-b200", 6).nvls);
  EXPECT_FALSE(comm("dgx-b200", 8, "NCCL_NVLS_ENABLE=0").nvls);
  EXPECT_FALSE(comm("dgx-a100", 8).nvls);  // no NVLS before Hopper
  EXPECT_EQ(comm("dgx-b200", 8).compcap, 100);
  // GeForce parts without peer access over PCIe take the SHM transport unasked; over their bridge, NVLink.
  EXPECT_EQ(comm("rtx2080ti-pcie", 2).transport, model::NcclTransport::shm);
  EXPECT_EQ(comm("rtx2080ti-pcie", 2).gpus_per_uplink, 2);
  EXPECT_EQ(comm("rtx2080ti-nvlink", 2).transport, model::NcclTransport::nvlink);
  EXPECT_EQ(comm("rtx2080ti-nvlink", 2).compcap, 75);
  EXPECT_EQ(comm("pcie-2socket", 8).transport, model::NcclTransport::pcie);
  EXPECT_EQ(comm("dgx-h100", 8, "NCCL_P2P_DISABLE=1").transport, model::NcclTransport::shm);
  // Rails: 4 NICs for 8 GPUs on the A100 nodes, 8 on the B200 nodes.
  EXPECT_EQ(comm("3xhgx-a100-4nic", 24).nics, 4);
  EXPECT_EQ(comm("4xdgx-b200", 32).nics, 8);
  EXPECT_EQ(comm("4xdgx-b200", 32).nnodes, 4);
}

// A plan priced from its mechanisms (NVLS here) still gives a trace: per-op times of the schedule, stretched to the
// mechanism's time; the total is the same with or without the trace, and the note names the choice.
TEST(NcclChoice, MechanismPricedPlansKeepTheirTrace) {
  const model::Target t = model::resolve_target("dgx-h100");
  sim::Simulator simulator(t.topology, t.params);
  const Algorithm& a = find_algorithm("allreduce.nccl");
  AlgoArgs args;
  args.nranks = 8;
  args.node_size = 8;
  args.count = int64_t(1) << 28;  // 1 GiB of floats
  const sim::Prediction plain = sim::predict(simulator, a, args);
  sim::PredictOptions opt;
  opt.keep_schedule = true;
  opt.record_ops = true;
  const sim::Prediction traced = sim::predict(simulator, a, args, opt);
  ASSERT_TRUE(plain.nccl.has_value());
  EXPECT_EQ(plain.nccl->algo, model::NcclAlgo::nvls);
  EXPECT_NE(plain.record.note.find("nvls/simple"), std::string::npos) << plain.record.note;
  EXPECT_NEAR(traced.result.time.value, plain.result.time.value, 1e-12);
  ASSERT_FALSE(traced.schedule.ops.empty());
  EXPECT_EQ(traced.result.ops.size(), traced.schedule.ops.size());
  double last = 0;
  for (const auto& o : traced.result.ops) last = std::max(last, o.end);
  EXPECT_NEAR(last, traced.result.time.value, 1e-9 * traced.result.time.value);
  // With NVLS off the same call is a ring on the flow simulator, and reduce-scatter runs at all-gather's rate.
  args.tune = "NCCL_NVLS_ENABLE=0";
  EXPECT_EQ(sim::predict(simulator, a, args).nccl->algo, model::NcclAlgo::ring);
  AlgoArgs rs = args;
  const sim::Prediction ag = sim::predict(simulator, find_algorithm("allgather.nccl"), rs);
  const sim::Prediction rsp = sim::predict(simulator, find_algorithm("reducescatter.nccl"), rs);
  EXPECT_NEAR(rsp.result.time.value, ag.result.time.value, 0.01 * ag.result.time.value);
}

// NVLS all-reduce on one node: NCCL's chunk shrinks with the size (enqueue.cc: 128 KiB from 64 loops of 16 channels
// x 8 heads, then 64, 32, 16 KiB), and the three-stage pipeline (scatter, reduce and multicast, gather) costs
// two loops of fill beyond the bandwidth term.
TEST(NcclChoice, NvlsChunksShrinkWithSizeAndFillTwoLoops) {
  const model::Target t = model::resolve_target("dgx-h100");
  const model::NcclComm c =
      model::nccl_comm_for(t.topology, t.params, 8, 8, model::parse_nccl_settings("NCCL_ALGO=NVLS"));
  auto plan = [&](int64_t bytes) { return model::nccl_plan(t.params, c, "allreduce", bytes); };
  EXPECT_EQ(plan(2 << 20).chunk_bytes, 16 << 10);
  EXPECT_EQ(plan(4 << 20).chunk_bytes, 16 << 10);
  EXPECT_EQ(plan(8 << 20).chunk_bytes, 32 << 10);
  EXPECT_EQ(plan(64 << 20).chunk_bytes, 64 << 10);
  EXPECT_EQ(plan(int64_t(1) << 30).chunk_bytes, 128 << 10);
  auto cost = [&](int64_t bytes) {
    return model::nccl_mechanism_cost(t.params, c, plan(bytes), "allreduce", bytes, DType::f32)->time.us();
  };
  // 16 and 32 MiB run the same 32 KiB chunks (4 MiB loops): their difference is the bandwidth term of 16 MiB,
  // and 16 MiB costs the latency, its bandwidth term and two loops.
  const double per_byte = (cost(32 << 20) - cost(16 << 20)) / double(16 << 20);
  const double latency = plan(16 << 20).latency.us();
  EXPECT_NEAR(cost(16 << 20), latency + per_byte * double((16 + 2 * 4) << 20), 1e-6 * cost(16 << 20));
}

// Across nodes: trees whose edges cross leaf groups slow down on an oversubscribed spine; rings do not.
TEST(NcclChoice, OversubscribedSpineSlowsTreesNotRings) {
  auto time = [](const char* preset, const char* tune) {
    const model::Target t = model::resolve_target(preset);
    const model::NcclComm c = model::nccl_comm_for(t.topology, t.params, t.topology.num_gpus(),
                                                   t.topology.gpus_per_server(), model::parse_nccl_settings(tune));
    const int64_t bytes = int64_t(1) << 32;
    const model::NcclPlan plan = model::nccl_plan(t.params, c, "allreduce", bytes);
    return std::pair(plan.algo, model::nccl_mechanism_cost(t.params, c, plan, "allreduce", bytes, DType::f32)->time);
  };
  const auto [ring_algo, ring] = time("64xdgx-h100", "NCCL_ALGO=Ring");
  const auto [ring_os_algo, ring_os] = time("64xdgx-h100:os4", "NCCL_ALGO=Ring");
  EXPECT_EQ(ring_algo, model::NcclAlgo::ring);
  EXPECT_EQ(ring_os_algo, model::NcclAlgo::ring);
  EXPECT_NEAR(ring_os.value, ring.value, 1e-12);
  const auto [tree_algo, tree] = time("64xdgx-h100", "NCCL_ALGO=Tree");
  const auto [tree_os_algo, tree_os] = time("64xdgx-h100:os4", "NCCL_ALGO=Tree");
  EXPECT_EQ(tree_algo, model::NcclAlgo::tree);
  EXPECT_EQ(tree_os_algo, model::NcclAlgo::tree);
  EXPECT_GT(tree_os.value, 1.5 * tree.value);  // half of a node's tree traffic crosses groups, at 1/4 the rate
}

// What NCCL chose on the machines we measured (scripts/gpu_nccl_choices.sh: rank 0's TUNING log, per collective and
// size, in results/<machine>/nccl_choices/choices.csv) against the model's emulation of its tuner on that machine's
// profile: the same algorithm, protocol and channels for every logged size.
TEST(NcclChoice, AgreesWithWhatNcclLoggedOnOurMachines) {
  const fs::path results = fs::path(CCLAB_SOURCE_DIR) / "results";
  int files = 0, rows = 0;
  for (const auto& entry : fs::directory_iterator(results)) {
    const fs::path csv = entry.path() / "nccl_choices" / "choices.csv";
    const fs::path profile = fs::path(CCLAB_SOURCE_DIR) / "profiles" / (entry.path().filename().string() + ".json");
    if (!fs::exists(csv)) continue;
    ASSERT_TRUE(fs::exists(profile)) << csv << " has no profile " << profile;
    ++files;
    const model::Target t = model::resolve_target(profile.string());
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    ASSERT_EQ(line, "collective,ranks,bytes,algo,proto,channels") << csv;
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::string coll, ranks, bytes, algo, proto, channels;
      std::getline(ss, coll, ',');
      std::getline(ss, ranks, ',');
      std::getline(ss, bytes, ',');
      std::getline(ss, algo, ',');
      std::getline(ss, proto, ',');
      std::getline(ss, channels, ',');
      const int n = std::stoi(ranks);
      const model::NcclComm c = model::nccl_comm_for(t.topology, t.params, n, std::min(n, t.topology.gpus_per_server()),
                                                     model::parse_nccl_settings("NCCL_NVLS_ENABLE=0"));
      const model::NcclPlan plan = model::nccl_plan(t.params, c, coll, std::stoll(bytes));
      const std::string where = csv.string() + ": " + line;
      EXPECT_EQ(std::string(model::nccl_algo_name(plan.algo)), algo) << where;
      EXPECT_EQ(std::string(model::proto_name(plan.proto)), proto) << where;
      EXPECT_EQ(plan.channels, std::stoi(channels)) << where;
      ++rows;
    }
  }
  if (files == 0) GTEST_SKIP() << "no results/*/nccl_choices/choices.csv under " << results;
  EXPECT_GT(rows, 0);
}

// Point-to-point on one NVSwitch node of H200 (NCCL 2.28.3 logged "32 p2p channels per peer"): a peer's transfer
// stripes over up to 32 channels; between 2 ranks it starts from 16 (32 x 2 ranks halved to the communicator's 32),
// in parts of at least a protocol step / 8 (LL: 64 KiB steps, 8 KiB parts; Simple: 512 KiB steps, 64 KiB parts),
// doubling while parts exceed 32 steps.
TEST(NcclChoice, PointToPointChannelsFollowNcclsStriping) {
  const model::Target t = model::resolve_target(std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x2.json");
  const model::NcclComm c = model::nccl_comm_for(t.topology, t.params, 2, 2);
  EXPECT_EQ(c.channels, 24);
  EXPECT_EQ(model::nccl_p2p_channels_per_peer(c), 32);
  EXPECT_EQ(model::nccl_p2p_channels(t.params, c, model::Proto::ll, 8 << 10), 1);
  EXPECT_EQ(model::nccl_p2p_channels(t.params, c, model::Proto::ll, 64 << 10), 8);
  EXPECT_EQ(model::nccl_p2p_channels(t.params, c, model::Proto::ll, 1 << 20), 16);
  EXPECT_EQ(model::nccl_p2p_channels(t.params, c, model::Proto::simple, 1 << 20), 16);
  EXPECT_EQ(model::nccl_p2p_channels(t.params, c, model::Proto::simple, int64_t(1) << 30), 32);
  // All-to-all runs LL while a peer's share fits 16 KiB on each of its 32 channels: 2 ranks to 1 MiB.
  EXPECT_EQ(model::nccl_plan(t.params, c, "alltoall", 1 << 20).proto, model::Proto::ll);
  EXPECT_EQ(model::nccl_plan(t.params, c, "alltoall", 2 << 20).proto, model::Proto::simple);
}

// The H20 rows priced with NVLS off, as the measured curve suggests they ran: within the goal.
TEST(Published, RowsOfH20AreARingWithoutNvls) {
  const fs::path path = published_dir() / "h20x8_allreduce.csv";
  if (!fs::exists(path)) GTEST_SKIP() << "published measurements not found at '" << path.string() << "'";
  const model::Target t = model::resolve_target("hgx-h20");
  sim::Simulator simulator(t.topology, t.params);
  std::vector<std::pair<int64_t, double>> errors;
  for (const Record& r : read_csv(path.string())) {
    const Algorithm& a = find_algorithm(r.algo);
    AlgoArgs args;
    args.nranks = r.ranks;
    args.node_size = r.ranks;
    args.count = r.count;
    args.tune = "NCCL_NVLS_ENABLE=0";
    const sim::Prediction p = sim::predict(simulator, a, args);
    EXPECT_EQ(p.nccl->algo, model::NcclAlgo::ring) << r.bytes;
    errors.emplace_back(r.bytes, (p.record.time_us - r.time_us) / r.time_us);
  }
  const sim::ErrorSummary s = sim::summarize(errors);
  std::cout << "h20x8_allreduce.csv with NCCL_NVLS_ENABLE=0: median " << pct(s.median) << ", max " << pct(s.max)
            << " at " << s.worst_bytes << " B\n";
  EXPECT_LE(s.median, kMedianGoal);
  EXPECT_LE(s.max, kMaxGoal);
}

TEST(Published, EveryFileHasAPreset) {
  const fs::path dir = published_dir();
  if (dir.empty() || !fs::is_directory(dir))
    GTEST_SKIP() << "published measurements not found at '" << dir.string()
                 << "' (shared/published beside the source tree); nothing to check";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".csv") continue;
    const std::string name = e.path().filename().string();
    const bool known =
        std::any_of(std::begin(kMachines), std::end(kMachines), [&](const Machine& m) { return name == m.file; });
    EXPECT_TRUE(known) << name << ": a published file without a preset in this test";
  }
}

TEST(Published, EachFileMeetsTheGoals) {
  const fs::path dir = published_dir();
  if (dir.empty() || !fs::is_directory(dir))
    GTEST_SKIP() << "published measurements not found at '" << dir.string()
                 << "' (shared/published beside the source tree); nothing to check";
  std::cout << "file | target | rows | median | max | worst\n";
  for (const Machine& m : kMachines) {
    const fs::path path = dir / m.file;
    if (!fs::exists(path)) {
      ADD_FAILURE() << m.file << " is listed here but missing from " << dir.string();
      continue;
    }
    std::vector<Record> rows = read_csv(path.string());
    if (m.tune)
      for (Record& r : rows) sim::add_tune(r, m.tune);
    std::vector<Record> kept, left_out;
    std::vector<std::string> why_left_out;
    for (const Record& r : rows) {
      const DoubtedRow* d = doubted(m.file, r);
      const bool harness =
          r.note.find("not nccl-tests") != std::string::npos && harness_floor(rows, r) > 0.1 * r.time_us;
      if (d || harness) {
        left_out.push_back(r);
        why_left_out.push_back(d ? d->reason : kHarnessFloorReason);
      } else {
        kept.push_back(r);
      }
    }
    sim::RowPredictor predictor(model::resolve_target(m.target));
    const sim::Comparison c = sim::compare(kept, predictor, sim::Goals{kMedianGoal, 1.0, kMaxGoal});
    for (const auto& [row, why] : c.failed)
      ADD_FAILURE() << m.file << ": " << row << " could not be predicted: " << why;
    EXPECT_EQ(int(c.rows.size()), int(kept.size())) << m.file << ": rows left out by compare";
    const sim::ErrorSummary& s = c.overall;
    if (m.tune) std::cout << m.file << " with " << m.tune << ": " << m.tune_source << "\n";
    std::cout << m.file << " | " << m.target << " | " << s.sizes << " | " << pct(s.median) << " | " << pct(s.max)
              << " | " << s.worst_bytes << " B " << pct(s.worst_error) << "\n";
    for (const Record& r : c.rows) {
      const std::string* how = extra(r, "pred_note");
      std::cout << "    n=" << r.ranks << " " << r.bytes << " B: measured " << r.time_us << " us, predicted "
                << *r.pred_time_us << " us (" << pct(*r.error()) << ") " << (how ? *how : "") << "\n";
    }
    for (size_t i = 0; i < left_out.size(); ++i) {
      const Record& r = left_out[i];
      const Record p = predictor.with_prediction(r);
      std::cout << "    left out: n=" << r.ranks << " " << r.bytes << " B measured " << r.time_us << " us, predicted "
                << *p.pred_time_us << " us (" << pct(*p.error()) << "): " << why_left_out[i] << "\n";
    }
    if (!m.miss) {
      EXPECT_LE(s.median, kMedianGoal) << m.file << " on " << m.target;
      EXPECT_LE(s.max, kMaxGoal) << m.file << " on " << m.target << ", worst at " << s.worst_bytes << " B";
    } else {
      std::cout << "    known miss: " << m.miss << "\n";
      EXPECT_LE(s.median, m.median_ceiling > 0 ? m.median_ceiling : kMedianGoal)
          << m.file << " (known miss: " << m.miss << ")";
      EXPECT_LE(s.max, m.max_ceiling > 0 ? m.max_ceiling : kMaxGoal) << m.file << " (known miss: " << m.miss << ")";
    }
  }
}

}  // namespace
}  // namespace cclab
