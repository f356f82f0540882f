#include "model/nccl.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <set>

#include "core/error.hpp"

namespace cclab::model {

namespace {

// ---- NCCL's tuning constants (NVIDIA/nccl src/graph/tuning.cc, ncclTunerConstantsDefaults, 2.28-2.30) -------------
// Indexed by architecture: 0 Volta (and Turing), 1 Ampere, 2 Hopper, 3 Blackwell; then by node count index
// (N1, N2, N4+) where the table has one.
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChRingLl128[4] = {20.0, 20.0, 36.7, 40.0};
constexpr double kPerChTreeLl128[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
// nvlsEfficiency: the share of the NVLink rate NVLS reaches (tuning.cc; 0 before Hopper).
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// Latencies (us) NCCL 2.28 adds for the algorithms the profile's NcclTuning does not carry (tuning.cc): NVLS and
// NVLSTree have no base latency and 25 us per NVLink step (Simple); across the network NVLS 18, NVLSTree 20.9;
// PAT: base 8.0, hwLat 4.0 on NVLink/PCI and 14 on the network.
constexpr double kNvlsNvlinkUs = 25.0, kNvlsNetUs = 18.0, kNvlsTreeNetUs = 20.9;
constexpr double kPatBaseUs = 8.0, kPatNetUs = 14.0;
// NVLS channels (src/transport/nvls.cc: NVLS_NCHANNELS_SM90 16, SM100 24 on one node, 32 across nodes) and
// chunk (NCCL_NVLS_CHUNKSIZE default 128 KiB), which enqueue.cc halves for sizes that give few chunks per
// channel and head (nvls_chunk_bytes).
constexpr int64_t kNvlsChunk = 128 << 10;
// Network post overhead per ring step (tuning.cc getNetOverhead: 1 us on Intel, 2 us on AMD CPUs; x3 for Simple).
constexpr double kNetOverheadIntelUs = 1.0, kNetOverheadAmdUs = 2.0;
// One flag hop between GPUs across NVLink: a store into the peer seen by its polling kernel, half the measured
// round trip GPU0 -> GPU1 -> GPU0 on the nearest calibrated machine (2 x H200 through NVSwitch, profiles/h200x2.json
// sync_latency_us = 0.757 us, latency.flag, 2026-11-23). An LL step cannot be shorter (NCCL's hwLat says 0.6).
constexpr double kFlagHopUs = 0.757;
// NCCL's PCIe rate (topo.h PCI_BW 12 GB/s for a Gen3 x16 link): its graph search sees 12 / 15.75 of the raw rate.
constexpr double kNcclPciShare = 12.0 / 15.75;

// PCIe transaction overheads (topology/hardware.hpp kTlp*: PCIe Base Spec 3.0): posted writes at 256 B Max
// Payload Size, reads returned in 64 B completions, ~24 B of TLP overhead each.
constexpr double kPcieWriteEff = 256.0 / (256.0 + 24.0);
constexpr double kPcieReadEff = 64.0 / (64.0 + 24.0);
// InfiniBand / RoCE / EFA payload share: 4096 B MTU, ~60 B of headers (hardware.hpp kNetPayloadEfficiency).
constexpr double kNetEff = 4096.0 / 4156.0;

int arch_index(int compcap) { return compcap >= 100 ? 3 : compcap >= 90 ? 2 : compcap >= 80 ? 1 : 0; }
int nodes_index(int nnodes) { return nnodes <= 2 ? nnodes - 1 : 2; }

int proto_index(Proto p) {
  switch (p) {
    case Proto::ll:
      return 0;
    case Proto::ll128:
      return 1;
    case Proto::simple:
      return 2;
    default:
      CCLAB_ASSERT(false, "not an NCCL protocol");
  }
  return 2;
}

// NVLS's chunk for a collective of `bytes` (enqueue.cc, the same in NCCL 2.18 and 2.28): 128 KiB, halved to 64, 32
// and 16 KiB while the size is under 64, 8 and 2 loops of channels x heads (the node's ranks) x chunk.
int64_t nvls_chunk_bytes(const NcclComm& c, int64_t bytes) {
  const int64_t ops = int64_t(std::max(1, c.nvls_channels)) * std::max(1, c.ppn);
  int64_t chunk = kNvlsChunk;
  if (bytes < 64 * ops * chunk && chunk > (64 << 10)) chunk = 64 << 10;
  if (bytes < 8 * ops * chunk && chunk > (32 << 10)) chunk = 32 << 10;
  if (bytes < 2 * ops * chunk && chunk > (16 << 10)) chunk = 16 << 10;
  return chunk;
}

int log2i(int64_t n) {  // floor(log2 n), as NCCL's log2i; -1 for n <= 0
  if (n <= 0) return -1;
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

// tuning.cc's treeCorrectionFactor: trees run below the model at medium sizes (powers of two, 64 B..256 MB).
constexpr float kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// Threads per channel (device.h: NCCL_SIMPLE_MAX_NTHREADS 512, NCCL_LL_MAX_NTHREADS 512,
// NCCL_LL128_MAX_NTHREADS 640) and the per-thread work threshold below which NCCL drops channels
// (comm.h: LL 8 (x nranks for rings), LL128 8, Simple 64 bytes).
int max_threads(Proto p) { return p == Proto::ll128 ? 640 : 512; }
int64_t thread_threshold(NcclAlgo a, Proto p, int nranks) {
  if (p == Proto::ll) return a == NcclAlgo::ring ? 8LL * nranks : 8;
  if (p == Proto::ll128) return 8;
  return 64;
}

bool is_ring_family(std::string_view c) {
  return c == "allreduce" || c == "allgather" || c == "reducescatter" || c == "broadcast" || c == "reduce" ||
         c == "allgather_matmul" || c == "matmul_reducescatter";
}
bool is_rs_ag(std::string_view c) {
  return c == "reducescatter" || c == "allgather" || c == "allgather_matmul" || c == "matmul_reducescatter";
}
bool is_rooted(std::string_view c) { return c == "broadcast" || c == "reduce"; }

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& ch : o) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return o;
}
bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

// NCCL_ALGO / NCCL_PROTO lists ("Ring,Tree", "^LL128", "allreduce:tree"): the algorithms or protocols named,
// as NCCL's parseList reads them (a leading ^ excludes). Function prefixes are read as applying to every
// collective (a simplification: one list per record).
// The bits of the names a list selects; `all` are the bits an exclusion (^) chooses from.
uint8_t parse_list(std::string v, std::initializer_list<std::pair<std::string_view, int>> names, uint8_t all) {
  bool exclude = false;
  if (auto colon = v.rfind(':'); colon != std::string::npos) v = v.substr(colon + 1);
  if (!v.empty() && v[0] == '^') {
    exclude = true;
    v = v.substr(1);
  }
  uint8_t bits = 0;
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t end = std::min(v.find_first_of(",|", pos), v.size());
    const std::string w = v.substr(pos, end - pos);
    for (const auto& [name, bit] : names)
      if (w == name) bits |= uint8_t(1 << bit);
    pos = end + 1;
  }
  return exclude ? uint8_t(~bits & all) : bits;
}
uint8_t parse_algo_list(const std::string& v) {
  return parse_list(v,
                    {{"ring", int(NcclAlgo::ring)},
                     {"tree", int(NcclAlgo::tree)},
                     {"nvls", int(NcclAlgo::nvls)},
                     {"nvlstree", int(NcclAlgo::nvls_tree)},
                     {"nvls_tree", int(NcclAlgo::nvls_tree)},
                     {"pat", int(NcclAlgo::pat)}},
                    uint8_t(0x3f & ~(1 << int(NcclAlgo::p2p))));
}
uint8_t parse_proto_list(const std::string& v) {
  return parse_list(v, {{"ll", int(Proto::ll)}, {"ll128", int(Proto::ll128)}, {"simple", int(Proto::simple)}},
                    uint8_t((1 << int(Proto::ll)) | (1 << int(Proto::ll128)) | (1 << int(Proto::simple))));
}

bool truthy(const std::string& v) { return !(v == "0" || v == "false" || v == "no" || v == "off"); }

}  // namespace

