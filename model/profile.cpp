// Profiles: from fits to simulator parameters, and back from a file to a topology and parameters.
#include "model/profile.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "core/error.hpp"

namespace cclab::model {

namespace {

// The general lowering's fork shapes from their replays behind the harness's hold (graph.held.*, timed as
// the records are) where measured, else from graph_time's fixed-gate replays (graph.fork_*).
constexpr bool kHeldForks = true;

using ojson = nlohmann::ordered_json;

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw_input("cannot open profile '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string fmt(double v, int digits = 4) {
  std::ostringstream os;
  os.precision(digits);
  os << v;
  return os.str();
}

// A size sweep is stored as its fit where the fit misses no sample by more than this: a few times the few-percent
// spread of repeated timings on these machines.
constexpr double kFaithfulFit = 0.10;

// The sizes a protocol's efficiency curve is sampled at when read (powers of two between these).
constexpr int64_t kCurveFromBytes = 8, kCurveToBytes = int64_t(1) << 30;

ojson fit_json(const SaturatingFit& f, bool flops) {
  ojson j = {{"alpha_us", f.alpha.us()}};
  if (flops)
    j["peak_TFLOPs"] = f.beta.value / 1e12;
  else
    j["beta_GBps"] = f.beta.gbps();
  if (f.x_half > 0) {  // else the plain line alpha + bytes / beta (model::read_saturation)
    j["efficiency_half"] = f.x_half;
    j["efficiency_exponent"] = f.p;
  }
  j["rms_residual"] = f.rms_rel_residual;
  j["max_residual"] = f.max_rel_residual;
  return j;
}

// JSON with two-space indents whose arrays of numbers (and of pairs of numbers) stay on one line each.
void dump_into(const ojson& v, int indent, std::string& out) {
  const std::string pad(size_t(indent + 2), ' '), end_pad(size_t(indent), ' ');
  const auto flat = [](const ojson& a) {
    return std::all_of(a.begin(), a.end(), [](const ojson& e) { return e.is_primitive(); });
  };
  if (v.is_object() && !v.empty()) {
    out += "{\n";
    size_t i = 0;
    for (const auto& [k, e] : v.items()) {
      out += pad + ojson(k).dump() + ": ";
      dump_into(e, indent + 2, out);
      out += ++i < v.size() ? ",\n" : "\n";
    }
    out += end_pad + "}";
  } else if (v.is_array() && !v.empty() && !flat(v)) {
    out += "[\n";
    for (size_t i = 0; i < v.size(); ++i) {
      out += pad;
      dump_into(v[i], indent + 2, out);
      out += i + 1 < v.size() ? ",\n" : "\n";
    }
    out += end_pad + "]";
  } else if (v.is_array()) {
    out += "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i].dump();
    out += "]";
  } else {
    out += v.dump();
  }
}

std::string dump_profile(const ojson& j) {
  std::string out;
  dump_into(j, 0, out);
  return out + "\n";
}

bool known_param(const std::string& name) {
  static const auto names = param_names(ModelParams{});
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The first GPU's memory bandwidth and tensor rate, or the model's defaults where the topology has none.
std::pair<BytesPerSec, double> gpu_rates(const topo::Topology& t, const ModelParams& d) {
  BytesPerSec mem = d.default_mem_bw.value;
  double flops = d.default_flops.value;
  if (t.num_gpus() > 0) {
    const auto& n = t.node(t.gpu(0));
    if (n.mem_bw.value > 0) mem = n.mem_bw;
    if (n.flops > 0) flops = n.flops;
  }
  return {mem, flops};
}

}  // namespace

Derived derive_params(const Calibration& cal, const topo::Topology& topology) {
  Derived out;
  const MicroMeasurements& m = cal.measured;
  const std::string prov = m.origin + ", " + m.gpu_name + (m.machine.empty() ? "" : " on " + m.machine) +
                           (m.date.empty() ? "" : ", " + m.date);
  auto add = [&](const std::string& name, double value, const std::string& how, const std::string& from, double rms,
                 double mx) {
    if (!std::isfinite(value) || value < 0) {
      out.notes.push_back(name + ": derived value " + fmt(value) + " from " + from + " is not usable; default kept");
      return;
    }
    if (!known_param(name)) {
      out.notes.push_back(name + " = " + fmt(value) + " (" + how + ") has no model parameter yet");
      return;
    }
    out.params.push_back({name, value, how + " [" + from + "; " + prov + "]", from, rms, mx});
  };
  auto curve_of = [&](const char* s) { return cal.curve(s); };
  auto lat_of = [&](const char* s) { return cal.latency(s); };
  // A fork shape timed behind the harness's hold (graph.held.*, as the records are timed) where measured,
  // else the same shape behind graph_time's fixed gate (graph.*).
  auto fork_of = [&](const std::string& shape) {
    const auto* h = kHeldForks ? cal.latency("graph.held." + shape) : nullptr;
    return h ? h : cal.latency("graph." + shape);
  };

  const ModelParams defaults = defaults_for(topology);
  const auto [mem_bw, flops] = gpu_rates(topology, defaults);

  // --- peer transfers: efficiency against the route's bottleneck, latency beyond the route's hops ---
  if (topology.num_gpus() >= 2) {
    const topo::Path route = topology.route_gpus(0, 1);
    const double hops = route.latency.value;
    const double bottleneck = route.bottleneck.value;
    const std::string route_txt = "route GPU0->GPU1 of " + topology.name + ": " + fmt(route.bottleneck.gbps()) +
                                  " GB/s bottleneck, " + fmt(route.latency.us()) + " us of hop latency";
    struct Map {
      const char* series;
      Proto proto;
      bool latency;  // whether the series' alpha is this protocol's per-transfer latency
    };
    const Map maps[] = {{"p2p.ce.uni", Proto::copy_engine, true},
                        {"p2p.sm.uni", Proto::sm_peer, true},
                        // Both directions' SM loads at once. The stream kernel moves its bytes the same way, but a
                        // calibrated profile prices it from mechanisms (sim/paths_bidir.cpp): no term of its own.
                        {"p2p.sm.bidir", Proto::flash, true}};
    for (const Map& mp : maps) {
      const auto* c = curve_of(mp.series);
      if (!c) continue;
      const SaturatingFit& f = c->fit;
      const std::string pre = "proto." + std::string(proto_name(mp.proto)) + ".";
      add(pre + "efficiency", f.beta.value / bottleneck,
          "peak " + fmt(f.beta.gbps()) + " GB/s per direction over the " + route_txt, mp.series, f.rms_rel_residual,
          f.max_rel_residual);
      if (mp.latency && f.points > 1)
        add(pre + "latency_us", std::max(0.0, f.alpha.value - hops) * 1e6,
            "fitted alpha " + fmt(f.alpha.us()) + " us minus the route's hop latency", mp.series, f.rms_rel_residual,
            f.max_rel_residual);
      if (f.x_half > 0) {
        DerivedCurve dc{mp.proto, "", f.x_half, f.p};
        dc.source = "efficiency 1/(1+(" + fmt(f.x_half, 6) + " B/S)^" + fmt(f.p, 3) + ") fitted to " + mp.series +
                    " (rms residual " + fmt(100 * f.rms_rel_residual, 3) + "%) [" + prov + "]";
        out.curves.push_back(dc);
      }
    }
    // NCCL moves data with SM loads and stores over the same path: its protocols' payload fractions (from
    // NCCL's tuning.cc: LL 0.5, LL128 0.92, Simple 1) times the SM-driven path efficiency measured here.
    if (const auto* c = curve_of("p2p.sm.uni")) {
      const double eta = c->fit.beta.value / bottleneck;
      const std::string how = "SM-driven path efficiency " + fmt(eta) + " (" + route_txt + ") x NCCL payload fraction ";
      add("proto.simple.efficiency", eta, how + "1 (Simple)", "p2p.sm.uni", c->fit.rms_rel_residual,
          c->fit.max_rel_residual);
      add("proto.ll128.efficiency", 0.92 * eta, how + "0.92 (LL128, tuning.cc)", "p2p.sm.uni", c->fit.rms_rel_residual,
          c->fit.max_rel_residual);
      add("proto.ll.efficiency", 0.5 * eta, how + "0.5 (LL, tuning.cc)", "p2p.sm.uni", c->fit.rms_rel_residual,
          c->fit.max_rel_residual);
    }
    // Both directions at once: the simulator gives each direction of a link its own bandwidth, so any
    // loss when both are busy is reported (and used where the model has a parameter for it).
    for (auto [uni, bidir, proto] : {std::tuple{"p2p.ce.uni", "p2p.ce.bidir", Proto::copy_engine},
                                     std::tuple{"p2p.sm.uni", "p2p.sm.bidir", Proto::sm_peer}}) {
      const auto *u = curve_of(uni), *b = curve_of(bidir);
      if (!u || !b) continue;
      const double ratio = b->fit.beta.value / u->fit.beta.value;
      add("proto." + std::string(proto_name(proto)) + ".duplex_efficiency", ratio,
          "per-direction peak with both directions busy / one direction (" + fmt(b->fit.beta.gbps()) + " / " +
              fmt(u->fit.beta.gbps()) + " GB/s)",
          std::string(bidir) + " / " + uni, b->fit.rms_rel_residual, b->fit.max_rel_residual);
    }
  } else {
    out.notes.push_back("topology " + topology.name + " has fewer than 2 GPUs: peer parameters not derived");
  }

  // --- latencies ---
  if (const auto* l = lat_of("latency.launch"))
    add("launch_latency_us", l->fit.value.us(), "median GPU time per back-to-back kernel launch", "latency.launch",
        l->fit.rms_rel_residual, l->fit.max_rel_residual);
  if (const auto* l = lat_of("latency.flag"))
    add("sync_latency_us", l->fit.value.us() / 2, "half the median flag round trip across the fabric", "latency.flag",
        l->fit.rms_rel_residual, l->fit.max_rel_residual);
  if (const auto* e = lat_of("latency.event"), *l = lat_of("latency.launch"); e && l)
    add("local_dep_latency_us", std::max(0.0, e->fit.value.us() - l->fit.value.us()),
        "event ping-pong hop between two streams minus a back-to-back launch", "latency.event - latency.launch",
        e->fit.rms_rel_residual, e->fit.max_rel_residual);

  // --- the executor's general lowering: graph nodes and edges (graph.*, per iteration of a replayed graph) ---
  // Each series is a median per iteration of a tiny structure; the node and edge costs are differences.
  if (const auto* cp = lat_of("graph.copy")) {
    const double copy = cp->fit.value.us();
    add("exec.copy_node_us", copy, "8-byte peer copy node, per iteration of a replayed graph", "graph.copy",
        cp->fit.rms_rel_residual, cp->fit.max_rel_residual);
    if (const auto* c2 = lat_of("graph.copy2"))
      out.notes.push_back("graph.copy2 - graph.copy = " + fmt(c2->fit.value.us() - copy) +
                          " us: a second copy node in the same chain (graph.copy: " + fmt(copy) + " us)");
    if (const auto* f = lat_of("graph.fork_local"))
      add("exec.fork_local_us", std::max(0.0, f->fit.value.us() - copy),
          "fork to a second stream of GPU0 and join back, minus the copy node", "graph.fork_local - graph.copy",
          f->fit.rms_rel_residual, f->fit.max_rel_residual);
    if (const auto* f = fork_of("fork_local2"))
      add("exec.fork_local2_us", std::max(0.0, f->fit.value.us() - copy),
          "fork to two streams of GPU0 (a local and a peer copy side by side) and join back, minus the peer copy node",
          f->series + " - graph.copy", f->fit.rms_rel_residual, f->fit.max_rel_residual);
    if (const auto* f = fork_of("fork_local_mix"), *cl = lat_of("graph.copy_local"); f && cl)
      add("exec.fork_local_mix_us", std::max(0.0, f->fit.value.us() - copy - cl->fit.value.us()),
          "fork to a stream of GPU0 with a local then a peer copy and join back, minus both copy nodes",
          f->series + " - graph.copy - graph.copy_local", f->fit.rms_rel_residual, f->fit.max_rel_residual);
    if (const auto* f = lat_of("graph.fork_both_mix.1"), *cl = lat_of("graph.copy_local"); f && cl)
      add("exec.fork_both_mix_us", std::max(0.0, f->fit.value.us() - copy - cl->fit.value.us()),
          "fork to a stream on each GPU with a local then a peer copy and join back, minus both copy nodes",
          "graph.fork_both_mix.1 - graph.copy - graph.copy_local", f->fit.rms_rel_residual, f->fit.max_rel_residual);
    if (const auto* f = lat_of("graph.fork_reduce_peer"), *fl = lat_of("graph.fork_local"); f && fl)
      add("exec.reduce_peer_node_us", std::max(0.0, f->fit.value.us() - std::max(0.0, fl->fit.value.us() - copy)),
          "reduce kernel node reading the peer (16 bytes), minus the fork to a second stream of GPU0 and back",
          "graph.fork_reduce_peer - (graph.fork_local - graph.copy)", f->fit.rms_rel_residual, f->fit.max_rel_residual);
    if (const auto* c = lat_of("graph.copy_local"))
      add("exec.copy_local_node_us", c->fit.value.us(), "8-byte copy node within GPU0, per iteration",
          "graph.copy_local", c->fit.rms_rel_residual, c->fit.max_rel_residual);
    for (int k = 1; k <= 3; ++k) {
      const std::string series = "graph.fork_both." + std::to_string(k);
      if (const auto* f = fork_of("fork_both." + std::to_string(k)))
        add("exec.fork_streams_" + std::to_string(k) + "_us", std::max(0.0, f->fit.value.us() - copy),
            "fork to " + std::to_string(k) +
                " streams on each GPU and join back, minus one copy node (the copies "
                "run side by side)",
            f->series + " - graph.copy", f->fit.rms_rel_residual, f->fit.max_rel_residual);
    }
    if (const auto* c = lat_of("graph.fork_mix_chain.1"), *m = lat_of("graph.fork_mix.1"); c && m)
      add("exec.local_edge_busy_us", std::max(0.0, c->fit.value.us() - m->fit.value.us()),
          "a kernel -> copy dependency between two streams of each GPU while both GPUs run streams: the fork "
          "with it minus the same fork without it",
          "graph.fork_mix_chain.1 - graph.fork_mix.1", c->fit.rms_rel_residual, c->fit.max_rel_residual);
    if (const auto* c = lat_of("graph.fork_mix_cross.1"), *m = lat_of("graph.fork_mix.1"); c && m)
      add("exec.event_peer_mix_us", std::max(0.0, c->fit.value.us() - m->fit.value.us()),
          "a copy -> kernel dependency from each GPU to the other with a copy and a kernel stream per GPU: the "
          "fork with it minus the same fork without it",
          "graph.fork_mix_cross.1 - graph.fork_mix.1", c->fit.rms_rel_residual, c->fit.max_rel_residual);
    if (const auto* m = fork_of("fork_mix.2_1"))
      add("exec.fork_mix_2_1_us", std::max(0.0, m->fit.value.us() - copy),
          "fork to 2 copy streams and 1 kernel stream on each GPU and join back, minus the copy node",
          std::string(m->series) + " - graph.copy", m->fit.rms_rel_residual, m->fit.max_rel_residual);
    if (const auto* m = fork_of("fork_mix.1"))
      add("exec.fork_mix_us", std::max(0.0, m->fit.value.us() - copy),
          "fork to a copy stream and a kernel stream on each GPU and join back, minus the copy node",
          "graph.fork_mix.1 - graph.copy", m->fit.rms_rel_residual, m->fit.max_rel_residual);
    // A dependency between streams of the two GPUs while both GPUs run streams of the graph (every general
    // schedule of 2 ranks): what a stream on GPU0 beside one on GPU1 adds to a fork / join of the GPU1
    // stream alone, per cross-GPU edge (its fork and its join). A chain that alternates between the GPUs,
    // one idle while the other works (graph.hop_peer), pays much less per edge; it is reported.
    const auto *both = lat_of("graph.fork_both.1"), *peer = lat_of("graph.fork_peer");
    if (both && peer)
      add("exec.event_peer_us", std::max(0.0, (both->fit.value.us() - peer->fit.value.us()) / 2),
          "cross-GPU edge with both GPUs busy: (fork to a stream on each GPU - fork to GPU1 only) / 2 edges",
          "(graph.fork_both.1 - graph.fork_peer) / 2", both->fit.rms_rel_residual, both->fit.max_rel_residual);
    if (const auto* h = lat_of("graph.hop_peer"))
      out.notes.push_back("graph.hop_peer: " + fmt((h->fit.value.us() - 4 * copy) / 4) +
                          " us per cross-GPU edge in a chain alternating between the GPUs (one idle at a time)");
  }
  if (const auto* kn = lat_of("graph.kernel")) {
    for (int k = 1; k <= 3; ++k) {
      const std::string series = "graph.fork_kernels." + std::to_string(k);
      if (const auto* f = fork_of("fork_kernels." + std::to_string(k)))
        add("exec.fork_kernel_streams_" + std::to_string(k) + "_us",
            std::max(0.0, f->fit.value.us() - kn->fit.value.us()),
            "fork to " + std::to_string(k) + " kernel streams on each GPU and join back, minus one kernel node",
            f->series + " - graph.kernel", f->fit.rms_rel_residual, f->fit.max_rel_residual);
    }
  }
  if (const auto* k = lat_of("graph.kernel"))
    add("exec.kernel_node_us", k->fit.value.us(), "empty kernel node, per iteration of a replayed graph",
        "graph.kernel", k->fit.rms_rel_residual, k->fit.max_rel_residual);
  if (const auto* k = lat_of("graph.kernel_pdl"))
    add("exec.kernel_pdl_us", k->fit.value.us(),
        "empty kernel node with programmatic dependent launch, per iteration of a replayed graph", "graph.kernel_pdl",
        k->fit.rms_rel_residual, k->fit.max_rel_residual);
  if (const auto* c2 = lat_of("graph.flag_chain.2"), *c6 = lat_of("graph.flag_chain.6"); c2 && c6) {
    const double hop = std::max(0.0, (c6->fit.value.us() - c2->fit.value.us()) / 4);
    add("exec.flag_hop_us", hop, "flag hop between per-GPU graphs' kernels: slope of the chain in hops (6 - 2)",
        "(graph.flag_chain.6 - graph.flag_chain.2) / 4", c6->fit.rms_rel_residual, c6->fit.max_rel_residual);
    add("exec.flag_launch_us", std::max(0.0, c2->fit.value.us() - 2 * hop),
        "one PDL launch of a flag-synchronised kernel: the 2-hop chain less its hops", "graph.flag_chain.2 - 2 hops",
        c2->fit.rms_rel_residual, c2->fit.max_rel_residual);
    if (const auto* ct = lat_of("graph.flag_chain_table.2"))
      add("exec.flag_launch_table_us", std::max(0.0, ct->fit.value.us() - 2 * hop),
          "one PDL launch of a flag-synchronised kernel that first loads a lane's op table: its 2-hop chain less "
          "its hops",
          "graph.flag_chain_table.2 - 2 hops", ct->fit.rms_rel_residual, ct->fit.max_rel_residual);
  }
  if (const auto* l = lat_of("latency.flag"))
    add("exec.flag_rtt_us", l->fit.value.us(), "median flag round trip GPU0 -> GPU1 -> GPU0 inside running kernels",
        "latency.flag", l->fit.rms_rel_residual, l->fit.max_rel_residual);

  // --- local work ---
  if (const auto* c = curve_of("reduce.local.float")) {
    if (c->fit.points > 1)
      add("local_op_latency_us", c->fit.alpha.us(), "fitted alpha of a local reduction kernel, back to back",
          "reduce.local.float", c->fit.rms_rel_residual, c->fit.max_rel_residual);
    add("mem_efficiency", 3.0 * c->fit.beta.value / mem_bw.value,
        "3 bytes of HBM traffic per operand byte at " + fmt(c->fit.beta.gbps()) + " GB/s per operand, of " +
            fmt(mem_bw.gbps()) + " GB/s HBM",
        "reduce.local.float", c->fit.rms_rel_residual, c->fit.max_rel_residual);
  }
  if (const auto* c = curve_of("copy.local")) {
    const double eff = 2.0 * c->fit.beta.value / mem_bw.value;
    if (!curve_of("reduce.local.float"))
      add("mem_efficiency", eff,
          "2 bytes of HBM traffic per byte copied at " + fmt(c->fit.beta.gbps()) + " GB/s, of " + fmt(mem_bw.gbps()) +
              " GB/s HBM",
          "copy.local", c->fit.rms_rel_residual, c->fit.max_rel_residual);
    else
      out.notes.push_back("copy.local: " + fmt(2 * c->fit.beta.gbps()) + " GB/s of HBM traffic (read + write), " +
                          fmt(100 * eff, 3) + "% of " + fmt(mem_bw.gbps()) +
                          " GB/s; the model's one mem_efficiency follows the reduction");
  }
  const auto* mm16 = curve_of("matmul.half") ? curve_of("matmul.half") : curve_of("matmul.bfloat16");
  if (mm16) {
    add("matmul_efficiency", mm16->fit.beta.value / flops,
        "peak " + fmt(mm16->fit.beta.value / 1e12) + " TFLOP/s of " + fmt(flops / 1e12) + " dense 16-bit", mm16->series,
        mm16->fit.rms_rel_residual, mm16->fit.max_rel_residual);
    if (const auto* mm32 = curve_of("matmul.float"))
      add("fp32_matmul_ratio", mm32->fit.beta.value / mm16->fit.beta.value,
          "fp32 peak " + fmt(mm32->fit.beta.value / 1e12) + " / 16-bit peak " + fmt(mm16->fit.beta.value / 1e12) +
              " TFLOP/s",
          "matmul.float / " + mm16->series, mm32->fit.rms_rel_residual, mm32->fit.max_rel_residual);
  }
  return out;
}

std::string make_profile_json(const Calibration& cal, const topo::Topology& topology, const std::string& topology_name,
                              const std::string& profile_name, const std::string& measurements_file) {
  const MicroMeasurements& m = cal.measured;
  const Derived d = derive_params(cal, topology);
  ojson j;
  j["format"] = kProfileFormat;
  j["name"] = profile_name;
  j["topology"] = topology_name;
  j["fitted_from"] = kLeaveOutStatement;
  j["leave_out"] = true;
  j["origin"] = m.origin;
  j["machine"] = m.machine;
  j["gpu"] = m.gpu_name;
  j["gpus"] = m.gpus;
  j["driver"] = m.driver;
  j["cuda_runtime"] = m.cuda_runtime;
  j["nccl_version"] = m.nccl_version;
  j["date"] = m.date;
  j["commit"] = m.commit;
  ojson params = ojson::object();
  for (const auto& p : d.params)
    params[p.name] = {{"value", p.value},
                      {"source", p.source},
                      {"from", p.from},
                      {"rms_residual", p.rms_residual},
                      {"max_residual", p.max_residual}};
  j["params"] = params;
  ojson curves = ojson::object();
  for (const auto& c : d.curves)
    curves[std::string(proto_name(c.proto))] = {{"efficiency_half", c.x_half},
                                                {"efficiency_exponent", c.p},
                                                {"from_bytes", kCurveFromBytes},
                                                {"to_bytes", kCurveToBytes},
                                                {"source", c.source}};
  j["curves"] = curves;
  // Every size sweep as a simulator path table (model::PathTable), keyed by bytes (matmuls: by FLOPs, 2mkn): its
  // fit where the fit reproduces every sample within kFaithfulFit, else the median time at each size. Latency
  // series are summarised by the params they set.
  ojson tables = ojson::object();
  for (const auto& s : m.series) {
    if (s.name.rfind("latency.", 0) == 0 || s.name.rfind("graph.", 0) == 0 || is_diagnostic_series(s.name)) continue;
    const bool mm = s.name.rfind("matmul.", 0) == 0;
    std::map<int64_t, std::vector<double>> by_size;
    for (const auto& p : s.samples) by_size[mm ? int64_t(p.flops()) : p.bytes].push_back(p.time.value);
    if (by_size.size() < 2) continue;
    ojson entry = ojson::object();
    const auto* c = cal.curve(s.name);
    // Two kinds keep their samples whatever the fit: a matmul's time follows its shape, not only its FLOPs, and
    // NCCL's send/recv changes protocol and channels with the size (its own tuner), steps no one curve follows.
    const bool stepwise = mm || s.name.rfind("nccl.", 0) == 0;
    if (c && c->fit.points > 1 && c->fit.max_rel_residual <= kFaithfulFit && !stepwise) {
      ojson sizes = ojson::array();
      for (const auto& [b, ts] : by_size) sizes.push_back(b);
      entry["fit"] = fit_json(c->fit, mm);
      entry["sizes"] = sizes;
    } else {
      ojson pts = ojson::array();
      for (auto& [b, ts] : by_size) {
        std::sort(ts.begin(), ts.end());
        pts.push_back({b, ts[ts.size() / 2]});
      }
      entry["points"] = pts;
      // Why the samples stay: how far the best fit of the saturating form misses them.
      if (c && c->fit.points > 1) entry["fit_max_residual"] = c->fit.max_rel_residual;
    }
    entry["source"] =
        s.name + ": " + s.method + " [" +
        (s.origin.empty() ? m.origin + ", " + m.gpu_name + (m.date.empty() ? "" : ", " + m.date) : s.origin) + "]";
    const SeriesConditions sc = series_conditions(s.method);
    if (sc.launches_per_replay > 0) entry["launches_per_replay"] = sc.launches_per_replay;
    tables[table_name(s.name, sc.launches_per_replay)] = entry;
  }
  j["tables"] = tables;
  j["notes"] = d.notes;
  if (!measurements_file.empty()) j["measurements"] = measurements_file;
  return dump_profile(j);
}

bool is_profile_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream f(path);
  if (!f) return false;
  const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string()) return false;
  return j["format"].get<std::string>().rfind("cclab-profile", 0) == 0;
}

