// libFuzzer target: the NCCL topology XML importer (topology/topology.hpp import_nccl_xml), for the files
// NCCL_TOPO_DUMP_FILE writes: nested <system>/<cpu>/<pci>/<gpu>/<nvlink>/<nic> elements with attributes.
// An imported topology must print its matrix and survive the cclab format's round trip.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_topo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A dump of an 8-GPU node is about 10 KB.
  return cclab::fuzz::fuzz_importer(
      data, size, 64 << 10, [](const std::string& text) { return cclab::topo::import_nccl_xml(text, "topo.xml"); });
}
