// The cclab topology file (JSON) and loading by name or by file content.
//
// Format (version 1). Numbers are in base units so that a save/load round trip is exact:
//   {
//     "format": "cclab-topology", "version": 1,
//     "name": "dgx-h100", "description": "one line",
//     "nodes": [ {"name": "n0.gpu0", "kind": "gpu", "server": 0, "socket": 0, "index": 0,
//                 "mem_bw_Bps": 3.35e12, "flops": 9.895e14, "model": "H100 SXM5 80GB", "source": "..."}, ... ],
//     "links": [ {"from": "n0.gpu0", "to": "n0.nvswitch", "kind": "nvlink", "bw_Bps": 4.5e11,
//                 "latency_s": 3e-7, "lanes": 18, "source": "..."}, ... ],
//     "fabric": {"rails": 8, "servers_per_leaf": 32, "oversubscription": 1,
//                "nic_of_gpu": ["n0.nic0", ...], "leaves": ["leaf.g0.r0", ...], "spines": ["spine0", ...]}
//   }
// Node kinds: gpu, nvswitch, pcie_switch, cpu, host_memory, nic, net_switch. Link kinds: nvlink, pcie, upi,
// network, memory. Each link is one direction (write both for a full-duplex link, or give "duplex": true to add
// the reverse direction with the same numbers); links get ids in file order.
// Hand-written files may give "bw_GBps" instead of "bw_Bps", "latency_us" instead of "latency_s" and
// "mem_bw_GBps" instead of "mem_bw_Bps"; "server" (0), "socket" (-1), "lanes" (1), "flops" (0), "model" and
// "source" ("") may be left out; "index" is required for GPUs. A GPU may say "pcie_p2p": false (GeForce parts:
// no peer access over PCIe; NCCL stages through host memory). "fabric" is optional (clusters only).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {

namespace {

using nlohmann::json;

int line_of(const std::string& text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n'));
}

// Lines where the elements of the top-level "nodes" and "links" arrays start, so that errors in an entry
// name its line (nlohmann's DOM keeps no positions). A small scan of the raw text that skips strings.
std::map<std::string, std::vector<int>> element_lines(const std::string& text) {
  std::map<std::string, std::vector<int>> out;
  int depth = 0, line = 1;
  std::string last_key, current_array;
  int array_depth = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '"') {
      size_t j = i + 1;
      std::string s;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\')
          ++j;
        else
          s += text[j];
      }
      if (depth == 1) last_key = s;
      i = j;
      continue;
    }
    if (c == '{' || c == '[') {
      if (c == '[' && depth == 1 && (last_key == "nodes" || last_key == "links")) {
        current_array = last_key;
        array_depth = depth + 1;
      } else if (c == '{' && depth == array_depth) {
        out[current_array].push_back(line);
      }
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
      if (depth < array_depth) array_depth = -1;
    }
  }
  return out;
}

json node_to_json(const Node& n) {
  json j;
  j["name"] = n.name;
  j["kind"] = std::string(node_kind_name(n.kind));
  j["server"] = n.server;
  j["socket"] = n.socket;
  if (n.kind == NodeKind::gpu) j["index"] = n.index;
  j["mem_bw_Bps"] = n.mem_bw.value;
  j["flops"] = n.flops;
  j["model"] = n.model;
  j["source"] = n.source;
  if (n.kind == NodeKind::gpu && !n.pcie_p2p) j["pcie_p2p"] = false;
  return j;
}

// Reads one file into a Topology; `where(i, array)` gives "file:line: array[i]" for messages.
class Reader {
 public:
  Reader(const std::string& text, std::string origin) : text_(text), origin_(std::move(origin)) {}

