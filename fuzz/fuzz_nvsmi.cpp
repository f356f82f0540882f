// libFuzzer target: the `nvidia-smi topo -m` importer (topology/topology.hpp import_nvidia_smi). Users
// paste this text from their machines: tabs, ANSI escapes, CRLF, extra columns and legends all occur.
// An imported topology must print its matrix and survive the cclab format's round trip.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_topo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A 64-GPU matrix is about 20 KB.
  return cclab::fuzz::fuzz_importer(
      data, size, 32 << 10, [](const std::string& text) { return cclab::topo::import_nvidia_smi(text, "topo-m.txt"); });
}
