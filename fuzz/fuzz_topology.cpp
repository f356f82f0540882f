// libFuzzer target: loading a topology file (topology/topology.hpp load_file), which sniffs the format
// (cclab JSON, NCCL topology XML, nvidia-smi topo -m text) and then checks the graph.
//
// Whatever loads must then be usable by the commands that take a topology: it must save and load back
// to the same text (the format promises an exact round trip), describe itself, print its GPU matrix and
// route between its GPUs, all without any error other than an input error.
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_topo.hpp"

namespace {

void exercise(const cclab::topo::Topology& t) {
  using cclab::fuzz::expect_ok_or_input_error;
  cclab::fuzz::expect_exact_round_trip(t);
  expect_ok_or_input_error([&] { (void)cclab::topo::describe(t); });
  expect_ok_or_input_error([&] { (void)cclab::topo::matrix_text(t); });
  // Routes between the first few GPUs, with each routing switch (bounded: inputs are small graphs).
  const int n = std::min(t.num_gpus(), 4);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      for (int mode = 0; mode < 3; ++mode) {
        cclab::topo::RouteOptions opt;
        opt.without_nvlink = mode == 1;
        opt.no_p2p = mode == 2;
        expect_ok_or_input_error([&] { (void)t.route_gpus(a, b, opt); });
      }
    }
  if (t.num_gpus() >= 2) expect_ok_or_input_error([&] { (void)cclab::topo::select_gpus(t, {1, 0}); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 10)) return -1;  // hand-written and dumped topologies are far smaller
  static cclab::fuzz::TempFile file(".topo");
  cclab::fuzz::expect_ok_or_input_error([&] {
    const auto t = cclab::topo::load_file(file.write(data, size));
    exercise(t);
  });
  return 0;
}
