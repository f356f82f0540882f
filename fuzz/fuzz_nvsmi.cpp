// libFuzzer target: the `nvidia-smi topo -m` importer (topology/topology.hpp import_nvidia_smi). Users
// paste this text from their machines: tabs, ANSI escapes, CRLF, extra columns and legends all occur.
// An imported topology must print its matrix and survive the cclab format's round trip.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (32 << 10)) return -1;  // a 64-GPU matrix is about 20 KB
  const std::string text(reinterpret_cast<const char*>(data), size);
  cclab::topo::Topology t;
  bool ok = false;
  cclab::fuzz::expect_ok_or_input_error([&] {
    t = cclab::topo::import_nvidia_smi(text, "topo-m.txt");
    ok = true;
  });
  if (!ok) return 0;
  cclab::fuzz::expect_ok_or_input_error([&] { (void)cclab::topo::matrix_text(t); });
  try {
    const std::string json = cclab::topo::to_json_text(t);
    if (cclab::topo::to_json_text(cclab::topo::from_json_text(json, "roundtrip.json")) != json) std::abort();
  } catch (const cclab::Error& e) {
    std::fprintf(stderr, "fuzz: imported topology fails to reload from its own text: %s\n", e.what());
    std::abort();
  }
  return 0;
}
