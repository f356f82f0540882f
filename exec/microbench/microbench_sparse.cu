// Microbenchmarks for the sparse all-reduce's model (sim/paths_sparse.cpp): the executor's own local
// pieces (exec/mmsp/sparse_cub.cu, exec/mmsp/sparse_kernels.cu) on GPU0 alone, timed as the executor runs them (its
// phases are driven by the host: issue the calls, copy a count to the host, wait for the stream). No
// collective runs here, and the only transfer between GPUs is a copy whose host cost is timed: the index
// copies and the dense all-reduce of the union are modelled from the peer-copy and NCCL series.
//
//   sparse.coalesce.wall     host time of sparse_coalesce (CUB radix sort of (index, position) pairs,
//                            run-length encode, scan, segment sum) on n raw indices with no value columns,
//                            a 4-byte copy of the run count to the host and cudaStreamSynchronize; bytes
//                            = 4 n. Raw lists as the executor's: n / 1.5 distinct rows of a 5,000,000-row
//                            table (23-bit keys), half of them listed twice, shuffled.
//   sparse.coalesce.issue    host time until those calls return (before the wait): a second rank's
//                            phase starts that much later.
//   sparse.sort_unique.wall  the same for sparse_sort_unique (radix sort of keys, select unique) of n keys,
//                            half of them duplicates (the union of two ranks' lists); bytes = 4 n.
//   sparse.sort_unique.issue host time until those calls return.
//   sparse.segment_sum       GPU time (events) of the segment-sum kernel alone, rows of 2048 floats: bytes =
//                            raw rows read + summed rows written (1.5 raw rows per summed row).
//   sparse.match             GPU time of the inverse map's memset and the window matching kernel: n local
//                            indices against a union of 2 n; bytes = 4 n.
//   sparse.coalesce.wall2 / sparse.sort_unique.wall2   the same calls issued for GPU0 then GPU1 (own keys
//                            each) and waited for on both, as the executor's phases run on 2 GPUs.
//   sparse.fill.issue        host time until the match-and-fill step's three calls return (bytes = U rows).
//   sparse.copy.issue        host time until a cudaMemcpyAsync of n indices into GPU1 returns (bytes = 4 n).
//   sparse.fill_rows         GPU time of the fill kernel: U rows of 2048 floats written, half of them copied
//                            from local rows (the rest zeros); bytes = rows read + rows written.
#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "exec/microbench/microbench.hpp"
#include "exec/mmsp/sparse_kernels.cuh"

