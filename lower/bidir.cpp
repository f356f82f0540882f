// allreduce.bidir's lowering: the mode by size and each mode's launch (lower/bidir.hpp), and the
// copy-engine schedules the executor runs on the general lowering.
#include "lower/bidir.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "algorithms/copy_pipeline.hpp"
#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

namespace cclab::lower {

std::string_view bidir_mode_name(BidirMode m) {
  switch (m) {
    case BidirMode::ll:
      return "ll";
    case BidirMode::flash:
      return "flash";
    case BidirMode::stream:
      return "stream";
    case BidirMode::copy:
      return "copy";
    case BidirMode::push:
      return "push";
    case BidirMode::lamport:
      return "lamport";
    case BidirMode::twoshot:
      return "twoshot";
    case BidirMode::ring:
      return "ring";
  }
  return "?";
}

BidirMode parse_bidir_mode(std::string_view s) {
  for (BidirMode m : {BidirMode::ll, BidirMode::flash, BidirMode::stream, BidirMode::copy, BidirMode::push,
                      BidirMode::lamport, BidirMode::twoshot, BidirMode::ring})
    if (bidir_mode_name(m) == s) return m;
  throw_input("unknown bidir mode '" + std::string(s) + "' (ll, flash, stream, copy, push, lamport, twoshot, ring)");
}

void BidirParams::apply(const std::string& tune) {
  std::stringstream ss(tune);
  std::string kv;
  while (std::getline(ss, kv, ',')) {
    const auto eq = kv.find('=');
    if (kv.empty() || eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1), flag = "--tune " + k;
    auto i = [&](int lo, int hi) { return int(parse_int(flag, v, lo, hi)); };
    if (k == "flash_blocks")
      flash_blocks = i(0, kBidirMaxBlocks);
    else if (k == "flash_threads")
      flash_threads = i(32, 512);
    else if (k == "flash_stages")
      flash_stages = i(2, 4);
    else if (k == "flash_unroll")
      flash_unroll = i(1, 4);
    else if (k == "lanes")
      lanes = i(0, kBidirMaxLanes);
    else if (k == "slots")
      slots = i(2, 64);
    else if (k == "slot_bytes")
      slot_bytes = parse_size(flag, v);
    else if (k == "stream_threads")
      stream_threads = i(64, 512);  // the kernel is built for at most 512 threads, as the others
    else if (k == "ll_blocks")
      ll_blocks = i(0, kBidirMaxBlocks);
    else if (k == "ll_threads")
      ll_threads = i(32, 512);
    else if (k == "ll_max_bytes")
      ll_max_bytes = parse_size(flag, v);
    else if (k == "ll_pdl")
      ll_pdl = i(0, 1) != 0;
    else if (k == "flash_pdl")
      flash_pdl = i(0, 1) != 0;
    else if (k == "ce_pieces")
      ce_pieces = i(0, 1024);
    else if (k == "ce_chunk")
      ce_chunk = parse_size(flag, v);
    else if (k == "ce_slots")
      ce_slots = i(1, 64);
    else if (k == "ce_push")
      ce_push = i(0, 1) != 0;
    else if (k == "ce_reduce_blocks")
      ce_reduce_blocks = i(1, 4096);
    else if (k == "ce_split")
      ce_split = i(0, 1) != 0;
    else if (k == "flash_engine") {
      if (v != "ldg" && v != "cp.async") throw_input("--tune flash_engine: ldg or cp.async, not '" + v + "'");
      flash_engine = v;
    } else if (k == "flash_ldg_unroll")
      flash_ldg_unroll = i(1, 8);
    else if (k == "auto_ll_max")
      auto_ll_max = parse_size(flag, v);
    else if (k == "auto_flash_max")
      auto_flash_max = parse_size(flag, v);
    else if (k == "auto_large")
      auto_large = parse_bidir_mode(v);
    else if (k == "auto_mid")
      auto_mid = parse_bidir_mode(v);
    else if (k == "wide_ll_max")
      wide_ll_max = parse_size(flag, v);
    else if (k == "wide_mid_max")
      wide_mid_max = parse_size(flag, v);
    else if (k == "wide_ring_min")
      wide_ring_min = parse_size(flag, v);
    else if (k == "wide_mid")
      wide_mid = parse_bidir_mode(v);
    else if (k == "wide_large")
      wide_large = parse_bidir_mode(v);
    else if (k == "twoshot_blocks")
      twoshot_blocks = i(0, kBidirMaxBlocks);
    else if (k == "twoshot_threads")
      twoshot_threads = i(64, 512);
    else if (k == "twoshot_unroll")
      twoshot_unroll = i(1, 4);
    else if (k == "twoshot_load_unroll")
      twoshot_load_unroll = i(0, 4);
    else if (k == "twoshot_pdl")
      twoshot_pdl = i(0, 1) != 0;
    else if (k == "twoshot_push")
      twoshot_push = i(0, 1) != 0;
    else if (k == "twoshot_load_max")
      twoshot_load_max = parse_size(flag, v);
    else if (k == "push_blocks")
      push_blocks = i(0, kBidirMaxBlocks);
    else if (k == "push_threads")
      push_threads = i(64, 512);
    else if (k == "push_unroll")
      push_unroll = i(1, 4);
    else if (k == "push_pdl")
      push_pdl = i(0, 1) != 0;
    else if (k == "lamport_blocks")
      lamport_blocks = i(0, kBidirMaxBlocks);
    else if (k == "lamport_threads")
      lamport_threads = i(64, 512);
    else if (k == "lamport_unroll")
      lamport_unroll = i(1, 4);
    else if (k == "lamport_ahead")
      lamport_ahead = i(1, 64);
    else if (k == "lamport_split")
      lamport_split = i(0, 1) != 0;
    else if (k == "lamport_pdl")
      lamport_pdl = i(0, 1) != 0;
    else if (k == "lamport_max_bytes")
      lamport_max_bytes = parse_size(flag, v);
    else if (k == "kernel_timeout")
      kernel_timeout_s = parse_double(flag, v, 0.001, 3600);
    // Other keys belong to the other readers of the settings (lower/lowering.hpp checks that each is known).
  }
  if (slot_bytes % 16 != 0 || slot_bytes <= 0) throw_input("--tune slot_bytes must be a positive multiple of 16");
  if (ce_chunk % 16 != 0 || ce_chunk <= 0) throw_input("--tune ce_chunk must be a positive multiple of 16");
  if (stream_threads % 64 != 0) throw_input("--tune stream_threads must be a multiple of 64");
  if (push_threads % 64 != 0) throw_input("--tune push_threads must be a multiple of 64");
  if (lamport_threads % 64 != 0) throw_input("--tune lamport_threads must be a multiple of 64");
  if (lamport_max_bytes > (int64_t(1) << 30)) throw_input("--tune lamport_max_bytes must be at most 1G");
  if (auto_mid == BidirMode::ll || runs_as_schedule(auto_mid))
    throw_input("--tune auto_mid: flash, push, stream, lamport or twoshot");
  if (wide_mid == BidirMode::ll || runs_as_schedule(wide_mid))
    throw_input("--tune wide_mid: flash, push, stream, lamport or twoshot");
  if (twoshot_threads % (twoshot_push ? 64 : 32) != 0)
    throw_input("--tune twoshot_threads must be a multiple of 32 (64 with twoshot_push: half store, half reduce)");
  if (ll_max_bytes > (int64_t(1) << 20)) throw_input("--tune ll_max_bytes must be at most 1M");
}

std::string BidirParams::describe(BidirMode m) const {
  std::ostringstream os;
  os << "mode=" << bidir_mode_name(m);
  switch (m) {
    case BidirMode::ll:
      os << " threads=" << ll_threads << (ll_pdl ? " pdl" : "");
      break;
    case BidirMode::flash:
      os << " engine=" << flash_engine << (flash_pdl ? " pdl" : "") << " threads=" << flash_threads
         << " stages=" << flash_stages << " unroll=" << (flash_engine == "ldg" ? flash_ldg_unroll : flash_unroll);
      break;
    case BidirMode::stream:
      os << " slots=" << slots << " slot_bytes=" << slot_bytes << " threads=" << stream_threads;
      break;
    case BidirMode::push:
      os << " threads=" << push_threads << " unroll=" << push_unroll << (push_pdl ? " pdl" : "");
      break;
    case BidirMode::lamport:
      os << " threads=" << lamport_threads << " unroll=" << lamport_unroll << " ahead=" << lamport_ahead
         << (lamport_split ? " split" : "") << (lamport_pdl ? " pdl" : "");
      break;
    case BidirMode::twoshot:
      os << " threads=" << twoshot_threads << " unroll=" << twoshot_unroll << (twoshot_pdl ? " pdl" : "")
         << (twoshot_push ? " push" : "")
         << (twoshot_push && twoshot_load_max > 0
                 ? " (loads to " + std::to_string(twoshot_load_max) + " B" +
                       (twoshot_load_unroll > 0 ? ", unroll=" + std::to_string(twoshot_load_unroll) : "") + ")"
                 : "");
      break;
    case BidirMode::ring:
      os << " allreduce.ring's schedule";
      break;
    case BidirMode::copy:
      os << (ce_split ? " reduce-scatter+all-gather" : " one-shot") << " chunk="
         << (ce_pieces > 0 ? "part/" + std::to_string(ce_pieces) + " in [4M,64M]" : std::to_string(ce_chunk))
         << " slots=" << ce_slots << (ce_push ? " push" : " pull");
      break;
  }
  return os.str();
}

BidirMode bidir_mode_for(std::string_view algo, int64_t bytes, int nranks, std::optional<BidirMode> tuned,
                         const BidirParams& p) {
  constexpr std::string_view family = "allreduce.bidir";
  if (algo.size() > family.size()) return parse_bidir_mode(algo.substr(family.size() + 1));
  return tuned ? *tuned : choose_bidir_mode(bytes, nranks, p);
}

int64_t lamport_chunk_bytes(int64_t buffer_bytes) { return std::max<int64_t>(256, buffer_bytes / 256 * 256); }

BidirMode choose_bidir_mode(int64_t bytes, int nranks, const BidirParams& p) {
  // lamport keeps receive buffers of at most lamport_max_bytes: larger messages go on.
  auto fits = [&](BidirMode m) { return m != BidirMode::lamport || bytes <= p.lamport_max_bytes; };
  if (nranks > 2) {
    if (bytes <= std::min(p.wide_ll_max, p.ll_max_bytes)) return BidirMode::ll;
    if (bytes <= p.wide_mid_max && fits(p.wide_mid)) return p.wide_mid;
    if (p.wide_ring_min > 0 && bytes >= p.wide_ring_min) return BidirMode::ring;
    return fits(p.wide_large) ? p.wide_large : BidirMode::twoshot;
  }
  if (bytes <= std::min(p.auto_ll_max, p.ll_max_bytes)) return BidirMode::ll;
  if ((bytes <= p.auto_flash_max || nranks > 8) && fits(p.auto_mid)) return p.auto_mid;
  return fits(p.auto_large) ? p.auto_large : BidirMode::copy;
}

BidirLaunch bidir_launch(BidirMode mode, int64_t bytes, int nranks, bool in_place, const BidirParams& p,
                         const LaunchLimits& gpu) {
  if (runs_as_schedule(mode))
    throw_input(std::string(bidir_mode_name(mode)) + " mode runs as a schedule on the general lowering, not a kernel");
  if (mode == BidirMode::ll && bytes > p.ll_max_bytes)
    throw_input("ll mode handles at most " + std::to_string(p.ll_max_bytes) + " bytes");
  if (mode == BidirMode::lamport && bytes > p.lamport_max_bytes)
    throw_input("lamport mode handles at most " + std::to_string(p.lamport_max_bytes) +
                " bytes (--tune lamport_max_bytes; it keeps 2 receive buffers of that size per peer)");
  BidirLaunch l;
  l.mode = mode;
  const int sms = std::max(1, gpu.sms), share = std::max(1, gpu.share);
  // CTAs of the kernel that fit at once, shared by the ranks of one GPU (they wait on each other, so all
  // of them must be resident); `want` where the GPU's occupancy is not known.
  auto resident_as = [&](BidirMode kernel, int want, int threads, int unroll) {
    const int r = gpu.resident ? gpu.resident(kernel, threads, unroll) : 0;
    return r > 0 ? std::max(1, std::min(want, r / share)) : want;
  };
  auto resident = [&](int want, int threads, int unroll) { return resident_as(mode, want, threads, unroll); };
  auto tiles_of = [&](int64_t tile) { return std::max<int64_t>(1, (bytes / 16 * 16 + tile - 1) / tile); };
  // A PDL launch lets the next kernel's CTAs take SM slots early (and hold them while they wait), which
  // can keep a sharing rank's CTAs out: ranks sharing a GPU launch plainly.
  const bool pdl_ok = share == 1;
  switch (mode) {
    case BidirMode::stream: {
      int lanes = p.lanes > 0 ? p.lanes : sms;
      lanes = std::max(1, std::min(lanes, sms / share));
      const int64_t units = (bytes + p.slot_bytes - 1) / p.slot_bytes;
      l.grid = int(std::max<int64_t>(1, std::min<int64_t>(lanes, units)));
      l.threads = p.stream_threads;
      // The ring is laid out for the largest lane count, so sizes can change lanes without reallocating.
      l.ring_lanes = std::max(1, std::min(p.lanes > 0 ? p.lanes : sms, kBidirMaxLanes));
      break;
    }
    case BidirMode::push: {
      l.threads = p.push_threads;
      l.unroll = p.push_unroll <= 1 ? 1 : p.push_unroll <= 2 ? 2 : 4;  // the kernel's instances
      // A CTA waits for the same CTA of every peer: all CTAs stay resident (2 per SM).
      const int blocks = resident(p.push_blocks > 0 ? p.push_blocks : 2 * sms, l.threads, 4);
      l.grid = int(std::min<int64_t>(blocks, tiles_of(int64_t(l.threads / 2) * 16 * l.unroll)));
      l.pdl = p.push_pdl && pdl_ok;
      break;
    }
    case BidirMode::lamport: {
      l.threads = p.lamport_threads;
      l.unroll = p.lamport_unroll <= 1 ? 1 : p.lamport_unroll <= 2 ? 2 : 4;  // the kernel's instances
      // A CTA polls data the same CTA of every peer stores: all CTAs stay resident.
      const int blocks = resident(p.lamport_blocks > 0 ? p.lamport_blocks : sms, l.threads, l.unroll);
      const int64_t tile = int64_t(p.lamport_split && !in_place ? l.threads / 2 : l.threads) * 16 * l.unroll;
      l.grid = int(std::min<int64_t>(blocks, tiles_of(tile)));
      l.pdl = p.lamport_pdl && pdl_ok;
      break;
    }
    case BidirMode::flash: {
      // Shared memory: stages x peers x unroll x threads x 16 B; shrink unroll, then stages, then threads
      // until it fits (many ranks sharing GPUs in tests).
      l.threads = p.flash_threads;
      l.stages = p.flash_stages <= 2 ? 2 : 4;
      l.unroll = p.flash_unroll;
      const size_t limit = 200 * 1024, peers = size_t(std::max(nranks - 1, 1));
      auto need = [&] { return size_t(l.stages) * peers * size_t(l.unroll) * size_t(l.threads) * 16; };
      while (need() > limit) {
        if (l.unroll > 1)
          --l.unroll;
        else if (l.stages > 2)
          l.stages = 2;
        else if (l.threads > 64)
          l.threads /= 2;
        else
          break;
      }
      l.smem = need();
      // The register engine handles 2 ranks (one peer); more ranks use the shared-memory one.
      l.ldg = p.flash_engine == "ldg" && nranks == 2;
      if (l.ldg) l.unroll = p.flash_ldg_unroll <= 2 ? 2 : p.flash_ldg_unroll <= 4 ? 4 : 8;  // the kernel's instances
      int blocks = p.flash_blocks > 0 ? p.flash_blocks : 2 * sms;
      // Sharing ranks wait on each other's CTAs: keep every CTA of every rank resident (one per SM).
      if (share > 1) blocks = std::max(1, std::min(blocks, sms / share));
      // The register engine's CTAs wait for their peer CTA: keep the grid to one resident wave.
      if (l.ldg && p.flash_blocks == 0) blocks = resident(blocks, l.threads, 4);
      l.grid = int(std::min<int64_t>(blocks, tiles_of(int64_t(l.threads) * 16 * l.unroll)));
      l.pdl = l.ldg && p.flash_pdl && pdl_ok;
      break;
    }
    case BidirMode::twoshot: {
      l.threads = p.twoshot_threads;
      l.push = p.twoshot_push && bytes > p.twoshot_load_max;
      const int unroll = l.push || p.twoshot_load_unroll == 0 ? p.twoshot_unroll : p.twoshot_load_unroll;
      l.unroll = unroll <= 1 ? 1 : unroll <= 2 ? 2 : 4;  // the kernel's instances
      // A CTA waits for the same CTA of every peer: all CTAs stay resident. Each CTA takes a round of
      // vectors of the rank's slice at a time (the store-only variant: half its threads' worth, 2 CTAs per SM,
      // the push kernel's occupancy); no more CTAs than the slice has rounds.
      const int want = p.twoshot_blocks > 0 ? p.twoshot_blocks : l.push ? 2 * sms : sms;
      const int blocks = resident_as(l.push ? BidirMode::push : mode, want, l.threads, l.unroll);
      const int64_t slice = (bytes / 16 + nranks - 1) / std::max(1, nranks) * 16;
      const int64_t round = int64_t(l.push ? l.threads / 2 : l.threads) * 16 * l.unroll;
      l.grid = int(std::clamp<int64_t>((slice + round - 1) / round, 1, blocks));
      l.pdl = p.twoshot_pdl && pdl_ok;
      break;
    }
    case BidirMode::ll: {
      l.threads = p.ll_threads;
      const int64_t pairs = ((bytes + 3) / 4 + 1) / 2;
      const int64_t want = (pairs + p.ll_threads - 1) / p.ll_threads;
      const int blocks = p.ll_blocks > 0 ? p.ll_blocks : int(std::min<int64_t>(want, sms));
      l.grid = std::max(1, std::min(blocks, std::max(1, sms / share)));
      l.pdl = p.ll_pdl && pdl_ok;
      break;
    }
    case BidirMode::copy:
    case BidirMode::ring:
      break;
  }
  return l;
}

KernelMechanisms kernel_mechanisms(const BidirLaunch& l, int64_t bytes, int nranks, bool in_place,
                                   const BidirParams& p) {
  using K = KernelMechanisms;
  if (runs_as_schedule(l.mode))
    throw_input(std::string(bidir_mode_name(l.mode)) +
                " mode runs as a schedule on the general lowering, not a kernel");
  K k;
  const int peers = std::max(1, nranks - 1);
  k.peers = peers;
  k.grid = std::max(1, l.grid);
  k.port_bytes = l.mode == BidirMode::twoshot ? 2 * (nranks - 1) * bytes / nranks : (nranks - 1) * bytes;
  // Each thread handles its vectors with every peer at once (a load from, or a store into, each), so a CTA keeps
  // threads x vectors per thread x peers in flight.
  const double threads = double(l.threads > 0 ? l.threads : 512) * peers;
  const double unroll = l.unroll > 0 ? l.unroll : 1;
  switch (l.mode) {
    case BidirMode::ll:
      // Every GPU stores its bytes as LL words into the peers and polls its own buffer for theirs; a thread stores
      // its next 8-byte pair only once the peers' pairs at its last place have landed: the grid moves threads x 8
      // bytes per wave.
      k.link = K::Link::ll_stores;
      k.vectors = threads;
      k.round_trips = 1;
      k.reduce = K::Reduce::beside;
      k.waits = "the peers' stores landing";
      k.wave_bytes = int64_t(k.grid * threads * 8.0);
      break;
    case BidirMode::lamport:
      // The same with plain 16-byte stores whose data is its own flag; out of place, split, half the threads send.
      k.link = K::Link::stores;
      k.vectors = (p.lamport_split && !in_place ? threads / 2 : threads) * unroll;
      k.round_trips = 1;
      k.waits = "the peers' stores landing";
      k.reduce = K::Reduce::beside;
      break;
    case BidirMode::push:
      // Half of each CTA's threads store tile by tile, a flag released after each tile's stores; the other half
      // wait for the peers' tiles and reduce them: a store round trip and the flags'.
      k.link = K::Link::stores;
      k.vectors = threads / 2 * unroll;
      k.round_trips = 2;
      k.waits = "stores, flags";
      k.reduce = K::Reduce::beside_one_cta;
      k.tile_bytes = int64_t(k.vectors * 16.0);
      break;
    case BidirMode::flash:
    case BidirMode::twoshot:
      // Loads of the peers' bytes reduced as they arrive, between a start handshake and a finish one. The
      // store-only two-shot pushes the peers' slices instead (a flag per tile after its stores, no start
      // handshake), then stores the reduced slice into every peer before its finish.
      k.link = K::Link::loads;
      k.vectors = threads * unroll;
      k.stores_acknowledged = l.mode == BidirMode::twoshot && l.push;
      k.round_trips = k.stores_acknowledged ? 2 : 1;
      k.waits = k.stores_acknowledged ? "stores, flags" : "loads";
      k.handshakes = k.stores_acknowledged ? 1 : 2;
      break;
    case BidirMode::stream: {
      // Persistent lanes with a start and a finish handshake, their units pushed through the peers' rings.
      k.link = K::Link::stores;
      k.vectors = (l.threads > 0 ? l.threads : 512) / 2.0 * 4.0;  // half the threads, 4 vectors each
      k.round_trips = 2;
      k.waits = "stores, flags";
      k.handshakes = 2;
      k.reduce = K::Reduce::beside_one_cta;
      k.unit_bytes = std::min(bytes, p.slot_bytes > 0 ? p.slot_bytes : bytes);
      break;
    }
    case BidirMode::copy:
    case BidirMode::ring:
      break;
  }
  return k;
}

Schedule bidir_copy_schedule(int nranks, int64_t count, DType dtype, RedOp op, bool in_place, const BidirParams& p) {
  CopyPipeline c;
  c.chunk = p.ce_chunk;
  c.pieces = p.ce_pieces;
  c.slots = p.ce_slots;
  c.split = p.ce_split;
  c.push = p.ce_push;
  return copy_pipeline_allreduce(nranks, count, dtype, op, in_place, c);
}

Schedule sol_bidir_copy_schedule(int nranks, int64_t count, DType dtype, int chunks) {
  Schedule s;
  s.algo = "sol.bidir_copy";
  s.collective = "exchange";
  s.nranks = nranks;
  s.count = count;
  s.dtype = dtype;
  s.lowering = Lowering::copy_engine;
  const int64_t bytes = count * dtype_size(dtype);
  s.buffers.assign(size_t(nranks), BufferSizes{bytes, bytes, 0});
  Transport t(s);
  const int c = std::max(1, chunks);
  const int64_t e = dtype_size(dtype), piece = (count + c - 1) / c * e;
  for (int q = 0; q < nranks; ++q)
    for (int i = 0; i < c; ++i) {
      const int64_t off = i * piece, len = std::min(piece, bytes - off);
      if (len > 0) t.put(q, in(q, off), out((q - 1 + nranks) % nranks, off), len, {}, i);
    }
  return s;
}

}  // namespace cclab::lower
