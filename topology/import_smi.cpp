// Import of `nvidia-smi topo -m` text. The matrix names how each pair of devices connects (X, NV#, PIX, PXB,
// PHB, NODE, SYS); we rebuild a graph whose routes give the same labels, with the bandwidths the link kinds
// imply. What the text does not say (GPU model, PCIe generation, link rates) is assumed, and each
// assumption is written into the source of the number it produced.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "topology/hardware.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {

namespace {

// A sum of NV# over one GPU's peers above this cannot be direct links (NVLink 4/5 GPUs have 18), so the
// GPUs meet in an NVSwitch.
constexpr int kMaxDirectNvlinks = 18;

std::string strip_ansi(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;  // parameters, then the final byte
      continue;
    }
    out += s[i];
  }
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == '\t') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

// Columns may also be separated by runs of spaces when the text was copied from a terminal.
std::vector<std::string> split_cells(const std::string& line) {
  if (line.find('\t') != std::string::npos) return split_tabs(line);
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  if (!line.empty() && std::isspace(static_cast<unsigned char>(line[0]))) out.push_back("");
  while (in >> w) out.push_back(w);
  return out;
}

// The matching below is plain string code, not <regex>, which made this file slow to compile. Whitespace is what
// a regex's \s is in the C locale.
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// s from position b on is between min and max digits and nothing else.
bool digits_only(const std::string& s, size_t b, size_t min, size_t max) {
  const size_t n = s.size() - std::min(b, s.size());
  return n >= min && n <= max && std::all_of(s.begin() + (s.size() - n), s.end(), is_digit);
}

// At most 4 digits: nvidia-smi numbers devices from 0, and a huge number must not size any table.
bool is_device(const std::string& s) {
  return (s.rfind("GPU", 0) == 0 || s.rfind("NIC", 0) == 0) && digits_only(s, 3, 1, 4);
}

// The link count of an NV# label (NV plus 1 to 3 digits), or none.
std::optional<int> nvlinks(const std::string& label) {
  if (label.rfind("NV", 0) != 0 || !digits_only(label, 2, 1, 3)) return std::nullopt;
  return std::stoi(label.substr(2));
}

// A "NIC Legend:" line, "  NIC0: mlx5_0" (blanks around each part, one word after the colon): the NIC and its
// name, or none.
std::optional<std::pair<std::string, std::string>> nic_legend(const std::string& line) {
  size_t i = 0;
  auto blanks = [&] {
    while (i < line.size() && is_space(line[i])) ++i;
  };
  auto word = [&](auto in_word) {
    const size_t b = i;
    while (i < line.size() && in_word(line[i])) ++i;
    return line.substr(b, i - b);
  };
  blanks();
  if (line.compare(i, 3, "NIC") != 0) return std::nullopt;
  const size_t nic = i;
  i += 3;
  if (word(is_digit).empty()) return std::nullopt;
  const std::string device = line.substr(nic, i - nic);
  blanks();
  if (i == line.size() || line[i] != ':') return std::nullopt;
  ++i;
  blanks();
  const std::string name = word([](char c) { return !is_space(c); });
  blanks();
  if (name.empty() || i != line.size()) return std::nullopt;
  return std::pair{device, name};
}

struct UnionFind {
  std::vector<int> p;
  explicit UnionFind(int n) : p(n) { std::iota(p.begin(), p.end(), 0); }
  int find(int x) { return p[x] == x ? x : p[x] = find(p[x]); }
  void join(int a, int b) { p[find(a)] = find(b); }
};

}  // namespace

