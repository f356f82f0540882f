// Calibration: microbenchmark measurements in, fitted model parameters out. CPU code only; the GPU side
// (`cclab calibrate`'s microbenchmarks) measures and nothing else.
//
// Leave-out discipline: the input type below can hold only microbenchmark series (point-to-point copies,
// local reductions, latencies, matmuls), never collective records. A profile fitted here therefore never
// saw the collectives it will be asked to predict. load_measurements() refuses records files and folders,
// and validate() refuses any series name that is not one of the microbenchmarks listed in bench_names().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace cclab::model {

// One timed point: mean time per operation of `reps` back-to-back operations.
struct MicroSample {
  int64_t bytes = 0;  // payload per operation (per direction for *.bidir; per operand for reduce.*)
  Seconds time;       // mean per operation
  int reps = 0;
  int64_t m = 0, k = 0, n = 0;  // matmul.* only: C(m x n) = A(m x k) B(k x n)
  double flops() const { return 2.0 * double(m) * double(k) * double(n); }
};

// One microbenchmark swept over sizes (or shapes). `name` is one of bench_names().
struct MicroSeries {
  std::string name;
  std::string method;  // how it was measured, one line (API, direction, grid, timing method)
  std::vector<MicroSample> samples;
  // Where a series was taken from another calibration than the file's own (scripts/take_series.py): that run's
  // origin, GPUs, date and commit, one line; empty for the file's own.
  std::string origin;
};

// Everything one `cclab calibrate` run measured, with where and when.
struct MicroMeasurements {
  std::string machine;       // host name
  std::string gpu_name;      // cudaDeviceProp::name
  std::string driver;        // driver version string
  std::string cuda_runtime;  // CUDA runtime version
  std::string nccl_version;  // ncclGetVersion (recorded for provenance; NCCL is never timed here)
  std::string date;          // ISO 8601
  std::string commit;        // cclab commit that measured
  std::string origin;        // "cclab calibrate" or, for hand-entered numbers, where they were published
  int gpus = 0;
  std::vector<MicroSeries> series;
};

// The microbenchmarks calibration understands: name and what it measures.
//   p2p.ce.uni / p2p.ce.bidir   copy engine (cudaMemcpyPeerAsync) GPU0->GPU1, or both directions at once
//   p2p.sm.uni / p2p.sm.bidir   SM-driven peer copy (a kernel loading from peer memory, 16-byte vectors)
//   copy.local                  device-to-device copy on one GPU (bytes = bytes copied)
//   reduce.local.<dtype>        dst = a + b on one GPU (bytes = bytes of one operand)
//   reduce.local.cta.<dtype>    the same with one CTA of 512 threads (a kernel reducing on few CTAs)
//   reduce.local.cta256/cta128.<dtype>  and with 256 and 128 threads (fewer vector pairs in flight)
//   reduce.peer.<dtype>         dst = local + peer on one GPU (peer operand read over NVLink)
//   latency.launch              GPU time per empty kernel launched back to back, all queued first (bytes = 0)
//   latency.launch_host         host (CPU) time of one kernel launch call
//   latency.event               dependent empty kernels ping-ponging between two streams of one GPU via
//                               events, per hop
//   latency.event_peer          the same between a stream of GPU0 and one of GPU1
//   latency.flag                flag round trip: GPU0 writes a flag in GPU1's memory, GPU1 answers
//   p2p.sm_store.uni / .bidir   SM-driven peer copy by stores: a kernel on the source storing into the peer
//   graph.copy / graph.copy2    CUDA graph (20 iterations, as the executor replays): one / two 8-byte peer
//                               copies per iteration on the origin stream (per copy node)
//   p2p.sm.cta / sm_store.cta   the same with one CTA of 512 threads (a fused kernel's block group)
//   p2p.sm.cta256, .cta128 / sm_store.cta256, .cta128  and with 256 and 128 threads (fewer vectors in flight)
//   p2p.sm.cta.bidir / sm_store.cta.bidir  one CTA of 512 threads on each GPU at once, both ways
//   p2p.ll_store.bidir          LL-style flagged 8-byte-word stores into the peer, both ways (data bytes)
//   graph.kernel / kernel_pdl   the same with one empty kernel per iteration (per kernel node), plain or
//                               with programmatic dependent launch
//   graph.copy_local            one 8-byte copy within GPU0 per iteration (local copy node)
//   graph.fork_local / _peer    fork to a stream of GPU0 / GPU1, one 8-byte copy there, join back
//   graph.fork_both.<k>         fork to k streams on each of 2 GPUs, an 8-byte peer copy on each, join all
//   graph.fork_kernels.<k>      the same with an empty kernel on each stream
//   graph.fork_mix.1            2 streams on each GPU: a copy on one, an empty kernel on the other
//   graph.fork_local2           2 streams of GPU0: a copy within GPU0 on one, a copy into GPU1 on the other
//   graph.fork_local_mix        1 stream of GPU0: a copy within GPU0, then one into GPU1
//   graph.flag_chain.<h>        per-GPU graphs of PDL launches synchronised only by h flag hops per launch
//                               (barrier + st.release.sys / ld.acquire.sys, as the fused path)
//   graph.hop_peer              fork to GPU1, 4 copies alternating GPU1 / GPU0 streams through events, join
//   nccl.p2p.uni / .bidir       ncclSend/ncclRecv GPU0 -> GPU1 (or both ways at once), NCCL's protocol choice
//   matmul.<dtype>              cuBLAS GEMM, by shape (m, k, n set)
// <dtype> is float, half or bfloat16.
const std::vector<std::string>& bench_names();
bool is_bench_name(std::string_view name);
// Series the calibration measures that no prediction reads (diagnostics: other kernel variants, graph shapes and
// transfers the plans never make): they stay in the measurements file and leave the profile's tables.
bool is_diagnostic_series(std::string_view name);

