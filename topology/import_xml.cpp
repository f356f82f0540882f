// Import of NCCL's topology XML dump (NCCL_TOPO_DUMP_FILE), the format NCCL writes in src/graph/xml.cc:
//   <system version="1">
//     <cpu host_hash=".." numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
//       <pci busid=".." class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">     (a PCIe switch)
//         <pci busid=".." class="0x030200" device="0x2330" link_speed=".." link_width="16">
//           <gpu dev="0" sm="90" rank="0" gdr="1">
//             <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>            (to NVSwitch)
//           </gpu>
//         </pci>
//         <pci busid=".." class="0x020700" ...><nic><net name="mlx5_0" speed="400000" .../></nic></pci>
//       </pci>
//       <nic><net name="eth0" speed="10000" .../></nic>                                   (a NIC on the CPU)
//     </cpu>
//   </system>
// A <cpu> is a NUMA node (a socket here); cpus of one host are joined by the CPU interconnect with NCCL's
// own figure for that CPU. PCIe links get GT/s x lanes from the dump; NVLinks the per-link rate of the
// GPU's generation. All NVSwitch chips of a host become one logical NVSwitch, as NCCL models them.
#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "topology/hardware.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {

namespace {

struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<std::unique_ptr<Element>> children;
  int line = 0;
  std::optional<std::string> attr(const std::string& k) const {
    for (const auto& [key, v] : attrs)
      if (key == k) return v;
    return std::nullopt;
  }
};

// A small XML reader for NCCL's dumps: elements, attributes, comments and declarations; text is ignored.
class XmlReader {
 public:
  XmlReader(const std::string& text, std::string origin) : s_(text), origin_(std::move(origin)) {}

  std::unique_ptr<Element> parse() {
    std::unique_ptr<Element> root;
    std::vector<Element*> open;
    while (true) {
      skip_text(open.empty());
      if (p_ >= s_.size()) break;
      // p_ is at '<'
      if (starts("<!--")) {
        const auto e = s_.find("-->", p_ + 4);
        if (e == std::string::npos) fail("unterminated comment");
        advance_to(e + 3);
      } else if (starts("<?") || starts("<!")) {
        const auto e = s_.find('>', p_);
        if (e == std::string::npos) fail("unterminated declaration");
        advance_to(e + 1);
      } else if (starts("</")) {
        advance(2);
        const std::string name = read_name();
        skip_space();
        expect('>');
        if (open.empty()) fail("closing tag </" + name + "> without an opening tag");
        if (open.back()->name != name) {
          fail("closing tag </" + name + "> does not match <" + open.back()->name + "> of line " +
               std::to_string(open.back()->line));
        }
        open.pop_back();
      } else {
        advance(1);
        auto el = std::make_unique<Element>();
        el->line = line_;
        el->name = read_name();
        bool self_closing = false;
        while (true) {
          skip_space();
          if (p_ >= s_.size()) fail("unterminated tag <" + el->name + ">");
          if (s_[p_] == '/') {
            advance(1);
            expect('>');
            self_closing = true;
            break;
          }
          if (s_[p_] == '>') {
            advance(1);
            break;
          }
          const std::string key = read_name();
          skip_space();
          expect('=');
          skip_space();
          if (p_ >= s_.size() || (s_[p_] != '"' && s_[p_] != '\'')) fail("attribute " + key + " needs a quoted value");
          const char q = s_[p_];
          const auto e = s_.find(q, p_ + 1);
          if (e == std::string::npos) fail("unterminated value of attribute " + key);
          el->attrs.emplace_back(key, s_.substr(p_ + 1, e - p_ - 1));
          advance_to(e + 1);
        }
        Element* raw = el.get();
        if (open.empty()) {
          if (root) fail("a second top-level element <" + el->name + ">");
          root = std::move(el);
        } else {
          open.back()->children.push_back(std::move(el));
        }
        if (!self_closing) open.push_back(raw);
      }
    }
    if (!open.empty())
      fail("<" + open.back()->name + "> of line " + std::to_string(open.back()->line) + " is never closed");
    if (!root) fail("no XML element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& m) const {
    throw_input(origin_ + ":" + std::to_string(line_) + ": malformed XML: " + m);
  }
  bool starts(const char* t) const { return s_.compare(p_, std::char_traits<char>::length(t), t) == 0; }
  void advance(size_t n) { advance_to(p_ + n); }
  void advance_to(size_t q) {
    q = std::min(q, s_.size());
    line_ += static_cast<int>(
        std::count(s_.begin() + static_cast<std::ptrdiff_t>(p_), s_.begin() + static_cast<std::ptrdiff_t>(q), '\n'));
    p_ = q;
  }
  void skip_space() {
    size_t q = p_;
    while (q < s_.size() && std::isspace(static_cast<unsigned char>(s_[q]))) ++q;
    advance_to(q);
  }
  // Text between elements; outside the root only whitespace is allowed.
  void skip_text(bool outside) {
    const auto q = s_.find('<', p_);
    const size_t end = q == std::string::npos ? s_.size() : q;
    if (outside) {
      for (size_t i = p_; i < end; ++i) {
        if (!std::isspace(static_cast<unsigned char>(s_[i]))) {
          advance_to(i);
          fail("text outside the top-level element");
        }
      }
    }
    advance_to(end);
  }
  std::string read_name() {
    const size_t b = p_;
    size_t q = p_;
    while (q < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[q])) || s_[q] == '_' || s_[q] == '-' ||
                             s_[q] == ':' || s_[q] == '.')) {
      ++q;
    }
    if (q == b) fail(p_ < s_.size() ? std::string("unexpected '") + s_[p_] + "'" : "unexpected end of file");
    advance_to(q);
    return s_.substr(b, q - b);
  }
  void expect(char c) {
    if (p_ >= s_.size() || s_[p_] != c) fail(std::string("expected '") + c + "'");
    advance(1);
  }

  const std::string& s_;
  std::string origin_;
  size_t p_ = 0;
  int line_ = 1;
};

