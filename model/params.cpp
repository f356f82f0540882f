#include "model/params.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "model/calibrate.hpp"

namespace cclab::model {

namespace {

constexpr std::array<std::string_view, kNumProtos> kProtoNames = {"ll",      "ll128", "simple", "copy_engine",
                                                                  "sm_peer", "flash", "stream"};
constexpr std::array<std::string_view, 5> kLinkNames = {"nvlink", "pcie", "upi", "network", "memory"};

const char* kH200x2 = "measured on 2 x H200 (HGX, NVSwitch), 2026-11-22, /work/shared/hardware/h200x2.md";

}  // namespace

std::string_view proto_name(Proto p) { return kProtoNames[size_t(p)]; }

Proto parse_proto(std::string_view name) {
  for (int i = 0; i < kNumProtos; ++i)
    if (kProtoNames[i] == name) return Proto(i);
  throw_input("unknown protocol '" + std::string(name) + "' (ll, ll128, simple, copy_engine, sm_peer, flash, stream)");
}

double ProtocolParams::efficiency_at(int64_t bytes) const {
  if (curve.empty()) return efficiency.value;
  if (bytes <= curve.front().bytes) return efficiency.value * curve.front().factor;
  if (bytes >= curve.back().bytes) return efficiency.value * curve.back().factor;
  auto hi =
      std::upper_bound(curve.begin(), curve.end(), bytes, [](int64_t b, const EffPoint& p) { return b < p.bytes; });
  auto lo = hi - 1;
  const double x = std::log2(double(bytes)), x0 = std::log2(double(lo->bytes)), x1 = std::log2(double(hi->bytes));
  const double f = lo->factor + (hi->factor - lo->factor) * (x - x0) / (x1 - x0);
  return efficiency.value * f;
}

namespace {
// f(k) for k = 1, 2, 3 from three measured points; beyond 3 the last step continues; f(0) = 0.
Seconds extend(const std::array<Sourced<Seconds>, 3>& f, int k) {
  if (k <= 0) return Seconds(0);
  if (k <= 3) return f[size_t(k - 1)].value;
  return f[2].value + double(k - 3) * (f[2].value - f[1].value);
}
}  // namespace

Seconds ExecutorParams::fork_for_streams(int k) const { return extend(fork_streams, std::max(k, 1)); }

Seconds ExecutorParams::fork_for(int copy_streams, int kernel_streams) const {
  if (copy_streams <= 0) return extend(fork_kernel_streams, std::max(kernel_streams, 1));
  if (kernel_streams <= 0) return extend(fork_streams, copy_streams);
  if (copy_streams == 1 && kernel_streams == 1) return fork_mix.value;
  // Otherwise the two kinds side by side, each as measured alone (for 1 + 1 this sum is within a few
  // percent of the measured mixed fork on 2 x H200).
  return extend(fork_streams, copy_streams) + extend(fork_kernel_streams, kernel_streams);
}

Seconds PathTable::time(double bytes) const {
  CCLAB_ASSERT(!points.empty(), "time() of an empty path table");
  if (bytes <= double(points.front().first)) return Seconds(points.front().second);
  if (bytes >= double(points.back().first)) {
    const auto& [b, t] = points.back();
    if (points.size() < 2) return Seconds(t * bytes / double(b));
    // The last interval's rate continues (time grows linearly beyond the largest size measured).
    const auto& [b0, t0] = points[points.size() - 2];
    const double rate = (t - t0) / double(b - b0);
    return Seconds(t + std::max(rate, 0.0) * (bytes - double(b)));
  }
  auto hi = std::upper_bound(points.begin(), points.end(), bytes,
                             [](double x, const std::pair<int64_t, double>& p) { return x < double(p.first); });
  auto lo = hi - 1;
  const double x = std::log(bytes), x0 = std::log(double(lo->first)), x1 = std::log(double(hi->first));
  const double y0 = std::log(lo->second), y1 = std::log(hi->second);
  return Seconds(std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0)));
}

Seconds PathTable::size_part(double bytes) const {
  return Seconds(std::max(0.0, time(bytes).value - points.front().second));
}

ModelParams ModelParams::ideal() {
  ModelParams p;
  p.name = "ideal";
  for (auto& pr : p.proto) pr.efficiency = {1.0, "ideal α-β model"};
  p.mem_efficiency = {1.0, "ideal"};
  // Local work costs nothing in the textbook formulas: an unbounded memory system and tensor cores.
  p.default_mem_bw = {BytesPerSec(1e30), "ideal: local work is free"};
  p.default_flops = {1e30, "ideal: local work is free"};
  p.link = {};
  p.free_local_work = true;
  return p;
}

