// libFuzzer target: loading a profile (model/profile.hpp load_profile_file over model/params.hpp
// load_profile), the calibrated-machine file that `--topo <profile>` and `cclab compare` read: provenance,
// the topology it applies to, parameters and efficiency curves. Whatever loads must write its parameters
// back (profile_json) to text that loads to the same parameters.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "model/params.hpp"
#include "model/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 10)) return -1;  // a full profile with its raw measurements is about 15 KB
  static cclab::fuzz::TempFile file(".json");
  static cclab::fuzz::TempFile again("-again.json");
  file.write(data, size);
  cclab::model::ModelParams p;
  bool ok = false;
  cclab::fuzz::expect_ok_or_input_error([&] { (void)cclab::model::is_profile_file(file.path()); });
  cclab::fuzz::expect_ok_or_input_error([&] {
    p = cclab::model::load_profile_file(file.path()).params;
    ok = true;
  });
  // Files that are not whole profiles (no "format"/"topology") still go through the parameter reader.
  if (!ok) {
    cclab::fuzz::expect_ok_or_input_error([&] {
      p = cclab::model::load_profile(file.path(), cclab::model::ModelParams::ideal());
      ok = true;
    });
  }
  if (!ok) return 0;
  try {
    const std::string text = cclab::model::profile_json(p);
    std::ofstream(again.path(), std::ios::binary | std::ios::trunc) << text;
    const auto back = cclab::model::load_profile(again.path(), cclab::model::ModelParams::ideal());
    if (cclab::model::profile_json(back) != text) {
      std::fprintf(stderr, "fuzz: profile does not round-trip through profile_json\n");
      std::abort();
    }
  } catch (const cclab::Error& e) {
    std::fprintf(stderr, "fuzz: a loaded profile fails to reload from its own text: %s\n", e.what());
    std::abort();
  }
  return 0;
}