// Per-lane rate of a PCIe link from the dump's link_speed ("32.0 GT/s PCIe"), bytes per second per direction.
struct PcieRate {
  double gts = 0;
  double lane_Bps = 0;
  bool known = false;
};
PcieRate pcie_rate(const std::string& speed) {
  PcieRate r;
  try {
    size_t used = 0;
    r.gts = std::stod(speed, &used);
    r.known = used > 0 && speed.find("GT/s") != std::string::npos;
  } catch (const std::exception&) {
    r.known = false;
  }
  if (!r.known) r.gts = 16;  // NCCL writes "16.0 GT/s" when sysfs has no speed (src/graph/xml.cc)
  // Line encoding: 8b/10b up to Gen2, 128b/130b for Gen3-5, 242B/256B FLITs for Gen6.
  const double enc = r.gts <= 5.0 ? 0.8 : (r.gts <= 32.0 ? 128.0 / 130.0 : 242.0 / 256.0);
  r.lane_Bps = r.gts * 1e9 * enc / 8.0;
  return r;
}

const hw::GpuSpec* gpu_by_device(const std::string& device) {
  std::string d = device;
  std::transform(d.begin(), d.end(), d.begin(), ::tolower);
  // PCI device ids (pci.ids): 0x2330 H100 SXM5 80GB, 0x2335 H200 SXM 141GB, 0x20b2 A100 SXM4 80GB, 0x26b9 L40S.
  if (d == "0x2330") return &hw::kH100Sxm;
  if (d == "0x2335") return &hw::kH200Sxm;
  if (d == "0x20b2") return &hw::kA100Sxm;
  if (d == "0x26b9") return &hw::kL40S;
  return nullptr;
}

struct PendingGpu {
  int server = 0, dev = 0, socket = 0, sm = 0;
  NodeId parent{};
  Link pcie;
  const hw::GpuSpec* spec = nullptr;
  std::string spec_note, busid;
  const Element* el = nullptr;
};

