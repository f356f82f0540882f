// Topology files: the cclab JSON round trip, the nvidia-smi topo -m and NCCL XML importers, and the errors
// that bad files get (file and line named, one line, input kind).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "core/error.hpp"
#include "topology/topology.hpp"

using namespace cclab;
using namespace cclab::topo;

namespace {

std::string data(const std::string& name) { return std::string(CCLAB_SOURCE_DIR) + "/tests/data/topology/" + name; }

std::filesystem::path temp_file(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("cclab-topo-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

// Everything a Topology holds, compared field by field (nodes in vertex order, links in id order).
void expect_same(const Topology& a, const Topology& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  ASSERT_EQ(boost::num_vertices(a.graph), boost::num_vertices(b.graph));
  ASSERT_EQ(a.num_links(), b.num_links());
  ASSERT_EQ(a.num_gpus(), b.num_gpus());
  for (size_t v = 0; v < boost::num_vertices(a.graph); ++v) {
    const Node& x = a.node(v);
    const Node& y = b.node(v);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.server, y.server);
    EXPECT_EQ(x.socket, y.socket);
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.mem_bw.value, y.mem_bw.value);  // exact, not near
    EXPECT_EQ(x.flops, y.flops);
    EXPECT_EQ(x.source, y.source);
    EXPECT_EQ(x.model, y.model);
  }
  for (int id = 0; id < a.num_links(); ++id) {
    const LinkId e = a.link_by_id(id);
    const LinkId f = b.link_by_id(id);
    EXPECT_EQ(boost::source(e, a.graph), boost::source(f, b.graph));
    EXPECT_EQ(boost::target(e, a.graph), boost::target(f, b.graph));
    const Link& x = a.link(e);
    const Link& y = b.link(f);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.bw.value, y.bw.value);
    EXPECT_EQ(x.latency.value, y.latency.value);
    EXPECT_EQ(x.lanes, y.lanes);
    EXPECT_EQ(x.source, y.source);
    EXPECT_EQ(x.id, y.id);
  }
  for (int g = 0; g < a.num_gpus(); ++g) EXPECT_EQ(a.gpu(g), b.gpu(g));
  EXPECT_EQ(a.fabric.rails, b.fabric.rails);
  EXPECT_EQ(a.fabric.servers_per_leaf, b.fabric.servers_per_leaf);
  EXPECT_EQ(a.fabric.oversubscription, b.fabric.oversubscription);
  EXPECT_EQ(a.fabric.nic_of_gpu, b.fabric.nic_of_gpu);
  EXPECT_EQ(a.fabric.leaves, b.fabric.leaves);
  EXPECT_EQ(a.fabric.spines, b.fabric.spines);
}

void expect_input_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an input error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    const std::string w = e.what();
    for (const auto& n : needles) EXPECT_NE(w.find(n), std::string::npos) << "'" << n << "' not in: " << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << "one line: " << w;
  }
}

std::vector<std::string> gpu_labels(const Topology& t, const RouteOptions& o = {}) {
  std::vector<std::string> out;
  for (int a = 0; a < t.num_gpus(); ++a)
    for (int b = 0; b < t.num_gpus(); ++b) out.push_back(connection_label(t, a, b, o));
  return out;
}

}  // namespace

TEST(Files, RoundTripIsExact) {
  std::vector<Topology> cases;
  for (const char* p : {"dgx-h100", "dgx-a100", "hgx-h200", "h200x2", "pcie-2socket", "3xdgx-h100:os2"}) {
    cases.push_back(make_preset(p));
  }
  cases.push_back(select_gpus(make_preset("dgx-h100"), {6, 1, 4}));
  cases.push_back(make_uniform(5, GBps(123.456789), microseconds(1.0 / 3.0)));
  cases.push_back(load_file(data("h200x2-nccl-topo.xml")));
  for (const Topology& t : cases) {
    SCOPED_TRACE(t.name);
    const auto path = temp_file("roundtrip.json");
    save_file(t, path.string());
    const Topology back = load_file(path.string());
    expect_same(t, back);
    EXPECT_EQ(to_json_text(t), to_json_text(back));
    // Routes see the same graph.
    EXPECT_EQ(gpu_labels(t), gpu_labels(back));
  }
}