std::string_view nccl_algo_name(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::ring:
      return "ring";
    case NcclAlgo::tree:
      return "tree";
    case NcclAlgo::p2p:
      return "p2p";
    case NcclAlgo::nvls:
      return "nvls";
    case NcclAlgo::nvls_tree:
      return "nvls_tree";
    case NcclAlgo::pat:
      return "pat";
  }
  return "?";
}

std::string_view nccl_transport_name(NcclTransport t) {
  switch (t) {
    case NcclTransport::nvlink:
      return "P2P/NVLink";
    case NcclTransport::pcie:
      return "P2P/PCIe";
    case NcclTransport::shm:
      return "SHM";
  }
  return "?";
}

NcclSettings parse_nccl_settings(std::string_view tune) {
  NcclSettings s;
  const std::string t = lower(tune);
  // key=value tokens, separated by commas, semicolons or blanks; values of NCCL_ALGO / NCCL_PROTO may hold
  // commas themselves ("NCCL_ALGO=Ring,Tree"), so a token without '=' that follows one of them extends it.
  std::string last_key;
  size_t pos = 0;
  while (pos < t.size()) {
    const size_t end = std::min(t.find_first_of(" \t;()", pos), t.size());
    const std::string tok = t.substr(pos, end - pos);
    pos = end + 1;
    if (tok.empty()) continue;
    // Split the token further on commas, keeping list values together.
    size_t p2 = 0;
    while (p2 <= tok.size()) {
      const size_t e2 = std::min(tok.find(',', p2), tok.size());
      const std::string part = tok.substr(p2, e2 - p2);
      p2 = e2 + 1;
      if (part.empty()) continue;
      const size_t eq = part.find('=');
      std::string key, val;
      if (eq == std::string::npos) {
        if (last_key == "nccl_algo" || last_key == "nccl_proto") {
          key = last_key;
          val = part;
        } else {
          last_key.clear();
          continue;
        }
      } else {
        key = part.substr(0, eq);
        val = part.substr(eq + 1);
      }
      last_key = key;
      if (key == "nccl_algo") {
        const uint8_t bits = parse_algo_list(val);
        s.algos = eq == std::string::npos ? uint8_t(s.algos | bits) : bits;
      } else if (key == "nccl_proto") {
        const uint8_t bits = parse_proto_list(val);
        s.protos = eq == std::string::npos ? uint8_t(s.protos | bits) : bits;
      } else if (key == "nccl_nvls_enable") {
        s.nvls = truthy(val);
      } else if (key == "nccl_p2p_disable") {
        s.p2p_disable = truthy(val);
      } else if (key == "nccl_shm_disable") {
        s.shm_disable = truthy(val);
      }
    }
  }
  // Free text of published records, where no variable said otherwise.
  const bool p2p_named = contains(t, "nccl_p2p_disable=");
  if (!s.nvls.has_value()) {
    if (contains(t, "nvls disabled") || contains(t, "nvls off") || contains(t, "without nvls") ||
        contains(t, "no nvls"))
      s.nvls = false;
    else if (contains(t, "nvls enabled") || contains(t, "nvls on"))
      s.nvls = true;
  }
  if (!p2p_named && (contains(t, "p2p not supported") || contains(t, "no p2p") || contains(t, "p2p disabled") ||
                     contains(t, "without p2p")))
    s.p2p_disable = true;
  if (auto at = t.find("nccl "); at != std::string::npos) {
    size_t b = at + 5, e = b;
    while (e < t.size() && (std::isdigit(static_cast<unsigned char>(t[e])) || t[e] == '.')) ++e;
    if (e > b && std::isdigit(static_cast<unsigned char>(t[b]))) s.version = t.substr(b, e - b);
  }
  return s;
}

std::string NcclSettings::describe() const {
  std::string d;
  auto add = [&](const std::string& x) {
    if (!d.empty()) d.push_back(' ');
    d.append(x);
  };
  auto join = [](std::string& list, std::string_view item) {
    if (!list.empty()) list.push_back(',');
    list.append(item);
  };
  if (algos) {
    std::string a;
    for (NcclAlgo x : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls, NcclAlgo::nvls_tree, NcclAlgo::pat})
      if (allows(x)) join(a, nccl_algo_name(x));
    add("NCCL_ALGO=" + a);
  }
  if (protos) {
    std::string a;
    for (Proto x : {Proto::ll, Proto::ll128, Proto::simple})
      if (allows(x)) join(a, proto_name(x));
    add("NCCL_PROTO=" + a);
  }
  if (nvls) add(std::string("NCCL_NVLS_ENABLE=") + (*nvls ? "1" : "0"));
  if (p2p_disable) add("NCCL_P2P_DISABLE=1");
  if (shm_disable) add("NCCL_SHM_DISABLE=1");
  if (!version.empty()) add("NCCL " + version);
  return d;
}

double nccl_nvlink_per_link_GBps(int compcap) {
  // topo.h: SM60 18.0, SM70 20.0, SM80 20.0, SM86 12.0, SM90 20.6, SM100 40.1 GB/s per link.
  if (compcap >= 100) return 40.1;
  if (compcap >= 90) return 20.6;
  if (compcap == 86) return 12.0;
  if (compcap >= 70) return 20.0;
  if (compcap >= 60) return 18.0;
  return 20.0;
}

