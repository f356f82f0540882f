#include <algorithm>
#include <cmath>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "algorithms/adv_sparse.hpp"
#include "exec/mmsp/cmatmul_kernels.cuh"
#include "exec/mmsp/sparse.hpp"
#include "exec/mmsp/sparse_kernels.cuh"

namespace cclab::exec {
namespace {

using namespace detail;

std::string fmt(double v, int prec = 5) {
  std::ostringstream os;
  os.precision(prec);
  os << v;
  return os.str();
}

const char* path_name(SparseMode p) {
  switch (p) {
    case SparseMode::automatic:
      return "auto";
    case SparseMode::sparse:
      return "sparse";
    case SparseMode::dense:
      return "dense";
  }
  return "?";
}
const char* union_name(UnionMode u) { return u == UnionMode::allgather ? "allgather" : "gather_bcast"; }

int bits_for(int64_t max_value) {
  int b = 1;
  while (b < 32 && (int64_t(1) << b) <= max_value) ++b;
  return b;
}

struct SpRank {
  int dev = 0;
  Stream st;
  int n_raw = 0;
  DevBuf raw_idx, raw_copy, raw_val, perm_in, keys_sorted, perm_sorted, uniq, counts, offsets, num_runs, vals;
  DevBuf gathered, gsorted, union_idx, num_union, inv, ubuf, temp;
  size_t temp_bytes = 0;
  DevBuf table, inv_dense;  // the dense path and baseline (rows x dim), allocated on first use
  HostBuf h_small;          // [0] unique rows after coalescing, [1] union size
  Event ev_coal, ev_union, ev_ready, ev_reduced;
  HostBuf h_idx, h_vals;  // host-staged baseline
};

struct Outcome {
  bool dense = false;
  int64_t union_rows = 0;
  std::vector<int64_t> nnz;
  double wall_us = 0;
  double phase_us[4] = {0, 0, 0, 0};  // coalesce, counts + union, match + fill, all-reduce
};

class SparseRunner {
 public:
  SparseRunner(RankGpus& g, const SparseConfig& cfg, std::vector<SparseRankInput>& in)
      : g_(g), cfg_(cfg), in_(in), D_(g.nranks()), R_(cfg.spec.rows), dim_(cfg.spec.dim) {
    if (!g_.has_nccl() && D_ > kMaxPeerRanks)
      throw_input("at most " + std::to_string(kMaxPeerRanks) + " ranks may share GPUs in the sparse all-reduce");
    end_bit_ = bits_for(R_ - 1);
    int64_t sum_raw = 0;
    for (auto& x : in_) sum_raw += int64_t(x.raw_rows.size());
    if (sum_raw > INT32_MAX) throw_input("sparse all-reduce: more than 2^31 raw rows over all ranks");
    sum_raw_ = int(sum_raw);
    u_max_ = std::min<int64_t>(R_, sum_raw);
    for (int r = 0; r < D_; ++r) {
      auto x = std::make_unique<SpRank>();
      x->dev = g_.device(r);
      DeviceScope scope(x->dev);
      x->st = Stream(x->dev);
      const int n = int(in_[r].raw_rows.size());
      x->n_raw = n;
      const size_t n4 = size_t(std::max(n, 1)) * 4, row_bytes = size_t(dim_) * sizeof(float);
      x->raw_idx = DevBuf(x->dev, n4);
      x->raw_copy = DevBuf(x->dev, size_t(std::max(n, 1)));
      x->raw_val = DevBuf(x->dev, std::max<size_t>(1, size_t(n) * row_bytes));
      x->perm_in = DevBuf(x->dev, n4);
      x->keys_sorted = DevBuf(x->dev, n4);
      x->perm_sorted = DevBuf(x->dev, n4);
      x->uniq = DevBuf(x->dev, n4);
      x->counts = DevBuf(x->dev, n4);
      x->offsets = DevBuf(x->dev, n4);
      x->num_runs = DevBuf(x->dev, 4);
      x->vals = DevBuf(x->dev, std::max<size_t>(1, size_t(n) * row_bytes));
      x->gathered = DevBuf(x->dev, size_t(sum_raw_) * 4);
      x->gsorted = DevBuf(x->dev, size_t(sum_raw_) * 4);
      x->union_idx = DevBuf(x->dev, size_t(u_max_) * 4);
      x->num_union = DevBuf(x->dev, 4);
      x->inv = DevBuf(x->dev, size_t(u_max_) * 4);
      x->ubuf = DevBuf(x->dev, size_t(u_max_) * row_bytes);
      x->temp_bytes =
          std::max(sparse_coalesce_temp_bytes(n, end_bit_), sparse_sort_unique_temp_bytes(sum_raw_, end_bit_));
      x->temp = DevBuf(x->dev, x->temp_bytes);
      x->h_small = HostBuf(2 * sizeof(int32_t));
      x->ev_coal = Event(x->dev, false);
      x->ev_union = Event(x->dev, false);
      x->ev_ready = Event(x->dev, false);
      x->ev_reduced = Event(x->dev, false);
      if (n) {
        copy_on(x->raw_idx.as(), in_[r].raw_rows.data(), size_t(n) * 4, x->st);
        copy_on(x->raw_copy.as(), in_[r].raw_copy.data(), size_t(n), x->st);
        sparse_iota(x->perm_in.as<int32_t>(), n, x->st);
        sparse_gen_values(x->raw_val.as<float>(), x->raw_idx.as<int32_t>(), x->raw_copy.as<uint8_t>(), n, dim_,
                          cfg_.spec.seed, r, x->st);
      }
      X_.push_back(std::move(x));
    }
    DeviceScope scope(X_[0]->dev);
    for (auto& e : ev_) e = Event(X_[0]->dev, true);
    sync_all();
  }