Profile load_profile_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw_input("no such profile '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    throw_input(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) throw_input(path + ": a profile is a JSON object");
  if (!j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>().rfind("cclab-profile", 0) != 0)
    throw_input(path + ": not a cclab profile (\"format\": \"" + std::string(kProfileFormat) + "\" missing)");
  if (!j.contains("topology") || !j["topology"].is_string() || j["topology"].get<std::string>().empty())
    throw_input(path + ": the profile names no \"topology\" (a preset such as h200x2, or a topology file)");
  Profile p;
  p.path = path;
  p.topology = j["topology"].get<std::string>();
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  p.name = str("name");
  p.fitted_from = str("fitted_from");
  p.leave_out = j.contains("leave_out") && j["leave_out"].is_boolean() && j["leave_out"].get<bool>();
  p.origin = str("origin");
  p.machine = str("machine");
  p.gpu = str("gpu");
  p.driver = str("driver");
  p.nccl_version = str("nccl_version");
  p.date = str("date");
  // A topology file named relative to the profile is found beside it.
  std::string topo_ref = p.topology;
  if (!topo::is_preset(topo_ref) && !std::filesystem::exists(topo_ref, ec)) {
    const auto beside = std::filesystem::path(path).parent_path() / topo_ref;
    if (std::filesystem::exists(beside, ec)) topo_ref = beside.string();
  }
  topo::Topology t;
  try {
    t = topo::load_topology(topo_ref);
  } catch (const Error& e) {
    throw_input(path + ": topology '" + p.topology + "': " + e.what());
  }
  p.params = load_profile(path, defaults_for(t));
  return p;
}

