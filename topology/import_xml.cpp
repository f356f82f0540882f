// Import of NCCL's topology XML dump (NCCL_TOPO_DUMP_FILE).
#include "core/error.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {
Topology import_nccl_xml(const std::string&, const std::string& origin) {
  throw_input(origin + ": NCCL XML import is not implemented yet");
}
}  // namespace cclab::topo