  Topology read() {
    json doc;
    try {
      doc = json::parse(text_);
    } catch (const json::parse_error& e) {
      std::string what = e.what();
      // Keep nlohmann's description, drop its "[json.exception...] parse error at line L, column C: " prefix.
      if (auto p = what.find(": "); p != std::string::npos && what.find("parse error") < p) what = what.substr(p + 2);
      throw_input(origin_ + ":" + std::to_string(line_of(text_, e.byte == 0 ? 0 : e.byte - 1)) +
                  ": malformed JSON: " + what);
    }
    lines_ = element_lines(text_);
    if (!doc.is_object()) fail(1, "the top level must be an object");
    if (doc.value("format", std::string()) != "cclab-topology") {
      fail(1, "not a cclab topology file (want \"format\": \"cclab-topology\")");
    }
    if (doc.value("version", 0) != 1) fail(1, "unsupported version (this cclab reads version 1)");
    Topology t;
    t.name = doc.value("name", std::filesystem::path(origin_).filename().string());
    t.description = doc.value("description", std::string());
    if (!doc.contains("nodes") || !doc["nodes"].is_array()) fail(1, "needs a \"nodes\" array");
    if (!doc.contains("links") || !doc["links"].is_array()) fail(1, "needs a \"links\" array");
    std::map<std::string, NodeId> by_name;
    const json& nodes = doc["nodes"];
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& j = nodes[i];
      const std::string at = "nodes[" + std::to_string(i) + "]";
      if (!j.is_object()) fail(line("nodes", i), at + " must be an object");
      Node n;
      n.name = str(j, "name", at, i, "nodes", true);
      n.kind = guarded(line("nodes", i), at, [&] { return parse_node_kind(str(j, "kind", at, i, "nodes", true)); });
      n.server = integer(j, "server", 0, at, i, "nodes");
      n.socket = integer(j, "socket", -1, at, i, "nodes");
      if (n.kind == NodeKind::gpu) {
        if (!j.contains("index")) fail(line("nodes", i), at + " (" + n.name + "): a GPU needs \"index\"");
        n.index = integer(j, "index", -1, at, i, "nodes");
        if (n.index < 0) fail(line("nodes", i), at + " (" + n.name + "): GPU index must be >= 0");
        // Indices are 0..GPUs-1, so never beyond the node count; a huge one would size the GPU table by it.
        if (n.index >= static_cast<int>(nodes.size())) {
          fail(line("nodes", i), at + " (" + n.name + "): GPU index " + std::to_string(n.index) + " but the file has " +
                                     std::to_string(nodes.size()) + " nodes");
        }
      }
      n.mem_bw = BytesPerSec(rate(j, "mem_bw_Bps", "mem_bw_GBps", 0, at, i, "nodes"));
      if (n.mem_bw.value < 0) fail(line("nodes", i), at + " (" + n.name + "): memory bandwidth must be >= 0");
      n.flops = number(j, "flops", 0, at, i, "nodes");
      if (n.flops < 0) fail(line("nodes", i), at + " (" + n.name + "): flops must be >= 0");
      n.model = str(j, "model", at, i, "nodes", false);
      n.source = str(j, "source", at, i, "nodes", false);
      if (j.contains("pcie_p2p")) {
        if (!j["pcie_p2p"].is_boolean())
          fail(line("nodes", i), at + " (" + n.name + "): \"pcie_p2p\" must be true or false");
        n.pcie_p2p = j["pcie_p2p"].get<bool>();
      }
      if (by_name.count(n.name)) fail(line("nodes", i), at + ": a second node named '" + n.name + "'");
      const std::string name = n.name;
      by_name[name] = guarded(line("nodes", i), at, [&] { return t.add_node(std::move(n)); });
    }
    const json& links = doc["links"];
    for (size_t i = 0; i < links.size(); ++i) {
      const json& j = links[i];
      const std::string at = "links[" + std::to_string(i) + "]";
      if (!j.is_object()) fail(line("links", i), at + " must be an object");
      const std::string from = str(j, "from", at, i, "links", true);
      const std::string to = str(j, "to", at, i, "links", true);
      const std::string which = at + " (" + from + " -> " + to + ")";
      auto fa = by_name.find(from), tb = by_name.find(to);
      if (fa == by_name.end()) fail(line("links", i), which + ": no node named '" + from + "'");
      if (tb == by_name.end()) fail(line("links", i), which + ": no node named '" + to + "'");
      if (fa->second == tb->second) fail(line("links", i), which + ": a link from a node to itself");
      Link l;
      l.kind = guarded(line("links", i), which, [&] { return parse_link_kind(str(j, "kind", at, i, "links", true)); });
      if (!j.contains("bw_Bps") && !j.contains("bw_GBps")) fail(line("links", i), which + ": needs \"bw_Bps\"");
      l.bw = BytesPerSec(rate(j, "bw_Bps", "bw_GBps", 0, at, i, "links"));
      if (!(l.bw.value > 0)) {
        fail(line("links", i), which + ": bandwidth " + number_text(j, "bw_Bps", "bw_GBps") + " must be > 0");
      }
      if (j.contains("latency_us")) {
        l.latency = microseconds(number(j, "latency_us", 0, at, i, "links"));
      } else {
        l.latency = Seconds(number(j, "latency_s", 0, at, i, "links"));
      }
      if (l.latency.value < 0) fail(line("links", i), which + ": latency must be >= 0");
      l.lanes = integer(j, "lanes", 1, at, i, "links");
      if (l.lanes < 1) fail(line("links", i), which + ": lanes must be >= 1");
      l.source = str(j, "source", at, i, "links", false);
      // "duplex": true (hand-written files) adds the reverse direction too, with the same numbers.
      bool duplex = false;
      if (j.contains("duplex")) {
        if (!j["duplex"].is_boolean()) fail(line("links", i), which + ": \"duplex\" must be true or false");
        duplex = j["duplex"].get<bool>();
      }
      if (duplex) {
        t.add_duplex(fa->second, tb->second, std::move(l));
      } else {
        t.add_link(fa->second, tb->second, std::move(l));
      }
    }
    if (doc.contains("fabric")) read_fabric(doc["fabric"], by_name, t);
    try {
      t.check();
    } catch (const Error& e) {
      throw_input(origin_ + ": " + e.what());
    }
    return t;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& msg) const {
    throw_input(origin_ + ":" + std::to_string(line) + ": " + msg);
  }
  int line(const std::string& array, size_t i) const {
    auto it = lines_.find(array);
    return it != lines_.end() && i < it->second.size() ? it->second[i] : 1;
  }
  template <class F>
  std::invoke_result_t<F> guarded(int line, const std::string& at, F f) const {
    try {
      return f();
    } catch (const Error& e) {
      fail(line, at + ": " + e.what());
    }
  }
  std::string str(const json& j, const char* key, const std::string& at, size_t i, const char* arr, bool required) {
    if (!j.contains(key)) {
      if (required) fail(line(arr, i), at + ": missing \"" + key + "\"");
      return "";
    }
    if (!j[key].is_string()) fail(line(arr, i), at + ": \"" + key + "\" must be a string");
    return j[key].get<std::string>();
  }
  double number(const json& j, const char* key, double fallback, const std::string& at, size_t i, const char* arr) {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_number()) fail(line(arr, i), at + ": \"" + key + "\" must be a number");
    return j[key].get<double>();
  }
  int integer(const json& j, const char* key, int fallback, const std::string& at, size_t i, const char* arr) {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_number_integer()) fail(line(arr, i), at + ": \"" + key + "\" must be an integer");
    const auto v = j[key].get<int64_t>();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      fail(line(arr, i), at + ": \"" + key + "\" = " + std::to_string(v) + " is out of range");
    }
    return static_cast<int>(v);
  }
  double rate(const json& j, const char* base, const char* gb, double fallback, const std::string& at, size_t i,
              const char* arr) {
    if (j.contains(gb)) return number(j, gb, 0, at, i, arr) * 1e9;
    return number(j, base, fallback, at, i, arr);
  }
  static std::string number_text(const json& j, const char* base, const char* gb) {
    return j.contains(gb) ? j[gb].dump() + " GB/s" : j[base].dump() + " B/s";
  }
  void read_fabric(const json& f, const std::map<std::string, NodeId>& by_name, Topology& t) {
    const int at_line = line_of(text_, text_.find("\"fabric\""));
    auto fail_f = [&](const std::string& m) { fail(at_line, "fabric: " + m); };
    if (!f.is_object()) fail_f("must be an object");
    auto ids = [&](const char* key) {
      std::vector<NodeId> out;
      if (!f.contains(key) || !f[key].is_array()) fail_f(std::string("needs a \"") + key + "\" array of node names");
      for (const auto& v : f[key]) {
        if (!v.is_string()) fail_f(std::string("\"") + key + "\" must hold node names");
        auto it = by_name.find(v.get<std::string>());
        if (it == by_name.end()) fail_f("no node named '" + v.get<std::string>() + "'");
        out.push_back(it->second);
      }
      return out;
    };
    for (const char* k : {"rails", "servers_per_leaf", "oversubscription"}) {
      if (!f.contains(k) || !f[k].is_number_integer() || f[k].get<int>() < 1) {
        fail_f(std::string("\"") + k + "\" must be an integer >= 1");
      }
    }
    t.fabric.rails = f["rails"].get<int>();
    t.fabric.servers_per_leaf = f["servers_per_leaf"].get<int>();
    t.fabric.oversubscription = f["oversubscription"].get<int>();
    t.fabric.nic_of_gpu = ids("nic_of_gpu");
    t.fabric.leaves = ids("leaves");
    t.fabric.spines = ids("spines");
  }

  const std::string& text_;
  std::string origin_;
  std::map<std::string, std::vector<int>> lines_;
};

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw_input("topology file '" + path + "' does not exist");
  if (std::filesystem::is_directory(path, ec)) throw_input("topology file '" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_input("cannot read topology file '" + path + "'");
  // Bounded read: a pipe or device (/dev/zero, `<(cmd)`) has no size to check first. The largest preset
  // saved (2048 DGX H100 servers) is far below this.
  constexpr size_t kMaxBytes = size_t(256) << 20;
  std::string text;
  std::vector<char> chunk(size_t(1) << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const size_t got = static_cast<size_t>(in.gcount());
    // JSON text holds no NUL byte: refuse binary input (/dev/zero) at once instead of reading 256 MiB.
    if (const void* nul = std::memchr(chunk.data(), '\0', got))
      throw_input("topology file '" + path + "' is binary (a NUL byte at offset " +
                  std::to_string(text.size() + size_t(static_cast<const char*>(nul) - chunk.data())) + "), not JSON");
    text.append(chunk.data(), got);
    if (text.size() > kMaxBytes) throw_input("topology file '" + path + "' is larger than 256 MiB");
  }
  return text;
}

}  // namespace

