// cuBLASLt matmul with a per-shape algorithm autotune (issue 7): the collective matmul's products and
// its cuBLAS reference timings (matmul.cublas_full / _shard_xD) go through the same tuner, so that the
// comparison stays fair. cublasGemmEx's default takes cuBLASLt's first heuristic answer; here the
// top kCandidates answers are each timed on the real buffers, on an otherwise idle GPU, in sustained
// bursts, and the fastest is kept for the process (per device, shape, output type and pointer
// alignments); the heuristic's first answer unless another beats it by 1 %.
//
// Row-major C (rows x n) = A (rows x k) @ B (k x n) is column-major C^T = B^T A^T: cuBLASLt's "A" is
// our B (n x k, ld n) and its "B" is our A (k x rows, ld k); C is n x rows, ld n.
#pragma once

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "exec/mmsp/cmatmul_util.cuh"

namespace cclab::exec::detail {

#define MMSP_CUBLASLT(call) MMSP_CUBLAS(call)  // cublasLt returns cublasStatus_t too

// Largest power of two (<= 256) dividing the address: cuBLASLt's heuristic assumes 256-byte aligned
// operands unless told otherwise, and an algorithm chosen for that may fail on an offset pointer.
inline uint32_t pointer_alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

class LtGemmTuner {
 public:
  static constexpr int kCandidates = 16;  // heuristic answers timed per shape

  LtGemmTuner() = default;
  LtGemmTuner(const LtGemmTuner&) = delete;
  LtGemmTuner& operator=(const LtGemmTuner&) = delete;
  ~LtGemmTuner() {
    for (auto& [dev, h] : handles_) cublasLtDestroy(h);
  }

  // C = A @ B (row-major, beta 0, fp32 accumulate) on `stream` of `dev` with `ws` (ws_bytes) as the
  // workspace. The first call of a shape synchronises the device, times the candidates, then issues
  // the product: callers keep such first calls out of timed regions (see `tuned`). Returns false,
  // issuing nothing, when cuBLASLt offers no algorithm that runs the call (the caller falls back).
  bool gemm(int dev, cudaStream_t stream, int64_t rows, int64_t k, int64_t n, cudaDataType_t ab_type,
            cudaDataType_t c_type, const void* a, const void* b, void* c, void* ws, size_t ws_bytes) {
    Plan& p = plan(dev, stream, rows, k, n, ab_type, c_type, a, b, c, ws, ws_bytes);
    last_desc_ = p.desc;
    if (!p.usable) return false;
    MMSP_CUBLASLT(launch(handle(dev), p, p.algo, stream, a, b, c, ws, ws_bytes));
    return true;
  }

  // Whether the shape of this call was tuned already (a call now would not synchronise).
  bool tuned(int dev, int64_t rows, int64_t k, int64_t n, cudaDataType_t ab_type, cudaDataType_t c_type, const void* a,
             const void* b, const void* c) const {
    return plans_.count(key(dev, rows, k, n, ab_type, c_type, a, b, c)) != 0;
  }

  // What the last gemm ran: "rows=R alg=I tile=T stages=S splitk=K swz=W cl=C #J/N x0.97" (#J: rank in
  // the heuristic's list, N: candidates that ran; x: its time / the heuristic's first answer's time).
  const std::string& last_desc() const { return last_desc_; }

 private:
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int, int, uint32_t, uint32_t, uint32_t>;
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool usable = false;  // false: no heuristic answer ran the call
    std::string desc;
    ~Plan() {
      if (lc) cublasLtMatrixLayoutDestroy(lc);
      if (lb) cublasLtMatrixLayoutDestroy(lb);
      if (la) cublasLtMatrixLayoutDestroy(la);
      if (op) cublasLtMatmulDescDestroy(op);
    }
  };

  static Key key(int dev, int64_t rows, int64_t k, int64_t n, cudaDataType_t ab_type, cudaDataType_t c_type,
                 const void* a, const void* b, const void* c) {
    return {
        dev, rows, k, n, int(ab_type), int(c_type), pointer_alignment(a), pointer_alignment(b), pointer_alignment(c)};
  }

  cublasLtHandle_t handle(int dev) {
    auto it = handles_.find(dev);
    if (it != handles_.end()) return it->second;
    DeviceScope scope(dev);
    cublasLtHandle_t h = nullptr;
    MMSP_CUBLASLT(cublasLtCreate(&h));
    handles_[dev] = h;
    return h;
  }

  static cublasStatus_t launch(cublasLtHandle_t h, const Plan& p, const cublasLtMatmulAlgo_t& algo, cudaStream_t s,
                               const void* a, const void* b, void* c, void* ws, size_t ws_bytes) {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(h, p.op, &alpha, b, p.la, a, p.lb, &beta, c, p.lc, c, p.lc, &algo, ws, ws_bytes, s);
  }

  static std::string describe(const cublasLtMatmulAlgo_t& algo) {
    int32_t id = 0, splitk = 1;
    uint32_t tile = 0, stages = 0, swizzle = 0;
    uint16_t cluster = 0;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
    std::ostringstream os;
    os << "alg=" << id << " tile=" << tile << " stages=" << stages << " splitk=" << splitk << " swz=" << swizzle
       << " cl=" << cluster;
    return os.str();
  }