  void sync_all() {
    for (auto& x : X_) {
      DeviceScope s(x->dev);
      MMSP_CUDA(cudaStreamSynchronize(x->st));
    }
  }
  // After a failed part: drain what was enqueued, ignoring errors (they were reported).
  void drain_quiet() {
    for (auto& x : X_) {
      cudaSetDevice(x->dev);
      cudaStreamSynchronize(x->st);
      cudaGetLastError();
    }
  }

  void ensure_table() {
    for (auto& x : X_) {
      if (x->table) continue;
      DeviceScope scope(x->dev);
      x->table = DevBuf(x->dev, size_t(R_) * size_t(dim_) * sizeof(float));
      x->inv_dense = DevBuf(x->dev, size_t(R_) * 4);
      MMSP_CUDA(cudaMemsetAsync(x->table.as(), 0xff, x->table.bytes(), x->st));  // poison: NaN
    }
    sync_all();
  }

  // In-place sum over ranks of bufs[r][0..n): NCCL when every rank has its own GPU, otherwise the
  // peer-memory reduce-scatter (each rank sums its slice from every buffer) + copy-engine all-gather.
  void allreduce(const std::vector<float*>& bufs, int64_t n) {
    if (D_ == 1 || n == 0) return;
    if (g_.has_nccl()) {
      std::vector<ncclComm_t> comm;  // created before the group opens: ncclCommInitAll may not run inside one
      for (int r = 0; r < D_; ++r) comm.push_back(g_.nccl(r));
      NcclGroup group;
      for (int r = 0; r < D_; ++r)
        MMSP_NCCL(ncclAllReduce(bufs[r], bufs[r], size_t(n), ncclFloat32, ncclSum, comm[r], X_[r]->st));
      group.end();
      return;
    }
    PeerBufs pb{};
    for (int r = 0; r < D_; ++r) pb.p[r] = bufs[r];
    auto slice = [&](int r) { return std::pair<int64_t, int64_t>{n * r / D_, n * (r + 1) / D_}; };
    for (auto& x : X_) {
      DeviceScope s(x->dev);
      record(x->ev_ready, x->st);
    }
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope s(x.dev);
      for (auto& y : X_) wait(x.st, y->ev_ready);  // every buffer is filled before anyone reads it
      auto [b, e] = slice(r);
      sparse_peer_reduce_slice(pb, D_, r, b, e, x.st);
      record(x.ev_reduced, x.st);
    }
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope s(x.dev);
      for (int q = 0; q < D_; ++q) {
        if (q == r) continue;
        wait(x.st, X_[q]->ev_reduced);
        auto [b, e] = slice(q);
        if (e > b)
          MMSP_CUDA(cudaMemcpyAsync(bufs[r] + b, bufs[q] + b, size_t(e - b) * sizeof(float), cudaMemcpyDefault, x.st));
      }
    }
  }