int compcap_of_model(std::string_view model) {
  const std::string m = lower(model);
  auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  if (has("b200") || has("b100") || has("gb200") || has("b300") || has("blackwell")) return 100;
  if (has("h100") || has("h200") || has("h800") || has("h20") || has("gh200") || has("hopper")) return 90;
  if (has("a100") || has("a800") || has("a30")) return 80;
  if (has("l40") || has("l4 ") || has("4090") || has("4080") || has("ada")) return 89;
  if (has("a10") || has("a40") || has("a6000") || has("3090") || has("3080") || has("a5000")) return 86;
  if (has("2080") || has("titan rtx") || has("t4") || has("quadro rtx") || has("turing") || has("2070")) return 75;
  if (has("v100") || has("volta") || has("titan v")) return 70;
  return 0;
}

// NCCL's ring graph inside one NVSwitch node (src/graph/search.cc, ncclTopoCompute; connect.cc), rewritten: the
// search starts at the fastest speed of its architecture's table that one GPU's NVLink port carries and keeps
// the speed whose channels x speed is largest, trying slower speeds while they are more than 0.49 of the
// first; each channel takes `speed` of the port (at most MAXCHANNELS / 2 = 32 channels). The channels are then
// duplicated at half the speed (ncclTopoDupChannels: from 25 GB/s, and on Hopper and later only from 50 GB/s
// where more than 4 were found). tuning.cc prices bandwidth from the graph (channels x speed); the communicator
// doubles the graph's channels again (connect.cc, "Duplication should be complete now"), up to MAXCHANNELS = 64.
// 2 and 4 x H200 (18 links x 20.6 GB/s = 370.8): 6 x 60 -> 12 x 30 -> 24 channels, as NCCL 2.28.3 logged there
// (results/h200x2/nccl_choices/, results/h200x4/nccl_choices/: "24 coll channels").
struct RingGraph {
  int channels = 0;  // the graph's channels after duplication
  double speed = 0;  // GB/s per graph channel (bwIntra)
  int comm_channels = 0;
};
RingGraph nccl_ring_graph(double port_GBps, int compcap) {
  static constexpr double kSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  static constexpr double kSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  static constexpr double kOlder[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
  const double* speeds = compcap >= 100 ? kSm100 : compcap >= 90 ? kSm90 : kOlder;
  const size_t n = compcap >= 100 ? std::size(kSm100) : compcap >= 90 ? std::size(kSm90) : std::size(kOlder);
  constexpr int kMaxGraphChannels = 32, kMaxChannels = 64;
  size_t i = 0;
  while (i + 1 < n && speeds[i] > port_GBps) ++i;
  RingGraph g;
  const double first = speeds[i];
  for (size_t j = i; j < n && (j == i || speeds[j] / first > 0.49); ++j) {
    const int ch = std::min(kMaxGraphChannels, int(port_GBps / speeds[j] + 1e-9));
    if (ch > 0 && ch * speeds[j] > g.channels * g.speed) {
      g.channels = ch;
      g.speed = speeds[j];
    }
  }
  if (g.channels == 0) {  // a port slower than the slowest speed: one channel at that speed
    g.channels = 1;
    g.speed = speeds[n - 1];
  }
  const bool dup = g.speed >= 25.0 && !(compcap > 80 && g.speed < 50.0 && g.channels > 4);
  if (dup) {
    const int d = std::min(2 * g.channels, kMaxGraphChannels);
    g.speed /= (d + g.channels - 1) / g.channels;
    g.channels = d;
  }
  g.comm_channels = std::min(kMaxChannels, 2 * g.channels);
  return g;
}

NcclComm nccl_comm_for(const topo::Topology& t, const ModelParams& p, int nranks, int node_size,
                       const NcclSettings& settings) {
  NcclComm c;
  c.settings = settings;
  c.nranks = nranks;
  node_size = node_size <= 0 ? nranks : std::min(node_size, nranks);
  c.nnodes = std::max(1, (nranks + node_size - 1) / node_size);
  c.ppn = std::max(1, std::min(node_size, nranks));
  c.channels = std::max(1, int(p.nccl.max_channels.value));
  const topo::Node& g0 = t.node(t.gpu(0));
  c.compcap = compcap_of_model(g0.model);
  if (c.compcap == 0) c.compcap = p.arch == ModelParams::Arch::ampere ? 80 : 90;
  for (auto v : boost::make_iterator_range(boost::vertices(t.graph))) {
    const topo::Node& n = t.node(v);
    if (n.kind != topo::NodeKind::cpu || n.server > 0) continue;
    const std::string m = lower(n.model);
    if (m.find("epyc") != std::string::npos || m.find("amd") != std::string::npos) c.amd_cpu = true;
  }
  // A GPU's PCIe link, its switch's uplink, the socket's DRAM.
  for (auto e : boost::make_iterator_range(boost::out_edges(t.gpu(0), t.graph)))
    if (t.link(e).kind == topo::LinkKind::pcie) c.pcie_GBps = std::max(c.pcie_GBps, t.link(e).bw.gbps());
  std::optional<int> uplink;
  auto uplink_of = [&](int gpu) -> std::optional<int> {
    topo::Path host;
    try {
      host = t.route(t.gpu(gpu), t.host_memory_of(gpu));
    } catch (const Error&) {
      return std::nullopt;  // no host memory (a test network): no staging path
    }
    std::optional<int> id;
    for (auto e : host.links) {
      const topo::Link& l = t.link(e);
      if (l.kind == topo::LinkKind::pcie) id = l.id;  // the last PCIe hop before the CPU
      if (l.kind == topo::LinkKind::memory && gpu == 0) c.host_mem_GBps = l.bw.gbps();
    }
    if (gpu == 0) c.host_path_us = host.latency.us();
    return id;
  };
  uplink = uplink_of(0);
  if (uplink) {
    c.uplink_GBps = t.link(t.link_by_id(*uplink)).bw.gbps();
    c.gpus_per_uplink = 0;
    for (int i = 0; i < c.ppn; ++i)
      if (uplink_of(i) == uplink) ++c.gpus_per_uplink;
    c.gpus_per_uplink = std::max(1, c.gpus_per_uplink);
  } else {
    c.uplink_GBps = c.pcie_GBps;
  }
  // Neighbours inside a node.
  bool nvlink = false, pcie_p2p = true;
  double intra = 0;
  for (int i = 0; i < c.ppn; ++i)
    if (!t.node(t.gpu(i)).pcie_p2p) pcie_p2p = false;
  if (nranks > 1 && c.ppn > 1) {
    const topo::Path path = t.route_gpus(0, 1);
    for (auto e : path.links) {
      const topo::Link& l = t.link(e);
      if (l.kind == topo::LinkKind::nvlink) {
        nvlink = true;
        if (c.nvlink_GBps == 0) {
          c.nvlink_GBps = l.bw.gbps();
          c.nvlink_lanes = l.lanes;
        }
      }
      if (t.node(boost::target(e, t.graph)).kind == topo::NodeKind::nvswitch) {
        c.nvswitch = true;
        const std::string& m = t.node(boost::target(e, t.graph)).model;
        // Chips of the switch fabric: the model names them ("4 x NVSwitch gen3", "2 x NVLink 5 switch chip").
        int chips = 1;
        if (!m.empty() && std::isdigit(static_cast<unsigned char>(m[0]))) chips = std::max(1, std::atoi(m.c_str()));
        if (c.compcap >= 100) {
          c.switch_reduce_flops = chips * 3.6e12;
          c.switch_source =
              "NVLink 5 switch chip: 3.6 TFLOP/s of SHARP in-network compute (NVIDIA GB200 NVL72 product page), "
              "x " +
              std::to_string(chips) + " chips";
        } else if (c.compcap >= 90) {
          c.switch_reduce_flops = chips * 400e9;
          c.switch_source =
              "third-generation NVSwitch: 400 GFLOP/s FP32 of SHARP reduction per chip (NVIDIA, Hot Chips 34, 2022, "
              "'NVLink-Network Switch'), x " +
              std::to_string(chips) + " chips";
        }
      }
    }
    intra = path.bottleneck.gbps();
  }
  if (nvlink && !settings.p2p_disable)
    c.transport = NcclTransport::nvlink;
  else if (!pcie_p2p || settings.p2p_disable)
    c.transport = NcclTransport::shm;
  else
    c.transport = NcclTransport::pcie;
  c.nvlink = c.transport == NcclTransport::nvlink;
  // NCCL's view of the ring bandwidth per GPU: NVLink links x its per-link rate (topo.h), PCIe at PCI_BW's share.
  double ring_GBps = intra;
  if (c.nvlink && c.nvlink_lanes > 0)
    ring_GBps = c.nvlink_lanes * nccl_nvlink_per_link_GBps(c.compcap);
  else if (c.ppn > 1)
    ring_GBps = std::min(intra > 0 ? intra : c.pcie_GBps, c.pcie_GBps > 0 ? c.pcie_GBps : intra) * kNcclPciShare;
  // NICs of the ranks of node 0.
  double inter = 0;
  if (c.nnodes > 1) {
    if (!t.fabric.empty()) {
      std::set<topo::NodeId> nics;
      for (int i = 0; i < c.ppn; ++i) nics.insert(t.fabric.nic_of_gpu.at(size_t(i)));
      c.nics = int(nics.size());
      c.servers_per_leaf = t.fabric.servers_per_leaf;
      c.oversubscription = std::max(1, t.fabric.oversubscription);
      const topo::NodeId nic = t.fabric.nic_of_gpu.at(0);
      for (auto e : boost::make_iterator_range(boost::out_edges(nic, t.graph))) {
        const topo::Link& l = t.link(e);
        if (l.kind == topo::LinkKind::network) c.nic_GBps = std::max(c.nic_GBps, l.bw.gbps());
        if (l.kind == topo::LinkKind::pcie) c.nic_pcie_GBps = std::max(c.nic_pcie_GBps, l.bw.gbps());
      }
    } else {
      c.nics = 1;
      c.nic_GBps = t.route_gpus(0, node_size).bottleneck.gbps();
    }
    if (c.nic_pcie_GBps == 0) c.nic_pcie_GBps = c.nic_GBps / kPcieWriteEff;
    inter = c.nics * c.nic_GBps;
  }
  c.graph_channels = c.channels;
  // One NVSwitch node over NVLink: NCCL's own search gives its channels and the bandwidth its tuner assumes.
  if (c.nnodes == 1 && c.nvswitch && c.nvlink && c.nvlink_lanes > 0 && c.ppn > 1) {
    const RingGraph g = nccl_ring_graph(c.nvlink_lanes * nccl_nvlink_per_link_GBps(c.compcap), c.compcap);
    c.graph_channels = g.channels;
    c.channels = g.comm_channels;
    ring_GBps = g.channels * g.speed;
  }
  c.bw_intra_GBps = ring_GBps / c.graph_channels;
  c.bw_inter_GBps = (c.nnodes > 1 ? inter : ring_GBps) / c.graph_channels;
  if (c.nnodes == 1 || c.ppn == 1) c.bw_intra_GBps = std::max(c.bw_intra_GBps, c.bw_inter_GBps);
  // NVLS: NVSwitch nodes of Hopper with 5 or more GPUs, Blackwell with 6 or more (NCCL's choice as published:
  // shared/published/README.md, and the p6-b200 rows of stas00/ml-engineering, Ring at 4 and 5 GPUs, NVLS from 6),
  // unless NCCL_NVLS_ENABLE=0.
  const int nvls_min = c.compcap >= 100 ? 6 : 5;
  c.nvls = c.nvswitch && c.compcap >= 90 && c.transport == NcclTransport::nvlink && settings.nvls.value_or(true) &&
           c.ppn >= nvls_min;
  c.nvls_channels = c.compcap >= 100 ? (c.nnodes > 1 ? 32 : 24) : 16;
  return c;
}

namespace {

// NCCL's latency for (algo, proto) on the communicator (tuning.cc ncclTopoTuneModel), in us; < 0 unavailable.
double tuning_latency_us(const NcclTuning& k, const NcclComm& c, std::string_view coll, NcclAlgo algo, Proto proto) {
  const int n = c.nranks, nodes = c.nnodes;
  const int pi = proto_index(proto);
  const bool allreduce = coll == "allreduce", rs_ag = is_rs_ag(coll), rooted = is_rooted(coll);
  const int nsteps = allreduce ? 2 * (n - 1) : rs_ag ? n - 1 : n;
  const double ppn = double(n) / nodes;
  const bool nvl = c.transport == NcclTransport::nvlink;
  switch (algo) {
    case NcclAlgo::ring: {
      double lat = k.ring_base_us[pi];
      const double hw_intra = (nvl ? k.ring_nvlink_us : k.ring_pci_us)[pi];
      const double inter_lat = ppn == 1 ? k.tree_net_us[pi] : k.ring_net_us[pi];
      if (rooted) return lat + (nodes == 1 ? hw_intra : k.ring_net_us[pi]);  // rings on the same channels
      double intra_lat = hw_intra;
      if (nodes > 1) {
        double overhead = c.amd_cpu ? kNetOverheadAmdUs : kNetOverheadIntelUs;
        if (proto == Proto::simple) overhead *= 3;
        intra_lat = std::max(intra_lat, overhead);
      }
      const int inter_steps = nodes == 1 ? 0 : allreduce ? 2 * (nodes - 1) : nodes - 1;
      return lat + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
    case NcclAlgo::tree: {
      if (!allreduce) return -1;
      const double intra_lat = (nvl ? k.tree_nvlink_us : k.tree_pci_us)[pi];
      const double inter_lat = k.tree_net_us[pi];
      return k.tree_base_us[pi] + 2 * ((n / nodes - 1) * intra_lat + log2i(nodes) * inter_lat);
    }
    case NcclAlgo::nvls:
      return kNvlsNvlinkUs + (nodes > 1 ? kNvlsNetUs : 0);
    case NcclAlgo::nvls_tree:
      return kNvlsNvlinkUs + 2 * log2i(nodes) * (ppn == 1 ? k.tree_net_us[pi] : kNvlsTreeNetUs);
    case NcclAlgo::pat:
      return kPatBaseUs + log2i(nodes) * (kPatNetUs / 3.5) + n * 2.8;
    case NcclAlgo::p2p:
      return -1;
  }
  return -1;
}

// NCCL's bus bandwidth (GB/s, already converted to algorithm bandwidth as tuning.cc does); <= 0 unavailable.
double tuning_bw(const NcclComm& c, std::string_view coll, NcclAlgo algo, Proto proto) {
  const int n = c.nranks, nodes = c.nnodes, ai = arch_index(c.compcap), ni = nodes_index(nodes);
  const bool allreduce = coll == "allreduce", rs_ag = is_rs_ag(coll), rooted = is_rooted(coll);
  const int nsteps = allreduce ? 2 * (n - 1) : rs_ag ? n - 1 : n;
  const double ppn = double(n) / nodes;
  const double ll_max = nodes == 1 ? kLlMaxBw[ai][ni] : kLlMaxBw[c.amd_cpu ? 1 : 0][ni];
  // Availability (tuning.cc: which algorithms serve which collective; NVLS and NVLSTree Simple only).
  if (rooted && algo != NcclAlgo::ring) return -1;
  if (rs_ag && !(algo == NcclAlgo::ring || algo == NcclAlgo::pat || algo == NcclAlgo::nvls)) return -1;
  if (allreduce && algo == NcclAlgo::pat) return -1;
  if (algo == NcclAlgo::p2p) return -1;
  if ((algo == NcclAlgo::nvls || algo == NcclAlgo::nvls_tree) && (proto != Proto::simple || !c.nvls)) return -1;
  // NVLS across nodes needs CollNet (disabled without it); NVLSTree only across nodes; NVLS all-gather and
  // reduce-scatter across nodes need CollNet too.
  if (algo == NcclAlgo::nvls && nodes > 1) return -1;
  if (algo == NcclAlgo::nvls_tree && nodes == 1) return -1;
  // PAT: all-gather and reduce-scatter with one GPU per node (ncclPatEnable), Simple.
  if (algo == NcclAlgo::pat && (proto != Proto::simple || nodes != n || nodes == 1)) return -1;
  // LL128: compute capability 7.0 and up, intra-node paths over NVLink (tuning.cc protoEnable).
  if (proto == Proto::ll128 && (!c.nvlink || c.compcap < 70)) return -1;

  const double bw = nodes <= 2 ? c.bw_intra_GBps : c.bw_inter_GBps;
  double busbw = c.graph_channels * bw;
  if (algo == NcclAlgo::nvls || algo == NcclAlgo::nvls_tree) {
    // The NVLS graph has one channel per GPU of the node, each at the GPU's NVLink rate / GPUs.
    const int nch = std::max(2, int(ppn));
    const double per_ch = c.graph_channels * c.bw_intra_GBps / nch;
    double intra = per_ch * kNvlsEfficiency[ai] * (nch - 1) / nch;
    intra *= allreduce ? 2.0 : (ppn - 1) / ppn;
    const double inter = (nodes > 1 ? c.bw_inter_GBps * c.graph_channels / nch : 1e30) *
                         ((nodes <= 2 && algo == NcclAlgo::nvls_tree) ? 2 : 1);
    double b = std::min(intra, inter);
    if (algo == NcclAlgo::nvls_tree) b = std::min(b, kPerChNvlsTree[ai][ni]);
    busbw = nch * b;
  }
  if (algo == NcclAlgo::ring && proto == Proto::ll) busbw = std::min(ll_max, busbw * .5);
  if (algo == NcclAlgo::ring && proto == Proto::ll128)
    busbw = std::min(busbw * 0.92, c.graph_channels * kPerChRingLl128[ai]);
  if (algo == NcclAlgo::tree) busbw = std::min(busbw * .92, c.graph_channels * kPerChTree[ai][ni]);
  if (algo == NcclAlgo::tree && proto == Proto::ll) busbw = std::min(busbw / 3.8, ll_max);
  if (algo == NcclAlgo::tree && proto == Proto::ll128)
    busbw = std::min(busbw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), c.graph_channels * kPerChTreeLl128[ai][ni]);
  if (algo == NcclAlgo::pat) busbw *= .75;
  // Bus bandwidth to algorithm bandwidth (tuning.cc): rings and NVLS by n / nsteps, trees by 0.5; non-ring
  // all-gather and reduce-scatter keep their figure.
  if (!(algo != NcclAlgo::ring && rs_ag))
    busbw *=
        (algo == NcclAlgo::ring || algo == NcclAlgo::nvls || algo == NcclAlgo::nvls_tree) ? double(n) / nsteps : 0.5;
  return busbw;
}

double algo_time_us(const ModelParams& p, const NcclComm& c, std::string_view coll, NcclAlgo algo, Proto proto,
                    int64_t bytes, double* latency_out) {
  if (!c.settings.allows(algo) || !c.settings.allows(proto)) return -1;
  double busbw = tuning_bw(c, coll, algo, proto);
  double lat = tuning_latency_us(p.nccl, c, coll, algo, proto);
  if (busbw <= 0 || lat < 0) return -1;
  // ncclTopoGetAlgoTime refinements.
  const int log_size = log2i(bytes >> 6);
  const int pi = proto_index(proto);
  if (algo == NcclAlgo::tree && coll == "allreduce" && log_size >= 0 && log_size < 23)
    busbw *= kTreeCorrection[pi][log_size];
  if (algo == NcclAlgo::nvls_tree && coll == "allreduce" && log_size >= 0 && log_size < 24 && c.compcap >= 100)
    busbw *= kTreeCorrection[pi][log_size];
  if (algo == NcclAlgo::ring && proto == Proto::simple && c.nnodes > 1 && coll == "allreduce" &&
      bytes / (int64_t(c.channels) * c.nranks) >= 64)
    lat *= c.compcap < 80 ? 1.9 : 1.4;  // "plateau effect of ring"
  if (latency_out) *latency_out = lat;
  return lat + double(bytes) / (1000.0 * busbw);
}

// The latency a prediction charges for (algo, proto): NCCL's latency model with each step no shorter than its
// mechanism: an LL step over NVLink is at least a flag hop (kFlagHopUs); a step through host memory (SHM) is the
// writer's posted write into DRAM plus the reader's polling load, a round trip across PCIe: 3 x the GPU-to-DRAM
// path latency.
double mechanism_latency_us(const ModelParams& p, const NcclComm& c, std::string_view coll, NcclAlgo algo, Proto proto,
                            int64_t bytes) {
  NcclTuning k = p.nccl;
  if (c.transport == NcclTransport::nvlink) {
    k.ring_nvlink_us[0] = std::max(k.ring_nvlink_us[0], kFlagHopUs);
    k.tree_nvlink_us[0] = std::max(k.tree_nvlink_us[0], kFlagHopUs);
  } else if (c.transport == NcclTransport::shm && c.host_path_us > 0) {
    for (int i = 0; i < 3; ++i) {
      k.ring_pci_us[i] = std::max(k.ring_pci_us[i], 3 * c.host_path_us);
      k.tree_pci_us[i] = std::max(k.tree_pci_us[i], 3 * c.host_path_us);
    }
  }
  double lat = tuning_latency_us(k, c, coll, algo, proto);
  if (algo == NcclAlgo::ring && proto == Proto::simple && c.nnodes > 1 && coll == "allreduce" &&
      bytes / (int64_t(c.channels) * c.nranks) >= 64)
    lat *= c.compcap < 80 ? 1.9 : 1.4;  // NCCL's "plateau effect of ring", as in its estimate
  return lat;
}

}  // namespace

Seconds nccl_tuning_time(const ModelParams& p, const NcclComm& c, std::string_view coll, NcclAlgo algo, Proto proto,
                         int64_t bytes) {
  if (c.nranks <= 1) return Seconds(0);
  const double t = algo_time_us(p, c, coll, algo, proto, bytes, nullptr);
  return t < 0 ? Seconds(-1) : microseconds(t);
}

Seconds nccl_tuning_latency(const ModelParams& p, const NcclComm& c, std::string_view coll, NcclAlgo algo,
                            Proto proto) {
  const double l = tuning_latency_us(p.nccl, c, coll, algo, proto);
  return l < 0 ? Seconds(-1) : microseconds(l);
}

int nccl_p2p_channels_per_peer(const NcclComm& c) {
  const bool nvl = c.transport == NcclTransport::nvlink;
  const int per_path = c.nnodes == 1 && nvl && c.nvlink_lanes > 0 ? 2 * c.nvlink_lanes : 2;
  return int(std::bit_ceil(unsigned(std::max(1, std::min(c.channels, per_path)))));
}

int nccl_p2p_channels(const ModelParams& p, const NcclComm& c, Proto proto, int64_t bytes) {
  if (bytes <= 0) return 1;
  const int per_peer = nccl_p2p_channels_per_peer(c), all = int(std::bit_ceil(unsigned(std::max(1, c.channels))));
  int least = per_peer;
  while (least * c.nranks > all && least > 1) least /= 2;
  const int64_t buff = proto == Proto::ll      ? p.nccl.ll_buff
                       : proto == Proto::ll128 ? p.nccl.ll128_buff
                                               : p.nccl.simple_buff;
  const int64_t step = buff / p.nccl.steps;
  const int64_t min_part = c.nnodes > 1 ? step / 2 : step / 8, max_part = c.nnodes > 1 ? step : step * 32;
  int n = int(std::min<int64_t>(least, (bytes + min_part - 1) / min_part));
  int64_t part = std::max(min_part, (bytes + n - 1) / n);
  while (part > max_part && n <= per_peer / 2) {
    n *= 2;
    part = (bytes + n - 1) / n;
  }
  return std::max(1, n);
}

NcclPlan nccl_plan(const ModelParams& p, const NcclComm& c, std::string_view coll, int64_t bytes) {
  NcclPlan plan;
  const NcclTuning& k = p.nccl;
  const bool nvl = c.transport == NcclTransport::nvlink;
  if (!is_ring_family(coll)) {
    // All-to-all, gather, scatter, send/recv: NCCL runs them as grouped point-to-point transfers, LL when
    // each peer's share fits 16 KiB on each of the channels a peer's transfer may stripe over (enqueue.cc:
    // P2P_LL_THRESHOLD 16384 x nChannelsMax), else Simple.
    plan.algo = NcclAlgo::p2p;
    const int64_t per_peer = c.nranks > 0 ? bytes / c.nranks : bytes;
    plan.proto = per_peer <= int64_t(nccl_p2p_channels_per_peer(c)) * 16384 ? Proto::ll : Proto::simple;
    plan.channels = 1;
    plan.chunk_bytes = k.simple_buff / k.steps;  // p2pChunkSize (512 KiB on NVLink)
    const int pi = proto_index(plan.proto);
    plan.base_latency = microseconds(k.ring_base_us[pi]);
    plan.step_latency = microseconds((nvl ? k.ring_nvlink_us : k.ring_pci_us)[pi]);
    plan.net_step_latency = microseconds(k.ring_net_us[pi]);
    plan.tuned_time = Seconds(-1);
    plan.tuned_latency = Seconds(-1);
    return plan;
  }
  const NcclAlgo algos[] = {NcclAlgo::tree, NcclAlgo::ring, NcclAlgo::nvls, NcclAlgo::nvls_tree, NcclAlgo::pat};
  const Proto protos[] = {Proto::ll, Proto::ll128, Proto::simple};
  double best = -1, best_lat = 0;
  // NCCL's order (algorithm, then protocol; the first minimum wins); the settings narrow the candidates, and
  // where they leave none NCCL's defaults apply.
  for (int pass = 0; pass < 2 && best < 0; ++pass) {
    NcclComm cc = c;
    if (pass == 1) {
      cc.settings.algos = 0;
      cc.settings.protos = 0;
    }
    for (NcclAlgo a : algos)
      for (Proto pr : protos) {
        double lat = 0;
        const double t = algo_time_us(p, cc, coll, a, pr, bytes, &lat);
        if (t >= 0 && (best < 0 || t < best)) {
          best = t;
          best_lat = lat;
          plan.algo = a;
          plan.proto = pr;
        }
      }
    plan.forced = pass == 0 && (c.settings.algos != 0 || c.settings.protos != 0);
  }
  if (best < 0) {  // nothing available (e.g. one rank): a ring, Simple
    plan.algo = NcclAlgo::ring;
    plan.proto = Proto::simple;
    best = 0;
  }
  plan.tuned_time = microseconds(best);
  plan.tuned_latency = microseconds(best_lat);
  plan.latency = microseconds(std::max(0.0, mechanism_latency_us(p, c, coll, plan.algo, plan.proto, bytes)));
  const int pi = proto_index(plan.proto);
  if (plan.algo == NcclAlgo::nvls || plan.algo == NcclAlgo::nvls_tree) {
    plan.channels = c.nvls_channels;
    plan.chunk_bytes = plan.algo == NcclAlgo::nvls ? nvls_chunk_bytes(c, bytes) : kNvlsChunk;
    plan.base_latency = Seconds(0);
    plan.step_latency = microseconds(kNvlsNvlinkUs);
    plan.net_step_latency = microseconds(kNvlsTreeNetUs);
    return plan;
  }
  // Channels: drop channels while the size leaves too little work per thread (enqueue.cc topoGetAlgoInfo).
  int nc = c.channels;
  const int64_t nt = max_threads(plan.proto), thr = thread_threshold(plan.algo, plan.proto, c.nranks);
  while (nc > 1 && bytes < int64_t(nc) * nt * thr) --nc;
  // NCCL 2.28 then deals the collective's traffic out to channels in cells (enqueue.cc,
  // scheduleCollTasksToPlan): traffic is the bytes each rank contributes times 2 for all-reduce, times the ranks
  // for all-gather and reduce-scatter, 1 otherwise, and 4 times that on LL; a cell carries 16 KiB of it; each
  // channel takes its share of the traffic rounded up to whole cells, so uneven division leaves channels idle
  // (22 of 24 for a 512 KiB broadcast on LL: 128 cells, 6 per channel).
  {
    const bool rs_ag = is_rs_ag(coll);
    int64_t per_byte = coll == "allreduce" ? 2 : rs_ag ? c.nranks : 1;
    if (plan.proto == Proto::ll) per_byte *= 4;
    constexpr int64_t kMinTrafficPerChannel = 16 << 10;
    const int64_t own = rs_ag ? bytes / std::max(1, c.nranks) : bytes;
    const int64_t cell = ((kMinTrafficPerChannel + per_byte - 1) / per_byte + 15) / 16 * 16;
    const int64_t cells = std::max<int64_t>(1, (own + cell - 1) / cell);
    const int64_t per_channel = std::max(kMinTrafficPerChannel, std::max(kMinTrafficPerChannel, own * per_byte) / nc);
    const int64_t cells_per_channel = std::min(cells, (per_channel + cell * per_byte - 1) / (cell * per_byte));
    nc = int(std::min<int64_t>(nc, (cells + cells_per_channel - 1) / cells_per_channel));
  }
  plan.channels = nc;
  // Chunk: a buffer step (buffSize / NCCL_STEPS) times chunkSteps (rings on Simple: NCCL_STEPS/2 for
  // all-reduce, all-gather and reduce-scatter, 1 for broadcast); LL carries half data, LL128 120/128.
  const int64_t buff = plan.proto == Proto::ll ? k.ll_buff : plan.proto == Proto::ll128 ? k.ll128_buff : k.simple_buff;
  int64_t chunk = buff / k.steps;
  const bool bcast = is_rooted(coll);
  if (plan.proto == Proto::simple && plan.algo == NcclAlgo::ring && !bcast) chunk *= k.steps / 2;
  if (plan.proto == Proto::ll) chunk /= 2;
  if (plan.proto == Proto::ll128) chunk = chunk / 128 * 120;
  plan.chunk_bytes = chunk;
  const auto& base = plan.algo == NcclAlgo::tree ? k.tree_base_us : k.ring_base_us;
  plan.base_latency = microseconds(plan.algo == NcclAlgo::pat ? kPatBaseUs : base[pi]);
  const auto& hw =
      plan.algo == NcclAlgo::tree ? (nvl ? k.tree_nvlink_us : k.tree_pci_us) : (nvl ? k.ring_nvlink_us : k.ring_pci_us);
  plan.step_latency = microseconds(plan.proto == Proto::ll && nvl ? std::max(hw[pi], kFlagHopUs) : hw[pi]);
  plan.net_step_latency = microseconds((plan.algo == NcclAlgo::tree ? k.tree_net_us : k.ring_net_us)[pi]);
  // Per-channel ceilings: LL128's (tuning.cc perChMaxRingLL128Bws), LL's (llMaxBw over the channels), and on
  // NVLink the rate NCCL's kernels reach per link (topo.h SMxx_NVLINK_BW: 20.6 of a Hopper link's 25 GB/s, 40.1 of
  // a Blackwell link's 50), shared by the channels that stripe over the GPU's links (payload rate; LL and LL128
  // carry half and 120/128 of it).
  const int ai = arch_index(c.compcap);
  double cap = 0;
  // By the GPU's architecture (its model name), not the profile's Ampere/Hopper guess from its FLOP rate (an
  // H20 has Hopper's NCCL constants at an Ampere-class FLOP rate).
  if (plan.proto == Proto::ll128)
    cap = kPerChRingLl128[ai];
  else if (plan.proto == Proto::ll)
    cap = (c.nnodes == 1 ? kLlMaxBw[ai][0] : kLlMaxBw[c.amd_cpu ? 1 : 0][nodes_index(c.nnodes)]) / std::max(1, nc);
  if (nvl && c.nvlink_lanes > 0) {
    const double eff = plan.proto == Proto::ll ? 0.5 : plan.proto == Proto::ll128 ? 120.0 / 128.0 : 1.0;
    const double link = c.nvlink_lanes * nccl_nvlink_per_link_GBps(c.compcap) * eff / std::max(1, nc);
    cap = cap > 0 ? std::min(cap, link) : link;
  }
  if (cap > 0) plan.per_channel_cap = GBps(cap);
  return plan;
}

std::optional<NcclCost> nccl_mechanism_cost(const ModelParams& /*p*/, const NcclComm& c, const NcclPlan& plan,
                                            std::string_view coll, int64_t bytes, DType dtype) {
  const int n = c.nranks;
  if (n <= 1 || plan.algo == NcclAlgo::p2p || !is_ring_family(coll)) return std::nullopt;
  const bool multi = c.nnodes > 1;
  const bool nvls_like = plan.algo == NcclAlgo::nvls || plan.algo == NcclAlgo::nvls_tree;
  if (!multi && !nvls_like && c.transport != NcclTransport::shm) return std::nullopt;
  const double S = double(bytes);
  const bool allreduce = coll == "allreduce", rooted = is_rooted(coll);
  const double proto_eff = plan.proto == Proto::ll ? 0.5 : plan.proto == Proto::ll128 ? 120.0 / 128.0 : 1.0;
  const int ai = arch_index(c.compcap);
  // A GPU's NVLink port at the rate NCCL's kernels reach on it (topo.h per-link rate x links).
  const double nvlink_eff = c.nvlink_lanes > 0 ? c.nvlink_lanes * nccl_nvlink_per_link_GBps(c.compcap) : c.nvlink_GBps;
  char buf[256];
  double t = 0;  // seconds of data movement on the busiest resource
  std::string how;
  if (!multi && c.transport == NcclTransport::shm) {
    // SHM: SM stores cross PCIe into pinned host memory as posted writes, the peer's SM loads come back as 64 B
    // read completions. In phase, the GPUs behind one switch share its uplink in each direction. A thread waits
    // for its loads but not for its posted stores: a step that only sends (the ring's first) or only receives
    // (its last) costs its stores or its loads, a step that receives and sends (recvReduceSend, recvCopySend,
    // recvReduceCopySend) the slower of the two, as the stores overlap the next loads.
    const double rs = c.pcie_GBps * kPcieWriteEff, rl = c.pcie_GBps * kPcieReadEff;
    const int k = std::max(1, c.gpus_per_uplink);
    const double up = c.uplink_GBps > 0 ? c.uplink_GBps : c.pcie_GBps;
    const double ts = 1.0 / (std::min(rs, up * kPcieWriteEff / k) * proto_eff * 1e9);  // seconds per byte stored
    const double tl = 1.0 / (std::min(rl, up * kPcieReadEff / k) * proto_eff * 1e9);   // per byte loaded
    double v = 0;
    if (rooted) {
      // A pipelined chain: the root only stores, the last rank only loads, the others receive and send.
      v = S;
      const double t1 = 1.0 / (std::min(rs, rl) * proto_eff * 1e9);
      t = n == 2 ? S * t1 : S * std::max(ts, tl);
    } else {
      // Ring steps per chunk of S / n: all-reduce 2(n-1) (one send, 2n-3 receive-and-send, one receive),
      // all-gather and reduce-scatter n-1 (one send, n-2 receive-and-send, one receive).
      const int both = allreduce ? 2 * n - 3 : n - 2;
      const double chunk = S / n;
      v = (allreduce ? 2.0 : 1.0) * (n - 1) / n * S;
      t = chunk * (ts + both * std::max(ts, tl) + tl);
    }
    if (c.host_mem_GBps > 0) t = std::max(t, 2.0 * v * n / (c.host_mem_GBps * 1e9));
    std::snprintf(buf, sizeof buf,
                  "SHM through host memory: SM stores %.1f GB/s, loads %.1f GB/s across PCIe (TLP overheads), "
                  "%d GPU(s) per switch uplink",
                  rs, rl, k);
    how = buf;
  } else if (!multi && plan.algo == NcclAlgo::nvls) {
    const double rate = nvlink_eff * kNvlsEfficiency[ai];
    const double g = c.ppn;
    const double factor = allreduce ? (g + 1) / g : 1.0;
    const double t_bw = S * factor / (rate * 1e9);
    double t_red = 0;
    if ((allreduce || coll == "reducescatter") && c.switch_reduce_flops > 0)
      t_red = (g - 1) * S / dtype_size(dtype) / c.switch_reduce_flops;
    // All-reduce's warps form a pipeline on each channel: the scatter into the heads' buffers, the heads'
    // reduction and multicast, the gather (NCCL's RunWorkColl<AllReduce, NVLS>), each stage taking a loop of a
    // chunk per head at a time; filling it costs a loop in each stage but the last. The other collectives are
    // charged one chunk per channel.
    const int64_t loop =
        allreduce ? int64_t(plan.channels) * c.ppn * plan.chunk_bytes : int64_t(plan.channels) * plan.chunk_bytes;
    const int fill_stages = allreduce ? 2 : 1;
    const double fill = fill_stages * double(std::min<int64_t>(bytes, loop)) * factor / (rate * 1e9);
    t = fill + std::max(t_bw, t_red);
    std::snprintf(buf, sizeof buf,
                  "NVLS: port %.1f GB/s x nvlsEfficiency %.2f, %.3f x S per direction; switch reduction %.1f "
                  "TFLOP/s%s",
                  nvlink_eff, kNvlsEfficiency[ai], factor, c.switch_reduce_flops / 1e12,
                  t_red > t_bw ? " (the bound)" : "");
    how = buf;
  } else {
    // Across nodes: the node's NICs at line rate less packet headers (and the PCIe link each sits on).
    const double nic = std::min(c.nic_GBps * kNetEff, c.nic_pcie_GBps * kPcieWriteEff);
    const double node_net = std::max(1, c.nics) * nic * proto_eff;
    double egress = 0, t_intra = 0;
    const double intra_rate = (c.nvlink ? nvlink_eff : c.pcie_GBps * kPcieWriteEff) * proto_eff;
    if (plan.algo == NcclAlgo::ring || plan.algo == NcclAlgo::pat) {
      // A ring enters and leaves every node once per channel: a node sends what one rank sends.
      egress = allreduce ? 2.0 * (n - 1) / n * S : rooted ? S : double(n - 1) / n * S;
      if (c.ppn > 1) t_intra = egress / (intra_rate * 1e9);
    } else {
      // Double binary trees across nodes: a node is inner in one tree and a leaf in the other, each tree with
      // half the data: 2 S in and out per node over reduce and broadcast.
      egress = 2.0 * S;
      if (plan.algo == NcclAlgo::nvls_tree)
        t_intra = S * (c.ppn + 1.0) / c.ppn / (nvlink_eff * kNvlsEfficiency[ai] * 1e9);
      else if (c.ppn > 1)
        t_intra = 2.0 * S / (intra_rate * 1e9);
    }
    double t_net = egress / (node_net * 1e9);
    // The fat tree's spine: a leaf's uplinks carry its downlinks' rate / oversubscription. A ring leaves a leaf
    // group once per channel (never the bound); a tree's edges join nodes far apart, most of them in other
    // groups once there are several: the share of a node's tree traffic that crosses to another group,
    // 1 - servers per leaf / nodes, runs at 1 / oversubscription of the NIC rate.
    bool spine = false;
    if (plan.algo != NcclAlgo::ring && plan.algo != NcclAlgo::pat && c.servers_per_leaf > 0 &&
        c.nnodes > c.servers_per_leaf && c.oversubscription > 1) {
      const double crossing = 1.0 - double(c.servers_per_leaf) / c.nnodes;
      const double t_spine = crossing * c.oversubscription * t_net;
      spine = t_spine > t_net;
      t_net = std::max(t_net, t_spine);
    }
    t = std::max(t_net, t_intra);
    std::snprintf(buf, sizeof buf, "network: %d NIC(s) x %.1f GB/s per node (line rate less headers)%s%s",
                  std::max(1, c.nics), nic, spine ? ", the oversubscribed spine the bound" : "",
                  t_intra > t_net ? ", intra-node links the bound" : "");
    how = buf;
  }
  NcclCost cost;
  cost.time = plan.latency + Seconds(t);
  cost.how = how + "; latency " + std::to_string(int(std::lround(plan.latency.us()))) +
             " us (NCCL's latency model, steps no shorter than their mechanism)";
  return cost;
}

}  // namespace cclab::model