namespace {
// Names and sources may come from imported text that is not UTF-8 (an NCCL dump's vendor string, pasted
// nvidia-smi output): write such bytes as U+FFFD instead of throwing, so saving never fails.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
}  // namespace

std::string to_json_text(const Topology& t) {
  json doc;
  doc["format"] = "cclab-topology";
  doc["version"] = 1;
  doc["name"] = t.name;
  doc["description"] = t.description;
  json nodes = json::array();
  for (auto [v, end] = boost::vertices(t.graph); v != end; ++v) nodes.push_back(node_to_json(t.node(*v)));
  doc["nodes"] = std::move(nodes);
  json links = json::array();
  for (int id = 0; id < t.num_links(); ++id) {
    const LinkId e = t.link_by_id(id);
    const Link& l = t.link(e);
    json j;
    j["from"] = t.node(boost::source(e, t.graph)).name;
    j["to"] = t.node(boost::target(e, t.graph)).name;
    j["kind"] = std::string(link_kind_name(l.kind));
    j["bw_Bps"] = l.bw.value;
    j["latency_s"] = l.latency.value;
    j["lanes"] = l.lanes;
    j["source"] = l.source;
    links.push_back(std::move(j));
  }
  doc["links"] = std::move(links);
  if (!t.fabric.empty()) {
    auto names = [&](const std::vector<NodeId>& v) {
      json a = json::array();
      for (NodeId n : v) a.push_back(t.node(n).name);
      return a;
    };
    doc["fabric"] = {{"rails", t.fabric.rails},
                     {"servers_per_leaf", t.fabric.servers_per_leaf},
                     {"oversubscription", t.fabric.oversubscription},
                     {"nic_of_gpu", names(t.fabric.nic_of_gpu)},
                     {"leaves", names(t.fabric.leaves)},
                     {"spines", names(t.fabric.spines)}};
  }
  // One entry per line: diffs stay readable and error lines point at one node or link.
  std::string out = "{\n";
  bool first = true;
  for (const char* key : {"format", "version", "name", "description", "nodes", "links", "fabric"}) {
    if (!doc.contains(key)) continue;
    out += first ? "" : ",\n";
    first = false;
    out += "  " + json(key).dump() + ": ";
    const json& v = doc[key];
    if (v.is_array()) {
      out += "[\n";
      for (size_t i = 0; i < v.size(); ++i) out += "    " + dump(v[i]) + (i + 1 < v.size() ? ",\n" : "\n");
      out += "  ]";
    } else {
      out += dump(v);
    }
  }
  out += "\n}\n";
  return out;
}