TEST(Files, HandWrittenJson) {
  const Topology t = load_topology(data("two-gpus-handwritten.json"));
  EXPECT_EQ(t.name, "two-gpus");
  EXPECT_EQ(t.num_gpus(), 2);
  EXPECT_DOUBLE_EQ(t.node(t.gpu(1)).mem_bw.value, 3350e9);
  EXPECT_EQ(connection_label(t, 0, 1), "NV4");
  EXPECT_EQ(connection_label(t, 0, 1, {.without_nvlink = true}), "PIX");
  const Path p = t.route_gpus(0, 1, {.no_p2p = true});
  EXPECT_EQ(p.links.size(), 6u);  // gpu0 sw cpu0 mem0 | cpu0 sw gpu1
  EXPECT_DOUBLE_EQ(p.bottleneck.value, 31.5e9);
  EXPECT_DOUBLE_EQ(p.latency.value, 0.5e-6 * 4 + 0.1e-6 * 2);
}

TEST(ImportNvidiaSmi, RealH200x2File) {
  const Topology t = load_topology(data("h200x2-nvidia-smi-topo-m.txt"));
  EXPECT_EQ(t.num_gpus(), 2);
  EXPECT_EQ(connection_label(t, 0, 1), "NV18");
  const Path p = t.route_gpus(0, 1);
  EXPECT_DOUBLE_EQ(p.bottleneck.value, 450e9);  // 18 x 25 GB/s, the assumption named in the source
  EXPECT_NE(t.link(p.links[0]).source.find("assumed"), std::string::npos);
  EXPECT_EQ(t.node(t.gpu(0)).socket, 0);  // NUMA Affinity 0
  EXPECT_EQ(t.node(t.gpu(1)).socket, 0);
  // Routes without NVLink and staged routes exist (host bridge, one socket).
  EXPECT_EQ(t.route_gpus(0, 1, {.no_p2p = true}).second_leg, 3u);
}

TEST(ImportNvidiaSmi, EveryPcieLabelRoundTrips) {
  const Topology t = load_topology(data("pcie-box-nvidia-smi-topo-m.txt"));
  EXPECT_EQ(t.num_gpus(), 4);
  const std::vector<std::string> want = {"X",   "PIX", "SYS", "SYS", "PIX", "X",   "SYS", "SYS",
                                         "SYS", "SYS", "X",   "PHB", "SYS", "SYS", "PHB", "X"};
  EXPECT_EQ(gpu_labels(t), want);
  EXPECT_EQ(t.node(t.gpu(2)).socket, 1);
  // NIC0 is under a sibling switch of GPU0's (PXB): GPU0 -> switch -> upper switch -> switch -> NIC0.
  const Path p = t.route(t.gpu(0), t.find_node("n0.nic0"));
  EXPECT_EQ(p.links.size(), 4u);
  EXPECT_EQ(t.node(t.find_node("n0.nic0")).model, "mlx5_0");
  // NIC1 is NODE from GPU2: through the CPU and one switch.
  EXPECT_EQ(t.route(t.gpu(2), t.find_node("n0.nic1")).links.size(), 3u);
}

TEST(ImportNvidiaSmi, OwnMatrixReimports) {
  // Our matrix output is nvidia-smi's format: importing it gives the same labels back.
  for (const char* p : {"dgx-h100", "pcie-2socket", "dgx-a100"}) {
    SCOPED_TRACE(p);
    const Topology t = make_preset(p);
    const Topology back = import_nvidia_smi(matrix_text(t), std::string(p) + "-matrix");
    EXPECT_EQ(gpu_labels(t), gpu_labels(back));
  }
  // Without NVLink in the way, the matrix shows the whole PCIe tree and it is rebuilt.
  const Topology p = make_preset("pcie-2socket");
  EXPECT_EQ(gpu_labels(p), gpu_labels(import_nvidia_smi(matrix_text(p), "p")));
  // dgx-h100: every GPU has 7 x NV18 > 18 links, so the importer infers an NVSwitch.
  const Topology back = import_nvidia_smi(matrix_text(make_preset("dgx-h100")), "m");
  int switches = 0;
  for (auto [v, end] = boost::vertices(back.graph); v != end; ++v) switches += back.node(*v).kind == NodeKind::nvswitch;
  EXPECT_EQ(switches, 1);
}

