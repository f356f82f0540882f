// Least-squares fits of microbenchmark measurements (Eigen), and their JSON form.
#include "model/calibrate.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "algorithms/fused_probes.hpp"
#include "core/error.hpp"

namespace cclab::model {

namespace {

using nlohmann::json;

const char* kDtypes[] = {"float", "half", "bfloat16"};

// A line whose RMS relative residual is below this describes the points to within timing noise (event
// timing and run-to-run spread are ~0.5%): no efficiency curve is fitted on top.
constexpr double kLineGoodEnough = 0.005;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Latencies and graph-node costs are repeated measurements of one fixed-size operation (a median, not a
// curve against size).
bool is_latency_series(std::string_view name) { return starts_with(name, "latency.") || starts_with(name, "graph."); }
bool is_matmul_series(std::string_view name) { return starts_with(name, "matmul."); }

// Relative residuals of a fit against the points.
void score(SaturatingFit& f, const std::vector<double>& x, const std::vector<Seconds>& t) {
  double ss = 0, mx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = (f.time(x[i]).value - t[i].value) / t[i].value;
    ss += r * r;
    mx = std::max(mx, std::abs(r));
  }
  f.rms_rel_residual = std::sqrt(ss / double(x.size()));
  f.max_rel_residual = mx;
  f.points = int(x.size());
}

void check_points(const std::vector<double>& x, const std::vector<Seconds>& t) {
  if (x.size() != t.size())
    throw_input("fit: " + std::to_string(x.size()) + " sizes but " + std::to_string(t.size()) + " times");
  std::set<double> distinct;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(t[i].value > 0) || !std::isfinite(t[i].value))
      throw_input("fit: non-positive or non-finite time at size " + std::to_string(x[i]));
    if (!(x[i] > 0)) throw_input("fit: non-positive size " + std::to_string(x[i]));
    distinct.insert(x[i]);
  }
  if (distinct.size() < 2) throw_input("fit: needs at least 2 distinct sizes, got " + std::to_string(distinct.size()));
}

// Solves min || (A x - t) / t || over the columns given (each divided row-wise by t), returning x or
// an empty vector where the system is degenerate.
Eigen::VectorXd weighted_lsq(const Eigen::MatrixXd& a, const Eigen::VectorXd& t) {
  Eigen::MatrixXd aw = a;
  for (Eigen::Index i = 0; i < a.rows(); ++i) aw.row(i) /= t(i);
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(a.rows());
  // Column scaling keeps the normal equations well conditioned across 8 orders of magnitude of x.
  Eigen::VectorXd scale(a.cols());
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    scale(j) = aw.col(j).norm();
    if (!(scale(j) > 0)) return {};
    aw.col(j) /= scale(j);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(aw);
  if (qr.rank() < a.cols()) return {};
  Eigen::VectorXd sol = qr.solve(ones);
  for (Eigen::Index j = 0; j < a.cols(); ++j) sol(j) /= scale(j);
  return sol;
}

// For a fixed exponent p: alpha, 1/beta and c (t = alpha + x/beta + c x^(1-p)); nullopt-like (beta 0)
// when a coefficient comes out negative (not physical).
SaturatingFit fit_fixed_p(const std::vector<double>& x, const std::vector<Seconds>& t, double p, bool with_alpha) {
  const Eigen::Index n = Eigen::Index(x.size());
  const int cols = with_alpha ? 3 : 2;
  Eigen::MatrixXd a(n, cols);
  Eigen::VectorXd tv(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    int c = 0;
    if (with_alpha) a(i, c++) = 1.0;
    a(i, c++) = x[i];
    a(i, c++) = std::pow(x[i], 1.0 - p);
    tv(i) = t[i].value;
  }
  SaturatingFit f;
  const Eigen::VectorXd s = weighted_lsq(a, tv);
  if (s.size() == 0) return f;
  const double alpha = with_alpha ? s(0) : 0.0;
  const double inv_beta = s(with_alpha ? 1 : 0);
  const double coef = s(with_alpha ? 2 : 1);
  if (alpha < 0 || inv_beta <= 0 || coef <= 0) return f;
  f.alpha = Seconds(alpha);
  f.beta = BytesPerSec(1.0 / inv_beta);
  f.p = p;
  // c = x_half^p / beta  =>  x_half = (c beta)^(1/p)
  f.x_half = std::pow(coef / inv_beta, 1.0 / p);
  score(f, x, t);
  return f;
}

}  // namespace