namespace cclab::exec {

namespace {

using namespace detail;

constexpr int kEndBit = 23;  // keys of a 5,000,000-row table (the issue's)
constexpr int64_t kDim = 2048;
constexpr int kReps = 15;  // timed repetitions per point; the median is kept

double host_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// n raw keys: n / 1.5 distinct rows, every other one listed twice, in a hashed order.
std::vector<uint32_t> raw_keys(int64_t n) {
  const int64_t distinct = std::max<int64_t>(1, n * 2 / 3);
  std::vector<uint32_t> k(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = i < distinct ? i : (i - distinct) * 2 % distinct;
    k[size_t(i)] = uint32_t(mix64(uint64_t(row) * 0x9e3779b97f4a7c15ull) % 5000000ull);
  }
  std::vector<uint32_t> out(k.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [](int64_t a, int64_t b) { return mix64(uint64_t(a)) < mix64(uint64_t(b)); });
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = k[size_t(order[size_t(i)])];
  return out;
}

struct WallIssue {
  double wall = 0, issue = 0;
};

// Median host times of `issue` (the calls) + a 4-byte copy to the host + the stream's wait.
template <class F>
WallIssue host_timed(cudaStream_t s, const int32_t* count_dev, int32_t* count_host, F&& issue) {
  std::vector<double> wall, iss;
  for (int r = 0; r < kReps + 2; ++r) {
    MMSP_CUDA(cudaStreamSynchronize(s));
    const double t0 = host_now_s();
    issue();
    MMSP_CUDA(cudaMemcpyAsync(count_host, count_dev, 4, cudaMemcpyDeviceToHost, s));
    const double t1 = host_now_s();
    MMSP_CUDA(cudaStreamSynchronize(s));
    const double t2 = host_now_s();
    if (r < 2) continue;  // warm-up
    iss.push_back(t1 - t0);
    wall.push_back(t2 - t0);
  }
  return {median(wall), median(iss)};
}

// Median host time until the calls of `issue` return (the stream drained before each repetition).
template <class F>
double issue_timed(cudaStream_t s, F&& issue) {
  std::vector<double> t;
  for (int r = 0; r < kReps + 2; ++r) {
    MMSP_CUDA(cudaStreamSynchronize(s));
    const double t0 = host_now_s();
    issue();
    const double t1 = host_now_s();
    if (r >= 2) t.push_back(t1 - t0);
  }
  MMSP_CUDA(cudaStreamSynchronize(s));
  return median(t);
}

// Median GPU time (events) of `issue`.
template <class F>
double gpu_timed(cudaStream_t s, int device, F&& issue) {
  Event a(device, true), b(device, true);
  std::vector<double> t;
  for (int r = 0; r < kReps + 2; ++r) {
    record(a, s);
    issue();
    record(b, s);
    MMSP_CUDA(cudaEventSynchronize(b.get()));
    if (r >= 2) t.push_back(1e-3 * elapsed_ms(a, b));
  }
  return median(t);
}

BenchPoint point(int64_t bytes, double seconds, int reps) {
  BenchPoint p;
  p.bytes = bytes;
  p.seconds = seconds;
  p.reps = reps;
  return p;
}

// One GPU's buffers for the two-GPU phase timings.
struct KeyBufs {
  int dev;
  Stream st;
  DevBuf keys, perm_in, keys_sorted, perm_sorted, uniq, counts, offsets, num, dummy, temp;
  HostBuf h_count{4};
  KeyBufs(int d, int64_t n_max, size_t temp_bytes)
      : dev(d),
        st(d),
        keys(d, size_t(n_max) * 4),
        perm_in(d, size_t(n_max) * 4),
        keys_sorted(d, size_t(n_max) * 4),
        perm_sorted(d, size_t(n_max) * 4),
        uniq(d, size_t(n_max) * 4),
        counts(d, size_t(n_max) * 4),
        offsets(d, size_t(n_max) * 4),
        num(d, 4),
        dummy(d, 16),
        temp(d, temp_bytes) {
    DeviceScope scope(d);
    sparse_iota(perm_in.as<int32_t>(), n_max, st);
    MMSP_CUDA(cudaStreamSynchronize(st));
  }
  void coalesce(int64_t n, size_t temp_bytes) {
    CoalesceBuffers b{keys.as<uint32_t>(), perm_in.as<int32_t>(), keys_sorted.as<uint32_t>(), perm_sorted.as<int32_t>(),
                      uniq.as<uint32_t>(), counts.as<int32_t>(),  offsets.as<int32_t>(),      num.as<int32_t>(),
                      dummy.as<float>(),   dummy.as<float>()};
    sparse_coalesce(b, int(n), 0, kEndBit, temp.as(), temp_bytes, st);
    MMSP_CUDA(cudaMemcpyAsync(h_count.as(), num.as(), 4, cudaMemcpyDeviceToHost, st));
  }
  void sort_unique(int64_t n, size_t temp_bytes) {
    sparse_sort_unique(keys.as<uint32_t>(), keys_sorted.as<uint32_t>(), uniq.as<uint32_t>(), num.as<int32_t>(), int(n),
                       kEndBit, temp.as(), temp_bytes, st);
    MMSP_CUDA(cudaMemcpyAsync(h_count.as(), num.as(), 4, cudaMemcpyDeviceToHost, st));
  }
};

// The executor's host-driven phase on every GPU at once (exec/mmsp/sparse.cu): one host thread issues GPU0's calls
// and a 4-byte copy of the count, then GPU1's, then waits for GPU0 and GPU1. Median host time.
template <class F>
double two_gpu_wall(std::vector<KeyBufs*>& g, F&& issue) {
  std::vector<double> t;
  for (int r = 0; r < kReps + 2; ++r) {
    for (KeyBufs* b : g) {
      DeviceScope s(b->dev);
      MMSP_CUDA(cudaStreamSynchronize(b->st));
    }
    const double t0 = host_now_s();
    for (KeyBufs* b : g) {
      DeviceScope s(b->dev);
      issue(*b);
    }
    for (KeyBufs* b : g) {
      DeviceScope s(b->dev);
      MMSP_CUDA(cudaStreamSynchronize(b->st));
    }
    if (r >= 2) t.push_back(host_now_s() - t0);
  }
  return median(t);
}

// sparse.coalesce.wall2 / sparse.sort_unique.wall2: the same calls as the .wall series on GPU0 and GPU1, each
// on its own copy of the keys, issued and waited for as the executor's coalescing and union phases do.
void two_gpu_series(const std::vector<int64_t>& sizes, size_t temp_bytes, std::vector<BenchSeries>& out) {
  KeyBufs b0(0, sizes.back(), temp_bytes), b1(1, sizes.back(), temp_bytes);
  std::vector<KeyBufs*> g = {&b0, &b1};
  BenchSeries coal{"sparse.coalesce.wall2",
                   "host time of sparse.coalesce.wall's calls issued for GPU0 then GPU1 (own keys each), then waits "
                   "for GPU0 and GPU1, as the executor's coalescing phase; bytes = 4 n per GPU",
                   {}};
  BenchSeries su{"sparse.sort_unique.wall2",
                 "host time of sparse.sort_unique.wall's calls issued for GPU0 then GPU1 (own keys each), then waits "
                 "for GPU0 and GPU1, as the executor's union phase; bytes = 4 n per GPU",
                 {}};
  for (int64_t n : sizes) {
    const auto h = raw_keys(n);
    for (KeyBufs* b : g) {
      DeviceScope s(b->dev);
      copy_on(b->keys.as(), h.data(), size_t(n) * 4, b->st);
    }
    coal.points.push_back(point(n * 4, two_gpu_wall(g, [&](KeyBufs& b) { b.coalesce(n, temp_bytes); }), kReps));
    su.points.push_back(point(n * 4, two_gpu_wall(g, [&](KeyBufs& b) { b.sort_unique(n, temp_bytes); }), kReps));
  }
  out.push_back(std::move(coal));
  out.push_back(std::move(su));
}

}  // namespace

void run_sparse_microbenchmarks(const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                                std::vector<std::string>& warnings) {
  const int dev = 0;
  DeviceScope scope(dev);
  Stream st(dev);
  auto log = [&](const std::string& s) {
    if (opt.log) opt.log(s);
  };
  log("sparse all-reduce pieces on GPU0");
  const std::vector<int64_t> key_sizes = {1024, 4096, 16384, 65536, 262144, 1048576, 2097152};
  const int64_t n_max = key_sizes.back();
  DevBuf keys(dev, size_t(n_max) * 4), perm_in(dev, size_t(n_max) * 4), keys_sorted(dev, size_t(n_max) * 4),
      perm_sorted(dev, size_t(n_max) * 4), uniq(dev, size_t(n_max) * 4), counts(dev, size_t(n_max) * 4),
      offsets(dev, size_t(n_max) * 4), num(dev, 4), dummy_vals(dev, 16);
  HostBuf h_count(4);
  const size_t temp_bytes =
      std::max(sparse_coalesce_temp_bytes(int(n_max), kEndBit), sparse_sort_unique_temp_bytes(int(n_max), kEndBit));
  DevBuf temp(dev, temp_bytes);
  sparse_iota(perm_in.as<int32_t>(), n_max, st);

  BenchSeries coal_wall{"sparse.coalesce.wall",
                        "host time of sparse_coalesce (CUB pairs sort, run-length encode, scan, segment sum; no value "
                        "columns) of n raw 23-bit indices (n/1.5 distinct) + 4-byte copy to the host + stream wait, "
                        "GPU0; bytes = 4 n",
                        {}};
  BenchSeries coal_issue{"sparse.coalesce.issue", "host time until the calls of sparse.coalesce.wall return", {}};
  BenchSeries su_wall{"sparse.sort_unique.wall",
                      "host time of sparse_sort_unique (CUB keys sort, select unique) of n 23-bit keys (half "
                      "duplicates) + 4-byte copy to the host + stream wait, GPU0; bytes = 4 n",
                      {}};
  BenchSeries su_issue{"sparse.sort_unique.issue", "host time until the calls of sparse.sort_unique.wall return", {}};
  BenchSeries match{"sparse.match",
                    "GPU time of memset(-1) of the union's inverse map + the window matching kernel, n local sorted "
                    "indices against a union of 2 n; bytes = 4 n",
                    {}};
  for (int64_t n : key_sizes) {
    const auto h = raw_keys(n);
    copy_on(keys.as(), h.data(), size_t(n) * 4, st);
    CoalesceBuffers b{keys.as<uint32_t>(),       perm_in.as<int32_t>(), keys_sorted.as<uint32_t>(),
                      perm_sorted.as<int32_t>(), uniq.as<uint32_t>(),   counts.as<int32_t>(),
                      offsets.as<int32_t>(),     num.as<int32_t>(),     dummy_vals.as<float>(),
                      dummy_vals.as<float>()};
    const WallIssue c = host_timed(st, num.as<int32_t>(), h_count.as<int32_t>(),
                                   [&] { sparse_coalesce(b, int(n), 0, kEndBit, temp.as(), temp_bytes, st); });
    coal_wall.points.push_back(point(n * 4, c.wall, kReps));
    coal_issue.points.push_back(point(n * 4, c.issue, kReps));
    const WallIssue u = host_timed(st, num.as<int32_t>(), h_count.as<int32_t>(), [&] {
      sparse_sort_unique(keys.as<uint32_t>(), keys_sorted.as<uint32_t>(), uniq.as<uint32_t>(), num.as<int32_t>(),
                         int(n), kEndBit, temp.as(), temp_bytes, st);
    });
    su_wall.points.push_back(point(n * 4, u.wall, kReps));
    su_issue.points.push_back(point(n * 4, u.issue, kReps));
    // Matching: local = every other entry of a sorted union of 2 n' (n' = n / 2 keeps the buffers).
    const int64_t nl = n / 2, ng = n;
    std::vector<uint32_t> g(static_cast<size_t>(ng)), l(static_cast<size_t>(nl));
    for (int64_t i = 0; i < ng; ++i) g[size_t(i)] = uint32_t(i * 2);
    for (int64_t i = 0; i < nl; ++i) l[size_t(i)] = g[size_t(2 * i)];
    copy_on(keys_sorted.as(), g.data(), size_t(ng) * 4, st);
    copy_on(uniq.as(), l.data(), size_t(nl) * 4, st);
    const double m = gpu_timed(st, dev, [&] {
      MMSP_CUDA(cudaMemsetAsync(counts.as(), 0xff, size_t(ng) * 4, st));
      sparse_match(MatchKernel::window, uniq.as<uint32_t>(), int(nl), keys_sorted.as<uint32_t>(), int(ng), nullptr,
                   counts.as<int32_t>(), st);
    });
    match.points.push_back(point(nl * 4, m, kReps));
  }

  // Row traffic: summed rows and filled rows of 2048 floats.
  BenchSeries seg{"sparse.segment_sum",
                  "GPU time of the segment-sum kernel, rows of 2048 floats, 1.5 raw rows per summed row (half the "
                  "rows twice); bytes = raw rows read + summed rows written",
                  {}};
  BenchSeries fill{"sparse.fill_rows",
                   "GPU time of the fill kernel, U rows of 2048 floats written, every other one copied from a local "
                   "row, the rest zeros; bytes = rows read + rows written",
                   {}};
  BenchSeries fill_issue{"sparse.fill.issue",
                         "host time until the calls of the match-and-fill step return (memset of the inverse map, "
                         "window matching of U/2 indices against U, fill of U rows of 2048 floats), GPU0; bytes = "
                         "U rows",
                         {}};
  BenchSeries copy_issue{
      "sparse.copy.issue", "host time until cudaMemcpyAsync of n 4-byte indices GPU0 -> GPU1 returns; bytes = 4 n", {}};
  const std::vector<int64_t> row_sizes = {256, 2048, 16384, 65536, 262144};  // summed rows / union rows
  const int64_t rows_max = row_sizes.back(), raw_max = rows_max * 3 / 2, row_bytes = kDim * 4;
  {
    DevBuf raw(dev, size_t(raw_max * row_bytes)), vals(dev, size_t(rows_max * row_bytes));
    MMSP_CUDA(cudaMemsetAsync(raw.as(), 0, raw.bytes(), st));
    for (int64_t u : row_sizes) {
      // Runs: every other summed row has two raw rows (counts 2,1,2,1...), positions in a hashed order.
      const int64_t nraw = u + u / 2;
      std::vector<int32_t> cnt(static_cast<size_t>(u)), off(static_cast<size_t>(u)), perm(static_cast<size_t>(nraw));
      for (int64_t i = 0, o = 0; i < u; ++i) {
        cnt[size_t(i)] = i % 2 == 0 && i / 2 < u / 2 ? 2 : 1;
        off[size_t(i)] = int32_t(o);
        o += cnt[size_t(i)];
      }
      std::iota(perm.begin(), perm.end(), 0);
      std::sort(perm.begin(), perm.end(), [](int32_t a, int32_t b) { return mix64(uint64_t(a)) < mix64(uint64_t(b)); });
      const int32_t nr = int32_t(u);
      copy_on(counts.as(), cnt.data(), size_t(u) * 4, st);
      copy_on(offsets.as(), off.data(), size_t(u) * 4, st);
      copy_on(perm_sorted.as(), perm.data(), size_t(nraw) * 4, st);
      copy_on(num.as(), &nr, 4, st);
      const double t = gpu_timed(st, dev, [&] {
        sparse_segment_sum(num.as<int32_t>(), offsets.as<int32_t>(), counts.as<int32_t>(), perm_sorted.as<int32_t>(),
                           raw.as<float>(), kDim, vals.as<float>(), u, st);
      });
      seg.points.push_back(point((nraw + u) * row_bytes, t, kReps));
    }
    // Fill: U rows, the inverse map points every other one at a local row.
    for (int64_t u : row_sizes) {
      std::vector<int32_t> inv(static_cast<size_t>(u));
      for (int64_t i = 0; i < u; ++i) inv[size_t(i)] = i % 2 == 0 ? int32_t(i / 2) : -1;
      copy_on(counts.as(), inv.data(), size_t(u) * 4, st);
      const double t = gpu_timed(
          st, dev, [&] { sparse_fill_rows(counts.as<int32_t>(), u, vals.as<float>(), kDim, raw.as<float>(), st); });
      fill.points.push_back(point((u + (u + 1) / 2) * row_bytes, t, kReps));
    }
    // The host's part of the executor's match-and-fill step (memset, matching, fill: three calls), which
    // delays the next rank's step: u / 2 local indices against a union of u (the sorted lists left above).
    for (int64_t u : row_sizes) {
      const double t = issue_timed(st, [&] {
        MMSP_CUDA(cudaMemsetAsync(offsets.as(), 0xff, size_t(u) * 4, st));
        sparse_match(MatchKernel::window, uniq.as<uint32_t>(), int(u / 2), keys_sorted.as<uint32_t>(), int(u), nullptr,
                     offsets.as<int32_t>(), st);
        sparse_fill_rows(offsets.as<int32_t>(), u, vals.as<float>(), kDim, raw.as<float>(), st);
      });
      fill_issue.points.push_back(point(u * row_bytes, t, kReps));
    }
  }
  // The host's part of one index-list copy into the other GPU (cudaMemcpyAsync, peer access enabled).
  if (opt.gpus >= 2) {
    DevBuf peer(1, size_t(n_max) * 4);
    for (int64_t n : key_sizes)
      copy_issue.points.push_back(point(
          n * 4,
          issue_timed(st,
                      [&] { MMSP_CUDA(cudaMemcpyAsync(peer.as(), keys.as(), size_t(n) * 4, cudaMemcpyDefault, st)); }),
          kReps));
  }
  MMSP_CUDA(cudaStreamSynchronize(st));
  // Both GPUs as the executor drives them; a failure here keeps the single-GPU series.
  if (opt.gpus >= 2) {
    try {
      two_gpu_series(key_sizes, temp_bytes, out);
    } catch (const Error& e) {
      warnings.push_back(std::string("sparse two-GPU phases: ") + e.what());
    }
  }
  for (BenchSeries* s : {&coal_wall, &coal_issue, &su_wall, &su_issue, &match, &seg, &fill, &fill_issue, &copy_issue})
    if (!s->points.empty()) out.push_back(std::move(*s));
  (void)warnings;
}

}  // namespace cclab::exec
