#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "exec/mmsp/cmatmul.hpp"
#include "exec/mmsp/cmatmul_kernels.cuh"
#include "exec/mmsp/cmatmul_lt.cuh"
#include "exec/mmsp/cmatmul_util.cuh"

namespace cclab::exec {
namespace {

using namespace detail;

// cuBLAS's documented workspace recommendation for Hopper (sm_90) is 32 MiB (cuBLAS guide,
// "cublasSetWorkspace"); giving each handle its own buffer keeps allocations out of timed regions.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;

const char* kRing = "allgather_matmul.ring";
const char* kBidir = "allgather_matmul.ring_bidir";
const char* kRsRing = "matmul_reducescatter.ring";
const char* kAgNccl = "allgather_matmul.nccl_cublas";
const char* kRsNccl = "matmul_reducescatter.nccl_cublas";

bool is_rs(const std::string& a) { return a.rfind("matmul_reducescatter.", 0) == 0; }
bool is_nccl(const std::string& a) { return a.size() > 12 && a.substr(a.size() - 12) == ".nccl_cublas"; }

// Tolerances against the fp32-output reference: one rounding of the output to the dtype (2^-11
// relative for fp16, 2^-8 for bf16) plus, for matmul_reducescatter, one rounding of each partial sum
// per hop; atol scales with the reference's rms so that elements near zero are judged fairly.
struct Tolerance {
  float rtol, atol_rms, relerr;
};
Tolerance tolerance(DType t) {
  switch (t) {
    case DType::f16:
      return {1e-2f, 1e-2f, 1e-2f};
    case DType::bf16:
      return {2e-2f, 2e-2f, 1e-2f};
    case DType::f32:
      return {1e-4f, 1e-4f, 1e-4f};
  }
  return {1e-2f, 1e-2f, 1e-2f};
}

struct Rank {
  int dev = 0;
  Stream comp, copy_l, copy_r;  // matmuls; copies to the previous rank; copies to the next rank
  cublasHandle_t blas = nullptr;
  DevBuf ws;
  DevBuf a_in, b, agather, c;       // allgather_matmul: A_d, B_d, gathered A (scratch), output
  DevBuf a_rs, work, recv, out_rs;  // matmul_reducescatter: A_d, own partials, arrived partials, output
  DevBuf ref_c, ref_rs;             // fp32 references
  DevBuf stats;                     // comparison counters
  std::vector<Event> arr_l, arr_r, ready;
  Event done;
  ~Rank() {
    if (blas) cublasDestroy(blas);
  }
};

class Runner {
 public:
  Runner(RankGpus& gpus, const CmatmulConfig& cfg, bool need_rs)
      : g_(gpus),
        cfg_(cfg),
        D_(gpus.nranks()),
        m_(cfg.shape.m),
        k_(cfg.shape.k),
        n_(cfg.shape.n),
        chunks_(std::max(1, cfg.ring_chunks)) {
    es_ = dtype_size(cfg.dtype);
    shard_bytes_ = size_t(m_ * k_ * es_);
    blk_bytes_ = size_t(m_ * n_ * es_);
    for (int r = 0; r < D_; ++r) {
      auto x = std::make_unique<Rank>();
      x->dev = g_.device(r);
      DeviceScope scope(x->dev);
      x->comp = Stream(x->dev);
      x->copy_l = Stream(x->dev);
      x->copy_r = Stream(x->dev);
      MMSP_CUBLAS(cublasCreate(&x->blas));
      // One stream per handle for its whole life: cublasSetStream would reset the workspace.
      MMSP_CUBLAS(cublasSetStream(x->blas, x->comp));
      x->ws = DevBuf(x->dev, kCublasWorkspaceBytes);
      MMSP_CUBLAS(cublasSetWorkspace(x->blas, x->ws.as(), x->ws.bytes()));
      x->a_in = DevBuf(x->dev, shard_bytes_);
      x->b = DevBuf(x->dev, size_t(k_ * n_ * es_));
      x->agather = DevBuf(x->dev, shard_bytes_ * D_);
      x->c = DevBuf(x->dev, blk_bytes_ * D_);
      if (need_rs) {
        x->a_rs = DevBuf(x->dev, shard_bytes_ * D_);
        x->work = DevBuf(x->dev, blk_bytes_ * std::max(1, D_ - 1));
        x->recv = DevBuf(x->dev, blk_bytes_ * std::max(1, D_ - 1));
        x->out_rs = DevBuf(x->dev, blk_bytes_);
      }
      x->stats = DevBuf(x->dev, 64);
      for (int i = 0; i < std::max(1, D_); ++i) {
        for (int j = 0; j < chunks_; ++j) x->arr_l.emplace_back(x->dev, false);  // ring: one per (step, chunk)
        x->arr_r.emplace_back(x->dev, false);
        x->ready.emplace_back(x->dev, false);
      }
      x->done = Event(x->dev, false);
      R_.push_back(std::move(x));
    }
    DeviceScope scope(R_[0]->dev);
    start_ = Event(R_[0]->dev, true);
    stop_ = Event(R_[0]->dev, true);
    // Random non-zero inputs, a different stream of numbers per rank and operand.
    for (int r = 0; r < D_; ++r) {
      Rank& x = *R_[r];
      DeviceScope s(x.dev);
      uint64_t base = mix64(cfg.seed * 1000003ull + uint64_t(r));
      fill_uniform(x.a_in.as(), cfg.dtype, m_ * k_, base ^ 1, x.comp);
      fill_uniform(x.b.as(), cfg.dtype, k_ * n_, base ^ 2, x.comp);
      fill_uniform(x.agather.as(), cfg.dtype, m_ * k_ * D_, base ^ 3, x.comp);
      if (need_rs) fill_uniform(x.a_rs.as(), cfg.dtype, m_ * k_ * D_, base ^ 4, x.comp);
    }
    sync_all();
  }

