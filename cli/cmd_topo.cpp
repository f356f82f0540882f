// cclab topo <preset|file> [--matrix] [--gpus LIST] [--without nvlink] [--no-p2p] [--routes] [--save FILE]
//            [--check PRESET]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "topology/topology.hpp"

namespace cclab::cli {

namespace {

// Routes from GPU 0 to the other GPUs of its server (at most 7), so --without nvlink and --no-p2p show.
void print_routes(const topo::Topology& t, const topo::RouteOptions& opt) {
  std::cout << "\nroutes from GPU0" << (opt.without_nvlink ? " (--without nvlink)" : "")
            << (opt.no_p2p ? " (--no-p2p: staged through host memory)" : "") << ":\n";
  int shown = 0;
  for (int b = 1; b < t.num_gpus() && shown < 7; ++b) {
    if (t.node(t.gpu(b)).server != t.node(t.gpu(0)).server && b != t.num_gpus() - 1) continue;
    const topo::Path p = t.route_gpus(0, b, opt);
    std::string hops = t.node(t.gpu(0)).name;
    for (size_t i = 0; i < p.links.size(); ++i) {
      if (p.staged() && i == p.second_leg) hops += " |";
      hops += " -" + std::string(topo::link_kind_name(t.link(p.links[i]).kind)) + "-> " +
              t.node(boost::target(p.links[i], t.graph)).name;
    }
    char head[128];
    std::snprintf(head, sizeof head, "  GPU0 -> GPU%d: %zu hops, %.3g us, bottleneck %.4g GB/s: ", b, p.links.size(),
                  p.latency.us(), p.bottleneck.gbps());
    std::cout << head << hops << "\n";
    ++shown;
  }
}

}  // namespace

int cmd_topo(const Argv& argv) {
  Args args("topo", argv,
            {{{"-h", "--help"}, false, "this help"},
             {{"--matrix"}, false, "GPU x GPU connection table (nvidia-smi topo -m notation)"},
             {{"--gpus"}, true, "keep only these GPUs, e.g. 0,1,4,5 (they become GPUs 0..k-1)"},
             {{"--without"}, true, "'nvlink': route around NVLink (PCIe, host bridges, UPI)"},
             {{"--no-p2p"}, false, "stage GPU-to-GPU transfers through host memory (NCCL_P2P_DISABLE=1)"},
             {{"--routes"}, false, "print the routes from GPU0 (on by default with --without / --no-p2p)"},
             {{"--save"}, true, "write the topology to FILE in the cclab JSON format"},
             {{"--gpu-model"},
              true,
              "nvidia-smi text: the GPU model (e.g. 'GeForce RTX 2080 Ti'; default: nvidia-smi -q "
              "output in the same file, else assumed)"},
             {{"--pcie"}, true, "nvidia-smi text: the GPUs' PCIe link as GEN or GENxLANES (e.g. 3 or 3x16)"},
             {{"--check"},
              true,
              "compare with PRESET's first GPUs (connections, GPU models, sockets; exit 1 where they differ), e.g. "
              "cclab topo nccl-topo.xml --check hgx-h200"}},
            1);
  if (args.has("--help")) {
    std::cout << "usage: cclab topo <preset|file> [options]\n"
                 "  presets: dgx-h100, dgx-a100, hgx-h200, h200x2, pcie-2socket, hgx-h20, dgx-b200, hgx-a100-4nic,\n"
                 "  rtx2080ti-pcie, rtx2080ti-nvlink; clusters <N>x<preset>[:os<K>]\n"
                 "  (N servers on a rail-optimised fat tree, K:1 leaf oversubscription, e.g. 128xdgx-h100:os2)\n"
                 "  files: cclab JSON, nvidia-smi topo -m output, NCCL topology XML dump (NCCL_TOPO_DUMP_FILE)\n"
              << args.usage();
    return 0;
  }
  if (args.positional().empty()) throw_input("cclab topo: name a preset or a file (see cclab topo --help)");
  topo::Topology t;
  if (args.has("--gpu-model") || args.has("--pcie")) {
    // Facts an nvidia-smi topo -m text does not state.
    topo::SmiFacts facts;
    facts.gpu_model = args.get_or("--gpu-model", "");
    if (auto pc = args.get("--pcie")) {
      const auto x = pc->find('x');
      facts.pcie_gen = int(parse_int("--pcie", pc->substr(0, x), 1, 6));
      if (x != std::string::npos) facts.pcie_lanes = int(parse_int("--pcie", pc->substr(x + 1), 1, 32));
    }
    const std::string& path = args.positional()[0];
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_input("cclab topo: cannot open '" + path + "'");
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("GPU0") == std::string::npos)
      throw_input("cclab topo: --gpu-model and --pcie apply to nvidia-smi topo -m text; '" + path + "' is not one");
    t = topo::import_nvidia_smi(text.str(), path, facts);
  } else {
    t = topo::load_topology(args.positional()[0]);
  }
  if (auto g = args.get("--gpus")) t = topo::select_gpus(t, parse_int_list("--gpus", *g));
  topo::RouteOptions opt;
  if (auto w = args.get("--without")) {
    if (*w != "nvlink") throw_input("cclab topo: --without takes 'nvlink', got '" + *w + "'");
    opt.without_nvlink = true;
  }
  opt.no_p2p = args.has("--no-p2p");
  // Route everything once with the chosen options: a missing route is an error before any output.
  for (int b = 1; b < std::min(t.num_gpus(), t.gpus_per_server()); ++b) t.route_gpus(0, b, opt);

  std::cout << topo::describe(t);
  if (args.has("--routes") || opt.without_nvlink || opt.no_p2p) print_routes(t, opt);
  if (args.has("--matrix")) std::cout << "\n" << topo::matrix_text(t, opt);
  if (auto preset_name = args.get("--check")) {
    const topo::Topology preset = topo::load_topology(*preset_name);
    const auto diffs = topo::topology_differences(t, preset);
    std::cout << "\ntopology check: " << args.positional()[0] << " against " << *preset_name << " (its first "
              << t.num_gpus()
              << " GPUs): " << (diffs.empty() ? "agree (GPU pairs' connections, GPU models, sockets)" : "differ")
              << "\n";
    for (const auto& d : diffs) std::cout << "  " << d << "\n";
    if (!diffs.empty()) return 1;
  }
  if (auto path = args.get("--save")) {
    topo::save_file(t, *path);
    std::cout << "\nsaved to " << *path << "\n";
  }
  return 0;
}

}  // namespace cclab::cli