double SaturatingFit::efficiency(double x) const {
  if (x_half <= 0) return 1.0;
  if (x <= 0) return 0.0;
  return 1.0 / (1.0 + std::pow(x_half / x, p));
}

Seconds SaturatingFit::time(double x) const {
  if (x <= 0) return alpha;
  return alpha + Seconds(x / (beta.value * efficiency(x)));
}

SaturatingFit fit_alpha_beta(const std::vector<double>& x, const std::vector<Seconds>& t) {
  check_points(x, t);
  const Eigen::Index n = Eigen::Index(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd tv(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = x[i];
    tv(i) = t[i].value;
  }
  SaturatingFit f;
  Eigen::VectorXd s = weighted_lsq(a, tv);
  if (s.size() == 2 && s(0) >= 0 && s(1) > 0) {
    f.alpha = Seconds(s(0));
    f.beta = BytesPerSec(1.0 / s(1));
  } else {
    // A negative intercept is not physical: fit the rate alone (t = x / beta).
    Eigen::MatrixXd a1 = a.col(1);
    s = weighted_lsq(a1, tv);
    if (s.size() != 1 || !(s(0) > 0)) throw_input("fit: the times do not grow with size; no rate can be fitted");
    f.alpha = Seconds(0);
    f.beta = BytesPerSec(1.0 / s(0));
  }
  score(f, x, t);
  return f;
}

SaturatingFit fit_saturating(const std::vector<double>& x, const std::vector<Seconds>& t) {
  const SaturatingFit line = fit_alpha_beta(x, t);
  std::set<double> distinct(x.begin(), x.end());
  if (distinct.size() < 4) return line;  // three parameters need more than three sizes

  SaturatingFit best;
  best.rms_rel_residual = std::numeric_limits<double>::infinity();
  auto consider = [&](double p) {
    for (bool with_alpha : {true, false}) {
      const SaturatingFit f = fit_fixed_p(x, t, p, with_alpha);
      if (f.beta.value > 0 && f.rms_rel_residual < best.rms_rel_residual) best = f;
    }
  };
  // p near 1 makes the efficiency term a constant (collinear with alpha), near 0 a second rate term:
  // search inside, then refine around the best grid point by golden-section on the residual.
  for (double p = 0.05; p < 0.951; p += 0.05) consider(p);
  if (best.beta.value > 0) {
    double lo = std::max(0.02, best.p - 0.05), hi = std::min(0.98, best.p + 0.05);
    const double g = (std::sqrt(5.0) - 1) / 2;
    for (int it = 0; it < 30; ++it) {
      const double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
      auto rms = [&](double p) {
        double r = std::numeric_limits<double>::infinity();
        for (bool with_alpha : {true, false}) {
          const SaturatingFit f = fit_fixed_p(x, t, p, with_alpha);
          if (f.beta.value > 0) r = std::min(r, f.rms_rel_residual);
        }
        return r;
      };
      if (rms(a) < rms(b))
        hi = b;
      else
        lo = a;
    }
    consider((lo + hi) / 2);
  }
  // Occam: the efficiency curve must earn its two extra parameters, against a line that misses by more
  // than timing noise (kLineGoodEnough).
  if (best.beta.value > 0 && line.rms_rel_residual > kLineGoodEnough &&
      best.rms_rel_residual < 0.9 * line.rms_rel_residual)
    return best;
  return line;
}

LatencyFit fit_latency(const std::vector<Seconds>& t) {
  if (t.empty()) throw_input("fit: no latency samples");
  std::vector<double> v;
  for (const auto& s : t) {
    if (!(s.value > 0) || !std::isfinite(s.value)) throw_input("fit: non-positive or non-finite latency sample");
    v.push_back(s.value);
  }
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  LatencyFit f;
  f.value = Seconds(med);
  double ss = 0, mx = 0;
  for (double s : v) {
    const double r = (med - s) / s;
    ss += r * r;
    mx = std::max(mx, std::abs(r));
  }
  f.rms_rel_residual = std::sqrt(ss / double(n));
  f.max_rel_residual = mx;
  f.points = int(n);
  return f;
}

bool is_diagnostic_series(std::string_view name) {
  // The executor's all-reduce kernels themselves (bidir.* but the graph replay and the byte-stream steps of the NCCL
  // model): the simulator prices those kernels from the mechanisms, so these series only say how far the kernels
  // stand from them (docs/findings/2026-11-27-bidir-kernels-from-mechanisms.md).
  if (name.starts_with("bidir.") && name != "bidir.replay" && !name.starts_with("bidir.step.")) return true;
  // NCCL's send/recv repeated at the records' launches per replay: the replay's fixed cost (bidir.replay) prices
  // other counts.
  if (name == "nccl.p2p.graph.uni.n100" || name == "nccl.p2p.graph.bidir.n100") return true;
  // One CTA moving data both ways at once: within the one-way series' noise at small sizes, so the model reads the
  // one-way series (docs/findings/2026-11-29-one-cta-depth.md).
  if (name == "p2p.sm.cta.bidir" || name == "p2p.sm_store.cta.bidir") return true;
  // The fused kernel on 4 GPUs (ring steps, a chain, a fan-out): measured for a model of hops several GPUs make at
  // once that no prediction reads yet (docs/findings/2026-11-29-nccl-empty-chunks-fused-back-to-back.md).
  for (const auto& [kind, n] : fused_calibration_probes(true))
    if (name == fused_probe_series(kind, n)) return true;
  // Found by tracing every table lookup over the compares of the committed records and `cclab sim --algo all`
  // on 2, 4 and 8 GPUs with the committed profiles (docs/findings/2026-11-27-pipeline-chunk-shim-process-levels.md).
  static const std::set<std::string, std::less<>> kDiagnostic = {
      "bidir.step.copysend.g1", "bidir.step.p2p.g1",   "bidir.step.rrc.g24",
      "bidir.step.rrcs.g1",     "bidir.step.send.g1",  "chain.held",
      "chain.launch",           "chain.launch_unheld", "chain.unheld",
      "fused.step_chain.local", "lchain.unheld",       "nccl.p2p.uni",
      "p2p.ce.pair.solo",       "p2p.ce.pair.first",   "p2p.ce.pair.last",
      "replay.unheld",          "xchain.held",         "xchain.launch",
      "xchain.unheld"};
  return kDiagnostic.contains(name);
}

const std::vector<std::string>& bench_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {
        "p2p.ce.uni", "p2p.ce.bidir", "p2p.sm.uni", "p2p.sm.bidir", "copy.local", "latency.launch",
        "latency.launch_host", "latency.event", "latency.event_peer", "latency.flag",
        // SM stores into the peer (push / ll modes), graph nodes and edges (the
        // general lowering), NCCL send/recv (the NCCL model's transport)
        "p2p.sm_store.uni", "p2p.sm_store.bidir", "p2p.ll_store.bidir", "p2p.sm.cta", "p2p.sm_store.cta",
        "p2p.sm.cta256", "p2p.sm_store.cta256", "p2p.sm.cta128", "p2p.sm_store.cta128", "p2p.sm.cta.bidir",
        "p2p.sm_store.cta.bidir",
        // SM stores from every GPU into all its peers at once (3 or more GPUs)
        "p2p.sm_store.fanout", "graph.copy", "graph.copy2", "graph.copy_local", "graph.fork_both.1",
        "graph.fork_both.2", "graph.fork_both.3", "graph.fork_kernels.1", "graph.fork_kernels.2",
        "graph.fork_kernels.3", "graph.fork_mix.1", "graph.fork_local2", "graph.fork_local_mix", "graph.flag_chain.2",
        "graph.flag_chain.6", "graph.kernel", "graph.kernel_pdl", "graph.fork_local", "graph.fork_peer",
        "graph.hop_peer", "nccl.p2p.uni", "nccl.p2p.bidir",
        // a local then a peer copy on a stream of each GPU; a reduce kernel reading the peer, forked; a kernel
        // then a copy waiting for it on two streams of each GPU; a kernel waiting for the other GPU's copy
        "graph.fork_both_mix.1", "graph.fork_reduce_peer", "graph.fork_mix_chain.1", "graph.fork_mix_cross.1",
        // the flag chain whose launches first load a lane's op table (the fused kernel's prologue); flag
        // exchanges (both GPUs send, then wait for the other's), 2 and 6 per launch
        "graph.flag_chain_table.2", "graph.flag_exchange.2", "graph.flag_exchange.6",
        // the fused path's cost per op inside its kernel, one CTA and CTA groups with group waits
        "fused.step.put", "fused.step.get", "fused.step.local", "fused.group.put", "fused.group.get",
        "fused.group.local", "fused.group_free.put", "fused.group_free.get", "fused.group_free.local",
        "fused.step_quiet.put", "fused.step_quiet.get", "fused.step_quiet.local",
        // ops without a flag each copying what the previous op of the lane wrote (within GPU0)
        "fused.step_chain.local",
        // copy-engine copies of every size inside replayed graphs (the general lowering's copy nodes)
        "p2p.ce.graph.uni", "p2p.ce.graph.bidir", "copy.local.graph",
        // replays of graphs over the harness's hold limit, against their node count
        "replay.unheld",
        // the copy-mode all-reduce's fork (2 copy + 1 kernel streams per GPU), gated as the graph.fork_* above
        "graph.fork_mix.2_1",
        // GPU0-only plans of copies of 1-16 MiB behind the harness's hold (tables against the bytes)
        "held.copy", "held.fork_copy", "held.fork_local_mix", "held.fork_local2",
        // local copies in replayed graphs, each iteration on its own part of the buffers (not L2-resident)
        "copy.local.graph.cold",
        // two copy-engine copies into one peer at once, against one alone (how copies share a link)
        "p2p.ce.pair.solo", "p2p.ce.pair.first", "p2p.ce.pair.last"};
    // the fork shapes behind the harness's hold (per iteration) and the host's launch of their graph
    for (const char* f : {"fork_both.1", "fork_both.2", "fork_both.3", "fork_kernels.1", "fork_kernels.2",
                          "fork_kernels.3", "fork_mix.1", "fork_mix.2_1", "fork_local_mix", "fork_local2"}) {
      v.push_back(std::string("graph.held.") + f);
      v.push_back(std::string("graph.launch.") + f);
    }
    // graphs of 20 iterations of k nodes (replay.unheld's shape: chain; a copy and a kernel stream per GPU with
    // waits across the GPUs: xchain, without: lchain), held (up to the hold's 512 nodes), unheld, and the host's
    // launch call, against the nodes per replay
    for (const char* shape : {"chain.", "xchain."})
      for (const char* what : {"held", "unheld", "launch", "launch_unheld"}) v.push_back(std::string(shape) + what);
    for (const char* what : {"unheld", "launch_unheld"}) v.push_back(std::string("lchain.") + what);
    // the bidir kernels' transfers and NCCL send/recv under graph replay
    for (const char* b :
         {"bidir.pull", "bidir.pull.u2", "bidir.pull.u8", "bidir.pull.u2.g66", "bidir.push", "bidir.push.g132",
          "bidir.ll", "bidir.ll_plain", "bidir.ring", "bidir.lamport", "bidir.lamport.t256", "bidir.lamport.split",
          "bidir.replay", "nccl.p2p.graph.uni", "nccl.p2p.graph.bidir",
          // the replay's launches behind kernels that run on after releasing the next launch (a diagnostic)
          "bidir.replay.body",
          // the same at the records' launches per graph (.n100)
          "bidir.pull.n100", "bidir.push.n100", "bidir.ll.n100", "bidir.ring.n100", "bidir.lamport.t256.n100",
          "nccl.p2p.graph.bidir.n100", "nccl.p2p.graph.uni.n100",
          // the same adding the own input's bytes (the reductions' memory accesses), at the records' launches
          "bidir.pull.own.n100", "bidir.push.own.n100", "bidir.ring.own.n100",
          // ll and pull (own input added) reading their pointers from a by-value per-rank block (as BidirArgs)
          "bidir.ll.args.n100", "bidir.pull.own.args.n100", "bidir.ll_plain.args.n100", "bidir.ll_plain.n100",
          // the lamport kernel's loop with its reduction's loads
          "bidir.lamport.t256.own.n100",
          // the stream kernel's reduction loop (one vector per iteration)
          "bidir.ring.ownloop.n100", "bidir.push.ownloop.n100",
          // the stream kernel's reduction loop itself (address arithmetic per vector, float / bfloat16 conversions)
          "bidir.ring.kernelloop.float.n100", "bidir.ring.kernelloop.bfloat16.n100",
          // the push kernel's reduction loop itself, by element type
          "bidir.push.kernelloop.float.n100", "bidir.push.kernelloop.bfloat16.n100",
          "bidir.lamport.t256.kernelloop.float.n100", "bidir.lamport.t256.kernelloop.bfloat16.n100",
          // the sparse all-reduce's local pieces
          "sparse.coalesce.wall", "sparse.coalesce.issue", "sparse.sort_unique.wall", "sparse.sort_unique.issue",
          "sparse.segment_sum", "sparse.match", "sparse.fill_rows", "sparse.fill.issue", "sparse.copy.issue",
          "sparse.coalesce.wall2", "sparse.sort_unique.wall2",
          // NCCL's ring steps as byte streams on its 24 channels, and send/recv's two halves (the NCCL model)
          "bidir.step.send.g24", "bidir.step.copysend.g24", "bidir.step.rrcs.g24", "bidir.step.rrc.g24",
          "bidir.step.p2p", "bidir.step.send.g1", "bidir.step.copysend.g1", "bidir.step.rrcs.g1", "bidir.step.p2p.g1",
          // NCCL send/recv with its protocol pinned (a child process each: LL at every size, Simple at every size)
          "nccl.p2p.ll.graph.uni.n100", "nccl.p2p.ll.graph.bidir.n100", "nccl.p2p.simple.graph.uni.n100",
          "nccl.p2p.simple.graph.bidir.n100"})
      v.push_back(b);
    // the executor's fused kernel on synthetic programs (algorithms/fused_probes.hpp), on 2 GPUs and on 4
    for (bool wide : {false, true})
      for (const auto& [kind, n] : fused_calibration_probes(wide)) v.push_back(fused_probe_series(kind, n));
    for (const char* d : kDtypes) {
      v.push_back(std::string("reduce.local.") + d);
      v.push_back(std::string("reduce.local.cta.") + d);
      v.push_back(std::string("reduce.local.cta256.") + d);
      v.push_back(std::string("reduce.local.cta128.") + d);
      v.push_back(std::string("reduce.peer.") + d);
      v.push_back(std::string("matmul.") + d);
      v.push_back(std::string("matmul.") + d + ".ce_both");
      v.push_back(std::string("matmul.") + d + ".rested");
    }
    return v;
  }();
  return names;
}