  // Step 1 on every rank, then the counts exchange (the host reads every rank's unique-row count).
  std::vector<int64_t> coalesce_and_count() {
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope scope(x.dev);
      CoalesceBuffers b{x.raw_idx.as<uint32_t>(),    x.perm_in.as<int32_t>(),  x.keys_sorted.as<uint32_t>(),
                        x.perm_sorted.as<int32_t>(), x.uniq.as<uint32_t>(),    x.counts.as<int32_t>(),
                        x.offsets.as<int32_t>(),     x.num_runs.as<int32_t>(), x.raw_val.as<float>(),
                        x.vals.as<float>()};
      sparse_coalesce(b, x.n_raw, dim_, end_bit_, x.temp.as(), x.temp_bytes, x.st);
      MMSP_CUDA(cudaMemcpyAsync(x.h_small.as<int32_t>(), x.num_runs.as(), 4, cudaMemcpyDeviceToHost, x.st));
      record(x.ev_coal, x.st);
      if (r == 0) record(ev_[1], x.st);
    }
    std::vector<int64_t> nnz(D_);
    for (int r = 0; r < D_; ++r) {
      DeviceScope scope(X_[r]->dev);
      MMSP_CUDA(cudaStreamSynchronize(X_[r]->st));
      nnz[r] = X_[r]->h_small.as<int32_t>()[0];
    }
    return nnz;
  }

  // Steps 3-6 of the sparse path. Returns the union size.
  int64_t sparse_path(const std::vector<int64_t>& nnz, UnionMode um) {
    std::vector<int64_t> off(D_ + 1, 0);
    for (int r = 0; r < D_; ++r) off[r + 1] = off[r] + nnz[r];
    const int total = int(off[D_]);
    auto gather_into = [&](SpRank& x) {  // copy engines pull every rank's sorted unique indices
      for (int q = 0; q < D_; ++q) {
        wait(x.st, X_[q]->ev_coal);
        if (nnz[q])
          MMSP_CUDA(cudaMemcpyAsync(x.gathered.as<uint32_t>() + off[q], X_[q]->uniq.as(), size_t(nnz[q]) * 4,
                                    cudaMemcpyDefault, x.st));
      }
      sparse_sort_unique(x.gathered.as<uint32_t>(), x.gsorted.as<uint32_t>(), x.union_idx.as<uint32_t>(),
                         x.num_union.as<int32_t>(), total, end_bit_, x.temp.as(), x.temp_bytes, x.st);
      MMSP_CUDA(cudaMemcpyAsync(x.h_small.as<int32_t>() + 1, x.num_union.as(), 4, cudaMemcpyDeviceToHost, x.st));
    };
    int64_t U = 0;
    if (um == UnionMode::allgather) {
      for (auto& x : X_) {
        DeviceScope scope(x->dev);
        gather_into(*x);
      }
      for (int r = 0; r < D_; ++r) {
        DeviceScope scope(X_[r]->dev);
        MMSP_CUDA(cudaStreamSynchronize(X_[r]->st));
        int64_t u = X_[r]->h_small.as<int32_t>()[1];
        if (r == 0) U = u;
        CCLAB_ASSERT(u == U, "ranks built unions of different sizes");
      }
    } else {
      SpRank& x0 = *X_[0];
      {
        DeviceScope scope(x0.dev);
        gather_into(x0);
        MMSP_CUDA(cudaStreamSynchronize(x0.st));
        U = x0.h_small.as<int32_t>()[1];
        record(x0.ev_union, x0.st);
      }
      for (int r = 1; r < D_; ++r) {  // broadcast from rank 0 by copy engines
        SpRank& x = *X_[r];
        DeviceScope scope(x.dev);
        wait(x.st, x0.ev_union);
        MMSP_CUDA(cudaMemcpyAsync(x.union_idx.as(), x0.union_idx.as(), size_t(U) * 4, cudaMemcpyDefault, x.st));
      }
    }
    {
      DeviceScope scope(X_[0]->dev);
      record(ev_[2], X_[0]->st);
    }
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope scope(x.dev);
      MMSP_CUDA(cudaMemsetAsync(x.inv.as(), 0xff, size_t(U) * 4, x.st));  // -1: no local row
      sparse_match(MatchKernel::window, x.uniq.as<uint32_t>(), int(nnz[r]), x.union_idx.as<uint32_t>(), int(U), nullptr,
                   x.inv.as<int32_t>(), x.st);
      sparse_fill_rows(x.inv.as<int32_t>(), U, x.vals.as<float>(), dim_, x.ubuf.as<float>(), x.st);
      if (r == 0) record(ev_[3], x.st);
    }
    std::vector<float*> bufs;
    for (auto& x : X_) bufs.push_back(x->ubuf.as<float>());
    allreduce(bufs, U * dim_);
    return U;
  }

  // The dense path: the whole table, local rows in place and zeros elsewhere, all-reduced.
  void dense_path(const std::vector<int64_t>& nnz) {
    ensure_table();
    {
      DeviceScope scope(X_[0]->dev);
      record(ev_[2], X_[0]->st);
    }
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope scope(x.dev);
      MMSP_CUDA(cudaMemsetAsync(x.inv_dense.as(), 0xff, size_t(R_) * 4, x.st));
      sparse_scatter_inv(x.uniq.as<uint32_t>(), int(nnz[r]), x.inv_dense.as<int32_t>(), x.st);
      sparse_fill_rows(x.inv_dense.as<int32_t>(), R_, x.vals.as<float>(), dim_, x.table.as<float>(), x.st);
      if (r == 0) record(ev_[3], x.st);
    }
    std::vector<float*> bufs;
    for (auto& x : X_) bufs.push_back(x->table.as<float>());
    allreduce(bufs, R_ * dim_);
  }

  Outcome run_once(SparseMode mode, UnionMode um) {
    sync_all();
    Outcome o;
    const double t0 = now_s();
    {
      DeviceScope scope(X_[0]->dev);
      record(ev_[0], X_[0]->st);
    }
    o.nnz = coalesce_and_count();
    o.dense = mode == SparseMode::dense || (mode == SparseMode::automatic && sparse_choose_dense(cfg_, o.nnz));
    if (o.dense) {
      dense_path(o.nnz);
      o.union_rows = R_;
    } else {
      o.union_rows = sparse_path(o.nnz, um);
    }
    {
      DeviceScope scope(X_[0]->dev);
      record(ev_[4], X_[0]->st);
    }
    sync_all();
    o.wall_us = (now_s() - t0) * 1e6;
    for (int p = 0; p < 4; ++p) o.phase_us[p] = 1e3 * elapsed_ms(ev_[p], ev_[p + 1]);
    return o;
  }

  // ---- the host-staged baseline: coalesce on the GPU, union and sum on the host, copy back.
  Outcome run_host_staged() {
    sync_all();
    Outcome o;
    const double t0 = now_s();
    o.nnz = coalesce_and_count();
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope scope(x.dev);
      const size_t nb = size_t(o.nnz[r]);
      if (x.h_idx.bytes() < nb * 4) x.h_idx = HostBuf(std::max<size_t>(4, nb * 4));
      if (x.h_vals.bytes() < nb * dim_ * 4) x.h_vals = HostBuf(std::max<size_t>(4, nb * dim_ * 4));
      MMSP_CUDA(cudaMemcpyAsync(x.h_idx.as(), x.uniq.as(), nb * 4, cudaMemcpyDeviceToHost, x.st));
      MMSP_CUDA(cudaMemcpyAsync(x.h_vals.as(), x.vals.as(), nb * dim_ * 4, cudaMemcpyDeviceToHost, x.st));
    }
    sync_all();
    // Union of the sorted lists, and each local row's position in it.
    std::vector<uint32_t> all;
    for (int r = 0; r < D_; ++r) {
      const uint32_t* p = X_[r]->h_idx.as<uint32_t>();
      all.insert(all.end(), p, p + o.nnz[r]);
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    const int64_t U = int64_t(all.size());
    if (h_out_.bytes() < size_t(U) * dim_ * 4) h_out_ = HostBuf(std::max<size_t>(4, size_t(U) * dim_ * 4));
    std::vector<std::vector<int64_t>> pos(D_);
    for (int r = 0; r < D_; ++r) {
      const uint32_t* p = X_[r]->h_idx.as<uint32_t>();
      pos[r].resize(size_t(o.nnz[r]));
      for (int64_t i = 0; i < o.nnz[r]; ++i) pos[r][i] = std::lower_bound(all.begin(), all.end(), p[i]) - all.begin();
    }
    // Sum on host threads, each owning a contiguous range of union rows (no two threads write a row).
    const int nt = int(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 16u));
    std::vector<std::thread> pool;
    float* out = h_out_.as<float>();
    for (int t = 0; t < nt; ++t) {
      pool.emplace_back([&, t] {
        const int64_t u0 = U * t / nt, u1 = U * (t + 1) / nt;
        std::fill(out + u0 * dim_, out + u1 * dim_, 0.0f);
        for (int r = 0; r < D_; ++r) {
          auto b = std::lower_bound(pos[r].begin(), pos[r].end(), u0);
          auto e = std::lower_bound(pos[r].begin(), pos[r].end(), u1);
          const float* v = X_[r]->h_vals.as<float>();
          for (auto it = b; it != e; ++it) {
            const int64_t i = it - pos[r].begin();
            float* dst = out + *it * dim_;
            const float* src = v + i * dim_;
            for (int64_t c = 0; c < dim_; ++c) dst[c] += src[c];
          }
        }
      });
    }
    for (auto& th : pool) th.join();
    if (h_union_.bytes() < size_t(U) * 4) h_union_ = HostBuf(std::max<size_t>(4, size_t(U) * 4));
    std::copy(all.begin(), all.end(), h_union_.as<uint32_t>());
    for (auto& x : X_) {
      DeviceScope scope(x->dev);
      MMSP_CUDA(cudaMemcpyAsync(x->union_idx.as(), h_union_.as(), size_t(U) * 4, cudaMemcpyHostToDevice, x->st));
      MMSP_CUDA(cudaMemcpyAsync(x->ubuf.as(), out, size_t(U) * dim_ * 4, cudaMemcpyHostToDevice, x->st));
    }
    sync_all();
    o.wall_us = (now_s() - t0) * 1e6;
    o.union_rows = U;
    return o;
  }

  // Poisons every output (NaN values, all-ones indices) so that rows the algorithm leaves unwritten fail.
  void poison() {
    for (auto& x : X_) {
      DeviceScope scope(x->dev);
      MMSP_CUDA(cudaMemsetAsync(x->ubuf.as(), 0xff, x->ubuf.bytes(), x->st));
      MMSP_CUDA(cudaMemsetAsync(x->union_idx.as(), 0xff, x->union_idx.bytes(), x->st));
      if (x->table) MMSP_CUDA(cudaMemsetAsync(x->table.as(), 0xff, x->table.bytes(), x->st));
    }
    sync_all();
  }

  // The dense all-reduce of the whole table through NCCL (the baseline), mean over iters.
  double time_dense_nccl(int warmup, int iters) {
    ensure_table();
    for (int r = 0; r < D_; ++r) {
      DeviceScope scope(X_[r]->dev);
      fill_uniform(X_[r]->table.as(), DType::f32, R_ * dim_, mix64(cfg_.spec.seed + 99 + r), X_[r]->st);
    }
    std::vector<float*> bufs;
    for (auto& x : X_) bufs.push_back(x->table.as<float>());
    for (int w = 0; w < warmup; ++w) allreduce(bufs, R_ * dim_);
    sync_all();
    const double t0 = now_s();
    for (int it = 0; it < iters; ++it) allreduce(bufs, R_ * dim_);
    sync_all();
    return (now_s() - t0) * 1e6 / iters;
  }

  // The three index-matching kernels on rank 0's local indices against the union it built; each
  // timed by replaying a CUDA graph of back-to-back launches (launch overhead out of the figure).
  struct MatchTimes {
    double us[3] = {0, 0, 0};
    int64_t wrong[3] = {0, 0, 0};
    int64_t n_local = 0, n_global = 0;
  };
  MatchTimes bench_match(int64_t n_local, int64_t n_global) {
    SpRank& x = *X_[0];
    DeviceScope scope(x.dev);
    MatchTimes mt;
    mt.n_local = n_local;
    mt.n_global = n_global;
    const MatchKernel kinds[3] = {MatchKernel::quadratic, MatchKernel::binsearch, MatchKernel::window};
    std::vector<std::vector<int32_t>> host(3, std::vector<int32_t>(size_t(n_local)));
    DevBuf pos(x.dev, size_t(std::max<int64_t>(n_local, 1)) * 4);
    Event t0(x.dev, true), t1(x.dev, true);
    for (int k = 0; k < 3; ++k) {
      const int launches = kinds[k] == MatchKernel::quadratic ? 2 : 20;
      const int replays = kinds[k] == MatchKernel::quadratic ? 3 : 10;
      MMSP_CUDA(cudaMemsetAsync(pos.as(), 0xff, pos.bytes(), x.st));
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      MMSP_CUDA(cudaStreamBeginCapture(x.st, cudaStreamCaptureModeThreadLocal));
      for (int l = 0; l < launches; ++l)
        sparse_match(kinds[k], x.uniq.as<uint32_t>(), int(n_local), x.union_idx.as<uint32_t>(), int(n_global),
                     pos.as<int32_t>(), nullptr, x.st);
      MMSP_CUDA(cudaStreamEndCapture(x.st, &graph));
      MMSP_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      MMSP_CUDA(cudaGraphLaunch(exec, x.st));  // warm-up
      record(t0, x.st);
      for (int rp = 0; rp < replays; ++rp) MMSP_CUDA(cudaGraphLaunch(exec, x.st));
      record(t1, x.st);
      MMSP_CUDA(cudaEventSynchronize(t1));
      mt.us[k] = 1e3 * elapsed_ms(t0, t1) / (launches * replays);
      copy_on(host[k].data(), pos.as(), size_t(n_local) * 4, x.st);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
    // Every kernel must give the window kernel's positions; the window kernel is held to the
    // binary search (and all must be >= 0: every local index is in the union).
    for (int k = 0; k < 3; ++k) {
      const auto& ref = host[k == 2 ? 1 : 2];
      for (int64_t i = 0; i < n_local; ++i) mt.wrong[k] += (host[k][i] != ref[i] || host[k][i] < 0);
    }
    return mt;
  }

  // ---- checking against a float64 host reference.
  struct CheckResult {
    int64_t wrong = 0, checked_rows = 0;
  };

  void build_expected() {
    if (!expected_union_.empty()) return;
    for (auto& x : in_) expected_union_.insert(expected_union_.end(), x.selected.begin(), x.selected.end());
    std::sort(expected_union_.begin(), expected_union_.end());
    expected_union_.erase(std::unique(expected_union_.begin(), expected_union_.end()), expected_union_.end());
  }

  // The ranks that hold `row` in the data model.
  std::vector<int> holders(int32_t row) const {
    std::vector<int> out;
    for (int r = 0; r < D_; ++r)
      if (std::binary_search(in_[r].selected.begin(), in_[r].selected.end(), row)) out.push_back(r);
    return out;
  }

  CheckResult check(const Outcome& o) {
    build_expected();
    CheckResult res;
    const int64_t Ue = int64_t(expected_union_.size());
    // Sampled union rows (all of them when small): at most 2^22 values read back per rank.
    const int64_t budget = std::max<int64_t>(1, (int64_t(1) << 22) / dim_);
    const int64_t stride = std::max<int64_t>(1, (Ue + budget - 1) / budget);
    std::vector<int64_t> sample;
    for (int64_t p = 0; p < Ue; p += stride) sample.push_back(p);
    if (sample.back() != Ue - 1) sample.push_back(Ue - 1);
    // For the dense result, also rows outside the union, which must be exactly zero.
    std::vector<int32_t> zero_rows;
    if (o.dense) {
      for (int64_t row = 0, p = 0; row < R_ && zero_rows.size() < 64; ++row) {
        while (p < Ue && expected_union_[p] < row) ++p;
        if (p >= Ue || expected_union_[p] != row) zero_rows.push_back(int32_t(row));
      }
    }
    std::vector<double> exp(sample.size() * dim_);
    for (size_t i = 0; i < sample.size(); ++i) {  // float64 sums of the data model's values
      const int32_t row = expected_union_[sample[i]];
      const auto who = holders(row);
      for (int64_t c = 0; c < dim_; ++c) {
        double sum = 0;
        for (int r : who) sum += double(sparse::generated_value(cfg_.spec, r, row, c));
        exp[i * dim_ + c] = sum;
      }
    }

    std::vector<int32_t> rows_dev;  // source rows of the gather on the device
    for (int64_t p : sample) rows_dev.push_back(o.dense ? expected_union_[p] : int32_t(p));
    rows_dev.insert(rows_dev.end(), zero_rows.begin(), zero_rows.end());
    const int64_t n_rows = int64_t(rows_dev.size());
    std::vector<float> got(size_t(n_rows) * dim_);
    std::vector<uint32_t> idx(o.dense ? 0 : size_t(std::min(o.union_rows, Ue)));
    for (int r = 0; r < D_; ++r) {
      SpRank& x = *X_[r];
      DeviceScope scope(x.dev);
      if (!o.dense) {  // the union's indices, all of them
        if (o.union_rows != Ue) res.wrong += std::abs(o.union_rows - Ue);
        const int64_t n = std::min(o.union_rows, Ue);
        copy_on(idx.data(), x.union_idx.as(), size_t(n) * 4, x.st);
        for (int64_t i = 0; i < n; ++i) res.wrong += idx[i] != uint32_t(expected_union_[i]);
        if (o.union_rows != Ue) continue;  // the value rows would be misaligned
      }
      DevBuf list(x.dev, size_t(n_rows) * 4), sample_buf(x.dev, size_t(n_rows) * dim_ * 4);
      copy_on(list.as(), rows_dev.data(), size_t(n_rows) * 4, x.st);
      sparse_fill_rows(list.as<int32_t>(), n_rows, o.dense ? x.table.as<float>() : x.ubuf.as<float>(), dim_,
                       sample_buf.as<float>(), x.st);
      MMSP_CUDA(cudaStreamSynchronize(x.st));
      copy_on(got.data(), sample_buf.as(), got.size() * 4, x.st);
      for (size_t i = 0; i < sample.size(); ++i)
        for (int64_t c = 0; c < dim_; ++c) {
          const double e = exp[i * dim_ + c], v = got[i * dim_ + c];
          // Within fp32 rounding of the float64 sum (integer values make it exact).
          res.wrong += !(std::fabs(v - e) <= 6e-8 * std::fabs(e));
        }
      for (size_t i = sample.size(); i < size_t(n_rows); ++i)
        for (int64_t c = 0; c < dim_; ++c) res.wrong += got[i * dim_ + c] != 0.0f;
    }
    res.checked_rows = int64_t(sample.size());
    return res;
  }

 private:
  RankGpus& g_;
  const SparseConfig& cfg_;
  std::vector<SparseRankInput>& in_;
  int D_;
  int64_t R_, dim_;
  int end_bit_ = 32;
  int sum_raw_ = 0;
  int64_t u_max_ = 0;
  std::vector<std::unique_ptr<SpRank>> X_;
  Event ev_[5];
  HostBuf h_out_, h_union_;
  std::vector<int32_t> expected_union_;
};

}  // namespace