// What the importer matches by hand: NV# labels (NV and 1 to 3 digits), device names (GPU or NIC and 1 to 4
// digits) and NIC legend lines (one word after the colon, blanks around).
TEST(ImportNvidiaSmi, LabelsDeviceNamesAndNicLegend) {
  const Topology a = import_nvidia_smi("\tGPU0\tGPU1\nGPU0\t X \tNV12\nGPU1\tNV12\t X \n", "a.txt");
  EXPECT_EQ(connection_label(a, 0, 1), "NV12");
  EXPECT_DOUBLE_EQ(a.route_gpus(0, 1).bottleneck.value, 300e9);   // 12 x 25 GB/s
  EXPECT_EQ(a.node(a.gpu(0)).model, "A100 SXM4 80GB (assumed)");  // NV12 and no more: an A100
  const Topology n = import_nvidia_smi(
      "\tGPU0\tNIC9999\tNIC1\tNIC2\n"
      "GPU0\t X \tPIX\tPIX\tPIX\nNIC9999\tPIX\t X \tPIX\tPIX\nNIC1\tPIX\tPIX\t X \tPIX\nNIC2\tPIX\tPIX\tPIX\t X \n"
      "\nNIC Legend:\n\n  NIC9999 :\tmlx5_9  \nNIC1: two words\nNIC2:mlx5_2\r\n",
      "n.txt");
  EXPECT_EQ(n.node(n.find_node("n0.nic9999")).model, "mlx5_9");
  EXPECT_EQ(n.node(n.find_node("n0.nic1")).model, "");  // not one word: no name
  EXPECT_EQ(n.node(n.find_node("n0.nic2")).model, "mlx5_2");
  // A fifth digit is no device: the header's devices end before it, and its row is not a device row.
  expect_input_error([] { import_nvidia_smi("\tGPU0\tNIC10000\nGPU0\t X \tPIX\nNIC10000\tPIX\t X \n", "d.txt"); },
                     {"d.txt:3:", "expected a row starting with GPU<n> or NIC<n>, got 'NIC10000"});
  for (const char* l : {"NV1234", "NV", "NVx1", "NV-1", "nv2", "NV 2"}) {
    SCOPED_TRACE(l);
    const std::string t = std::string("\tGPU0\tGPU1\nGPU0\t X \t") + l + "\nGPU1\t" + l + "\t X \n";
    expect_input_error([&] { import_nvidia_smi(t, "l.txt"); }, {"l.txt:2:", "unknown connection"});
  }
  expect_input_error([] { import_nvidia_smi("\tGPU0\tGPU1\nGPU0\t X \tNV000\nGPU1\tNV000\t X \n", "z.txt"); },
                     {"z.txt:2:", "NV0 is not a link"});
}

TEST(ImportNcclXml, RealH200x2Dump) {
  const Topology t = load_topology(data("h200x2-nccl-topo.xml"));
  EXPECT_EQ(t.num_gpus(), 2);
  EXPECT_EQ(t.node(t.gpu(0)).model, "H200 SXM 141GB");  // PCI device 0x2335
  EXPECT_DOUBLE_EQ(t.node(t.gpu(0)).mem_bw.value, 4.8e12);
  EXPECT_EQ(connection_label(t, 0, 1), "NV18");
  const Path p = t.route_gpus(0, 1);
  EXPECT_EQ(t.node(boost::target(p.links[0], t.graph)).kind, NodeKind::nvswitch);
  EXPECT_DOUBLE_EQ(p.bottleneck.value, 450e9);
  // link_width 0 in the dump: 16 lanes assumed, as NCCL does; 32 GT/s -> Gen5.
  const Path pcie = t.route_gpus(0, 1, {.without_nvlink = true});
  EXPECT_EQ(connection_label(t, 0, 1, {.without_nvlink = true}), "PHB");
  EXPECT_NEAR(pcie.bottleneck.gbps(), 63.0, 0.1);
  EXPECT_NE(t.link(pcie.links[0]).source.find("16 assumed"), std::string::npos);
  // The preset of that machine agrees with its own dump (labels, CPU class and its memory).
  const Topology preset = make_preset("h200x2");
  EXPECT_EQ(gpu_labels(t), gpu_labels(preset));
  EXPECT_EQ(gpu_labels(t, {.without_nvlink = true}), gpu_labels(preset, {.without_nvlink = true}));
  EXPECT_EQ(t.node(t.host_memory_of(0)).mem_bw.value, preset.node(preset.host_memory_of(0)).mem_bw.value);
  // The virtual eth0 NIC hangs off the CPU at its port rate (10 Gb/s).
  const NodeId nic = t.find_node("n0.nic.eth0");
  EXPECT_NEAR(t.route(nic, t.gpu(0)).bottleneck.gbps(), 1.25, 1e-9);
}

