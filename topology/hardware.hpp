// The numbers the presets and importers put on nodes and links, each with its source. Internal to
// topology/: other areas read them from the graph (Node::mem_bw, Link::bw, Link::source).
#pragma once

#include <cctype>
#include <string>

#include "core/units.hpp"
#include "topology/topology.hpp"

namespace cclab::topo::hw {

struct GpuSpec {
  const char* model;
  BytesPerSec hbm;  // reads + writes
  double flops;     // dense 16-bit tensor FLOP/s
  const char* source;
  // GPU-to-GPU peer access over PCIe: the driver refuses it on GeForce parts (NCCL then stages through host
  // memory, its SHM transport). NVLink peer access is unaffected.
  bool pcie_p2p = true;
  int sms = 0;  // streaming multiprocessors (0: not in the sources above)
};

// Dense BF16/FP16 tensor rates: the datasheets print the 2:4-sparsity figure; dense is half of it.
inline const GpuSpec kH100Sxm{"H100 SXM5 80GB",
                              GBps(3350),
                              989.5e12,
                              "NVIDIA H100 datasheet: HBM3 3.35 TB/s; BF16 1979 TFLOP/s with sparsity, 989.5 dense; "
                              "132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper, SXM5)",
                              true,
                              132};
inline const GpuSpec kH200Sxm{"H200 SXM 141GB",
                              GBps(4800),
                              989.5e12,
                              "NVIDIA H200 datasheet: 141 GB HBM3e 4.8 TB/s; BF16 1979 TFLOP/s with sparsity, "
                              "989.5 dense; 132 SMs (the H100 SXM5's GH100, as the H200's device query reports)",
                              true,
                              132};
inline const GpuSpec kA100Sxm{"A100 SXM4 80GB", GBps(2039), 312e12,
                              "NVIDIA A100 datasheet: HBM2e 2039 GB/s (80GB SXM); BF16 312 TFLOP/s dense"};
inline const GpuSpec kL40S{"L40S 48GB", GBps(864), 362.05e12,
                           "NVIDIA L40S datasheet: GDDR6 864 GB/s; BF16 362.05 TFLOP/s dense (733 with sparsity)"};
inline const GpuSpec kH20{
    "H20 96GB", GBps(4000), 148e12,
    "NVIDIA HGX H20 product brief (2024): 96 GB HBM3 4.0 TB/s; FP16/BF16 tensor 148 TFLOP/s dense; "
    "NVLink 900 GB/s bidirectional"};
inline const GpuSpec kB200{"B200 SXM 180GB", GBps(8000), 2.25e15,
                           "NVIDIA DGX B200 datasheet (2024): 8 GPUs, 1,440 GB HBM3e, 64 TB/s in sum (8 TB/s each); "
                           "FP16/BF16 tensor 4.5 PFLOP/s with sparsity per GPU, 2.25 dense"};
inline const GpuSpec kA100Sxm40{"A100 SXM4 40GB", GBps(1555), 312e12,
                                "NVIDIA A100 datasheet: HBM2 1555 GB/s (40GB SXM); BF16 312 TFLOP/s dense"};
// GeForce: FP16 tensor rate with FP16 accumulation (FP32 accumulation runs at half on GeForce parts).
inline const GpuSpec kRtx2080Ti{"GeForce RTX 2080 Ti 11GB", GBps(616), 107.6e12,
                                "NVIDIA Turing architecture whitepaper (2018), RTX 2080 Ti reference: GDDR6 352-bit "
                                "14 Gb/s = 616 GB/s; FP16 tensor 107.6 TFLOP/s (FP16 accumulate); PCIe P2P not "
                                "supported by the GeForce driver",
                                false};

// The spec of a GPU by its model name as nvidia-smi prints it ("NVIDIA GeForce RTX 2080 Ti", "NVIDIA H100 80GB
// HBM3"); nullptr when none of the specs above matches.
inline const GpuSpec* find_gpu_spec(const std::string& name) {
  std::string m;
  for (char c : name) m += char(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* x) { return m.find(x) != std::string::npos; };
  if (has("2080 ti")) return &kRtx2080Ti;
  if (has("b200")) return &kB200;
  if (has("h200")) return &kH200Sxm;
  if (has("h100")) return &kH100Sxm;
  if (has("h20")) return &kH20;
  if (has("a100")) return has("40gb") ? &kA100Sxm40 : &kA100Sxm;
  if (has("l40s")) return &kL40S;
  return nullptr;
}

// Per-hop latencies. NCCL's tuning tables (src/graph/tuning.cc, hwLatencies, LL protocol) give a latency per
// ring step; we split a step over the hops of its typical path so that sums over a path reproduce it.
constexpr Seconds kNvlinkHop = microseconds(0.3);
inline const char* kNvlinkHopSource =
    "0.3 us: NCCL tuning.cc hwLat NVLink LL 0.6 us per step over 2 hops (GPU-NVSwitch-GPU)";
constexpr Seconds kPcieHop = microseconds(0.5);
inline const char* kPcieHopSource = "0.5 us: NCCL tuning.cc hwLat PCI LL 1.0 us per step over 2 hops (GPU-switch-GPU)";
constexpr Seconds kUpiHop = microseconds(0.5);
inline const char* kUpiHopSource =
    "0.5 us: assumed equal to a PCIe hop (NCCL's tables have no separate CPU-link figure)";
constexpr Seconds kMemHop = microseconds(0.1);
inline const char* kMemHopSource = "0.1 us: assumed, the order of an idle DRAM access on Xeon/EPYC servers";
constexpr Seconds kNetHop = microseconds(0.35);
inline const char* kNetHopSource =
    "0.35 us: NCCL tuning.cc hwLat NET ring LL 2.7 us per step, less 4 PCIe hops (2.0 us), over the 2 network hops "
    "of a same-leaf path";

// NVLink 2/3/4 all signal 25 GB/s per link per direction; NVLink 5 doubles it.
constexpr BytesPerSec kNvlinkPerLink = GBps(25);
inline const char* kNvlink4Source =
    "NVLink 4: 25 GB/s per link per direction (H100/H200 datasheet: 900 GB/s "
    "bidirectional over 18 links)";
inline const char* kNvlink3Source =
    "NVLink 3: 25 GB/s per link per direction (A100 datasheet: 600 GB/s "
    "bidirectional over 12 links)";
constexpr BytesPerSec kNvlink5PerLink = GBps(50);
inline const char* kNvlink5Source =
    "NVLink 5: 50 GB/s per link per direction (B200 / DGX B200 datasheet: 1.8 TB/s bidirectional per GPU over 18 "
    "links)";
inline const char* kNvlink4H20Source =
    "NVLink 4: 25 GB/s per link per direction (HGX H20 product brief: NVLink 900 GB/s bidirectional, 18 links)";
inline const char* kNvlink2BridgeSource =
    "NVLink 2 bridge on Turing: 2 x8 links of 25 GB/s per direction (Turing whitepaper: RTX 2080 Ti, two NVLink "
    "x8 links, 100 GB/s bidirectional in total)";
// Measured on the 2 x H200 machine (nvidia-h200-x2), 2026-11-22: copy engine, one direction, 1 GiB.
constexpr BytesPerSec kH200MeasuredNvlink = GBps(397);
inline const char* kH200MeasuredNvlinkSource =
    "measured on nvidia-h200-x2 2026-11-22 (shared/hardware/h200x2.md): cudaMemcpyPeerAsync 1 GiB one direction "
    "397 GB/s between 2 GPUs through NVSwitch, used as the effective NV18 rate (datasheet 18 x 25 = 450 GB/s)";

// PCIe per direction: GT/s x lanes x 128b/130b / 8 bits.
constexpr BytesPerSec kPcieGen5x16 = GBps(63.0);
inline const char* kPcieGen5Source = "PCIe 5.0 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s per direction";
constexpr BytesPerSec kPcieGen4x16 = GBps(31.5);
inline const char* kPcieGen4Source = "PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s per direction";
constexpr BytesPerSec kPcieGen3x16 = GBps(15.75);
inline const char* kPcieGen3Source = "PCIe 3.0 x16: 8 GT/s x 16 lanes x 128/130 / 8 = 15.75 GB/s per direction";
// PCIe per direction for a generation (1..6) and lane count: GT/s x lanes x encoding / 8. 0 for an unknown one.
inline double pcie_GBps(int gen, int lanes) {
  static const double gts[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (gen < 1 || gen > 6 || lanes < 1) return 0;
  const double enc = gen <= 2 ? 8.0 / 10 : gen <= 5 ? 128.0 / 130 : 242.0 / 256;  // 8b/10b, 128b/130b, FLIT
  return gts[gen] * lanes * enc / 8;
}
// Transaction-layer overhead of a PCIe transfer: each TLP carries ~24 bytes beside its payload (3-4 DW header,
// sequence number, LCRC, framing; PCI Express Base Specification 3.0, sections 2.2 and 4.2). Posted writes carry
// up to the Max Payload Size (256 B on PCIe switches of consumer and server platforms); reads return completions
// split at the Read Completion Boundary (64 B), and an SM's loads from host memory are small reads.
constexpr double kTlpOverheadBytes = 24;
constexpr double kPcieWritePayload = 256;
constexpr double kPcieReadCompletion = 64;
inline const char* kPcieTlpSource =
    "PCIe TLP overhead ~24 B per packet (header, sequence, LCRC, framing: PCIe Base Spec 3.0 sec. 2.2, 4.2); "
    "writes at 256 B Max Payload Size, reads returned in 64 B completions (Read Completion Boundary)";
constexpr BytesPerSec kPcieH200x2 = GBps(48);
inline const char* kPcieH200x2Source =
    "virtualised PCIe on nvidia-h200-x2: NCCL 2.28 could not read the link speed and assumed 48 GB/s "
    "(shared/hardware/h200x2.md, 2026-11-22)";

// CPU-to-CPU links. NCCL's topo.h gives the effective GPU peer-to-peer bandwidth across them, which is what
// GPU traffic crossing sockets gets (far below the raw link rate).
constexpr BytesPerSec kUpiSapphireRapids = GBps(22);
inline const char* kUpiSapphireRapidsSource =
    "NCCL src/graph/topo.h SRP_QPI_BW = 22 GB/s: effective GPU P2P across Sapphire Rapids UPI (raw: 4 UPI 2.0 "
    "links at 16 GT/s)";
constexpr BytesPerSec kXgmiRome = GBps(16);
inline const char* kXgmiRomeSource = "NCCL src/graph/topo.h AMD_BW = 16 GB/s: effective GPU P2P across AMD xGMI";
constexpr BytesPerSec kUpiSkylake = GBps(10);
inline const char* kUpiSkylakeSource = "NCCL src/graph/topo.h SKL_QPI_BW = 10 GB/s (Skylake..Ice Lake UPI)";
constexpr BytesPerSec kQpiBroadwell = GBps(6);
inline const char* kQpiBroadwellSource = "NCCL src/graph/topo.h BDW_QPI_BW = 6 GB/s (Broadwell QPI)";
constexpr BytesPerSec kUpiEmeraldRapids = GBps(40);
inline const char* kUpiEmeraldRapidsSource = "NCCL src/graph/topo.h ERP_QPI_BW = 40 GB/s (Emerald Rapids UPI)";

// Host memory per socket (peak, reads + writes). Each direction of the CPU<->memory link carries this rate:
// the model treats writes into and reads out of a socket's DRAM as two shared resources.
constexpr BytesPerSec kDdr5x8 = GBps(307.2);
inline const char* kDdr5x8Source =
    "8 channels DDR5-4800 x 8 B = 307.2 GB/s per socket (Xeon Platinum 8480C, Intel ARK)";
constexpr BytesPerSec kDdr5_5600x8 = GBps(358.4);
inline const char* kDdr5_5600x8Source =
    "8 channels DDR5-5600 x 8 B = 358.4 GB/s per socket (5th gen Xeon / Emerald Rapids, Intel ARK)";
constexpr BytesPerSec kDdr4x8 = GBps(204.8);
inline const char* kDdr4x8Source = "8 channels DDR4-3200 x 8 B = 204.8 GB/s per socket (AMD EPYC 7742 specification)";
constexpr BytesPerSec kDdr4_2933x6 = GBps(140.8);
inline const char* kDdr4_2933x6Source =
    "assumed: 6 channels DDR4-2933 x 8 B = 140.8 GB/s per socket (a Cascade Lake Xeon Gold, Intel ARK); the "
    "published box names no CPU";

// NICs: the line rate is the per-direction bandwidth of the NIC's network link.
constexpr BytesPerSec kNdr400 = GBps(50);
inline const char* kNdr400Source = "ConnectX-7 NDR 400 Gb/s = 50 GB/s per direction (NVIDIA ConnectX-7 datasheet)";
constexpr BytesPerSec kHdr200 = GBps(25);
inline const char* kHdr200Source = "ConnectX-6 HDR 200 Gb/s = 25 GB/s per direction (NVIDIA ConnectX-6 datasheet)";
constexpr BytesPerSec kEfa400 = GBps(50);
inline const char* kEfa400Source =
    "EFA v4 400 Gb/s = 50 GB/s per direction (AWS p6-b200: 8 x 400 Gb/s EFAv4 per instance, 3200 Gb/s in sum)";
// Payload share of a network link: InfiniBand and RoCE send 4096-byte MTU packets with ~60 bytes of headers
// (LRH/BTH/RETH/ICRC/VCRC; InfiniBand Architecture Specification vol. 1, ch. 5 and 9): 4096 / 4156.
constexpr double kNetPayloadEfficiency = 4096.0 / 4156.0;
inline const char* kNetPayloadSource =
    "4096-byte MTU with ~60 bytes of transport headers per packet (IBTA spec vol. 1 ch. 5, 9): 0.986 of the line "
    "rate carries payload";

inline Link make_link(LinkKind kind, BytesPerSec bw, int lanes, Seconds latency, const std::string& bw_source,
                      const std::string& latency_source) {
  Link l;
  l.kind = kind;
  l.bw = bw;
  l.lanes = lanes;
  l.latency = latency;
  l.source = "bw: " + bw_source + "; latency: " + latency_source;
  return l;
}

}  // namespace cclab::topo::hw