namespace {

// The series whose size part is local memory traffic on one GPU (bytes read and written in its HBM): copies and
// reductions within a GPU and the sparse kernels that stream rows. Their large sizes run at the HBM rate on both
// Hopper parts measured (copy.local at 1 GiB: 2131 GB/s copied on the H200, 1503 on the H100, 1.42 x apart where
// the datasheets' 4.8 / 3.35 TB/s are 1.43 x apart). Peer transfers, flags, launches and matmuls are not here:
// they ran at the same rate on both (NVLink 4, the same tensor-core peak). Returns the bytes of traffic per byte
// of the table's size while its data can stay in L2 (the series repeat one source and destination: copies 2,
// reductions 3), 0 where every size reaches HBM (fresh data each iteration, or sizes far beyond L2), -1 when the
// series is not local memory traffic.
int hbm_traffic_per_byte(std::string_view series) {
  if (series == "copy.local" || series == "copy.local.graph") return 2;
  if (series.starts_with("reduce.local.cta")) return -1;  // one CTA: bound by the SM or its latency, not by HBM
  if (series.starts_with("reduce.local.")) return 3;
  if (series == "copy.local.graph.cold" || series == "sparse.segment_sum" || series == "sparse.fill_rows") return 0;
  return -1;
}

// Data that repeated copies keep in L2 does not reach HBM: H100 SXM5's L2 is 50 MB in two partitions, each caching
// for the SMs next to it (NVIDIA H100 Tensor Core GPU Architecture whitepaper), so a buffer read by every SM is
// held twice and 25 MB of working set stays resident. Measured so on both: copy.local 8 MiB (16 MiB of traffic)
// 1.10 x slower on the H100, as its fixed cost; 16 MiB (32 MiB) 1.33 x, as HBM.
constexpr double kL2ResidentBytes = 25e6;

// A graph copy table's point this much slower than the stream's copy of the same size is bound by the copy node
// (512 MiB on the H200: 1.55 x; at other sizes the two are within 10%).
constexpr double kCopyNodeBound = 1.3;

// The topology a profile was measured on (its "topology": a preset, or a topology file, found beside the profile
// when named relative to it).
topo::Topology profile_topology(const std::string& profile_path, const std::string& ref) {
  std::error_code ec;
  if (!topo::is_preset(ref) && !std::filesystem::exists(ref, ec)) {
    const auto beside = std::filesystem::path(profile_path).parent_path() / ref;
    if (std::filesystem::exists(beside, ec)) return topo::load_topology(beside.string());
  }
  return topo::load_topology(ref);
}

BytesPerSec first_gpu_hbm(const topo::Topology& t) {
  return t.num_gpus() > 0 ? t.node(t.gpu(0)).mem_bw : BytesPerSec(0);
}

}  // namespace