SmiFacts parse_smi_query(const std::string& text) {
  SmiFacts f;
  std::istringstream in(strip_ansi(text));
  std::string section;  // "gen" after "PCIe Generation", "width" after "Link Width"
  auto value = [](const std::string& l) { return trim(l.substr(l.find(':') + 1)); };
  for (std::string l; std::getline(in, l);) {
    const std::string t = trim(l);
    if (t.rfind("Product Name", 0) == 0 && l.find(':') != std::string::npos && f.gpu_model.empty())
      f.gpu_model = value(l);
    if (t == "PCIe Generation") section = "gen";
    if (t == "Link Width") section = "width";
    // The first "Max" of each section: the link's capability (Current may be lower while the GPU idles).
    if ((t.rfind("Max", 0) == 0 || t.rfind("Host Max", 0) == 0) && l.find(':') != std::string::npos) {
      const std::string v = value(l);
      const int n = std::atoi(v.c_str());
      if (section == "gen" && f.pcie_gen == 0 && n >= 1 && n <= 6) f.pcie_gen = n;
      if (section == "width" && f.pcie_lanes == 0 && n >= 1 && n <= 32) f.pcie_lanes = n;
      if (t.rfind("Max", 0) == 0) section.clear();
    }
  }
  return f;
}

Topology import_nvidia_smi(const std::string& raw, const std::string& origin) {
  return import_nvidia_smi(raw, origin, SmiFacts{});
}

