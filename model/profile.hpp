// Profiles: a calibrated machine as a file. A profile is the simulator's parameter file (model/params.hpp,
// read by model::load_profile: "name", "params", "curves", "tables") plus what makes it a calibration:
//
//   "format": "cclab-profile/1"
//   "topology": the preset (or topology file) the numbers apply to, so `--topo profile.json` works
//   "fitted_from" / "leave_out": it was fitted from microbenchmarks only, never from collective records
//   "machine", "gpu", "driver", "cuda_runtime", "nccl_version", "date", "commit", "origin": provenance
//   "params": each {"value", "source", "from" (the microbenchmark series), "rms_residual", "max_residual"}
//   "tables": each size sweep as its fit {"alpha_us", "beta_GBps" (matmuls: "peak_TFLOPs"), "efficiency_half",
//             "efficiency_exponent", residuals} at its "sizes", or, where that fit misses a sample by more than 10%,
//             its median "points" [[bytes, seconds], ...] and the fit's "fit_max_residual"
//   "measurements": the file beside the profile that holds the raw microbenchmark samples (so a fit can be
//                   redone: cclab calibrate --from); the samples live only there
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/calibrate.hpp"
#include "model/params.hpp"
#include "topology/topology.hpp"

namespace cclab::model {

inline constexpr const char* kProfileFormat = "cclab-profile/1";
inline constexpr const char* kLeaveOutStatement =
    "microbenchmarks only (peer copies, local copies and reductions, latencies, matmuls); no collective record "
    "was read";

struct Profile {
  std::string path;  // the file it was read from
  std::string name;
  std::string topology;  // preset name or topology file it applies to
  std::string fitted_from;
  bool leave_out = false;
  std::string origin, machine, gpu, driver, nccl_version, date;
  ModelParams params;  // defaults_for(topology) with the file applied
};

// True when `path` names a JSON file whose "format" is a cclab profile (cheap: reads the file once).
bool is_profile_file(const std::string& path);
// Reads a profile: its topology, then model::load_profile over defaults_for(that topology). Throws an
// input error naming the file for a missing file, malformed JSON, a missing "topology" or an unknown one.
Profile load_profile_file(const std::string& path);

// A profile applied over `target`'s defaults (`--topo dgx-h100 --profile profiles/h200x2.json`): load_profile,
// then where the profile's GPU and the target's differ in HBM bandwidth (their topologies' datasheet figures), the
// tables of local memory traffic (copies and reductions within a GPU) have their size part scaled by the ratio, so
// that a profile measured on one Hopper part predicts another. Everything else applies as measured: the fixed
// costs (launches, flags, graph edges) are the host's and no datasheet states them. A file that is not a cclab
// profile (no "format", no "topology") is applied as load_profile does.
ModelParams load_profile_onto(const std::string& path, const topo::Topology& target, ModelParams base);

// What `--topo <preset|topology file|profile>` resolves to: the topology and the model parameters
// (a preset or topology file gets defaults_for(topology); a profile its own).
struct Target {
  topo::Topology topology;
  ModelParams params;
  std::optional<Profile> profile;
  std::string label;  // preset name, or "h200x2 (profile profiles/h200x2.json)"
};
Target resolve_target(const std::string& preset_file_or_profile);

// The profile JSON for a calibration on a topology: ModelParams overrides derived from the fits (each
// with the series it came from and its residual), the fits, provenance and the raw measurements.
// `topology_name` is written as the profile's topology (a preset name, or a path to a topology file).
std::string make_profile_json(const Calibration& cal, const topo::Topology& topology, const std::string& topology_name,
                              const std::string& profile_name, const std::string& measurements_file = "");

// The parameter overrides alone (name -> value, source, series, residual), for tests and reports.
struct DerivedParam {
  std::string name;  // a model::param_names() entry
  double value = 0;  // in the unit its name says
  std::string source;
  std::string from;  // the microbenchmark series
  double rms_residual = 0, max_residual = 0;
};
struct DerivedCurve {
  Proto proto;
  std::string source;
  double x_half = 0, p = 1;  // the efficiency 1 / (1 + (x_half / S)^p)
};
struct Derived {
  std::vector<DerivedParam> params;
  std::vector<DerivedCurve> curves;
  std::vector<std::string> notes;  // what could not be expressed or was not measured
};
Derived derive_params(const Calibration& cal, const topo::Topology& topology);

}  // namespace cclab::model