  void sync_all() {
    for (auto& x : R_) {
      DeviceScope s(x->dev);
      MMSP_CUDA(cudaDeviceSynchronize());
    }
  }
  // After a failed algorithm: drain what was enqueued, ignoring errors (they were reported).
  void sync_all_quiet() {
    for (auto& x : R_) {
      cudaSetDevice(x->dev);
      cudaDeviceSynchronize();
      cudaGetLastError();
    }
  }

  // C (rows x n) = A (rows x k) @ B (k x n) [+ beta C], row-major, fp32 accumulate, on the rank's
  // compute stream. Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets (B, A) swapped.
  // With cfg.autotune, the products (beta 0, output in the input dtype) take cuBLASLt's fastest
  // algorithm for their shape (exec/mmsp/cmatmul_lt.cuh; the first call of a shape tunes, untimed); the
  // fp32 references stay on cublasGemmEx.
  void gemm(Rank& x, int64_t rows, const void* a, const void* b, void* c, cudaDataType_t ctype, float beta) {
    if (cfg_.autotune && beta == 0.0f && ctype == cuda_type(cfg_.dtype)) {
      CCLAB_ASSERT(!timing_ || lt_.tuned(x.dev, rows, k_, n_, ctype, ctype, a, b, c),
                   "cmatmul: a matmul shape first met inside a timed region (it would be tuned there)");
      // A new shape is tuned with every GPU idle (no peer copy landing in this GPU's memory meanwhile):
      // what was queued so far waits on events recorded earlier, so it drains.
      if (!lt_.tuned(x.dev, rows, k_, n_, ctype, ctype, a, b, c)) sync_all();
      const bool issued = lt_.gemm(x.dev, x.comp, rows, k_, n_, ctype, ctype, a, b, c, x.ws.as(), x.ws.bytes());
      picked_[label_].insert(lt_.last_desc());
      if (issued) return;
    }
    const float alpha = 1.0f;
    MMSP_CUBLAS(cublasGemmEx(x.blas, CUBLAS_OP_N, CUBLAS_OP_N, int(n_), int(rows), int(k_), &alpha, b,
                             cuda_type(cfg_.dtype), int(n_), a, cuda_type(cfg_.dtype), int(k_), &beta, c, ctype,
                             int(n_), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  void gemm(Rank& x, int64_t rows, const void* a, const void* b, void* c, float beta = 0.0f) {
    gemm(x, rows, a, b, c, cuda_type(cfg_.dtype), beta);
  }

  int prev(int r) const { return (r - 1 + D_) % D_; }
  int next(int r) const { return (r + 1) % D_; }

  // ---- allgather_matmul.ring: at step i rank r multiplies shard (r+i) mod D while a copy engine
  // forwards that shard to rank r-1, which needs it at step i+1. With ring_chunks = C > 1 each shard
  // travels as C row chunks, one copy and one event each, and an arrived shard is multiplied chunk by
  // chunk as its chunks land (the own shard of step 0 in one matmul): where one shard's copy takes
  // longer than its matmul, the next step's matmul then starts on the first chunk instead of waiting
  // for the whole shard.
  int64_t chunk_row0(int j) const { return (m_ / chunks_) * j + std::min<int64_t>(j, m_ % chunks_); }
  int64_t chunk_rows(int j) const { return chunk_row0(j + 1) - chunk_row0(j); }
  void enqueue_ring() {
    const int C = chunks_;
    for (int r = 0; r < D_; ++r) {  // r-1 finished reading its slots in the previous iteration
      DeviceScope scope(R_[r]->dev);
      wait(R_[r]->copy_l, R_[prev(r)]->done);
    }
    for (int i = 0; i < D_; ++i) {
      for (int r = 0; r < D_; ++r) {
        Rank& x = *R_[r];
        DeviceScope scope(x.dev);
        int s = (r + i) % D_;
        const char* src = i == 0 ? x.a_in.bytes_ptr() : x.agather.bytes_ptr(s * shard_bytes_);
        char* dst = x.c.bytes_ptr(size_t(s) * blk_bytes_);
        if (i == 0 || C == 1) {
          if (i > 0) wait(x.comp, R_[next(r)]->arr_l[i - 1]);  // shard s has arrived from r+1
          gemm(x, m_, src, x.b.as(), dst);
        } else {
          for (int j = 0; j < C; ++j) {  // chunk j of shard s has arrived from r+1
            wait(x.comp, R_[next(r)]->arr_l[(i - 1) * C + j]);
            gemm(x, chunk_rows(j), src + chunk_row0(j) * k_ * es_, x.b.as(), dst + chunk_row0(j) * n_ * es_);
          }
        }
        if (i < D_ - 1) {
          for (int j = 0; j < C; ++j) {
            const size_t off = size_t(chunk_row0(j) * k_ * es_), bytes = size_t(chunk_rows(j) * k_ * es_);
            if (i > 0) wait(x.copy_l, R_[next(r)]->arr_l[(i - 1) * C + j]);
            MMSP_CUDA(cudaMemcpyAsync(R_[prev(r)]->agather.bytes_ptr(s * shard_bytes_ + off), src + off, bytes,
                                      cudaMemcpyDefault, x.copy_l));
            record(x.arr_l[i * C + j], x.copy_l);
          }
        }
      }
    }
    finish_ranks(true, false, (D_ - 1) * C - 1);
  }

  // ---- allgather_matmul.ring_bidir: rows [0, m0) of each shard travel to r-1, rows [m0, m) to r+1.
  // At step i rank r holds the top half of shard (r+i) and the bottom half of shard (r-i).
  void enqueue_bidir() {
    const int64_t m0 = m_ / 2, m1 = m_ - m0;
    const size_t top_bytes = size_t(m0 * k_ * es_), bot_bytes = size_t(m1 * k_ * es_);
    for (int r = 0; r < D_; ++r) {
      DeviceScope scope(R_[r]->dev);
      wait(R_[r]->copy_l, R_[prev(r)]->done);
      wait(R_[r]->copy_r, R_[next(r)]->done);
    }
    for (int i = 0; i < D_; ++i) {
      for (int r = 0; r < D_; ++r) {
        Rank& x = *R_[r];
        DeviceScope scope(x.dev);
        int sl = (r + i) % D_, sr = ((r - i) % D_ + D_) % D_;
        auto shard = [&](int s) -> const char* {
          return i == 0 ? x.a_in.bytes_ptr() : x.agather.bytes_ptr(s * shard_bytes_);
        };
        if (i > 0) {
          wait(x.comp, R_[next(r)]->arr_l[i - 1]);
          wait(x.comp, R_[prev(r)]->arr_r[i - 1]);
        }
        if (sl == sr) {  // both halves of one shard in hand (step 0, and step D/2 for even D): one matmul
          gemm(x, m_, shard(sl), x.b.as(), x.c.bytes_ptr(size_t(sl) * blk_bytes_));
        } else {
          gemm(x, m0, shard(sl), x.b.as(), x.c.bytes_ptr(size_t(sl) * blk_bytes_));
          gemm(x, m1, shard(sr) + top_bytes, x.b.as(), x.c.bytes_ptr(size_t(sr) * blk_bytes_ + size_t(m0 * n_ * es_)));
        }
        if (i < D_ - 1) {
          if (i > 0) wait(x.copy_l, R_[next(r)]->arr_l[i - 1]);
          if (top_bytes)
            MMSP_CUDA(cudaMemcpyAsync(R_[prev(r)]->agather.bytes_ptr(sl * shard_bytes_), shard(sl), top_bytes,
                                      cudaMemcpyDefault, x.copy_l));
          record(x.arr_l[i], x.copy_l);
          if (i > 0) wait(x.copy_r, R_[prev(r)]->arr_r[i - 1]);
          MMSP_CUDA(cudaMemcpyAsync(R_[next(r)]->agather.bytes_ptr(sr * shard_bytes_ + top_bytes),
                                    shard(sr) + top_bytes, bot_bytes, cudaMemcpyDefault, x.copy_r));
          record(x.arr_r[i], x.copy_r);
        }
      }
    }
    finish_ranks(true, true);
  }

  // ---- matmul_reducescatter.ring: at step t rank r computes the partial of block (r-t-1) mod D into
  // its own buffer (no wait), then adds the partial that rank r-1 sent one step earlier, and sends
  // the sum on to r+1; the last step's block is r's own, computed straight into its output. The copy
  // of step t runs while the matmul of step t+1 computes.
  void enqueue_rs_ring() {
    for (int r = 0; r < D_; ++r) {  // r+1 finished reading its recv slots in the previous iteration
      DeviceScope scope(R_[r]->dev);
      wait(R_[r]->copy_l, R_[next(r)]->done);
    }
    for (int t = 0; t < D_; ++t) {
      for (int r = 0; r < D_; ++r) {
        Rank& x = *R_[r];
        DeviceScope scope(x.dev);
        int b = ((r - t - 1) % D_ + D_) % D_;
        char* target = t == D_ - 1 ? x.out_rs.bytes_ptr() : x.work.bytes_ptr(size_t(t) * blk_bytes_);
        gemm(x, m_, x.a_rs.bytes_ptr(size_t(b) * shard_bytes_), x.b.as(), target);
        if (t > 0) {
          wait(x.comp, R_[prev(r)]->arr_l[t - 1]);
          add_inplace(target, x.recv.bytes_ptr(size_t(t - 1) * blk_bytes_), cfg_.dtype, m_ * n_, x.comp);
        }
        if (t < D_ - 1) {
          record(x.ready[t], x.comp);
          wait(x.copy_l, x.ready[t]);
          MMSP_CUDA(cudaMemcpyAsync(R_[next(r)]->recv.bytes_ptr(size_t(t) * blk_bytes_), target, blk_bytes_,
                                    cudaMemcpyDefault, x.copy_l));
          record(x.arr_l[t], x.copy_l);
        }
      }
    }
    finish_ranks(true, false);
  }

  // ---- baselines: NCCL all-gather then one cuBLAS matmul; one cuBLAS matmul then NCCL reduce-scatter.
  // The communicators, created (ncclCommInitAll) before any group opens: init may not run inside one.
  std::vector<ncclComm_t> comms() {
    std::vector<ncclComm_t> c;
    for (int r = 0; r < D_; ++r) c.push_back(g_.nccl(r));
    return c;
  }

  void enqueue_ag_nccl() {
    const auto comm = comms();
    NcclGroup group;
    for (int r = 0; r < D_; ++r)
      MMSP_NCCL(ncclAllGather(R_[r]->a_in.as(), R_[r]->agather.as(), size_t(m_ * k_), nccl_type(cfg_.dtype), comm[r],
                              R_[r]->comp));
    group.end();
    for (int r = 0; r < D_; ++r) {
      Rank& x = *R_[r];
      DeviceScope scope(x.dev);
      gemm(x, m_ * D_, x.agather.as(), x.b.as(), x.c.as());
    }
    finish_ranks(false, false);
  }

  void enqueue_rs_nccl() {
    const auto comm = comms();
    for (int r = 0; r < D_; ++r) {
      Rank& x = *R_[r];
      DeviceScope scope(x.dev);
      gemm(x, m_ * D_, x.a_rs.as(), x.b.as(), x.c.as());
    }
    NcclGroup group;
    for (int r = 0; r < D_; ++r)
      MMSP_NCCL(ncclReduceScatter(R_[r]->c.as(), R_[r]->out_rs.as(), size_t(m_ * n_), nccl_type(cfg_.dtype), ncclSum,
                                  comm[r], R_[r]->comp));
    group.end();
    finish_ranks(false, false);
  }

  // Every rank's compute stream waits for its own last copies, then marks the iteration done.
  // last_l: the index of the last arrival event of arr_l (default D-2: one per step).
  void finish_ranks(bool used_l, bool used_r, int last_l = -1) {
    if (last_l < 0) last_l = D_ - 2;
    for (int r = 0; r < D_; ++r) {
      Rank& x = *R_[r];
      DeviceScope scope(x.dev);
      if (D_ > 1 && used_l) wait(x.comp, x.arr_l[last_l]);
      if (D_ > 1 && used_r) wait(x.comp, x.arr_r[D_ - 2]);
      record(x.done, x.comp);
    }
  }

  void enqueue(const std::string& algo) {
    if (algo == kRing)
      enqueue_ring();
    else if (algo == kBidir)
      enqueue_bidir();
    else if (algo == kRsRing)
      enqueue_rs_ring();
    else if (algo == kAgNccl)
      enqueue_ag_nccl();
    else if (algo == kRsNccl)
      enqueue_rs_nccl();
    else
      CCLAB_ASSERT(false, "unknown collective matmul " + algo);
  }

  // Mean time of one iteration in microseconds: warm-up, then `iters` back-to-back iterations between
  // two events on rank 0 that wait for every rank (so the span covers the slowest GPU).
  double time_algo(const std::string& algo) {
    label_ = algo;
    prime([&] { enqueue(algo); });
    for (int w = 0; w < cfg_.warmup; ++w) enqueue(algo);
    Rank& x0 = *R_[0];
    {
      DeviceScope scope(x0.dev);
      for (auto& x : R_) wait(x0.comp, x->done);
      record(start_, x0.comp);
    }
    for (auto& x : R_) {  // nobody starts the timed iterations before the start mark
      DeviceScope scope(x->dev);
      wait(x->comp, start_);
      wait(x->copy_l, start_);
      wait(x->copy_r, start_);
    }
    timing_ = true;
    for (int it = 0; it < cfg_.iters; ++it) enqueue(algo);
    timing_ = false;
    DeviceScope scope(x0.dev);
    for (auto& x : R_) wait(x0.comp, x->done);
    record(stop_, x0.comp);
    MMSP_CUDA(cudaEventSynchronize(stop_));
    sync_all();
    return 1e3 * elapsed_ms(start_, stop_) / cfg_.iters;
  }

  // With autotune, one untimed pass that meets (and tunes) every matmul shape of `pass` first, so
  // that warm-up and timed iterations run tuned products only (also when warmup is 0).
  template <class Pass>
  void prime(Pass pass) {
    if (!cfg_.autotune) return;
    pass();
    sync_all();
  }

  // One matmul of `rows` rows on rank 0's GPU alone: the full gathered shape or the local shard;
  // `label` names its record (the autotune's choice goes into that record's note).
  double time_single_gemm(int64_t rows, const std::string& label) {
    Rank& x = *R_[0];
    DeviceScope scope(x.dev);
    const void* a = x.agather.as();  // (D m) x k of random data
    label_ = label;
    prime([&] { gemm(x, rows, a, x.b.as(), x.c.as()); });
    for (int w = 0; w < cfg_.warmup; ++w) gemm(x, rows, a, x.b.as(), x.c.as());
    record(start_, x.comp);
    timing_ = true;
    for (int it = 0; it < cfg_.iters; ++it) gemm(x, rows, a, x.b.as(), x.c.as());
    timing_ = false;
    record(stop_, x.comp);
    MMSP_CUDA(cudaEventSynchronize(stop_));
    return 1e3 * elapsed_ms(start_, stop_) / cfg_.iters;
  }

  // fp32-output cuBLAS references, from operands assembled by plain peer copies.
  void build_references(bool need_ag, bool need_rs) {
    for (int r = 0; r < D_; ++r) {
      Rank& x = *R_[r];
      DeviceScope scope(x.dev);
      if (need_ag) {
        x.ref_c = DevBuf(x.dev, size_t(D_ * m_ * n_) * sizeof(float));
        DevBuf gathered(x.dev, shard_bytes_ * D_);
        for (int e = 0; e < D_; ++e)
          MMSP_CUDA(cudaMemcpyAsync(gathered.bytes_ptr(e * shard_bytes_), R_[e]->a_in.as(), shard_bytes_,
                                    cudaMemcpyDefault, x.comp));
        gemm(x, D_ * m_, gathered.as(), x.b.as(), x.ref_c.as(), CUDA_R_32F, 0.0f);
        MMSP_CUDA(cudaStreamSynchronize(x.comp));
      }
      if (need_rs) {
        x.ref_rs = DevBuf(x.dev, size_t(m_ * n_) * sizeof(float));
        DevBuf a_blk(x.dev, shard_bytes_), b_e(x.dev, size_t(k_ * n_ * es_));
        for (int e = 0; e < D_; ++e) {
          MMSP_CUDA(cudaMemcpyAsync(a_blk.as(), R_[e]->a_rs.bytes_ptr(size_t(r) * shard_bytes_), shard_bytes_,
                                    cudaMemcpyDefault, x.comp));
          MMSP_CUDA(cudaMemcpyAsync(b_e.as(), R_[e]->b.as(), b_e.bytes(), cudaMemcpyDefault, x.comp));
          gemm(x, m_, a_blk.as(), b_e.as(), x.ref_rs.as(), CUDA_R_32F, e == 0 ? 0.0f : 1.0f);
        }
        MMSP_CUDA(cudaStreamSynchronize(x.comp));
      }
    }
  }

  struct Check {
    int64_t wrong = 0;
    double relerr = 0;
  };

  // Poisons every output and scratch buffer with NaN, runs one iteration, compares on every rank.
  Check run_checked(const std::string& algo) {
    const bool rs = is_rs(algo);
    label_ = algo;
    for (auto& x : R_) {
      DeviceScope scope(x->dev);
      MMSP_CUDA(cudaMemsetAsync(x->c.as(), 0xff, x->c.bytes(), x->comp));  // 0xffff: NaN in fp16/bf16/fp32
      MMSP_CUDA(cudaMemsetAsync(x->agather.as(), 0xff, x->agather.bytes(), x->comp));
      if (rs) {
        MMSP_CUDA(cudaMemsetAsync(x->out_rs.as(), 0xff, x->out_rs.bytes(), x->comp));
        MMSP_CUDA(cudaMemsetAsync(x->work.as(), 0xff, x->work.bytes(), x->comp));
        MMSP_CUDA(cudaMemsetAsync(x->recv.as(), 0xff, x->recv.bytes(), x->comp));
      }
    }
    sync_all();
    enqueue(algo);
    sync_all();
    Tolerance tol = tolerance(cfg_.dtype);
    Check out;
    double d2 = 0, r2 = 0;
    for (auto& x : R_) {
      DeviceScope scope(x->dev);
      const float* ref = rs ? x->ref_rs.as<float>() : x->ref_c.as<float>();
      int64_t n = rs ? m_ * n_ : D_ * m_ * n_;
      double rms = std::sqrt(sum_squares(ref, n, x->comp) / double(n));
      CompareStats st = compare_to_ref(rs ? x->out_rs.as() : x->c.as(), cfg_.dtype, ref, n, tol.rtol,
                                       float(tol.atol_rms * rms), x->stats.as(), x->comp);
      out.wrong += int64_t(st.bad);
      d2 += st.diff2;
      r2 += st.ref2;
    }
    out.relerr = r2 > 0 ? std::sqrt(d2 / r2) : (d2 > 0 ? INFINITY : 0.0);
    if (!(out.relerr <= tol.relerr) && out.wrong == 0) out.wrong = 1;  // a norm failure is a failure
    // Re-fill the gathered-A scratch with random data: the single-matmul timings read it.
    for (int r = 0; r < D_; ++r) {
      DeviceScope scope(R_[r]->dev);
      fill_uniform(R_[r]->agather.as(), cfg_.dtype, m_ * k_ * D_, mix64(cfg_.seed + 77 + r), R_[r]->comp);
    }
    sync_all();
    return out;
  }

  // The note column of a record: which matmul algorithm its products ran.
  std::string matmul_note(const std::string& label) const {
    if (!cfg_.autotune) return "matmuls: cublasGemmEx default algorithm (autotune off)";
    std::string s = "matmuls: cuBLASLt autotuned (top " + std::to_string(LtGemmTuner::kCandidates) + " timed):";
    auto it = picked_.find(label);
    if (it != picked_.end())
      for (const auto& d : it->second) s += " [" + d + "]";
    return s;
  }

 private:
  RankGpus& g_;
  const CmatmulConfig& cfg_;
  int D_;
  int64_t m_, k_, n_;
  int chunks_ = 1;  // allgather_matmul.ring's chunks per shard (CmatmulConfig::ring_chunks)
  int es_ = 2;
  size_t shard_bytes_ = 0, blk_bytes_ = 0;
  std::vector<std::unique_ptr<Rank>> R_;
  Event start_, stop_;
  LtGemmTuner lt_;     // declared after R_: destroyed first, while the devices' buffers still exist
  std::string label_;  // the record the current products belong to
  std::map<std::string, std::set<std::string>> picked_;  // label -> the tuner's choices it ran
  bool timing_ = false;
};

std::string fmt(double v, int prec = 4) {
  std::ostringstream os;
  os.precision(prec);
  os << v;
  return os.str();
}

}  // namespace

const std::vector<std::string>& collective_matmul_algos() {
  static const std::vector<std::string> names = {kRing, kBidir, kRsRing, kAgNccl, kRsNccl};
  return names;
}

bool is_collective_matmul(std::string_view algo) {
  const auto& n = collective_matmul_algos();
  return std::find(n.begin(), n.end(), algo) != n.end();
}

std::vector<Record> run_collective_matmul(RankGpus& gpus, const CmatmulConfig& cfg,
                                          std::vector<std::string>* failures) {
  const MatmulShape& s = cfg.shape;
  if (!s.valid())
    throw_input("--shape needs M,K,N all positive (got " + std::to_string(s.m) + "," + std::to_string(s.k) + "," +
                std::to_string(s.n) + ")");
  const int D = gpus.nranks();
  if (s.m * D > INT_MAX || s.k > INT_MAX || s.n > INT_MAX)
    throw_input("--shape " + std::to_string(s.m) + "," + std::to_string(s.k) + "," + std::to_string(s.n) +
                ": each matmul dimension must stay below 2^31");
  if (cfg.iters < 1 || cfg.warmup < 0) throw_input("collective matmul needs iters >= 1 and warmup >= 0");

  std::vector<std::string> algos = cfg.algos;
  const bool explicit_list = !algos.empty();
  if (!explicit_list) algos = collective_matmul_algos();
  for (const auto& a : algos) {
    if (!is_collective_matmul(a)) throw_input("unknown collective matmul algorithm '" + a + "'");
    if (a == kBidir && s.m < 2) throw_input(std::string(kBidir) + " needs M >= 2 (half of each shard goes each way)");
    if (a == kRing && (cfg.ring_chunks < 1 || cfg.ring_chunks > s.m))
      throw_input(std::string(kRing) + ": ring_chunks must be 1..M (got " + std::to_string(cfg.ring_chunks) + ")");
  }
  if (gpus.shared()) {  // NCCL cannot run ranks that share a GPU
    if (explicit_list)
      for (const auto& a : algos)
        if (is_nccl(a)) throw_env(a + " needs one rank per GPU (NCCL): these ranks share GPUs");
    std::erase_if(algos, [](const std::string& a) { return is_nccl(a); });
  }
  const bool need_rs = std::any_of(algos.begin(), algos.end(), [](const std::string& a) { return is_rs(a); });
  const bool need_ag = std::any_of(algos.begin(), algos.end(), [](const std::string& a) { return !is_rs(a); });

  Runner run(gpus, cfg, need_rs);
  if (cfg.check) run.build_references(need_ag, need_rs);

  const std::string full_label = "matmul.cublas_full", shard_label = "matmul.cublas_shard_x" + std::to_string(D);
  const double t_full = run.time_single_gemm(s.m * D, full_label);
  const double t_shard = run.time_single_gemm(s.m, shard_label);
  const double t_bound = D * t_shard;

  struct Result {
    std::string algo;
    double t_us;
    Runner::Check check;
  };
  std::vector<Result> results;
  for (const auto& a : algos) {
    try {
      Runner::Check chk{-1, NAN};
      if (cfg.check) chk = run.run_checked(a);
      double t = run.time_algo(a);
      results.push_back({a, t, chk});
    } catch (const Error& e) {
      if (!failures) throw;
      failures->push_back(a + ": " + e.what());  // the other algorithms still run and keep their rows
      run.sync_all_quiet();
    }
  }
  std::map<std::string, double> nccl_time;
  for (const auto& r : results)
    if (is_nccl(r.algo)) nccl_time[is_rs(r.algo) ? "rs" : "ag"] = r.t_us;

  const std::string device = gpus.device_label(), date = detail::utc_now_iso(), commit = detail::commit_label();
  const std::string shape = std::to_string(s.m) + "," + std::to_string(s.k) + "," + std::to_string(s.n);
  const double flops_per_gpu = 2.0 * double(D) * s.m * s.k * s.n;
  const int es = dtype_size(cfg.dtype);
  auto base_record = [&](const std::string& algo, const std::string& collective, int ranks, double t_us) {
    Record rec;
    rec.algo = algo;
    rec.collective = collective;
    rec.backend = "gpu";
    rec.topology = "local";  // measured on this node's GPUs, as `cclab run` labels its rows
    rec.ranks = ranks;
    rec.count = int64_t(D) * s.m * s.k;
    rec.bytes = rec.count * es;  // the gathered A, as DESIGN.md defines bytes for collective matmul
    rec.dtype = std::string(dtype_name(cfg.dtype));
    rec.redop = collective == "matmul_reducescatter" ? "sum" : "none";
    rec.time_us = t_us;
    rec.device = device;
    rec.commit = commit;
    rec.date = date;
    rec.shape = shape;
    rec.note = run.matmul_note(algo);
    if (algo == kRing && cfg.ring_chunks > 1)
      rec.note = "ring_chunks=" + std::to_string(cfg.ring_chunks) + "; " + rec.note;
    if (gpus.shared()) rec.note = "ranks share GPUs: timing not meaningful; " + rec.note;
    fill_bandwidths(rec);
    rec.extra.emplace_back("tflops", fmt(flops_per_gpu / (t_us * 1e-6) / 1e12));
    rec.extra.emplace_back("util_vs_bound", fmt(t_bound / t_us));
    rec.extra.emplace_back("ratio_vs_cublas_full", fmt(t_us / t_full));
    return rec;
  };

  std::vector<Record> rows;
  for (const auto& r : results) {
    const bool rs = is_rs(r.algo);
    Record rec = base_record(r.algo, rs ? "matmul_reducescatter" : "allgather_matmul", D, r.t_us);
    rec.wrong = r.check.wrong;
    auto it = nccl_time.find(rs ? "rs" : "ag");
    rec.extra.emplace_back("speedup_vs_nccl_cublas", it != nccl_time.end() ? fmt(it->second / r.t_us) : "");
    rec.extra.emplace_back("relerr", cfg.check ? fmt(r.check.relerr, 3) : "");
    rec.extra.emplace_back("t_full_us", fmt(t_full, 6));
    rec.extra.emplace_back("t_bound_us", fmt(t_bound, 6));
    rows.push_back(std::move(rec));
  }
  if (cfg.reference_rows) {
    // One GPU's matmuls: the full gathered shape, and the local shard (the bound is D times it).
    for (auto [algo, t] :
         {std::pair<std::string, double>{full_label, t_full}, std::pair<std::string, double>{shard_label, t_bound}}) {
      Record rec = base_record(algo, "matmul", 1, t);
      rec.wrong = -1;
      rec.algbw_gbps = rec.busbw_gbps = 0;
      rec.extra.emplace_back("speedup_vs_nccl_cublas", "");
      rec.extra.emplace_back("relerr", "");
      rec.extra.emplace_back("t_full_us", fmt(t_full, 6));
      rec.extra.emplace_back("t_bound_us", fmt(t_bound, 6));
      rows.push_back(std::move(rec));
    }
  }
  return rows;
}

}  // namespace cclab::exec
