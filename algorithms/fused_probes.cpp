#include "algorithms/fused_probes.hpp"

#include "algorithms/transport.hpp"
#include "core/error.hpp"

namespace cclab {

std::string_view fused_probe_kind(FusedProbe p) {
  switch (p) {
    case FusedProbe::oneway:
      return "oneway";
    case FusedProbe::exchange:
      return "exchange";
    case FusedProbe::puts:
      return "puts";
    case FusedProbe::reduce:
      return "reduce";
    case FusedProbe::exchange_pre:
      return "exchange_pre";
    case FusedProbe::ring:
      return "ring";
    case FusedProbe::chain:
      return "chain";
    case FusedProbe::fanout:
      return "fanout";
  }
  return "?";
}

bool fused_probe_is_wide(FusedProbe p) {
  return p == FusedProbe::ring || p == FusedProbe::chain || p == FusedProbe::fanout;
}

const std::vector<FusedProbeRun>& fused_calibration_probes(bool wide) {
  using P = FusedProbe;
  static const std::vector<FusedProbeRun> two = {
      {P::oneway, 0},   {P::oneway, 1}, {P::oneway, 8}, {P::exchange, 0}, {P::exchange, 1},
      {P::exchange, 8}, {P::puts, 8},   {P::reduce, 1}, {P::reduce, 8},   {P::exchange_pre, 1}};
  // Every rank but one at work: the ring's one step and all its steps, the chain's and the fan-out's longest.
  constexpr int k = kFusedWideProbeRanks - 1;
  static const std::vector<FusedProbeRun> four = {{P::ring, 1}, {P::ring, k}, {P::chain, k}, {P::fanout, k}};
  return wide ? four : two;
}

std::string fused_probe_series(FusedProbe p, int n) {
  return "fused.prog." + std::string(fused_probe_kind(p)) + "." + std::to_string(n);
}

Schedule fused_probe(FusedProbe p, int n, int64_t bytes) {
  if (n < 0 || bytes < 4 || bytes % 4 != 0) throw_input("fused probe: n >= 0 and a positive multiple of 4 bytes");
  const bool wide = fused_probe_is_wide(p);
  const int ranks = wide ? kFusedWideProbeRanks : 2;
  if (wide && (n < 1 || (p != FusedProbe::ring && n > ranks - 1)))
    throw_input("fused probe " + std::string(fused_probe_kind(p)) + ": n from 1" +
                (p == FusedProbe::ring ? std::string() : " to " + std::to_string(ranks - 1)));
  Schedule s;
  s.algo = fused_probe_series(p, n);
  s.collective = "alltoall";  // buffers of equal size per rank; the probes are timed, never checked
  s.nranks = ranks;
  s.dtype = DType::f32;
  s.count = bytes / 4 * ranks;
  const int64_t stride = (bytes + 255) / 256 * 256;  // each op its own 256-byte aligned slot
  const int64_t room = stride * (n + 2);
  s.buffers.assign(size_t(ranks), BufferSizes{room, room, room});
  Transport t(s);
  switch (p) {
    case FusedProbe::oneway:
    case FusedProbe::exchange_pre:
      for (int r = 0; r < (p == FusedProbe::oneway ? 1 : 2); ++r) {
        Ref last = in(r);
        for (int i = 0; i < n; ++i) {
          t.copy(r, last, scratch(r, i * stride), bytes);
          last = scratch(r, i * stride);
        }
        t.put(r, last, out(1 - r), bytes);
      }
      break;
    case FusedProbe::puts:
      for (int i = 0; i <= n; ++i) t.put(0, in(0, i * stride), out(1, i * stride), bytes);
      break;
    case FusedProbe::exchange:
    case FusedProbe::reduce: {
      const bool red = p == FusedProbe::reduce;
      OpId sent[2];
      for (int r = 0; r < 2; ++r) sent[r] = t.put(r, in(r), red ? scratch(1 - r) : out(1 - r), bytes);
      for (int r = 0; r < 2; ++r) {
        Ref last = red ? scratch(r) : out(r);
        for (int i = 0; i < n; ++i) {
          const Ref dst = red ? out(r, i * stride) : scratch(r, (i + 1) * stride);
          if (red)
            t.reduce(r, last, in(r, stride), dst, bytes,
                     i == 0 ? Transport::DepList{sent[1 - r]} : Transport::DepList{});
          else
            t.copy(r, last, dst, bytes, i == 0 ? Transport::DepList{sent[1 - r]} : Transport::DepList{});
          last = dst;
        }
      }
      break;
    }
    case FusedProbe::ring: {
      // Step k: rank r puts slot k - 1 of its output (what rank r - 1 put there at step k - 1; its input at step
      // 0) into slot k of rank r + 1's output.
      std::vector<OpId> last(size_t(ranks), kNoOp);
      for (int k = 0; k < n; ++k) {
        std::vector<OpId> now(static_cast<size_t>(ranks), kNoOp);
        for (int r = 0; r < ranks; ++r) {
          const int prev = (r + ranks - 1) % ranks, next = (r + 1) % ranks;
          const Ref src = k == 0 ? in(r) : out(r, (k - 1) * stride);
          now[size_t(r)] = t.put(r, src, out(next, k * stride), bytes,
                                 k == 0 ? Transport::DepList{} : Transport::DepList{last[size_t(prev)]});
        }
        last = now;
      }
      break;
    }
    case FusedProbe::chain: {
      OpId prev = t.put(0, in(0), out(1), bytes);
      for (int h = 1; h < n; ++h) prev = t.put(h, out(h), out(h + 1), bytes, Transport::DepList{prev});
      break;
    }
    case FusedProbe::fanout:
      for (int q = 1; q <= n; ++q) t.put(0, in(0), out(q), bytes);
      break;
  }
  return s;
}

}  // namespace cclab
