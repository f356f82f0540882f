#include <cstdio>
#include <iostream>

#include "algorithms/registry.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "topology/topology.hpp"

namespace cclab::cli {

int cmd_list(const Argv& argv) {
  Args args("list", argv, {{{"-h", "--help"}, false, "this help"}});
  if (args.has("--help")) {
    std::cout << "usage: cclab list\n" << args.usage();
    return 0;
  }
  std::cout << "# algorithms\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-30s %-22s %-12s %s\n", "name", "collective", "backends", "summary");
  std::cout << line;
  for (const auto& a : algorithms()) {
    std::string backends;
    if (a.backends & kRef) backends += "ref,";
    if (a.backends & kSim) backends += "sim,";
    if (a.backends & kGpu) backends += "gpu,";
    if (!backends.empty()) backends.pop_back();
    std::snprintf(line, sizeof line, "%-30s %-22s %-12s %s\n", a.name.c_str(), a.collective.c_str(), backends.c_str(),
                  a.summary.c_str());
    std::cout << line;
  }
  for (const auto& b : executor_baselines()) {
    std::snprintf(line, sizeof line, "%-30s %-22s %-12s %s\n", b.name.c_str(), b.collective.c_str(), "gpu",
                  b.summary.c_str());
    std::cout << line;
  }
  std::cout << "\n# topology presets (clusters: <N>x<preset>, e.g. 128xdgx-h100)\n";
  for (const auto& p : topo::preset_names()) {
    std::cout << p << "  " << topo::make_preset(p).description << "\n";
  }
  return 0;
}

}  // namespace cclab::cli