class Importer {
 public:
  explicit Importer(const std::string& origin) : origin_(origin) {}

  Topology run(const Element& root) {
    if (root.name != "system") {
      fail(root, "not an NCCL topology dump (top-level element <" + root.name + ">, expected <system>)");
    }
    t_.name = origin_;
    for (const auto& c : root.children) {
      if (c->name == "cpu") add_cpu(*c);
    }
    if (cpus_.empty()) fail(root, "the dump has no <cpu> element");
    // CPUs of one host are joined by their interconnect.
    for (auto& [server, list] : cpus_by_server_) {
      for (size_t a = 0; a < list.size(); ++a)
        for (size_t b = a + 1; b < list.size(); ++b) t_.add_duplex(list[a].first, list[b].first, list[a].second);
    }
    add_gpus();
    if (servers_.size() > 1) {
      throw_input(origin_ + ": the dump covers " + std::to_string(servers_.size()) +
                  " hosts; cclab imports one host at a time (the dump has no network between them)");
    }
    t_.description = "imported from an NCCL topology dump (" + std::to_string(t_.num_gpus()) + " GPUs)";
    try {
      t_.check();
    } catch (const Error& e) {
      throw_input(origin_ + ": " + e.what());
    }
    return std::move(t_);
  }

 private:
  [[noreturn]] void fail(const Element& e, const std::string& m) const {
    throw_input(origin_ + ":" + std::to_string(e.line) + ": " + m);
  }
  std::string need(const Element& e, const char* key) const {
    auto v = e.attr(key);
    if (!v) fail(e, "<" + e.name + "> needs attribute " + key);
    return *v;
  }
  int need_int(const Element& e, const char* key) const {
    const std::string v = need(e, key);
    try {
      size_t used = 0;
      const long long x = std::stoll(v, &used, 0);
      if (used != v.size() || x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
        throw std::invalid_argument(v);
      }
      return static_cast<int>(x);
    } catch (const std::exception&) {
      fail(e, "<" + e.name + "> attribute " + key + "=\"" + v + "\" is not an integer (or out of range)");
    }
  }
  std::string prefix(int server) const { return "n" + std::to_string(server) + "."; }

  void add_cpu(const Element& c) {
    const std::string host = c.attr("host_hash").value_or("");
    auto [hs, fresh] = servers_.emplace(host, static_cast<int>(servers_.size()));
    const int server = hs->second;
    const int numa = need_int(c, "numaid");
    auto& sockets = sockets_[server];
    if (sockets.count(numa)) fail(c, "a second <cpu> with numaid " + std::to_string(numa));
    const int socket = static_cast<int>(sockets.size());
    sockets[numa] = socket;
    // NCCL's own CPU classes (src/graph/topo.cc): Intel family 6 by model, AMD, others.
    const std::string vendor = c.attr("vendor").value_or("");
    int family = 0, model = 0;
    if (c.attr("familyid")) family = need_int(c, "familyid");
    if (c.attr("modelid")) model = need_int(c, "modelid");
    BytesPerSec link_bw = hw::kQpiBroadwell, dram = hw::kDdr4x8;
    std::string link_src = hw::kQpiBroadwellSource, dram_src = hw::kDdr4x8Source, cpu_model = vendor;
    if (vendor == "GenuineIntel" && family == 6 && model >= 0xCF) {
      link_bw = hw::kUpiEmeraldRapids, link_src = hw::kUpiEmeraldRapidsSource;
      dram = hw::kDdr5_5600x8, dram_src = hw::kDdr5_5600x8Source, cpu_model = "Intel Xeon (Emerald Rapids class)";
    } else if (vendor == "GenuineIntel" && family == 6 && model >= 0x8F) {
      link_bw = hw::kUpiSapphireRapids, link_src = hw::kUpiSapphireRapidsSource;
      dram = hw::kDdr5x8, dram_src = hw::kDdr5x8Source, cpu_model = "Intel Xeon (Sapphire Rapids class)";
    } else if (vendor == "GenuineIntel" && family == 6 && model >= 0x55) {
      link_bw = hw::kUpiSkylake, link_src = hw::kUpiSkylakeSource, cpu_model = "Intel Xeon (Skylake..Ice Lake class)";
    } else if (vendor == "AuthenticAMD") {
      link_bw = hw::kXgmiRome, link_src = hw::kXgmiRomeSource, cpu_model = "AMD EPYC";
    }
    const std::string assumed = "assumed for this CPU class (NCCL's dump has no memory figures): ";
    Node n;
    n.kind = NodeKind::cpu;
    n.name = prefix(server) + "cpu" + std::to_string(socket);
    n.server = server;
    n.socket = socket;
    n.model = cpu_model + (numa >= 0 ? " (NUMA " + std::to_string(numa) + ")" : "");
    const NodeId cpu = t_.add_node(n);
    Node m;
    m.kind = NodeKind::host_memory;
    m.name = prefix(server) + "mem" + std::to_string(socket);
    m.server = server;
    m.socket = socket;
    m.mem_bw = dram;
    m.source = assumed + dram_src;
    m.model = "DRAM of NUMA node " + std::to_string(numa);
    t_.add_duplex(cpu, t_.add_node(m),
                  hw::make_link(LinkKind::memory, dram, 8, hw::kMemHop, assumed + dram_src, hw::kMemHopSource));
    cpus_.push_back(cpu);
    cpus_by_server_[server].emplace_back(
        cpu, hw::make_link(LinkKind::upi, link_bw, 1, hw::kUpiHop, link_src, hw::kUpiHopSource));
    for (const auto& child : c.children) walk(*child, cpu, server, socket);
  }