namespace {

// The NVLink datasheet rate (25 GB/s per lane and direction, NVLink 3 and 4) over the rate the topology
// gives its GPUs' NVLink ports; 1 when there is no NVLink.
double nvlink_datasheet_ratio(const topo::Topology& t) {
  for (auto e : boost::make_iterator_range(boost::edges(t.graph))) {
    const topo::Link& l = t.link(e);
    if (l.kind != topo::LinkKind::nvlink || t.node(boost::source(e, t.graph)).kind != topo::NodeKind::gpu) continue;
    if (l.lanes > 1 && l.bw.value > 0) return 25e9 * l.lanes / l.bw.value;
  }
  return 1.0;
}

}  // namespace

ModelParams defaults_for(const topo::Topology& t) {
  ModelParams p;
  p.name = t.name;
  // The GPU architecture decides NCCL's constants: A100s have ~312 TFLOP/s dense fp16, H100/H200 ~989.
  double flops = 0;
  bool has_nvlink = false;
  for (auto v : boost::make_iterator_range(boost::vertices(t.graph)))
    if (t.node(v).kind == topo::NodeKind::gpu) flops = std::max(flops, t.node(v).flops);
  for (auto e : boost::make_iterator_range(boost::edges(t.graph)))
    if (t.link(e).kind == topo::LinkKind::nvlink) has_nvlink = true;
  p.arch = (flops > 0 && flops < 500e12) ? ModelParams::Arch::ampere : ModelParams::Arch::hopper;

  using P = Proto;
  const std::string tuning = "NCCL src/graph/tuning.cc hwLatencies (ring, NVLink)";
  // NCCL protocols. Per-step latencies: NCCL's hwLatencies for rings on NVLink (PCIe ones are used by
  // the NCCL model when the ring runs over PCIe). Efficiencies: LL carries 4 data bytes per 8, LL128
  // 120 per 128 (tuning.cc applies .5 and .92 to the bus bandwidth); Simple moves payload only.
  p.of(P::ll) = {{microseconds(has_nvlink ? 0.6 : 1.0), tuning},
                 {0.5, "LL: 4 flag bytes per 8 (tuning.cc: busBw * .5)"},
                 {BytesPerSec(0), ""},
                 {},
                 ""};
  p.of(P::ll128) = {
      {microseconds(has_nvlink ? 1.9 : 2.5), tuning},
      {0.92, "LL128: 120 of 128 bytes (tuning.cc: busBw * 0.92)"},
      {GBps(p.arch == ModelParams::Arch::hopper ? 36.7 : 20.0), "tuning.cc perChMaxRingLL128Bws (per channel)"},
      {},
      ""};
  p.of(P::simple) = {{microseconds(has_nvlink ? 3.4 : 5.7), tuning}, {1.0, "Simple: payload only"}, {}, {}, ""};

  // Our lowerings, from the 2 x H200 measurements: the copy engine moves 397 GB/s one way over NV18
  // (datasheet 18 x 25 = 450 GB/s), SM peer loads 374, SM loads both ways at once 673 in sum. Expressed
  // as fractions of the datasheet rate and rescaled to the topology's own NVLink figure, so that a
  // preset that already carries the measured rate (h200x2: 397) is not discounted twice.
  const double datasheet_ratio = nvlink_datasheet_ratio(t);  // datasheet / topology rate (1 without NVLink)
  auto eff = [&](double measured_GBps, const char* what) -> Sourced<double> {
    const double e = std::min(1.0, measured_GBps / 450.0 * datasheet_ratio);
    char buf[64];
    std::snprintf(buf, sizeof buf, " = %.3f of the topology's NVLink rate", e);
    return {e,
            std::string(what) + " " + std::to_string(int(measured_GBps)) + " GB/s of 450 datasheet, " + kH200x2 + buf};
  };
  p.of(P::copy_engine) = {{microseconds(1.7), std::string("4-byte peer copy back to back, ") + kH200x2},
                          eff(397, "copy engine one direction"),
                          {},
                          {},
                          ""};
  p.of(P::sm_peer) = {{microseconds(1.7), std::string("peer-load kernel 3.4 us incl. ~1.7 us launch, ") + kH200x2},
                      eff(374, "SM peer loads one direction"),
                      {},
                      {},
                      ""};
  // flash: no cross-GPU sync inside the transfer; both directions loaded at once.
  p.of(P::flash) = {{microseconds(1.7), std::string("as sm_peer (same launch), ") + kH200x2},
                    eff(336.5, "SM loads both directions at once (673 sum)"),
                    {},
                    {},
                    ""};
  p.of(P::stream) = {{microseconds(2.5), "sm_peer launch + ring-buffer handshake: estimate until calibrated"},
                     eff(336.5, "SM loads both directions at once (673 sum)"),
                     {},
                     {},
                     ""};

  p.launch_latency = {microseconds(1.7), std::string("kernel/copy launch, 4-byte copy back to back, ") + kH200x2};
  // The executor's paths: estimates from the 2 x H200 notes until `cclab calibrate` measures them.
  p.exec.copy_node = {microseconds(1.7), std::string("4-byte peer copy back to back (estimate), ") + kH200x2};
  p.exec.kernel_node = {microseconds(1.3), "empty kernel back to back (latency.launch, estimate until calibrated)"};
  p.exec.kernel_pdl = {microseconds(1.3), "empty kernel back to back (latency.launch, estimate until calibrated)"};
  p.exec.fork_local = {microseconds(1.5), "event hop between two streams of one GPU (estimate until calibrated)"};
  p.exec.fork_local2 = {microseconds(1.5), "as one local stream (estimate until calibrated)"};
  p.exec.fork_local_mix = {microseconds(0), "as one local stream (estimate until calibrated)"};
  p.exec.event_peer = {microseconds(7.0), "event hop between streams of two GPUs (latency.event_peer, estimate)"};
  p.exec.copy_local_node = {microseconds(1.7), "as a peer copy node (estimate until calibrated)"};
  for (int k = 1; k <= 3; ++k) {
    p.exec.fork_streams[size_t(k - 1)] = {microseconds(14.0 * k),
                                          "k x two cross-GPU event edges of ~7 us (latency.event_peer, estimate)"};
    p.exec.fork_kernel_streams[size_t(k - 1)] = p.exec.fork_streams[size_t(k - 1)];
  }
  p.exec.fork_mix = {microseconds(28.0), "two streams per GPU, as the copy streams (estimate until calibrated)"};
  p.exec.flag_hop = {microseconds(0.75), "half the flag round trip (latency.flag, estimate until calibrated)"};
  p.exec.flag_launch = {microseconds(1.3), "empty kernel back to back (latency.launch, estimate until calibrated)"};
  p.exec.flag_rtt = {microseconds(1.5), "flag round trip over NVLink (latency.flag, estimate until calibrated)"};
  p.exec.fork_both_mix = {Seconds(0), "not measured (graph.fork_both_mix.1: cclab calibrate)"};
  p.exec.reduce_peer_node = {Seconds(0), "not measured (graph.fork_reduce_peer: cclab calibrate)"};
  p.exec.local_edge_busy = {Seconds(0), "not measured (graph.fork_mix_chain.1: cclab calibrate)"};
  p.exec.event_peer_mix = {Seconds(0), "not measured (graph.fork_mix_cross.1: cclab calibrate)"};
  p.exec.flag_launch_table = {Seconds(0), "not measured (graph.flag_chain_table.2: cclab calibrate)"};
  p.exec.fork_mix21 = {Seconds(0), "not measured (graph.fork_mix.2_1: cclab calibrate)"};
  p.sync_latency = {microseconds(1.0),
                    "flag store over NVLink seen by a polling peer: ~1 µs, estimate until calibrated"};
  p.local_dep_latency = {microseconds(0.5), "cross-stream event wait on one GPU: estimate until calibrated"};
  p.local_op_latency = {microseconds(0.5), "a step of a running kernel (no launch): estimate until calibrated"};
  p.mem_efficiency = {4.3 / 4.8, std::string("D2D copy 4.3 TB/s of 4.8 TB/s HBM3e, ") + kH200x2};
  p.matmul_efficiency = {810.0 / 989.0, std::string("cuBLAS fp16 810 TFLOP/s of 989 peak, ") + kH200x2};
  p.fp32_matmul_ratio = {0.5, "TF32 tensor cores: half the 16-bit dense rate (H100/A100 datasheets)"};
  p.default_mem_bw = {GBps(p.arch == ModelParams::Arch::ampere ? 2039 : 3350),
                      "A100 80GB 2.0 TB/s, H100 SXM 3.35 TB/s HBM (NVIDIA datasheets)"};
  p.default_flops = {p.arch == ModelParams::Arch::ampere ? 312e12 : 989e12,
                     "dense fp16 tensor: A100 312, H100 989 TFLOP/s (NVIDIA datasheets)"};

  if (p.arch == ModelParams::Arch::ampere) {
    p.nccl.ll_max_bw_GBps = 87.7;
    p.nccl.per_ch_ring_ll128_GBps = 20.0;
    p.nccl.per_ch_tree_GBps = 24.0;
    p.nccl.per_ch_tree_ll128_GBps = 20.0;
    p.of(P::ll128).max_rate = {GBps(20.0), "tuning.cc perChMaxRingLL128Bws Ampere (per channel)"};
  }
  if (t.num_servers() > 1) p.nccl.ll_max_bw_GBps = 39.0;  // llMaxBws, multi-node Intel CPUs
  if (!has_nvlink)
    p.nccl.max_channels = {2, "NCCL on PCIe-only machines: ~2 ring channels (PCI_BW 12 GB/s per channel)"};
  return p;
}

