// cclab calibrate [-g N] --out profiles/NAME.json [--topo PRESET] [--from FILE] [--max-bytes SIZE]
//
// Microbenchmarks on the GPUs (exec/microbench/microbench.cu), a least-squares fit of each (model/calibrate.cpp),
// and a profile that the simulator reads (model/profile.cpp). With --from, no GPU is touched: the fit is
// redone from saved measurements (a measurements JSON, or a profile: the measurements file it names).
// No collective is ever timed or read here.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/record.hpp"
#include "model/calibrate.hpp"
#include "model/profile.hpp"
#include "topology/topology.hpp"

#ifdef CCLAB_HAVE_EXEC
#include "exec/microbench/microbench.hpp"
#endif

namespace cclab::cli {

namespace {

#ifdef CCLAB_HAVE_EXEC  // only a measuring build stamps a profile
std::string iso_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream os;
  os << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return os.str();
}

// The commit the measurements were made with: $CCLAB_COMMIT (machines that get the tree without .git),
// else git, else "unknown".
std::string current_commit() {
  if (const char* c = std::getenv("CCLAB_COMMIT"); c && *c) return c;
  std::string out;
  if (FILE* p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r")) {
    char buf[64];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.empty() ? "unknown" : out;
}
#endif

// The preset a machine most likely is, from what the microbenchmarks saw.
std::string guess_topology(const std::string& gpu_name, int gpus) {
  if (gpu_name.find("H200") != std::string::npos && gpus == 2) return "h200x2";
  if (gpu_name.find("H200") != std::string::npos && gpus == 8) return "hgx-h200";
  if (gpu_name.find("H100") != std::string::npos && gpus == 8) return "dgx-h100";
  if (gpu_name.find("A100") != std::string::npos && gpus == 8) return "dgx-a100";
  throw_input("cannot tell which topology preset " + std::to_string(gpus) + " x " + gpu_name +
              " is: name it with --topo (e.g. --topo h200x2, or a topology file)");
}

void print_summary(const model::Calibration& cal, const model::Derived& d) {
  std::printf("# fits (t = alpha + S / (beta * eta(S)); residuals relative, over the sizes measured)\n");
  std::printf("# %-20s %10s %12s %12s %8s %8s %6s\n", "series", "alpha_us", "peak", "eta=1/2 at", "rms", "max", "pts");
  for (const auto& c : cal.curves) {
    const bool mm = c.series.rfind("matmul.", 0) == 0;
    char peak[32], half[32];
    std::snprintf(peak, sizeof peak, mm ? "%.1f TF/s" : "%.1f GB/s", mm ? c.fit.beta.value / 1e12 : c.fit.beta.gbps());
    if (c.fit.x_half > 0)
      std::snprintf(half, sizeof half, mm ? "%.3g F" : "%.3g B", c.fit.x_half);
    else
      std::snprintf(half, sizeof half, "-");
    std::printf("  %-20s %10.3f %12s %12s %7.2f%% %7.2f%% %6d\n", c.series.c_str(), c.fit.alpha.us(), peak, half,
                100 * c.fit.rms_rel_residual, 100 * c.fit.max_rel_residual, c.fit.points);
  }
  for (const auto& l : cal.latencies)
    std::printf("  %-20s %10.3f %12s %12s %7.2f%% %7.2f%% %6d\n", l.series.c_str(), l.fit.value.us(), "-", "-",
                100 * l.fit.rms_rel_residual, 100 * l.fit.max_rel_residual, l.fit.points);
  std::printf("# model parameters set by this profile\n");
  for (const auto& p : d.params) std::printf("  %-34s %12.6g   <- %s\n", p.name.c_str(), p.value, p.from.c_str());
  for (const auto& n : d.notes) std::printf("# note: %s\n", n.c_str());
}

}  // namespace

int cmd_calibrate(const Argv& argv) {
  Args args("calibrate", argv,
            {{{"-h", "--help"}, false, "this help"},
             {{"-g", "--ngpus"}, true, "GPUs to measure (default 2; peer benchmarks need 2)"},
             {{"--out"}, true, "profile to write (JSON), e.g. profiles/h200x2.json"},
             {{"--topo"}, true, "topology preset or file the profile applies to (default: guessed from the GPUs)"},
             {{"--name"}, true, "profile name (default: the file name without .json)"},
             {{"--from"}, true, "refit saved measurements (a measurements JSON or a profile) instead of measuring"},
             {{"--max-bytes"}, true, "largest transfer of the bandwidth sweeps (default 1G)"},
             {{"--budget"}, true, "seconds the microbenchmarks may take (default 75)"},
             {{"--measurements"},
              true,
              "write the raw measurements to this JSON file (default: beside the profile, NAME.measurements.json)"}});
  if (args.has("--help")) {
    std::cout << "usage: cclab calibrate [-g N] --out profiles/NAME.json [--topo PRESET] [--from FILE]\n"
                 "  Microbenchmarks (peer copies by copy engine and by SM, both directions, local reductions,\n"
                 "  launch / event / flag latencies, cuBLAS matmuls), a least-squares fit of each, and a\n"
                 "  profile for `cclab sim --profile` and `cclab compare --topo`. Never times a collective.\n"
              << args.usage();
    return 0;
  }
  const auto out = args.get("--out");
  if (!out || out->empty()) throw_input("--out FILE is required (e.g. --out profiles/h200x2.json)");
  if (!out->ends_with(".json")) throw_input("--out '" + *out + "' should end in .json");

  model::MicroMeasurements m;
  if (auto from = args.get("--from")) {
    m = model::load_measurements(*from);
    std::cerr << "calibrate: refitting " << m.series.size() << " microbenchmark series from " << *from << "\n";
  } else {
#ifdef CCLAB_HAVE_EXEC
    exec::MicrobenchOptions opt;
    opt.gpus = int(parse_int("-g", args.get_or("-g", "2"), 1, 64));
    opt.max_bytes = parse_size("--max-bytes", args.get_or("--max-bytes", "1G"));
    if (opt.max_bytes < 1024) throw_input("--max-bytes must be at least 1K");
    opt.budget_s = parse_double("--budget", args.get_or("--budget", "75"), 1, 3600);
    opt.log = [](const std::string& s) { std::cerr << s << "\n"; };
    const exec::MicrobenchResult r = exec::run_microbenchmarks(opt);
    m.machine = r.machine;
    m.gpu_name = r.gpu_name;
    m.driver = r.driver;
    m.cuda_runtime = r.cuda_runtime;
    m.nccl_version = r.nccl_version;
    m.gpus = r.gpus;
    m.date = iso_now();
    m.commit = current_commit();
    m.origin = "cclab calibrate";
    for (const auto& s : r.series) {
      model::MicroSeries ms{s.name, s.method, {}};
      for (const auto& p : s.points) ms.samples.push_back({p.bytes, Seconds(p.seconds), p.reps, p.m, p.k, p.n});
      m.series.push_back(std::move(ms));
    }
#else
    throw_env(
        "this build has no GPU executor (built without CUDA/NCCL); "
        "use --from FILE to refit saved measurements");
#endif
  }

  // The raw samples first: a fit or topology that fails below must not lose the GPU time behind them.
  // The raw samples live in their own file (default: beside the profile, <name>.measurements.json), which the
  // profile names; the profile holds the fitted terms only.
  const std::string measurements_path = args.get_or(
      "--measurements", (std::filesystem::path(*out).replace_extension("").string() + ".measurements.json"));
  write_file_atomic(measurements_path, model::measurements_to_json(m) + "\n");
  const model::Calibration cal = model::calibrate(m);
  // Guessed only without --topo (an unknown machine that names its topology must not fail the guess).
  const std::string topo_name = args.has("--topo")   ? *args.get("--topo")
                                : m.gpu_name.empty() ? ""
                                                     : guess_topology(m.gpu_name, m.gpus);
  if (topo_name.empty()) throw_input("name the topology with --topo");
  const topo::Topology t = topo::load_topology(topo_name);
  const std::string name = args.get_or("--name", std::filesystem::path(*out).stem().string());
  // Named relative to the profile's folder, so the pair can move together.
  std::error_code rel_ec;
  const std::string measurements_name =
      std::filesystem::relative(std::filesystem::absolute(measurements_path),
                                std::filesystem::absolute(std::filesystem::path(*out)).parent_path(), rel_ec)
          .string();
  const std::string named = rel_ec ? measurements_path : measurements_name;
  if (std::filesystem::path(named).filename().string() != named)
    std::fprintf(stderr,
                 "cclab calibrate: note: the profile names its samples as %s, outside its own folder; a copy of the "
                 "profile elsewhere finds them only if they move with it\n",
                 named.c_str());
  const std::string json = model::make_profile_json(cal, t, topo_name, name, named);
  const model::Derived d = model::derive_params(cal, t);

  std::error_code ec;
  const auto parent = std::filesystem::path(*out).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  write_file_atomic(*out, json);
  // Read it back the way the simulator will, so a profile that does not load is never left behind silently.
  model::load_profile_file(*out);

  std::printf("# cclab calibrate: %s (%d x %s, driver %s, NCCL %s), %s\n", m.origin.c_str(), m.gpus, m.gpu_name.c_str(),
              m.driver.c_str(), m.nccl_version.c_str(), m.date.c_str());
  print_summary(cal, d);
  std::printf("# profile: %s (topology %s; fitted from %s)\n", out->c_str(), topo_name.c_str(),
              model::kLeaveOutStatement);
  return 0;
}

}  // namespace cclab::cli