  Link pcie_link(const Element& pci) const {
    const std::string speed = pci.attr("link_speed").value_or("");
    int width = pci.attr("link_width") && !pci.attr("link_width")->empty() ? need_int(pci, "link_width") : 0;
    if (width < 0)
      fail(pci, "<pci busid=\"" + pci.attr("busid").value_or("?") + "\"> has link_width " + std::to_string(width));
    const bool width_known = width > 0;
    if (!width_known) width = 16;  // as NCCL does when sysfs reports no width
    const PcieRate r = pcie_rate(speed);
    if (!(r.gts > 0))
      fail(pci, "<pci busid=\"" + pci.attr("busid").value_or("?") + "\"> has link_speed \"" + speed + "\"");
    const double bw = r.lane_Bps * width;
    char src[256];
    std::snprintf(src, sizeof src,
                  "NCCL dump: link_speed \"%s\" link_width %s -> %.4g GB/s per direction (GT/s x lanes x encoding / 8)",
                  speed.c_str(), width_known ? std::to_string(width).c_str() : "unknown (16 assumed, as NCCL does)",
                  bw / 1e9);
    return hw::make_link(LinkKind::pcie, BytesPerSec(bw), width, hw::kPcieHop, src, hw::kPcieHopSource);
  }

  bool has_device(const Element& e) const {
    if (e.name == "gpu" || e.name == "nic") return true;
    return std::any_of(e.children.begin(), e.children.end(), [&](const auto& c) { return has_device(*c); });
  }

  NodeId add_nic(const Element& nic, NodeId parent, int server, int socket, const std::string& busid,
                 std::optional<Link> pci) {
    std::string netname;
    double mbps = 0;
    for (const auto& net : nic.children) {
      if (net->name != "net") continue;
      netname += (netname.empty() ? "" : "+") + net->attr("name").value_or("net");
      if (net->attr("speed")) mbps += need_int(*net, "speed");
    }
    Node n;
    n.kind = NodeKind::nic;
    n.name = prefix(server) + "nic." + (netname.empty() ? busid : netname);
    n.server = server;
    n.socket = socket;
    n.model = netname + (mbps > 0 ? " " + std::to_string(static_cast<long long>(mbps / 1000)) + " Gb/s" : "");
    n.source = "NCCL dump: <net speed> in Mb/s";
    const NodeId v = t_.add_node(n);
    if (pci) {
      t_.add_duplex(v, parent, *pci);
    } else {
      // A NIC straight under the CPU (NCCL's virtual NICs): the link runs at the port rate.
      if (!(mbps > 0)) fail(nic, "a <nic> under <cpu> needs <net speed=...> in Mb/s");
      t_.add_duplex(v, parent,
                    hw::make_link(LinkKind::pcie, BytesPerSec(mbps * 1e6 / 8), 1, hw::kPcieHop,
                                  "NCCL dump: NIC on the CPU, port speed " +
                                      std::to_string(static_cast<long long>(mbps)) + " Mb/s",
                                  hw::kPcieHopSource));
    }
    return v;
  }