  // Microseconds of one product with `algo` in one burst of `reps` back-to-back products (the
  // executor's timed loops are bursts too: 50 products after 10 warm-ups). NAN when it refuses the call.
  double burst_us(int dev, cudaStream_t s, const Plan& p, const cublasLtMatmulAlgo_t& algo, int reps, const void* a,
                  const void* b, void* c, void* ws, size_t ws_bytes) {
    cublasLtHandle_t h = handle(dev);
    Event e0(dev, true), e1(dev, true);
    record(e0, s);
    for (int i = 0; i < reps; ++i)
      if (launch(h, p, algo, s, a, b, c, ws, ws_bytes) != CUBLAS_STATUS_SUCCESS) {
        cudaStreamSynchronize(s);
        cudaGetLastError();
        return NAN;
      }
    record(e1, s);
    MMSP_CUDA(cudaEventSynchronize(e1));
    return 1e3 * elapsed_ms(e0, e1) / reps;
  }

  Plan& plan(int dev, cudaStream_t stream, int64_t rows, int64_t k, int64_t n, cudaDataType_t ab_type,
             cudaDataType_t c_type, const void* a, const void* b, void* c, void* ws, size_t ws_bytes) {
    const Key kk = key(dev, rows, k, n, ab_type, c_type, a, b, c);
    auto it = plans_.find(kk);
    if (it != plans_.end()) return *it->second;

    DeviceScope scope(dev);
    auto p = std::make_unique<Plan>();
    MMSP_CUBLASLT(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    MMSP_CUBLASLT(cublasLtMatrixLayoutCreate(&p->la, ab_type, uint64_t(n), uint64_t(k), n));
    MMSP_CUBLASLT(cublasLtMatrixLayoutCreate(&p->lb, ab_type, uint64_t(k), uint64_t(rows), k));
    MMSP_CUBLASLT(cublasLtMatrixLayoutCreate(&p->lc, c_type, uint64_t(n), uint64_t(rows), n));
    cublasLtMatmulPreference_t pref = nullptr;
    MMSP_CUBLASLT(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws_max = ws_bytes;
    const uint32_t al_a = pointer_alignment(b), al_b = pointer_alignment(a), al_c = pointer_alignment(c);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_max, sizeof ws_max);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c);
    cublasLtMatmulHeuristicResult_t res[kCandidates] = {};
    int found = 0;
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(handle(dev), p->op, p->la, p->lb, p->lc, p->lc, pref, kCandidates, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (hs != CUBLAS_STATUS_SUCCESS) found = 0;

    // Time the candidates alone: everything already queued on this GPU finishes first. Short bursts
    // at boost clock misjudge sustained matmuls (on 2 x H200, picks 2-8 % faster in 0.5 ms bursts were up to
    // 12 % slower over 50 products: docs/findings/2026-11-22-collective-matmul-spread-autotune.md), so each
    // candidate runs bursts of ~kBurstUs, round-robin over kRounds rounds in alternating order (every candidate
    // sees the GPU as warm as the others), and its median burst counts; another than the heuristic's first answer must
    // beat it by kMargin.
    constexpr double kBurstUs = 20000, kMargin = 0.01;
    constexpr int kRounds = 3;
    MMSP_CUDA(cudaDeviceSynchronize());
    std::vector<int> cand;  // indices into res that ran
    for (int j = 0; j < found; ++j)
      if (res[j].state == CUBLAS_STATUS_SUCCESS &&
          !std::isnan(burst_us(dev, stream, *p, res[j].algo, 2, a, b, c, ws, ws_bytes)))  // warm-up, and refusals
        cand.push_back(j);
    std::vector<std::vector<double>> times(cand.size());
    int reps = 1;
    for (int round = 0; round < kRounds && !cand.empty(); ++round) {
      for (size_t q = 0; q < cand.size(); ++q) {
        const size_t i = round % 2 == 0 ? q : cand.size() - 1 - q;
        if (round == 0 && q == 0)  // burst length from the first answer's single product
          reps = std::clamp(
              int(kBurstUs / std::max(1.0, burst_us(dev, stream, *p, res[cand[0]].algo, 1, a, b, c, ws, ws_bytes))), 3,
              200);
        const double t = burst_us(dev, stream, *p, res[cand[i]].algo, reps, a, b, c, ws, ws_bytes);
        times[i].push_back(std::isnan(t) ? INFINITY : t);
      }
    }
    int best = -1;
    const int ran = int(cand.size());
    double best_us = INFINITY, first_us = NAN;
    for (size_t i = 0; i < cand.size(); ++i) {
      std::sort(times[i].begin(), times[i].end());
      const double t = times[i][times[i].size() / 2];
      if (i == 0) first_us = t, best_us = t, best = cand[0];
      if (i > 0 && t < best_us && t < (1.0 - kMargin) * first_us) best_us = t, best = cand[i];
    }
    std::ostringstream os;
    os.precision(3);
    if (best < 0) {
      os << "rows=" << rows << " no cuBLASLt algorithm: cublasGemmEx";
    } else {
      p->algo = res[best].algo;
      p->usable = true;
      os << "rows=" << rows << " " << describe(p->algo) << " #" << best << "/" << ran << " x" << best_us / first_us;
    }
    p->desc = os.str();
    return *plans_.emplace(kk, std::move(p)).first->second;
  }

  std::map<int, cublasLtHandle_t> handles_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::string last_desc_;
};

}  // namespace cclab::exec::detail