bool is_bench_name(std::string_view name) {
  const auto& n = bench_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

void validate(const MicroMeasurements& m) {
  if (m.series.empty()) throw_input("measurements: no microbenchmark series");
  std::set<std::string> seen;
  for (const auto& s : m.series) {
    if (!is_bench_name(s.name))
      throw_input("measurements: '" + s.name +
                  "' is not a microbenchmark (calibration reads point-to-point, reduction, latency and matmul "
                  "microbenchmarks only, never collective records)");
    if (!seen.insert(s.name).second) throw_input("measurements: series '" + s.name + "' appears twice");
    if (s.samples.empty()) throw_input("measurements: series '" + s.name + "' has no samples");
    for (const auto& p : s.samples) {
      if (!(p.time.value > 0) || !std::isfinite(p.time.value))
        throw_input("measurements: series '" + s.name + "' has a non-positive time at " + std::to_string(p.bytes) +
                    " bytes");
      if (is_matmul_series(s.name) && !(p.m > 0 && p.k > 0 && p.n > 0))
        throw_input("measurements: series '" + s.name + "' has a sample without a shape (m, k, n)");
      if (!is_latency_series(s.name) && !is_matmul_series(s.name) && p.bytes <= 0)
        throw_input("measurements: series '" + s.name + "' has a sample with no bytes");
    }
  }
}

std::string measurements_to_json(const MicroMeasurements& m) {
  json j;
  j["machine"] = m.machine;
  j["gpu_name"] = m.gpu_name;
  j["driver"] = m.driver;
  j["cuda_runtime"] = m.cuda_runtime;
  j["nccl_version"] = m.nccl_version;
  j["date"] = m.date;
  j["commit"] = m.commit;
  j["origin"] = m.origin;
  j["gpus"] = m.gpus;
  json series = json::array();
  for (const auto& s : m.series) {
    json js;
    js["name"] = s.name;
    js["method"] = s.method;
    if (!s.origin.empty()) js["origin"] = s.origin;
    json pts = json::array();
    for (const auto& p : s.samples) {
      json jp = {{"bytes", p.bytes}, {"time_us", p.time.us()}, {"reps", p.reps}};
      if (p.m > 0) jp["shape"] = {p.m, p.k, p.n};
      pts.push_back(jp);
    }
    js["samples"] = pts;
    series.push_back(js);
  }
  j["series"] = series;
  return j.dump(2);
}

namespace {

// The digits of the first "<before><digits><after>" in s (what a search for before(\d+)after finds), or none.
// Plain string search: <regex> made this the slowest file of the library to compile.
std::optional<std::string> number_between(const std::string& s, std::string_view before, std::string_view after) {
  for (size_t p = s.find(before); p != std::string::npos; p = s.find(before, p + 1)) {
    const size_t b = p + before.size();
    size_t e = b;
    while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
    if (e > b && s.compare(e, after.size(), after) == 0) return s.substr(b, e - b);
  }
  return std::nullopt;
}

}  // namespace

SeriesConditions series_conditions(const std::string& method) {
  SeriesConditions c;
  // A repeat at another count names it first; the others say it in one of the microbenchmarks' phrasings.
  const std::pair<std::string_view, std::string_view> phrasings[] = {
      {"[", " launches per graph"}, {"graphs of ", ""}, {"graph per GPU of ", " launches"}, {"(", " per replay)"}};
  for (const auto& [before, after] : phrasings)
    if (const auto n = number_between(method, before, after)) {
      c.launches_per_replay = std::stoi(*n);
      break;
    }
  return c;
}

MicroMeasurements measurements_from_json_text(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw_input(where + ": not valid JSON (" + e.what() + ")");
  }
  if (j.is_object() && j.contains("measurements")) {  // a profile
    // It names the file beside it that holds its samples (older profiles embedded them).
    if (j["measurements"].is_string()) {
      const std::filesystem::path file =
          std::filesystem::path(where).parent_path() / j["measurements"].get<std::string>();
      return load_measurements(file.string());
    }
    j = j["measurements"];
  }
  if (!j.is_object() || !j.contains("series") || !j["series"].is_array())
    throw_input(where + ": no microbenchmark measurements (expected an object with a \"series\" array)");
  MicroMeasurements m;
  try {
    auto str = [&](const char* k) { return j.contains(k) ? j[k].get<std::string>() : std::string(); };
    m.machine = str("machine");
    m.gpu_name = str("gpu_name");
    m.driver = str("driver");
    m.cuda_runtime = str("cuda_runtime");
    m.nccl_version = str("nccl_version");
    m.date = str("date");
    m.commit = str("commit");
    m.origin = str("origin");
    m.gpus = j.value("gpus", 0);
    for (const auto& js : j["series"]) {
      MicroSeries s;
      s.name = js.at("name").get<std::string>();
      s.method = js.value("method", "");
      s.origin = js.value("origin", "");
      for (const auto& jp : js.at("samples")) {
        MicroSample p;
        p.bytes = jp.value("bytes", int64_t(0));
        p.time = microseconds(jp.at("time_us").get<double>());
        p.reps = jp.value("reps", 0);
        if (jp.contains("shape")) {
          const auto& sh = jp["shape"];
          if (!sh.is_array() || sh.size() != 3)
            throw_input(where + ": series '" + s.name + "': shape must be [m, k, n]");
          p.m = sh[0].get<int64_t>();
          p.k = sh[1].get<int64_t>();
          p.n = sh[2].get<int64_t>();
        }
        s.samples.push_back(p);
      }
      m.series.push_back(std::move(s));
    }
  } catch (const json::exception& e) {
    throw_input(where + ": malformed measurements (" + e.what() + ")");
  }
  try {
    validate(m);
  } catch (const Error& e) {
    throw_input(where + ": " + e.what());
  }
  return m;
}

