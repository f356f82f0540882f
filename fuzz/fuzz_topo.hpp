// Shared by the libFuzzer targets that end in a topology (file loader, nvidia-smi and NCCL XML importers):
// what must hold for any topology that loaded without an error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "topology/topology.hpp"

namespace cclab::fuzz {

// cclab made the text of a topology it accepted, so reloading it must give the same text again; any
// error or difference is a bug (the format promises an exact round trip), not bad input.
inline void expect_exact_round_trip(const topo::Topology& t) {
  try {
    const std::string text = topo::to_json_text(t);
    if (topo::to_json_text(topo::from_json_text(text, "roundtrip.json")) != text) {
      std::fprintf(stderr, "fuzz: topology does not round-trip exactly through the cclab format\n");
      std::abort();
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz: a loaded topology fails to reload from its own text: %s\n", e.what());
    std::abort();
  }
}

// The body of an importer's target: inputs above max_size are rejected (-1: not added to the corpus);
// `import(text)` may fail only with an input error; what it imports must print its GPU matrix and
// survive the round trip.
template <class Import>
int fuzz_importer(const uint8_t* data, size_t size, size_t max_size, Import import) {
  if (size > max_size) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  topo::Topology t;
  bool ok = false;
  expect_ok_or_input_error([&] {
    t = import(text);
    ok = true;
  });
  if (!ok) return 0;
  expect_ok_or_input_error([&] { (void)topo::matrix_text(t); });
  expect_exact_round_trip(t);
  return 0;
}

}  // namespace cclab::fuzz
