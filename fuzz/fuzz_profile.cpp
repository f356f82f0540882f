// libFuzzer target: loading a profile (model/profile.hpp load_profile_file over model/params.hpp
// load_profile), the calibrated-machine file that `--topo <profile>` and `cclab compare` read: provenance,
// the topology it applies to, parameters and efficiency curves. Whatever loads must write its parameters
// back (profile_json) to text that loads to the same parameters (to the last bit or so).
#include <algorithm>
#include <cmath>
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
    // Same parameters, to rounding: values are kept in base units and written in the units their names
    // say (us, GB/s), so the last bit may differ; anything more is a lost or misread parameter.
    for (const auto& name : cclab::model::param_names(p)) {
      const auto a = cclab::model::get_param(p, name), b = cclab::model::get_param(back, name);
      if (!a || std::isnan(*a)) continue;  // not written by profile_json
      if (!b || !(std::fabs(*a - *b) <= 1e-12 * std::max(std::fabs(*a), std::fabs(*b)))) {
        std::fprintf(stderr, "fuzz: parameter %s = %.17g reloads as %.17g\n", name.c_str(), *a, b ? *b : NAN);
        std::abort();
      }
    }
  } catch (const cclab::Error& e) {
    std::fprintf(stderr, "fuzz: a loaded profile fails to reload from its own text: %s\n", e.what());
    std::abort();
  }
  return 0;
}