Topology from_json_text(const std::string& text, const std::string& origin) {
  try {
    return Reader(text, origin).read();
  } catch (const nlohmann::json::exception& e) {
    // A value of the wrong type that a lookup above did not check (e.g. "format": 7): still bad input.
    throw_input(origin + ": " + e.what());
  }
}

void save_file(const Topology& t, const std::string& path) {
  const std::string text = to_json_text(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw_input("cannot write topology file '" + path + "'");
  out << text;
  if (!out.flush()) throw_input("error writing topology file '" + path + "'");
}

Topology load_file(const std::string& path) {
  const std::string text = read_text(path);
  // Detect the format by content: JSON object, XML (NCCL's dump), or nvidia-smi topo -m text.
  size_t p = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) p = 3;  // UTF-8 byte-order mark
  while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
  if (p == text.size()) throw_input(path + ":1: empty topology file");
  if (text[p] == '{') return from_json_text(text, path);
  if (text[p] == '<') return import_nccl_xml(text, path);
  if (text.find("GPU0") != std::string::npos) return import_nvidia_smi(text, path);
  throw_input(path +
              ": not a topology file (expected cclab JSON, an NCCL topology XML dump or nvidia-smi topo -m "
              "output)");
}

Topology load_topology(const std::string& preset_or_path) {
  if (is_preset(preset_or_path)) return make_preset(preset_or_path);
  std::error_code ec;
  if (std::filesystem::exists(preset_or_path, ec)) return load_file(preset_or_path);
  // Neither: a cluster-looking name gets make_preset's precise message, anything else both possibilities.
  if (preset_or_path.find('/') == std::string::npos && preset_or_path.find('.') == std::string::npos) {
    const auto x = preset_or_path.find('x');
    if (x != std::string::npos && x > 0 && std::isdigit(static_cast<unsigned char>(preset_or_path[0]))) {
      make_preset(preset_or_path);  // throws the precise cluster error
    }
    std::string names;
    for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw_input("unknown topology preset '" + preset_or_path + "' and no such file (presets: " + names +
                ", <N>x<preset>[:os<K>])");
  }
  throw_input("topology file '" + preset_or_path + "' does not exist");
}

}  // namespace cclab::topo