std::vector<Record> run_sparse_allreduce(RankGpus& gpus, const SparseConfig& cfg, std::vector<std::string>* failures) {
  if (cfg.iters < 1 || cfg.warmup < 0 || cfg.dense_iters < 1)
    throw_input("sparse all-reduce needs iters >= 1, dense iters >= 1 and warmup >= 0");
  const int D = gpus.nranks();
  // Inputs, generated on host threads (one per rank).
  std::vector<std::future<SparseRankInput>> fut;
  for (int r = 0; r < D; ++r)
    fut.push_back(std::async(std::launch::async, [&cfg, r] { return sparse_generate(cfg, r); }));
  std::vector<SparseRankInput> inputs;
  for (auto& f : fut) inputs.push_back(f.get());

  SparseRunner run(gpus, cfg, inputs);
  const SparseSpec& sp = cfg.spec;
  const std::string device = gpus.device_label(), date = detail::utc_now_iso(), commit = detail::commit_label();
  const char* dist = sp.dist == IndexDist::zipf ? "zipf" : "uniform";
  auto base = [&](const std::string& algo, double t_us) {
    Record rec;
    rec.algo = algo;
    rec.collective = "allreduce";
    rec.backend = "gpu";
    rec.topology = "local";  // measured on this node's GPUs, as `cclab run` labels its rows
    rec.ranks = D;
    rec.count = sp.rows * sp.dim;
    rec.bytes = rec.count * 4;  // the dense table this sparse tensor stands for
    rec.dtype = "float";
    rec.redop = "sum";
    rec.time_us = t_us;
    rec.device = device;
    rec.commit = commit;
    rec.date = date;
    if (gpus.shared()) rec.note = "ranks share GPUs: timing not meaningful";
    fill_bandwidths(rec);
    rec.extra = {{"rows", std::to_string(sp.rows)},
                 {"dim", std::to_string(sp.dim)},
                 {"density", fmt(sp.density)},
                 {"dist", dist}};
    return rec;
  };

  // Runs one measured part; with `failures`, a failing part is reported there and the rest go on.
  auto guarded = [&](const std::string& what, const std::function<void()>& part) {
    try {
      part();
    } catch (const Error& e) {
      if (!failures) throw;
      failures->push_back(what + ": " + e.what());
      run.drain_quiet();
    }
  };

  std::vector<Record> rows;
  double t_dense = 0;
  if (cfg.dense_baseline && gpus.has_nccl())
    guarded("allreduce.nccl (dense table)", [&] {
      t_dense = run.time_dense_nccl(1, cfg.dense_iters);
      Record rec = base("allreduce.nccl", t_dense);
      rec.wrong = -1;  // timing baseline; NCCL's all-reduce is checked by the executor's sweep
      rec.extra.emplace_back("mode", "dense_table");
      rows.push_back(std::move(rec));
    });

  struct Variant {
    SparseMode mode;
    UnionMode um;
  };
  std::vector<Variant> variants;
  for (SparseMode p : cfg.modes) {
    if (p == SparseMode::dense) {
      variants.push_back({p, UnionMode::allgather});
      continue;
    }
    for (UnionMode u : cfg.union_modes) variants.push_back({p, u});
  }
  for (const Variant& v : variants)
    guarded(std::string("allreduce.sparse mode ") + path_name(v.mode), [&] {
      int64_t wrong = -1, checked = 0;
      if (cfg.check) {
        run.poison();
        Outcome o = run.run_once(v.mode, v.um);
        auto c = run.check(o);
        wrong = c.wrong;
        checked = c.checked_rows;
      }
      for (int w = 0; w < cfg.warmup; ++w) run.run_once(v.mode, v.um);
      Outcome sum;
      double phase[4] = {0, 0, 0, 0};
      for (int it = 0; it < cfg.iters; ++it) {
        Outcome o = run.run_once(v.mode, v.um);
        sum.wall_us += o.wall_us;
        for (int p = 0; p < 4; ++p) phase[p] += o.phase_us[p];
        sum.dense = o.dense;
        sum.union_rows = o.union_rows;
        sum.nnz = o.nnz;
      }
      const double t = sum.wall_us / cfg.iters;
      Record rec = base("allreduce.sparse", t);
      rec.wrong = wrong;
      double mean_nnz = 0;
      for (int64_t n : sum.nnz) mean_nnz += double(n) / D;
      const double t_ref = t_dense > 0 ? t_dense : cfg.dense_ref_us;
      rec.extra.emplace_back("mode", path_name(v.mode));
      rec.extra.emplace_back("path", sum.dense ? "dense" : "sparse");
      rec.extra.emplace_back("union_mode", sum.dense ? "" : union_name(v.um));
      rec.extra.emplace_back("nnz_per_rank", fmt(mean_nnz, 9));
      rec.extra.emplace_back("union_rows", std::to_string(sum.union_rows));
      rec.extra.emplace_back("coalesce_us", fmt(phase[0] / cfg.iters));
      rec.extra.emplace_back("union_us", fmt(phase[1] / cfg.iters));
      rec.extra.emplace_back("match_fill_us", fmt(phase[2] / cfg.iters));
      rec.extra.emplace_back("allreduce_us", fmt(phase[3] / cfg.iters));
      rec.extra.emplace_back("speedup_vs_dense_nccl", t_ref > 0 ? fmt(t_ref / t) : "");
      rec.extra.emplace_back("checked_rows", std::to_string(checked));
      rec.extra.emplace_back("dense_allreduce", gpus.has_nccl() ? "nccl" : "peer_kernel");
      rows.push_back(std::move(rec));
    });

  if (cfg.host_baseline)
    guarded("allreduce.sparse_hoststaged", [&] {
      run.run_host_staged();  // warm-up (allocates the pinned buffers)
      double tsum = 0;
      Outcome o;
      for (int it = 0; it < cfg.dense_iters; ++it) {
        run.poison();
        o = run.run_host_staged();
        tsum += o.wall_us;
      }
      int64_t wrong = -1, checked = 0;
      if (cfg.check) {
        auto c = run.check(o);
        wrong = c.wrong;
        checked = c.checked_rows;
      }
      const double t = tsum / cfg.dense_iters;
      Record rec = base("allreduce.sparse_hoststaged", t);
      rec.wrong = wrong;
      const double t_ref = t_dense > 0 ? t_dense : cfg.dense_ref_us;
      rec.extra.emplace_back("mode", "host");
      rec.extra.emplace_back("union_rows", std::to_string(o.union_rows));
      rec.extra.emplace_back("speedup_vs_dense_nccl", t_ref > 0 ? fmt(t_ref / t) : "");
      rec.extra.emplace_back("checked_rows", std::to_string(checked));
      rows.push_back(std::move(rec));
    });

  if (cfg.match_bench)
    guarded("index_match", [&] {
      // A fresh sparse run leaves rank 0's local indices and the union in place for the kernels.
      const Outcome last_sparse = run.run_once(SparseMode::sparse, UnionMode::allgather);
      auto mt = run.bench_match(last_sparse.nnz[0], last_sparse.union_rows);
      const char* names[3] = {"index_match.quadratic", "index_match.binsearch", "index_match.window"};
      for (int k = 0; k < 3; ++k) {
        Record rec = base(names[k], mt.us[k]);
        rec.collective = "index_match";
        rec.ranks = 1;
        rec.count = mt.n_local;
        rec.bytes = mt.n_local * 4;
        rec.redop = "none";
        fill_bandwidths(rec);
        rec.wrong = mt.wrong[k];
        rec.extra.emplace_back("mode", "kernel");
        rec.extra.emplace_back("union_rows", std::to_string(mt.n_global));
        rec.extra.emplace_back("speedup_vs_quadratic", fmt(mt.us[0] / mt.us[k]));
        rows.push_back(std::move(rec));
      }
    });
  return rows;
}

