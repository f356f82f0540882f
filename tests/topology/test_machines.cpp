// The presets and topology files of the published machines (issue 21): datasheet rates on their links, GeForce
// parts without PCIe peer access, NIC rails, the nvidia-smi import taking the GPU model and PCIe link from
// `nvidia-smi -q` or the caller, and the example files of topology/examples/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {
namespace {

std::string example(const std::string& name) { return std::string(CCLAB_SOURCE_DIR) + "/topology/examples/" + name; }

double gpu_link_GBps(const Topology& t, int gpu, LinkKind kind) {
  double best = 0;
  for (auto e : boost::make_iterator_range(boost::out_edges(t.gpu(gpu), t.graph)))
    if (t.link(e).kind == kind) best = std::max(best, t.link(e).bw.gbps());
  return best;
}

TEST(Machines, PresetsCarryTheirDatasheetRates) {
  const Topology b200 = make_preset("dgx-b200");
  EXPECT_EQ(b200.num_gpus(), 8);
  EXPECT_NEAR(gpu_link_GBps(b200, 0, LinkKind::nvlink), 900, 1e-9);  // NVLink 5: 18 x 50
  const Topology h20 = make_preset("hgx-h20");
  EXPECT_NEAR(gpu_link_GBps(h20, 0, LinkKind::nvlink), 450, 1e-9);
  EXPECT_NEAR(h20.node(h20.gpu(0)).mem_bw.gbps(), 4000, 1e-9);
  const Topology pcie = make_preset("rtx2080ti-pcie");
  EXPECT_EQ(pcie.num_gpus(), 2);
  EXPECT_NEAR(gpu_link_GBps(pcie, 0, LinkKind::pcie), 15.75, 1e-9);  // Gen3 x16
  EXPECT_EQ(gpu_link_GBps(pcie, 0, LinkKind::nvlink), 0);
  EXPECT_FALSE(pcie.node(pcie.gpu(0)).pcie_p2p);  // GeForce
  EXPECT_EQ(connection_label(pcie, 0, 1), "PIX");
  const Topology bridge = make_preset("rtx2080ti-nvlink");
  EXPECT_NEAR(gpu_link_GBps(bridge, 0, LinkKind::nvlink), 50, 1e-9);  // 2 NVLink 2 links
  EXPECT_EQ(connection_label(bridge, 0, 1), "NV2");
  EXPECT_TRUE(make_preset("dgx-h100").node(make_preset("dgx-h100").gpu(0)).pcie_p2p);
}

TEST(Machines, ClustersHaveOneRailPerNic) {
  const Topology a100 = make_preset("3xhgx-a100-4nic");
  EXPECT_EQ(a100.num_gpus(), 24);
  EXPECT_EQ(a100.fabric.rails, 4);
  std::set<NodeId> nics(a100.fabric.nic_of_gpu.begin(), a100.fabric.nic_of_gpu.begin() + 8);
  EXPECT_EQ(nics.size(), 4u);  // two GPUs per NIC
  EXPECT_EQ(a100.fabric.nic_of_gpu[0], a100.fabric.nic_of_gpu[1]);
  EXPECT_NE(a100.fabric.nic_of_gpu[1], a100.fabric.nic_of_gpu[2]);
  const Path p = a100.route_gpus(1, 9);        // across servers through GPU1's NIC (the one of GPU0)
  EXPECT_NEAR(p.bottleneck.gbps(), 25, 1e-9);  // HDR 200 Gb/s
  const Topology b200 = make_preset("4xdgx-b200");
  EXPECT_EQ(b200.fabric.rails, 8);
  EXPECT_EQ(b200.num_gpus(), 32);
}

TEST(Machines, ImporterTakesModelAndPcieFromNvidiaSmiQuery) {
  std::ifstream in(example("rtx2080ti_x2_pcie.smi.txt"));
  ASSERT_TRUE(in) << "missing topology/examples/rtx2080ti_x2_pcie.smi.txt";
  std::stringstream text;
  text << in.rdbuf();
  const SmiFacts f = parse_smi_query(text.str());
  EXPECT_EQ(f.gpu_model, "NVIDIA GeForce RTX 2080 Ti");
  EXPECT_EQ(f.pcie_gen, 3);
  EXPECT_EQ(f.pcie_lanes, 16);
  const Topology t = load_file(example("rtx2080ti_x2_pcie.smi.txt"));
  EXPECT_EQ(t.node(t.gpu(0)).model, "GeForce RTX 2080 Ti 11GB");
  EXPECT_FALSE(t.node(t.gpu(0)).pcie_p2p);
  EXPECT_NEAR(gpu_link_GBps(t, 0, LinkKind::pcie), 15.75, 0.01);  // 8 GT/s x 16 x 128/130 / 8
  // The caller's facts win over the text's; a model without a spec keeps its name and says what was assumed.
  SmiFacts given;
  given.gpu_model = "Tesla V100-SXM2-32GB";
  given.pcie_gen = 4;
  given.pcie_lanes = 8;
  const Topology v = import_nvidia_smi(text.str(), "v100.txt", given);
  EXPECT_NE(v.node(v.gpu(0)).model.find("Tesla V100"), std::string::npos);
  EXPECT_NE(v.node(v.gpu(0)).model.find("assumed"), std::string::npos);
  EXPECT_NEAR(gpu_link_GBps(v, 0, LinkKind::pcie), 15.75, 0.01);  // Gen4 x8
  // Without any fact: the old assumption, said in the source.
  const std::string matrix_only = text.str().substr(0, text.str().find("=============="));
  const Topology a = import_nvidia_smi(matrix_only, "plain.txt");
  EXPECT_NE(a.node(a.gpu(0)).model.find("(assumed)"), std::string::npos);
}

TEST(Machines, ExampleFilesLoadAndMatchTheirPresets) {
  const std::pair<const char*, const char*> pairs[] = {
      {"h100x8_azure_ndv5.json", "dgx-h100"},
      {"h20x8.json", "hgx-h20"},
      {"b200x8.json", "dgx-b200"},
      {"a100x8_4nic.json", "hgx-a100-4nic"},
      {"rtx2080ti_x2_pcie_nop2p.json", "rtx2080ti-pcie"},
      {"rtx2080ti_x2_nvlink_bridge.json", "rtx2080ti-nvlink"},
  };
  for (const auto& [file, preset] : pairs) {
    const Topology f = load_file(example(file));
    const Topology p = make_preset(preset);
    EXPECT_EQ(f.num_gpus(), p.num_gpus()) << file;
    EXPECT_NEAR(gpu_link_GBps(f, 0, LinkKind::nvlink), gpu_link_GBps(p, 0, LinkKind::nvlink), 1e-9) << file;
    EXPECT_NEAR(gpu_link_GBps(f, 0, LinkKind::pcie), gpu_link_GBps(p, 0, LinkKind::pcie), 1e-9) << file;
    EXPECT_EQ(f.node(f.gpu(0)).pcie_p2p, p.node(p.gpu(0)).pcie_p2p) << file;
    EXPECT_EQ(connection_label(f, 0, 1), connection_label(p, 0, 1)) << file;
  }
}

TEST(Machines, DuplexLinksAndPeerAccessRoundTrip) {
  const Topology t = load_file(example("rtx2080ti_x2_pcie_nop2p.json"));
  EXPECT_EQ(t.num_links(), 8);  // 4 duplex entries
  const Topology back = from_json_text(to_json_text(t), "round trip");
  EXPECT_EQ(back.num_links(), 8);
  EXPECT_FALSE(back.node(back.gpu(1)).pcie_p2p);
  EXPECT_THROW(from_json_text(R"({"format": "cclab-topology", "version": 1, "name": "x",
      "nodes": [{"name": "g", "kind": "gpu", "index": 0, "pcie_p2p": 3}], "links": []})",
                              "bad"),
               Error);
}

}  // namespace
}  // namespace cclab::topo