  void walk(const Element& e, NodeId parent, int server, int socket) {
    if (e.name == "nic") {
      add_nic(e, parent, server, socket, "cpu", std::nullopt);
      return;
    }
    if (e.name != "pci") return;  // <pcilink>, <c2c> and unknown elements carry no device of ours
    const std::string busid = need(e, "busid");
    const Link link = pcie_link(e);
    const Element* gpu = nullptr;
    const Element* nic = nullptr;
    for (const auto& c : e.children) {
      if (c->name == "gpu") gpu = c.get();
      if (c->name == "nic") nic = c.get();
    }
    if (gpu) {
      PendingGpu g;
      g.server = server;
      g.socket = socket;
      g.dev = need_int(*gpu, "dev");
      g.sm = need_int(*gpu, "sm");
      g.parent = parent;
      g.pcie = link;
      g.busid = busid;
      g.el = gpu;
      g.spec = gpu_by_device(e.attr("device").value_or(""));
      if (!g.spec) {
        g.spec = g.sm >= 90 ? &hw::kH100Sxm : g.sm >= 80 ? &hw::kA100Sxm : &hw::kH100Sxm;
        g.spec_note = "assumed from sm_" + std::to_string(g.sm) + " (device " + e.attr("device").value_or("?") +
                      " not in cclab's table): ";
      }
      gpus_.push_back(g);
      return;
    }
    if (nic) {
      add_nic(*nic, parent, server, socket, busid, link);
      return;
    }
    if (!has_device(e)) return;  // a bridge with nothing NCCL uses below it
    Node n;
    n.kind = NodeKind::pcie_switch;
    n.name = prefix(server) + "pci." + busid;
    n.server = server;
    n.socket = socket;
    n.model = "PCIe switch " + e.attr("device").value_or("");
    const NodeId sw = t_.add_node(n);
    t_.add_duplex(sw, parent, link);
    for (const auto& c : e.children) walk(*c, sw, server, socket);
  }