TEST(ImportNcclXml, DgxH100DumpMatchesThePreset) {
  const Topology t = load_topology(data("dgx-h100-nccl-topo.xml"));
  const Topology preset = make_preset("dgx-h100");
  EXPECT_EQ(t.num_gpus(), 8);
  EXPECT_EQ(boost::num_vertices(t.graph), boost::num_vertices(preset.graph));
  EXPECT_EQ(t.num_links(), preset.num_links());
  EXPECT_EQ(gpu_labels(t), gpu_labels(preset));
  EXPECT_EQ(gpu_labels(t, {.without_nvlink = true}), gpu_labels(preset, {.without_nvlink = true}));
  EXPECT_DOUBLE_EQ(t.route_gpus(0, 7, {.without_nvlink = true}).bottleneck.value, 22e9);  // SPR: NCCL SRP_QPI_BW
  EXPECT_EQ(t.node(t.gpu(5)).socket, 1);
}

TEST(ImportNcclXml, DirectNvlinksAndSwitchSums) {
  // Two GPUs joined directly (tclass 0x030200), one listing the link only on its side; and NVSwitch counts
  // given per chip (5+4+4+5) sum to 18 links into one logical switch.
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">
    <pci busid="0000:01:00.0" class="0x030200" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="80" rank="0" gdr="1">
        <nvlink target="0000:02:00.0" count="4" tclass="0x030200"/>
      </gpu>
    </pci>
    <pci busid="0000:02:00.0" class="0x030200" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="80" rank="1" gdr="1"/>
    </pci>
  </cpu>
</system>)";
  const Topology d = import_nccl_xml(xml, "direct.xml");
  EXPECT_EQ(connection_label(d, 0, 1), "NV4");
  EXPECT_EQ(connection_label(d, 1, 0), "NV4");
  EXPECT_DOUBLE_EQ(d.route_gpus(1, 0).bottleneck.value, 100e9);
  EXPECT_EQ(connection_label(d, 0, 1, {.without_nvlink = true}), "PHB");
  EXPECT_NEAR(d.route_gpus(0, 1, {.without_nvlink = true}).bottleneck.gbps(), 31.5, 0.05);

  std::string chips =
      R"(<system version="1"><cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">)";
  for (int g = 0; g < 2; ++g) {
    chips +=
        "<pci busid=\"0000:0" + std::to_string(g + 1) +
        ":00.0\" class=\"0x030200\" device=\"0x2330\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\"><gpu dev=\"" +
        std::to_string(g) + "\" sm=\"90\" rank=\"" + std::to_string(g) + "\" gdr=\"1\">";
    for (int c : {5, 4, 4, 5})
      chips += "<nvlink target=\"0000:a" + std::to_string(c) + ":00.0\" count=\"" + std::to_string(c) +
               "\" tclass=\"0x068000\"/>";
    chips += "</gpu></pci>";
  }
  chips += "</cpu></system>";
  const Topology s = import_nccl_xml(chips, "chips.xml");
  EXPECT_EQ(connection_label(s, 0, 1), "NV18");
  EXPECT_DOUBLE_EQ(s.route_gpus(0, 1).bottleneck.value, 450e9);
}

TEST(BadFiles, NameFileAndLine) {
  expect_input_error([] { load_topology(data("missing.json")); }, {"missing.json", "does not exist"});
  expect_input_error([] { load_topology("/nonexistent/dir/topo.json"); }, {"does not exist"});
  expect_input_error([] { load_topology(data("bad-syntax.json")); }, {"bad-syntax.json:10:", "malformed JSON"});
  expect_input_error([] { load_topology(data("bad-negative-bw.json")); },
                     {"bad-negative-bw.json:18:", "links[4]", "gpu1 -> sw", "-31.5 GB/s", "must be > 0"});
  expect_input_error([] { load_topology(data("bad-zero-bw.json")); },
                     {"bad-zero-bw.json:14:", "links[0]", "must be > 0"});
  expect_input_error([] { load_topology(data("bad-unknown-node.json")); },
                     {"bad-unknown-node.json:20:", "no node named 'cpu7'"});
  expect_input_error([] { load_topology(data("bad-disconnected.json")); },
                     {"bad-disconnected.json", "disconnected", "gpu0 -> gpu1"});
  expect_input_error([] { load_topology(data("bad-label-nvidia-smi-topo-m.txt")); },
                     {"bad-label-nvidia-smi-topo-m.txt:4:", "unknown connection 'NVX'"});
  expect_input_error([] { load_topology(data("bad-unclosed-nccl-topo.xml")); },
                     {"bad-unclosed-nccl-topo.xml:31:", "malformed XML", "</pci> does not match <gpu> of line 29"});
  expect_input_error([] { load_topology(data("README.md")); }, {"README.md", "not a topology file"});
  // Selections naming GPUs that do not exist.
  expect_input_error(
      [] {
        select_gpus(load_topology(data("h200x2-nccl-topo.xml")), {0, 2});
      },
      {"GPU 2 does not exist", "0..1"});
}