std::vector<int32_t> sparse_match_on_gpu(int device, MatchKernel kernel, const std::vector<uint32_t>& local,
                                         const std::vector<uint32_t>& global) {
  if (local.size() > size_t(INT32_MAX) || global.size() > size_t(INT32_MAX))
    throw_input("sparse_match_on_gpu: lists longer than 2^31-1");
  DeviceScope scope(device);
  Stream st(device);
  DevBuf l(device, std::max<size_t>(4, local.size() * 4)), g(device, std::max<size_t>(4, global.size() * 4)),
      pos(device, std::max<size_t>(4, local.size() * 4));
  copy_on(l.as(), local.data(), local.size() * 4, st);
  copy_on(g.as(), global.data(), global.size() * 4, st);
  MMSP_CUDA(cudaMemsetAsync(pos.as(), 0x7f, pos.bytes(), st));  // poison, ordered before the kernel
  sparse_match(kernel, l.as<uint32_t>(), int(local.size()), g.as<uint32_t>(), int(global.size()), pos.as<int32_t>(),
               nullptr, st);
  MMSP_CUDA(cudaStreamSynchronize(st));
  std::vector<int32_t> out(local.size());
  copy_on(out.data(), pos.as(), out.size() * 4, st);
  return out;
}

}  // namespace cclab::exec