Topology import_nvidia_smi(const std::string& raw_in, const std::string& origin, const SmiFacts& given) {
  // `nvidia-smi -q` output in the same text (before or after the matrix) states the GPU model and PCIe link:
  // read it, then leave it out of the matrix.
  SmiFacts facts = parse_smi_query(raw_in);
  if (!given.gpu_model.empty()) facts.gpu_model = given.gpu_model;
  if (given.pcie_gen > 0) facts.pcie_gen = given.pcie_gen;
  if (given.pcie_lanes > 0) facts.pcie_lanes = given.pcie_lanes;
  std::vector<std::string> lines;
  {
    std::istringstream in(strip_ansi(raw_in));
    bool in_query = false;
    for (std::string l; std::getline(in, l);) {
      if (l.find("NVSMI LOG") != std::string::npos) in_query = true;
      // The matrix's header ends a query block that came first.
      if (in_query && l.find("GPU0") != std::string::npos && l.find(':') == std::string::npos) in_query = false;
      lines.push_back(in_query ? std::string() : l);
    }
  }
  auto fail = [&](size_t line_index, const std::string& msg) -> void {
    throw_input(origin + ":" + std::to_string(line_index + 1) + ": " + msg);
  };
  // Header: the first line naming GPU0 that holds no matrix entry.
  size_t header = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto cells = split_cells(lines[i]);
    if (std::find(cells.begin(), cells.end(), "GPU0") != cells.end() &&
        std::find(cells.begin(), cells.end(), "X") == cells.end()) {
      header = i;
      break;
    }
  }
  if (header == lines.size()) throw_input(origin + ": no nvidia-smi topo -m header (a line naming GPU0) found");
  std::vector<std::string> devices;
  int cpu_col = -1, numa_col = -1;
  {
    auto cells = split_cells(lines[header]);
    // The header of tab-separated output starts with a tab; the space-separated copy's names come in pairs
    // ("CPU Affinity"), which we rejoin.
    std::vector<std::string> cols;
    for (size_t k = 0; k < cells.size(); ++k) {
      if (cells[k].empty()) continue;
      if (lines[header].find('\t') == std::string::npos && k + 1 < cells.size() &&
          (cells[k] == "CPU" || cells[k] == "NUMA" || (cells[k] == "GPU" && cells[k + 1] == "NUMA"))) {
        std::string joined = cells[k];
        while (k + 1 < cells.size() && !is_device(cells[k + 1]) &&
               (cells[k + 1] == "Affinity" || cells[k + 1] == "NUMA" || cells[k + 1] == "ID")) {
          joined += " " + cells[++k];
          if (cells[k] == "Affinity" || cells[k] == "ID") break;
        }
        cols.push_back(joined);
        continue;
      }
      cols.push_back(cells[k]);
    }
    size_t k = 0;
    while (k < cols.size() && is_device(cols[k])) devices.push_back(cols[k++]);
    for (size_t e = k; e < cols.size(); ++e) {
      if (cols[e] == "CPU Affinity") cpu_col = static_cast<int>(e - k);
      if (cols[e] == "NUMA Affinity") numa_col = static_cast<int>(e - k);
    }
  }
  const int nd = static_cast<int>(devices.size());
  std::map<std::string, int> dev_index;
  for (int i = 0; i < nd; ++i) {
    if (!dev_index.emplace(devices[i], i).second) fail(header, "column " + devices[i] + " appears twice");
  }
  std::vector<std::vector<std::string>> label(nd, std::vector<std::string>(nd));
  std::vector<size_t> row_line(nd, 0);
  std::vector<std::optional<int>> numa(nd);
  std::vector<std::string> cpu_affinity(nd);
  std::vector<bool> seen(nd, false);
  size_t i = header + 1;
  for (; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (t.empty() || t.rfind("Legend", 0) == 0) break;
    auto cells = split_cells(lines[i]);
    if (cells.empty() || !is_device(cells[0]))
      fail(i, "expected a row starting with GPU<n> or NIC<n>, got '" + t + "'");
    auto it = dev_index.find(cells[0]);
    if (it == dev_index.end()) fail(i, "row " + cells[0] + " has no column in the header");
    const int r = it->second;
    if (seen[r]) fail(i, "row " + cells[0] + " appears twice");
    seen[r] = true;
    row_line[r] = i;
    if (static_cast<int>(cells.size()) < 1 + nd) {
      fail(i, "row " + cells[0] + " has " + std::to_string(cells.size() - 1) + " entries, the header names " +
                  std::to_string(nd) + " devices");
    }
    for (int c = 0; c < nd; ++c) label[r][c] = cells[1 + c];
    // nvidia-smi writes CPU Affinity and NUMA Affinity right after the matrix, in header order.
    if (numa_col >= 0 && 1 + nd + numa_col < static_cast<int>(cells.size())) {
      const std::string v = cells[1 + nd + numa_col];
      if (!v.empty() && v.size() <= 6 && std::all_of(v.begin(), v.end(), ::isdigit)) numa[r] = std::stoi(v);
    }
    if (cpu_col >= 0 && 1 + nd + cpu_col < static_cast<int>(cells.size())) cpu_affinity[r] = cells[1 + nd + cpu_col];
  }
  const size_t end_of_rows = i;
  for (int d = 0; d < nd; ++d) {
    if (!seen[d]) fail(header, "column " + devices[d] + " has no row");
  }
  // NIC names from the "NIC Legend:" block (NIC0: mlx5_0).
  std::map<std::string, std::string> nic_names;
  for (size_t k = end_of_rows; k < lines.size(); ++k) {
    if (const auto nic = nic_legend(lines[k])) nic_names[nic->first] = nic->second;
  }
  // Labels: known, X on the diagonal, symmetric.
  int max_nv = 0;
  for (int a = 0; a < nd; ++a) {
    for (int b = 0; b < nd; ++b) {
      const std::string& l = label[a][b];
      if (a == b) {
        if (l != "X") fail(row_line[a], devices[a] + "/" + devices[b] + ": the diagonal must be X, got '" + l + "'");
      } else if (const auto nv = nvlinks(l)) {
        const int n = *nv;
        if (n < 1) fail(row_line[a], devices[a] + "/" + devices[b] + ": NV0 is not a link");
        max_nv = std::max(max_nv, n);
      } else if (l != "PIX" && l != "PXB" && l != "PHB" && l != "NODE" && l != "SYS") {
        fail(row_line[a], devices[a] + "/" + devices[b] + ": unknown connection '" + l +
                              "' (legend: X, NV#, PIX, PXB, PHB, NODE, SYS)");
      }
      if (l != label[b][a]) {
        fail(row_line[a], devices[a] + "/" + devices[b] + " is " + l + " but " + devices[b] + "/" + devices[a] +
                              " is " + label[b][a]);
      }
    }
  }
  std::vector<int> gpus, nics;
  for (int d = 0; d < nd; ++d) (devices[d][0] == 'G' ? gpus : nics).push_back(d);
  if (gpus.empty()) throw_input(origin + ": no GPU rows");
  for (size_t k = 0; k < gpus.size(); ++k) {
    if (std::find(devices.begin(), devices.end(), "GPU" + std::to_string(k)) == devices.end()) {
      fail(header, "the GPU columns must be GPU0..GPU" + std::to_string(gpus.size() - 1) + " but GPU" +
                       std::to_string(k) + " is missing");
    }
  }
  auto pcie_local = [&](int a, int b) {
    const auto& l = label[a][b];
    return l == "PIX" || l == "PXB" || l == "PHB" || l == "NODE";
  };

  // Sockets: NUMA affinity where given, else groups of devices joined by PCIe-local labels.
  std::vector<int> socket(nd, -1);
  {
    UnionFind uf(nd);
    for (int a = 0; a < nd; ++a)
      for (int b = 0; b < nd; ++b)
        if (pcie_local(a, b)) uf.join(a, b);
    std::map<int, int> numa_to_socket;
    for (int d : gpus)
      if (numa[d]) numa_to_socket.emplace(*numa[d], 0);
    int k = 0;
    for (auto& [id, s] : numa_to_socket) s = k++;
    std::map<int, int> group_socket;  // union-find root -> socket
    for (int d : gpus) {
      if (numa[d]) {
        socket[d] = numa_to_socket[*numa[d]];
        group_socket.emplace(uf.find(d), socket[d]);
      }
    }
    for (int d = 0; d < nd; ++d) {
      if (socket[d] >= 0) continue;
      auto it = group_socket.find(uf.find(d));
      if (it == group_socket.end()) it = group_socket.emplace(uf.find(d), numa_to_socket.empty() ? k++ : 0).first;
      socket[d] = it->second;
    }
  }
  const int sockets = *std::max_element(socket.begin(), socket.end()) + 1;

  // What the matrix does not say: the GPU model and PCIe link from `nvidia-smi -q` or the caller, else assumed
  // (Hopper (NV18) systems have PCIe Gen5; older ones Gen4).
  const bool hopper = max_nv >= 18;
  const std::string assumed = "assumed (nvidia-smi topo -m names no model or rate): ";
  const hw::GpuSpec* named = facts.gpu_model.empty() ? nullptr : hw::find_gpu_spec(facts.gpu_model);
  const hw::GpuSpec gpu_spec = named          ? *named
                               : max_nv >= 18 ? hw::kH100Sxm
                                              : (max_nv >= 12 ? hw::kA100Sxm : hw::kH100Sxm);
  const std::string gpu_source =
      named ? "GPU named by nvidia-smi -q or --gpu-model ('" + facts.gpu_model + "'): "
      : facts.gpu_model.empty()
          ? assumed
          : "GPU '" + facts.gpu_model + "' has no spec in topology/hardware.hpp; rates " + assumed;
  Link pcie;
  if (facts.pcie_gen > 0) {
    const int lanes = facts.pcie_lanes > 0 ? facts.pcie_lanes : 16;
    char src[160];
    std::snprintf(src, sizeof src,
                  "PCIe Gen%d x%d%s (nvidia-smi -q or --pcie): GT/s x lanes x encoding / 8 = %.2f GB/s per direction",
                  facts.pcie_gen, lanes, facts.pcie_lanes > 0 ? "" : " (x16 assumed)",
                  hw::pcie_GBps(facts.pcie_gen, lanes));
    pcie = hw::make_link(LinkKind::pcie, GBps(hw::pcie_GBps(facts.pcie_gen, lanes)), lanes, hw::kPcieHop, src,
                         hw::kPcieHopSource);
  } else {
    pcie = hw::make_link(LinkKind::pcie, hopper ? hw::kPcieGen5x16 : hw::kPcieGen4x16, 16, hw::kPcieHop,
                         assumed + (hopper ? hw::kPcieGen5Source : hw::kPcieGen4Source), hw::kPcieHopSource);
  }
  const bool blackwell = named == &hw::kB200;
  const Link upi = hw::make_link(LinkKind::upi, hw::kUpiSapphireRapids, 4, hw::kUpiHop,
                                 assumed + hw::kUpiSapphireRapidsSource, hw::kUpiHopSource);
  const Link mem =
      hw::make_link(LinkKind::memory, hw::kDdr5x8, 8, hw::kMemHop, assumed + hw::kDdr5x8Source, hw::kMemHopSource);

  Topology t;
  t.name = origin;
  t.description = "imported from nvidia-smi topo -m (" + std::to_string(gpus.size()) + " GPUs, " +
                  std::to_string(nics.size()) + " NICs, " + std::to_string(sockets) + " NUMA nodes)";
  std::vector<NodeId> cpu(sockets);
  for (int s = 0; s < sockets; ++s) {
    Node c;
    c.kind = NodeKind::cpu;
    c.name = "n0.cpu" + std::to_string(s);
    c.socket = s;
    for (int d : gpus) {
      if (socket[d] == s && !cpu_affinity[d].empty() && cpu_affinity[d] != "N/A") {
        c.model = "CPUs " + cpu_affinity[d] + (numa[d] ? " (NUMA " + std::to_string(*numa[d]) + ")" : "");
        break;
      }
    }
    cpu[s] = t.add_node(c);
    Node m;
    m.kind = NodeKind::host_memory;
    m.name = "n0.mem" + std::to_string(s);
    m.socket = s;
    m.mem_bw = hw::kDdr5x8;
    m.source = assumed + hw::kDdr5x8Source;
    t.add_duplex(cpu[s], t.add_node(m), mem);
  }
  for (int a = 0; a < sockets; ++a)
    for (int b = a + 1; b < sockets; ++b) t.add_duplex(cpu[a], cpu[b], upi);

  std::vector<NodeId> node(nd);
  for (int d = 0; d < nd; ++d) {
    Node n;
    n.socket = socket[d];
    if (devices[d][0] == 'G') {
      n.kind = NodeKind::gpu;
      n.index = std::stoi(devices[d].substr(3));
      n.name = "n0.gpu" + std::to_string(n.index);
      n.mem_bw = gpu_spec.hbm;
      n.flops = gpu_spec.flops;
      n.source = gpu_source + gpu_spec.source;
      n.model = named                     ? std::string(gpu_spec.model)
                : facts.gpu_model.empty() ? std::string(gpu_spec.model) + " (assumed)"
                                          : facts.gpu_model + " (rates of " + gpu_spec.model + " assumed)";
      n.pcie_p2p = named ? gpu_spec.pcie_p2p : facts.gpu_model.find("GeForce") == std::string::npos;
    } else {
      n.kind = NodeKind::nic;
      n.name = "n0.nic" + devices[d].substr(3);
      n.model = nic_names.count(devices[d]) ? nic_names[devices[d]] : "";
    }
    node[d] = t.add_node(n);
  }

  // PCIe tree, per socket: PIX groups share a switch; PXB groups of several switches meet in an upper switch;
  // a device alone attaches to the CPU directly when it has a PHB peer (same host bridge), else via its own
  // switch (NODE to the rest of the socket).
  int switch_count = 0;
  auto add_switch = [&](int s) {
    Node n;
    n.kind = NodeKind::pcie_switch;
    n.name = "n0.pcie" + std::to_string(switch_count++);
    n.socket = s;
    return t.add_node(n);
  };
  {
    UnionFind pix(nd), pxb(nd);
    for (int a = 0; a < nd; ++a) {
      for (int b = 0; b < nd; ++b) {
        if (label[a][b] == "PIX") pix.join(a, b), pxb.join(a, b);
        if (label[a][b] == "PXB") pxb.join(a, b);
      }
    }
    std::map<int, std::vector<int>> by_pxb;  // in device order
    for (int d = 0; d < nd; ++d) by_pxb[pxb.find(d)].push_back(d);
    std::vector<std::pair<int, std::vector<int>>> groups(by_pxb.begin(), by_pxb.end());
    std::sort(groups.begin(), groups.end(), [](auto& x, auto& y) { return x.second[0] < y.second[0]; });
    for (auto& [root, members] : groups) {
      std::map<int, std::vector<int>> by_pix;
      for (int d : members) by_pix[pix.find(d)].push_back(d);
      const int s = socket[members[0]];
      if (by_pix.size() > 1) {
        const NodeId upper = add_switch(s);
        t.add_duplex(upper, cpu[s], pcie);
        std::vector<std::vector<int>> leaves;
        for (auto& [r, m] : by_pix) leaves.push_back(m);
        std::sort(leaves.begin(), leaves.end());
        for (auto& m : leaves) {
          const NodeId sw = add_switch(s);
          t.add_duplex(sw, upper, pcie);
          for (int d : m) t.add_duplex(node[d], sw, pcie);
        }
      } else if (members.size() > 1) {
        const NodeId sw = add_switch(s);
        t.add_duplex(sw, cpu[s], pcie);
        for (int d : members) t.add_duplex(node[d], sw, pcie);
      } else {
        const int d = members[0];
        bool phb = false;
        for (int o = 0; o < nd; ++o) phb = phb || label[d][o] == "PHB";
        if (phb) {
          t.add_duplex(node[d], cpu[s], pcie);
        } else {
          const NodeId sw = add_switch(s);
          t.add_duplex(sw, cpu[s], pcie);
          t.add_duplex(node[d], sw, pcie);
        }
      }
    }
  }

  // NVLink: direct bonds, or one NVSwitch when a GPU's NV# sum exceeds what a GPU has.
  std::vector<int> nv_sum(nd, 0), nv_max(nd, 0);
  for (int a : gpus) {
    for (int b : gpus) {
      if (const auto nv = a != b ? nvlinks(label[a][b]) : std::nullopt) {
        nv_sum[a] += *nv;
        nv_max[a] = std::max(nv_max[a], *nv);
      }
    }
  }
  const bool nvswitch = *std::max_element(nv_sum.begin(), nv_sum.end()) > kMaxDirectNvlinks;
  auto nv_link = [&](int lanes) {
    if (blackwell)
      return hw::make_link(LinkKind::nvlink, lanes * hw::kNvlink5PerLink, lanes, hw::kNvlinkHop,
                           std::to_string(lanes) + " x 50 GB/s; " + hw::kNvlink5Source, hw::kNvlinkHopSource);
    return hw::make_link(LinkKind::nvlink, lanes * hw::kNvlinkPerLink, lanes, hw::kNvlinkHop,
                         std::to_string(lanes) +
                             " x 25 GB/s, assumed: NVLink 2-4 carry 25 GB/s per link per "
                             "direction (NV# gives the count, not the generation)",
                         hw::kNvlinkHopSource);
  };
  if (nvswitch) {
    Node n;
    n.kind = NodeKind::nvswitch;
    n.name = "n0.nvswitch";
    n.model = "NVSwitch (inferred: a GPU has more than 18 NVLinks to its peers in total)";
    const NodeId sw = t.add_node(n);
    for (int a : gpus)
      if (nv_max[a] > 0) t.add_duplex(node[a], sw, nv_link(nv_max[a]));
  } else {
    for (int a : gpus) {
      for (int b : gpus) {
        if (const auto nv = a < b ? nvlinks(label[a][b]) : std::nullopt) t.add_duplex(node[a], node[b], nv_link(*nv));
      }
    }
  }
  try {
    t.check();
  } catch (const Error& e) {
    throw_input(origin + ": " + e.what());
  }
  return t;
}

}  // namespace cclab::topo