ModelParams load_profile_onto(const std::string& path, const topo::Topology& target, ModelParams base) {
  ModelParams p = load_profile(path, std::move(base));
  // A plain parameter file names no machine: its tables apply as they are.
  if (!is_profile_file(path)) return p;
  const Profile prof = load_profile_file(path);
  const topo::Topology measured_on = profile_topology(path, prof.topology);
  const double from = first_gpu_hbm(measured_on).value, to = first_gpu_hbm(target).value;
  if (from <= 0 || to <= 0 || std::abs(from / to - 1) < 1e-3) return p;
  // The time a size adds on top of a local operation's fixed cost is its memory traffic over the HBM rate once
  // its data leaves L2, so on the target GPU it takes from / to as long. The fixed cost (a launch, a copy issue)
  // is the host's and stays.
  const double scale = from / to;
  const std::string why = "; size part x " + fmt(scale) + " for the target's HBM (" +
                          measured_on.node(measured_on.gpu(0)).model + " " + fmt(from / 1e9) + " GB/s -> " +
                          target.node(target.gpu(0)).model + " " + fmt(to / 1e9) + " GB/s, datasheets)";
  // A replayed graph's copy node runs slower than the same copy issued to a stream at some sizes (512 MiB and 1 GiB
  // on the H200: 1.35 TB/s against 2.1; docs/findings/2026-11-29-graph-copy-nodes-512mib.md). That limit is the
  // node's, not HBM's: where a graph copy table takes more than kCopyNodeBound x the stream's copy (copy.local) of
  // the same size, far beyond L2, the target takes the slower of the node's time as measured and its own HBM's
  // stream copy. Those points are found before the tables are scaled.
  struct NodeBound {
    std::string series;
    size_t point;
    double bytes, time;
  };
  std::vector<NodeBound> node_bound;
  if (const PathTable* stream = p.table("copy.local"); stream && !stream->empty())
    for (const char* series : {"copy.local.graph", "copy.local.graph.cold"}) {
      const PathTable* node = p.table(series);
      for (size_t i = 0; node && i < node->points.size(); ++i) {
        const auto [bytes, t_node] = node->points[i];
        if (bytes > stream->points.back().first) break;
        if (2.0 * double(bytes) < 4 * kL2ResidentBytes) continue;  // where L2 still shapes either copy
        if (t_node > kCopyNodeBound * stream->time(double(bytes)).value)
          node_bound.push_back({series, i, double(bytes), t_node});
      }
    }
  for (auto& [series, table] : p.tables) {
    const int traffic = hbm_traffic_per_byte(series);
    if (traffic < 0 || table.points.empty()) continue;
    // Each step between measured sizes takes `scale` as long where its larger size's data reaches HBM, and as
    // measured while it stays in L2.
    double prev = table.points.front().second, moved = prev;
    for (auto& [bytes, sec] : table.points) {
      const double step = sec - prev;
      prev = sec;
      const bool in_l2 = traffic > 0 && double(traffic) * double(bytes) <= kL2ResidentBytes;
      moved += in_l2 ? step : step * scale;
      sec = moved;
    }
    table.source += why;
  }
  for (const NodeBound& b : node_bound)
    p.tables.at(b.series).points[b.point].second = std::max(b.time, p.tables.at("copy.local").time(b.bytes).value);
  return p;
}

Target resolve_target(const std::string& preset_file_or_profile) {
  Target tg;
  if (is_profile_file(preset_file_or_profile)) {
    Profile p = load_profile_file(preset_file_or_profile);
    std::string topo_ref = p.topology;
    std::error_code ec;
    if (!topo::is_preset(topo_ref) && !std::filesystem::exists(topo_ref, ec))
      topo_ref = (std::filesystem::path(preset_file_or_profile).parent_path() / topo_ref).string();
    tg.topology = topo::load_topology(topo_ref);
    tg.params = p.params;
    tg.label = p.topology + " (profile " + preset_file_or_profile + ")";
    tg.profile = std::move(p);
    return tg;
  }
  tg.topology = topo::load_topology(preset_file_or_profile);
  tg.params = defaults_for(tg.topology);
  tg.label = tg.topology.name;
  return tg;
}

}  // namespace cclab::model