  void add_gpus() {
    std::sort(gpus_.begin(), gpus_.end(), [](const PendingGpu& a, const PendingGpu& b) {
      return std::tie(a.server, a.dev) < std::tie(b.server, b.dev);
    });
    std::map<std::pair<int, std::string>, NodeId> by_busid;
    std::map<int, NodeId> nvswitch;  // per server
    std::map<std::pair<int, int>, bool> seen_dev;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      const PendingGpu& g = gpus_[i];
      if (seen_dev[{g.server, g.dev}]) fail(*g.el, "a second <gpu> with dev " + std::to_string(g.dev));
      seen_dev[{g.server, g.dev}] = true;
      Node n;
      n.kind = NodeKind::gpu;
      n.name = prefix(g.server) + "gpu" + std::to_string(g.dev);
      n.server = g.server;
      n.socket = g.socket;
      n.index = static_cast<int>(i);
      n.mem_bw = g.spec->hbm;
      n.flops = g.spec->flops;
      n.source = g.spec_note + g.spec->source;
      n.model = g.spec->model;
      const NodeId v = t_.add_node(n);
      t_.add_duplex(v, g.parent, g.pcie);
      by_busid[{g.server, lower(g.busid)}] = v;
    }
    // NVLinks: each GPU lists its own; NVSwitch targets sum into one logical switch per host.
    std::map<std::pair<NodeId, NodeId>, int> direct;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      const PendingGpu& g = gpus_[i];
      const NodeId v = t_.gpu(static_cast<int>(i));
      int to_switch = 0;
      for (const auto& c : g.el->children) {
        if (c->name != "nvlink") continue;
        const int count = need_int(*c, "count");
        if (count < 1) fail(*c, "<nvlink count> must be >= 1");
        const std::string tclass = lower(need(*c, "tclass"));
        if (tclass == "0x068000") {
          to_switch += count;
        } else if (tclass.rfind("0x03", 0) == 0) {
          auto it = by_busid.find({g.server, lower(need(*c, "target"))});
          if (it == by_busid.end()) fail(*c, "<nvlink target=\"" + need(*c, "target") + "\"> names no GPU of the dump");
          if (it->second == v) fail(*c, "<nvlink target=\"" + need(*c, "target") + "\"> is the GPU itself");
          direct[{v, it->second}] += count;
        } else if (tclass == "0x068001") {
          // NVLink to the CPU (e.g. Grace): a link into this GPU's CPU.
          NodeId cpu = cpus_by_server_.at(g.server)
                           .at(std::min<size_t>(g.socket, cpus_by_server_.at(g.server).size() - 1))
                           .first;
          t_.add_duplex(v, cpu, nvlink(count, g.sm));
        } else {
          fail(*c, "<nvlink tclass=\"" + tclass + "\"> is not a GPU (0x03..), NVSwitch (0x068000) or CPU (0x068001)");
        }
      }
      if (to_switch > 0) {
        auto [it, fresh] = nvswitch.emplace(g.server, Graph::null_vertex());
        if (fresh) {
          Node n;
          n.kind = NodeKind::nvswitch;
          n.name = prefix(g.server) + "nvswitch";
          n.server = g.server;
          n.model = "NVSwitch (all chips of the host as one logical switch, as NCCL models them)";
          it->second = t_.add_node(n);
        }
        t_.add_duplex(v, it->second, nvlink(to_switch, g.sm));
      }
    }
    for (const auto& [pair, count] : direct) {
      t_.add_link(pair.first, pair.second, nvlink(count, gpus_[t_.node(pair.first).index].sm));
      // A dump that lists only one side still gets a full-duplex link.
      if (!direct.count({pair.second, pair.first})) {
        t_.add_link(pair.second, pair.first, nvlink(count, gpus_[t_.node(pair.first).index].sm));
      }
    }
  }

  static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    return s;
  }

  // Per-link NVLink rate by GPU generation: NVLink 1 (sm_60) 20 GB/s, NVLink 2-4 (sm_70..sm_90) 25 GB/s,
  // NVLink 5 (sm_100) 50 GB/s, per direction.
  static Link nvlink(int count, int sm) {
    double per = 25, gen = 4;
    if (sm < 70)
      per = 20, gen = 1;
    else if (sm < 80)
      gen = 2;
    else if (sm < 90)
      gen = 3;
    else if (sm >= 100)
      per = 50, gen = 5;
    char src[200];
    std::snprintf(src, sizeof src,
                  "%d x %.0f GB/s: NVLink %.0f per-link rate per direction for sm_%d (NVIDIA datasheets)", count, per,
                  gen, sm);
    return hw::make_link(LinkKind::nvlink, GBps(per * count), count, hw::kNvlinkHop, src, hw::kNvlinkHopSource);
  }

  std::string origin_;
  Topology t_;
  std::map<std::string, int> servers_;         // host_hash -> server
  std::map<int, std::map<int, int>> sockets_;  // server -> numaid -> socket
  std::vector<NodeId> cpus_;
  std::map<int, std::vector<std::pair<NodeId, Link>>> cpus_by_server_;  // with the link kind of their CPU
  std::vector<PendingGpu> gpus_;
};

}  // namespace

Topology import_nccl_xml(const std::string& text, const std::string& origin) {
  const auto root = XmlReader(text, origin).parse();
  return Importer(origin).run(*root);
}

}  // namespace cclab::topo