MicroMeasurements load_measurements(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw_input("'" + path +
                "' is a folder (of records?): calibration reads microbenchmark measurements only, never "
                "collective records");
  if (!fs::exists(path, ec)) throw_input("no such measurements file '" + path + "'");
  std::ifstream in(path);
  if (!in) throw_input("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // A records CSV starts with the contract header; refuse it by content, whatever its name.
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text.compare(first, 5, "algo,") == 0)
    throw_input("'" + path +
                "' is a collective records CSV: calibration reads microbenchmark measurements only, never "
                "collective records");
  return measurements_from_json_text(text, path);
}

const Calibration::Curve* Calibration::curve(std::string_view series) const {
  for (const auto& c : curves)
    if (c.series == series) return &c;
  return nullptr;
}

const Calibration::Latency* Calibration::latency(std::string_view series) const {
  for (const auto& l : latencies)
    if (l.series == series) return &l;
  return nullptr;
}

Calibration calibrate(const MicroMeasurements& m) {
  validate(m);
  Calibration c;
  c.measured = m;
  for (const auto& s : m.series) {
    std::vector<double> x;
    std::vector<Seconds> t;
    for (const auto& p : s.samples) {
      x.push_back(is_matmul_series(s.name) ? p.flops() : double(p.bytes));
      t.push_back(p.time);
    }
    try {
      if (is_latency_series(s.name)) {
        c.latencies.push_back({s.name, fit_latency(t)});
      } else if (s.samples.size() == 1) {
        // One point (e.g. a published peak figure): a rate only, no latency, and it says so (points = 1).
        SaturatingFit f;
        f.beta = BytesPerSec(x[0] / t[0].value);
        f.points = 1;
        c.curves.push_back({s.name, f});
      } else {
        c.curves.push_back({s.name, fit_saturating(x, t)});
      }
    } catch (const Error& e) {
      // The sparse pieces, the fused probes and the matmuls beside copies are read as tables only
      // (sim/paths_sparse.cpp, the collective matmul model): a curve that cannot be fitted to one (a host time that
      // hardly grows, two shapes) must not cost the rest of the calibration.
      if (starts_with(s.name, "sparse.") || starts_with(s.name, "fused.prog.") || starts_with(s.name, "held.") ||
          s.name == "copy.local.graph.cold" || starts_with(s.name, "chain.") || starts_with(s.name, "xchain.") ||
          starts_with(s.name, "lchain.") || s.name.find(".ce_both") != std::string::npos ||
          s.name.find(".rested") != std::string::npos)
        continue;
      throw_input("series '" + s.name + "': " + e.what());
    }
  }
  return c;
}

}  // namespace cclab::model