// ---------------------------------------------------------------------------------------------
// Named parameters. Each entry knows how to read and write its number in the unit its name says.

namespace {

struct Accessor {
  std::function<double(const ModelParams&)> get;
  std::function<void(ModelParams&, double, const std::string&)> set;
};

template <class Member>
Accessor seconds_us(Member m) {
  return {[m](const ModelParams& p) { return m(const_cast<ModelParams&>(p)).value.us(); },
          [m](ModelParams& p, double v, const std::string& s) {
            m(p) = {microseconds(v), s};
          }};
}
template <class Member>
Accessor rate_GBps(Member m) {
  return {[m](const ModelParams& p) { return m(const_cast<ModelParams&>(p)).value.gbps(); },
          [m](ModelParams& p, double v, const std::string& s) {
            m(p) = {GBps(v), s};
          }};
}
template <class Member>
Accessor plain(Member m) {
  return {[m](const ModelParams& p) { return m(const_cast<ModelParams&>(p)).value; },
          [m](ModelParams& p, double v, const std::string& s) {
            m(p) = {v, s};
          }};
}
template <class Member>
Accessor raw(Member m) {  // NCCL tuning numbers (their source is NcclTuning::source)
  return {[m](const ModelParams& p) { return double(m(const_cast<ModelParams&>(p))); },
          [m](ModelParams& p, double v, const std::string&) { m(p) = std::remove_reference_t<decltype(m(p))>(v); }};
}

const std::map<std::string, Accessor, std::less<>>& accessors() {
  static const auto table = [] {
    std::map<std::string, Accessor, std::less<>> t;
    for (int i = 0; i < kNumProtos; ++i) {
      const std::string pre = "proto." + std::string(kProtoNames[i]) + ".";
      t[pre + "latency_us"] = seconds_us([i](ModelParams & p) -> auto& { return p.proto[i].latency; });
      t[pre + "efficiency"] = plain([i](ModelParams & p) -> auto& { return p.proto[i].efficiency; });
      t[pre + "max_rate_GBps"] = rate_GBps([i](ModelParams & p) -> auto& { return p.proto[i].max_rate; });
    }
    t["launch_latency_us"] = seconds_us([](ModelParams & p) -> auto& { return p.launch_latency; });
    t["sync_latency_us"] = seconds_us([](ModelParams & p) -> auto& { return p.sync_latency; });
    t["local_dep_latency_us"] = seconds_us([](ModelParams & p) -> auto& { return p.local_dep_latency; });
    t["local_op_latency_us"] = seconds_us([](ModelParams & p) -> auto& { return p.local_op_latency; });
    t["mem_efficiency"] = plain([](ModelParams & p) -> auto& { return p.mem_efficiency; });
    t["matmul_efficiency"] = plain([](ModelParams & p) -> auto& { return p.matmul_efficiency; });
    t["fp32_matmul_ratio"] = plain([](ModelParams & p) -> auto& { return p.fp32_matmul_ratio; });
    t["default_mem_bw_GBps"] = rate_GBps([](ModelParams & p) -> auto& { return p.default_mem_bw; });
    t["default_flops"] = plain([](ModelParams & p) -> auto& { return p.default_flops; });
    for (int k = 0; k < 5; ++k) {
      const std::string pre = "link." + std::string(kLinkNames[k]) + ".";
      t[pre + "bw_GBps"] = {[k](const ModelParams& p) { return p.link[k].bw ? p.link[k].bw->value.gbps() : NAN; },
                            [k](ModelParams& p, double v, const std::string& s) {
                              p.link[k].bw = Sourced<BytesPerSec>{GBps(v), s};
                            }};
      t[pre + "latency_us"] = {
          [k](const ModelParams& p) { return p.link[k].latency ? p.link[k].latency->value.us() : NAN; },
          [k](ModelParams& p, double v, const std::string& s) {
            p.link[k].latency = Sourced<Seconds>{microseconds(v), s};
          }};
    }
    t["exec.copy_node_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.copy_node; });
    t["exec.kernel_node_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.kernel_node; });
    t["exec.kernel_pdl_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.kernel_pdl; });
    t["exec.fork_local_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.fork_local; });
    t["exec.fork_local2_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.fork_local2; });
    t["exec.fork_local_mix_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.fork_local_mix; });
    t["exec.event_peer_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.event_peer; });
    t["exec.copy_local_node_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.copy_local_node; });
    for (int k = 1; k <= 3; ++k) {
      t["exec.fork_streams_" + std::to_string(k) + "_us"] =
          seconds_us([k](ModelParams & p) -> auto& { return p.exec.fork_streams[size_t(k - 1)]; });
      t["exec.fork_kernel_streams_" + std::to_string(k) + "_us"] =
          seconds_us([k](ModelParams & p) -> auto& { return p.exec.fork_kernel_streams[size_t(k - 1)]; });
    }
    t["exec.fork_mix_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.fork_mix; });
    t["exec.flag_hop_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.flag_hop; });
    t["exec.flag_launch_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.flag_launch; });
    t["exec.flag_rtt_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.flag_rtt; });
    t["exec.fork_both_mix_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.fork_both_mix; });
    t["exec.reduce_peer_node_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.reduce_peer_node; });
    t["exec.local_edge_busy_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.local_edge_busy; });
    t["exec.event_peer_mix_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.event_peer_mix; });
    t["exec.flag_launch_table_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.flag_launch_table; });
    t["exec.fork_mix_2_1_us"] = seconds_us([](ModelParams & p) -> auto& { return p.exec.fork_mix21; });
    t["nccl.max_channels"] = plain([](ModelParams & p) -> auto& { return p.nccl.max_channels; });
    const char* pn[3] = {"ll", "ll128", "simple"};
    for (int j = 0; j < 3; ++j) {
      const std::string q = pn[j];
      t["nccl.ring_base_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.ring_base_us[j]; });
      t["nccl.tree_base_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.tree_base_us[j]; });
      t["nccl.ring_nvlink_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.ring_nvlink_us[j]; });
      t["nccl.tree_nvlink_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.tree_nvlink_us[j]; });
      t["nccl.ring_pci_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.ring_pci_us[j]; });
      t["nccl.tree_pci_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.tree_pci_us[j]; });
      t["nccl.ring_net_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.ring_net_us[j]; });
      t["nccl.tree_net_us." + q] = raw([j](ModelParams & p) -> auto& { return p.nccl.tree_net_us[j]; });
    }
    t["nccl.ll_max_bw_GBps"] = raw([](ModelParams & p) -> auto& { return p.nccl.ll_max_bw_GBps; });
    t["nccl.per_ch_ring_ll128_GBps"] = raw([](ModelParams & p) -> auto& { return p.nccl.per_ch_ring_ll128_GBps; });
    t["nccl.per_ch_tree_GBps"] = raw([](ModelParams & p) -> auto& { return p.nccl.per_ch_tree_GBps; });
    t["nccl.per_ch_tree_ll128_GBps"] = raw([](ModelParams & p) -> auto& { return p.nccl.per_ch_tree_ll128_GBps; });
    t["nccl.simple_buff"] = raw([](ModelParams & p) -> auto& { return p.nccl.simple_buff; });
    t["nccl.ll_buff"] = raw([](ModelParams & p) -> auto& { return p.nccl.ll_buff; });
    t["nccl.ll128_buff"] = raw([](ModelParams & p) -> auto& { return p.nccl.ll128_buff; });
    return t;
  }();
  return table;
}

std::string source_of(const ModelParams& p, const std::string& name) {
  // Recover the source string by name (for profile_json).
  auto pick = [](const auto& s) { return s.source; };
  if (name.starts_with("nccl.") && name != "nccl.max_channels") return p.nccl.source;
  if (name == "nccl.max_channels") return p.nccl.max_channels.source;
  for (int i = 0; i < kNumProtos; ++i) {
    const std::string pre = "proto." + std::string(kProtoNames[i]) + ".";
    if (name == pre + "latency_us") return pick(p.proto[i].latency);
    if (name == pre + "efficiency") return pick(p.proto[i].efficiency);
    if (name == pre + "max_rate_GBps") return pick(p.proto[i].max_rate);
  }
  for (int k = 0; k < 5; ++k) {
    const std::string pre = "link." + std::string(kLinkNames[k]) + ".";
    if (name == pre + "bw_GBps") return p.link[k].bw ? p.link[k].bw->source : "";
    if (name == pre + "latency_us") return p.link[k].latency ? p.link[k].latency->source : "";
  }
  if (name == "exec.copy_node_us") return p.exec.copy_node.source;
  if (name == "exec.kernel_node_us") return p.exec.kernel_node.source;
  if (name == "exec.kernel_pdl_us") return p.exec.kernel_pdl.source;
  if (name == "exec.fork_local_us") return p.exec.fork_local.source;
  if (name == "exec.fork_local2_us") return p.exec.fork_local2.source;
  if (name == "exec.fork_local_mix_us") return p.exec.fork_local_mix.source;
  if (name == "exec.event_peer_us") return p.exec.event_peer.source;
  if (name == "exec.flag_rtt_us") return p.exec.flag_rtt.source;
  if (name == "exec.flag_hop_us") return p.exec.flag_hop.source;
  if (name == "exec.flag_launch_us") return p.exec.flag_launch.source;
  if (name == "exec.fork_both_mix_us") return p.exec.fork_both_mix.source;
  if (name == "exec.reduce_peer_node_us") return p.exec.reduce_peer_node.source;
  if (name == "exec.local_edge_busy_us") return p.exec.local_edge_busy.source;
  if (name == "exec.event_peer_mix_us") return p.exec.event_peer_mix.source;
  if (name == "exec.flag_launch_table_us") return p.exec.flag_launch_table.source;
  if (name == "exec.fork_mix_2_1_us") return p.exec.fork_mix21.source;
  if (name == "exec.copy_local_node_us") return p.exec.copy_local_node.source;
  for (int k = 1; k <= 3; ++k) {
    if (name == "exec.fork_streams_" + std::to_string(k) + "_us") return p.exec.fork_streams[size_t(k - 1)].source;
    if (name == "exec.fork_kernel_streams_" + std::to_string(k) + "_us")
      return p.exec.fork_kernel_streams[size_t(k - 1)].source;
  }
  if (name == "exec.fork_mix_us") return p.exec.fork_mix.source;
  if (name == "launch_latency_us") return p.launch_latency.source;
  if (name == "sync_latency_us") return p.sync_latency.source;
  if (name == "local_dep_latency_us") return p.local_dep_latency.source;
  if (name == "local_op_latency_us") return p.local_op_latency.source;
  if (name == "mem_efficiency") return p.mem_efficiency.source;
  if (name == "matmul_efficiency") return p.matmul_efficiency.source;
  if (name == "fp32_matmul_ratio") return p.fp32_matmul_ratio.source;
  if (name == "default_mem_bw_GBps") return p.default_mem_bw.source;
  if (name == "default_flops") return p.default_flops.source;
  return "";
}

// A [size, value] point of a curve or table: a size in (0, 9e18] (it becomes an int64) and a finite value > 0.
bool positive_point(const nlohmann::json& pt) {
  if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_number()) return false;
  const double size = pt[0].get<double>(), value = pt[1].get<double>();
  return size > 0 && size <= 9e18 && value > 0 && std::isfinite(value);
}

// The number under `key`, at least `min` (above 0 where `min` is 0 and `positive`).
double read_number(const nlohmann::json& j, const char* key, const std::string& where, double min,
                   bool positive = false) {
  const bool ok = j.contains(key) && j[key].is_number() && std::isfinite(j[key].get<double>()) &&
                  j[key].get<double>() >= min && (!positive || j[key].get<double>() > 0);
  if (!ok) {
    std::ostringstream os;
    os << where << " needs \"" << key << "\": a number " << (positive ? "> " : ">= ") << min;
    throw_input(os.str());
  }
  return j[key].get<double>();
}

int64_t read_bytes(const nlohmann::json& j, const char* key, const std::string& where) {
  const double v = read_number(j, key, where, 1);
  if (v > 9e18) throw_input(where + ": \"" + key + "\" is too large");
  return int64_t(v);
}

// The saturating efficiency of a fit (model/calibrate.hpp): its half-efficiency size and exponent. A table's fit
// without them is the plain line alpha + bytes / beta (efficiency 1 at every size).
SaturatingFit read_saturation(const nlohmann::json& j, const std::string& where) {
  SaturatingFit f;
  if (!j.contains("efficiency_half") && !j.contains("efficiency_exponent")) return f;
  f.x_half = read_number(j, "efficiency_half", where, 0);
  f.p = read_number(j, "efficiency_exponent", where, 0);
  if (f.x_half > 0 && f.p <= 0) throw_input(where + ": \"efficiency_exponent\" must be > 0");
  return f;
}

std::mutex g_loader_mutex;
std::map<std::string, ProfileLoader>& loaders() {
  static std::map<std::string, ProfileLoader> m;
  return m;
}

}  // namespace

std::vector<std::string> param_names(const ModelParams&) {
  std::vector<std::string> names;
  for (const auto& [k, v] : accessors()) names.push_back(k);
  return names;
}

void set_param(ModelParams& p, std::string_view name, double value, const std::string& source) {
  auto it = accessors().find(name);
  if (it == accessors().end()) throw_input("unknown model parameter '" + std::string(name) + "'");
  if (!std::isfinite(value) || value < 0)
    throw_input("model parameter '" + std::string(name) + "' must be a finite non-negative number");
  it->second.set(p, value, source);
}

std::optional<double> get_param(const ModelParams& p, std::string_view name) {
  auto it = accessors().find(name);
  if (it == accessors().end()) return std::nullopt;
  const double v = it->second.get(p);
  if (std::isnan(v)) return std::nullopt;
  return v;
}

void register_profile_loader(const std::string& extension, ProfileLoader loader) {
  std::lock_guard lock(g_loader_mutex);
  loaders()[extension] = std::move(loader);
}

ModelParams load_profile(const std::string& path, ModelParams base) {
  {
    std::lock_guard lock(g_loader_mutex);
    for (const auto& [ext, fn] : loaders())
      if (path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
        fn(path, base);
        return base;
      }
  }
  std::ifstream f(path);
  if (!f) throw_input("cannot open profile '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw_input(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) throw_input(path + ": a profile is a JSON object");
  const std::string default_source = "profile " + path;
  if (j.contains("name") && j["name"].is_string()) base.name = j["name"].get<std::string>();
  if (j.contains("params")) {
    if (!j["params"].is_object()) throw_input(path + ": \"params\" must be an object");
    for (const auto& [key, val] : j["params"].items()) {
      // Terms earlier profiles fitted that nothing reads: skipped, so those profiles still load.
      if (key == "exec.fork_peer_us" || key == "exec.flag_exchange_us") continue;
      double v;
      std::string src = default_source;
      if (val.is_number()) {
        v = val.get<double>();
      } else if (val.is_object() && val.contains("value") && val["value"].is_number()) {
        v = val["value"].get<double>();
        if (val.contains("source") && val["source"].is_string()) src = val["source"].get<std::string>();
      } else {
        throw_input(path + ": params." + key + " must be a number or {\"value\": number, \"source\": text}");
      }
      try {
        set_param(base, key, v, src);
      } catch (const Error& e) {
        throw_input(path + ": " + e.what());
      }
    }
  }
  if (j.contains("curves")) {
    if (!j["curves"].is_object()) throw_input(path + ": \"curves\" must be an object");
    for (const auto& [key, val] : j["curves"].items()) {
      Proto pr;
      try {
        pr = parse_proto(key);
      } catch (const Error& e) {
        throw_input(path + ": curves: " + e.what());
      }
      auto& pp = base.of(pr);
      pp.curve.clear();
      if (val.is_object() && val.contains("efficiency_half")) {
        const SaturatingFit e = read_saturation(val, path + ": curves." + key);
        const int64_t from = read_bytes(val, "from_bytes", path + ": curves." + key),
                      to = read_bytes(val, "to_bytes", path + ": curves." + key);
        for (int64_t b = from; b <= to; b *= 2) pp.curve.push_back({b, std::max(e.efficiency(double(b)), 1e-4)});
      } else {
        if (!val.contains("points") || !val["points"].is_array())
          throw_input(path + ": curves." + key + " needs \"points\": [[bytes, factor], ...]");
        for (const auto& pt : val["points"]) {
          if (!positive_point(pt)) throw_input(path + ": curves." + key + ": each point is [bytes > 0, factor > 0]");
          pp.curve.push_back({pt[0].get<int64_t>(), pt[1].get<double>()});
        }
      }
      std::sort(pp.curve.begin(), pp.curve.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; });
      pp.curve_source =
          val.contains("source") && val["source"].is_string() ? val["source"].get<std::string>() : default_source;
    }
  }
  if (j.contains("tables")) {
    if (!j["tables"].is_object()) throw_input(path + ": \"tables\" must be an object");
    for (const auto& [key, val] : j["tables"].items()) {
      PathTable t;
      if (val.is_object() && val.contains("fit")) {
        // The fit at the sizes it was measured at: the simulator reads every table the same way.
        const std::string where = path + ": tables." + key;
        if (!val["fit"].is_object()) throw_input(where + ".fit must be an object");
        SaturatingFit fit = read_saturation(val["fit"], where + ".fit");
        fit.alpha = microseconds(read_number(val["fit"], "alpha_us", where + ".fit", 0));
        fit.beta = val["fit"].contains("peak_TFLOPs")
                       ? BytesPerSec(read_number(val["fit"], "peak_TFLOPs", where + ".fit", 0, true) * 1e12)
                       : GBps(read_number(val["fit"], "beta_GBps", where + ".fit", 0, true));
        if (!val.contains("sizes") || !val["sizes"].is_array() || val["sizes"].empty())
          throw_input(where + " needs \"sizes\": [bytes, ...] beside its fit");
        for (const auto& b : val["sizes"]) {
          if (!b.is_number() || b.get<double>() <= 0 || b.get<double>() > 9e18)
            throw_input(where + ": each of \"sizes\" is a count > 0");
          t.points.push_back({b.get<int64_t>(), fit.time(b.get<double>()).value});
        }
      } else {
        if (!val.is_object() || !val.contains("points") || !val["points"].is_array() || val["points"].empty())
          throw_input(path + ": tables." + key + " needs \"points\": [[bytes, seconds], ...] or a \"fit\"");
        for (const auto& pt : val["points"]) {
          if (!positive_point(pt)) throw_input(path + ": tables." + key + ": each point is [bytes > 0, seconds > 0]");
          t.points.push_back({pt[0].get<int64_t>(), pt[1].get<double>()});
        }
      }
      std::sort(t.points.begin(), t.points.end());
      // Repeated sizes: keep the first (the calibration writes one point per size).
      t.points.erase(std::unique(t.points.begin(), t.points.end(),
                                 [](const auto& a, const auto& b) { return a.first == b.first; }),
                     t.points.end());
      t.source =
          val.contains("source") && val["source"].is_string() ? val["source"].get<std::string>() : default_source;
      for (auto [field, into] : {std::pair{"launches_per_replay", &t.launches_per_replay}})
        if (val.contains(field)) {
          if (!val[field].is_number_integer() || val[field].get<int64_t>() < 0 || val[field].get<int64_t>() > 1 << 20)
            throw_input(path + ": tables." + key + "." + field + " must be a count >= 0");
          *into = val[field].get<int>();
        }
      // Older profiles name a series repeated at a pinned launch count with the count (".n100"); the table is
      // read by the name of what it measures, the count kept in launches_per_replay.
      const std::string plain = table_name(key, t.launches_per_replay);
      base.tables[j["tables"].contains(plain) ? key : plain] = std::move(t);
    }
  }
  return base;
}

std::string table_name(const std::string& series, int launches_per_replay) {
  const std::string suffix = ".n" + std::to_string(launches_per_replay);
  if (launches_per_replay > 0 && series.size() > suffix.size() && series.ends_with(suffix))
    return series.substr(0, series.size() - suffix.size());
  return series;
}

std::string profile_json(const ModelParams& p) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [name, acc] : accessors()) {
    const double v = acc.get(p);
    if (std::isnan(v)) continue;
    params[name] = {{"value", v}, {"source", source_of(p, name)}};
  }
  j["params"] = params;
  nlohmann::ordered_json curves = nlohmann::ordered_json::object();
  for (int i = 0; i < kNumProtos; ++i) {
    if (p.proto[i].curve.empty()) continue;
    nlohmann::ordered_json pts = nlohmann::ordered_json::array();
    for (const auto& pt : p.proto[i].curve) pts.push_back({pt.bytes, pt.factor});
    curves[std::string(kProtoNames[i])] = {{"points", pts}, {"source", p.proto[i].curve_source}};
  }
  j["curves"] = curves;
  if (!p.tables.empty()) {
    nlohmann::ordered_json tables = nlohmann::ordered_json::object();
    for (const auto& [name, t] : p.tables) {
      nlohmann::ordered_json pts = nlohmann::ordered_json::array();
      for (const auto& [b, sec] : t.points) pts.push_back({b, sec});
      tables[name] = {{"points", pts}, {"source", t.source}};
      if (t.launches_per_replay > 0) tables[name]["launches_per_replay"] = t.launches_per_replay;
    }
    j["tables"] = tables;
  }
  return j.dump(2) + "\n";
}

Proto transfer_protocol(Lowering lowering, OpKind kind, bool remote_reduce) {
  switch (lowering) {
    case Lowering::copy_engine:
      return remote_reduce ? Proto::sm_peer : Proto::copy_engine;
    case Lowering::kernel:
      return Proto::sm_peer;
    case Lowering::flash:
      return Proto::flash;
    case Lowering::stream:
      return Proto::stream;
    case Lowering::library:
      return Proto::simple;  // the NCCL model overrides this per size
    case Lowering::automatic:
      break;
  }
  // The executor's default: puts and gets on copy engines, reductions that read a peer in a kernel.
  return (kind == OpKind::reduce && remote_reduce) ? Proto::sm_peer : Proto::copy_engine;
}

}  // namespace cclab::model