TEST(BadFiles, InlineTexts) {
  expect_input_error(
      [] {
        from_json_text("{\"format\": \"cclab-topology\", \"version\": 2, \"nodes\": [], \"links\": []}", "v.json");
      },
      {"v.json:1:", "version"});
  expect_input_error([] { from_json_text("[1, 2]", "a.json"); }, {"a.json:1:", "object"});
  expect_input_error(
      [] {
        from_json_text(
            "{\"format\": \"cclab-topology\", \"version\": 1,\n\"nodes\": [\n{\"name\": \"g\", \"kind\": \"tpu\"}\n], "
            "\"links\": []}",
            "k.json");
      },
      {"k.json:3:", "nodes[0]", "unknown node kind 'tpu'"});
  expect_input_error(
      [] {
        from_json_text(
            "{\"format\": \"cclab-topology\", \"version\": 1,\n\"nodes\": [\n{\"name\": \"g\", \"kind\": \"gpu\", "
            "\"index\": "
            "0, \"server\": 99999999999}\n], \"links\": []}",
            "r.json");
      },
      {"r.json:3:", "\"server\" = 99999999999 is out of range"});
  expect_input_error(
      [] {
        from_json_text("{\"format\": \"cclab-topology\", \"version\": 1, \"nodes\": [], \"links\": []}", "e.json");
      },
      {"e.json", "no GPUs"});
  expect_input_error([] { import_nccl_xml("<system version=\"1\"><cpu numaid=\"0\"></cpu>", "u.xml"); },
                     {"u.xml:1:", "never closed"});
  expect_input_error([] { import_nccl_xml("<topology/>", "r.xml"); }, {"r.xml:1:", "expected <system>"});
  expect_input_error([] { import_nccl_xml("<system version=\"1\"><cpu numaid=\"x\"/></system>", "n.xml"); },
                     {"n.xml:1:", "numaid=\"x\" is not an integer"});
  expect_input_error(
      [] {
        import_nccl_xml(
            "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" link_speed=\"-32.0 GT/s PCIe\" "
            "link_width=\"16\"><gpu dev=\"0\" sm=\"90\"/></pci></cpu></system>",
            "neg.xml");
      },
      {"neg.xml:3:", "link_speed \"-32.0 GT/s PCIe\""});
  expect_input_error(
      [] {
        import_nccl_xml(
            "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" link_speed=\"32.0 GT/s PCIe\" "
            "link_width=\"-16\"><gpu dev=\"0\" sm=\"90\"/></pci></cpu></system>",
            "w.xml");
      },
      {"w.xml:1:", "link_width -16"});
  expect_input_error([] { import_nvidia_smi("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV4\t X \n", "s.txt"); },
                     {"s.txt:2:", "GPU0/GPU1 is NV2 but GPU1/GPU0 is NV4"});
  expect_input_error([] { import_nvidia_smi("\tGPU0\tGPU1\nGPU0\t X \tPIX\n", "m.txt"); },
                     {"m.txt:1:", "GPU1 has no row"});
  expect_input_error([] { import_nvidia_smi("hello GPU0\n", "h.txt"); }, {"h.txt", "no GPU"});
  expect_input_error([] { import_nvidia_smi("\tGPU0\tGPU7\nGPU0\t X \tPIX\nGPU7\tPIX\t X \n", "g.txt"); },
                     {"g.txt:1:", "GPU0..GPU1", "GPU1 is missing"});
  expect_input_error([] { import_nvidia_smi("\tGPU0\tGPU1\nGPU0\t X \tNV99999\nGPU1\tNV99999\t X \n", "n.txt"); },
                     {"n.txt:2:", "unknown connection 'NV99999'"});
  expect_input_error([] { import_nccl_xml("<system version=\"1\"><cpu numaid=\"99999999999\"/></system>", "big.xml"); },
                     {"big.xml:1:", "not an integer"});
}