// Throws an input error naming the first problem: an unknown series name (e.g. a collective), an empty
// series, non-positive times, a matmul sample without a shape.
void validate(const MicroMeasurements& m);

// JSON form of the measurements (embedded in every profile so that a fit can be redone offline).
std::string measurements_to_json(const MicroMeasurements& m);  // a JSON object
MicroMeasurements measurements_from_json_text(const std::string& text, const std::string& where);
// Reads measurements from a measurements JSON file or a profile (the file its "measurements" names). Throws an
// input error when the path is a records CSV or a folder: calibration never reads collective records.
MicroMeasurements load_measurements(const std::string& path);

// The harness condition a series' method states, which pricing a plan from the series needs: kernels launched per
// replayed graph ("graphs of N", or "[M launches per graph, not N]" for a repeat at another count); 0 where the
// method names none.
struct SeriesConditions {
  int launches_per_replay = 0;
};
SeriesConditions series_conditions(const std::string& method);

// t(x) = alpha + x / (beta * eta(x)), eta(x) = 1 / (1 + (x_half / x)^p): a latency, a peak rate and a
// saturating efficiency (eta = 1/2 at x_half, sharper with larger p, 0 < p < 1). x is bytes (or flops
// for matmuls, then beta is in flop/s). x_half = 0 means a plain alpha-beta line.
struct SaturatingFit {
  Seconds alpha;
  BytesPerSec beta;   // peak rate (bytes/s, or flop/s for matmul fits)
  double x_half = 0;  // size at which the efficiency is 1/2
  double p = 1;       // sharpness of the efficiency curve
  // Quality over the fitted points: relative residuals (model - measured) / measured.
  double rms_rel_residual = 0, max_rel_residual = 0;
  int points = 0;

  double efficiency(double x) const;
  Seconds time(double x) const;
};

// Weighted least squares (relative residuals, so 8 B and 1 GiB weigh alike) of t(x) above; p is
// searched on a grid and refined, alpha and 1/beta and the efficiency term are linear given p. The
// efficiency term is kept only where the line misses by more than timing noise (0.5% RMS) and the curve
// lowers the RMS residual by at least 10% (otherwise a plain alpha-beta line). Throws an input error with fewer than 2
// distinct x or non-positive times.
SaturatingFit fit_saturating(const std::vector<double>& x, const std::vector<Seconds>& t);
// The plain alpha-beta line only (alpha >= 0).
SaturatingFit fit_alpha_beta(const std::vector<double>& x, const std::vector<Seconds>& t);

// A latency measured repeatedly: the median, and the spread as the residual.
struct LatencyFit {
  Seconds value;
  double rms_rel_residual = 0, max_rel_residual = 0;
  int points = 0;
};
LatencyFit fit_latency(const std::vector<Seconds>& t);

// All fits of one measurement set, keyed by series name. A series of one point (a published peak figure)
// gets a rate only (alpha 0, points 1). `alpha`/`beta` of a reduce.* fit are per operand
// byte; a matmul.* fit's beta is flop/s.
struct Calibration {
  MicroMeasurements measured;
  struct Curve {
    std::string series;
    SaturatingFit fit;
  };
  struct Latency {
    std::string series;
    LatencyFit fit;
  };
  std::vector<Curve> curves;
  std::vector<Latency> latencies;

  const Curve* curve(std::string_view series) const;
  const Latency* latency(std::string_view series) const;
};

// Fits every series of validated measurements.
Calibration calibrate(const MicroMeasurements& m);

}  // namespace cclab::model
