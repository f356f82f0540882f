#include "algorithms/adv_collective_matmul.hpp"

#include <string>
#include <vector>

#include "algorithms/adv_common.hpp"

namespace cclab {

namespace {

constexpr int kComputeChannel = 0, kSendChannel = 1, kSendChannel2 = 2;

MatmulShape checked_shape(const AlgoArgs& args, const std::string& algo) {
  if (!args.shape.valid()) throw_input(algo + " needs a matmul shape (--shape M,K,N with positive values)");
  if (args.in_place) throw_input(algo + " has no in-place form");
  return args.shape;
}

// C (rows x n, ldc = n) (+)= A (rows x k, lda = k) @ B (k x n, ldb = n).
Compute matmul(Ref a, Ref b, Ref c, int64_t rows, int64_t k, int64_t n, bool accumulate) {
  return Compute{.kind = ComputeKind::matmul,
                 .m = rows,
                 .k = k,
                 .n = n,
                 .lda = k,
                 .ldb = n,
                 .ldc = n,
                 .accumulate = accumulate,
                 .a = a,
                 .b = b,
                 .c = c};
}

}  // namespace

void build_allgather_matmul_ring(const AlgoArgs& args, Transport& t) {
  const auto [m, k, n] = checked_shape(args, "allgather_matmul.ring");
  const int D = args.nranks;
  const int64_t E = t.elem_size(), shard = m * k * E;
  t.set_count(m * D * k);
  t.set_all_buffers({.input = shard + k * n * E, .output = m * D * n * E, .scratch = (D - 1) * shard});
  // The shard device d works on at step i: its own A_d, then what d+1 sent at step i-1.
  auto held = [&](int d, int i) { return i == 0 ? in(d) : scratch(d, (i - 1) * shard); };
  std::vector<OpId> arrived(D, kNoOp), next(D, kNoOp);
  for (int i = 0; i < D; ++i) {
    t.set_step(i);
    for (int d = 0; d < D; ++d) {
      const int s = (d + i) % D;
      t.compute(d, matmul(held(d, i), in(d, shard), out(d, s * m * n * E), m, k, n, false), {arrived[d]},
                kComputeChannel);
      if (i + 1 < D) {
        const int prev = adv::mod(d - 1, D);
        next[prev] = t.put(d, held(d, i), held(prev, i + 1), shard, {arrived[d]}, kSendChannel);
      }
    }
    arrived.swap(next);
  }
}

void build_allgather_matmul_ring_bidir(const AlgoArgs& args, Transport& t) {
  const auto [m, k, n] = checked_shape(args, "allgather_matmul.ring_bidir");
  const int D = args.nranks;
  const int64_t E = t.elem_size();
  const int64_t h1 = m / 2, h2 = m - h1;  // rows going to d-1 and to d+1
  const int64_t half1 = h1 * k * E, half2 = h2 * k * E, area2 = (D - 1) * half1;
  t.set_count(m * D * k);
  t.set_all_buffers({.input = m * k * E + k * n * E, .output = m * D * n * E, .scratch = (D - 1) * m * k * E});
  auto first = [&](int d, int i) { return i == 0 ? in(d) : scratch(d, (i - 1) * half1); };
  auto second = [&](int d, int i) { return i == 0 ? in(d, half1) : scratch(d, area2 + (i - 1) * half2); };
  std::vector<OpId> got1(D, kNoOp), got2(D, kNoOp), next1(D, kNoOp), next2(D, kNoOp);
  for (int i = 0; i < D; ++i) {
    t.set_step(i);
    for (int d = 0; d < D; ++d) {
      const int s1 = (d + i) % D, s2 = adv::mod(d - i, D);
      const Ref b = in(d, m * k * E);
      if (h1 > 0)
        t.compute(d, matmul(first(d, i), b, out(d, s1 * m * n * E), h1, k, n, false), {got1[d]}, kComputeChannel);
      t.compute(d, matmul(second(d, i), b, out(d, (s2 * m + h1) * n * E), h2, k, n, false), {got2[d]}, kComputeChannel);
      if (i + 1 < D) {
        const int prev = adv::mod(d - 1, D), nxt = (d + 1) % D;
        if (h1 > 0) next1[prev] = t.put(d, first(d, i), first(prev, i + 1), half1, {got1[d]}, kSendChannel);
        next2[nxt] = t.put(d, second(d, i), second(nxt, i + 1), half2, {got2[d]}, kSendChannel2);
      }
    }
    got1.swap(next1);
    got2.swap(next2);
  }
}

void build_allgather_matmul_nccl_cublas(const AlgoArgs& args, Transport& t) {
  const auto [m, k, n] = checked_shape(args, "allgather_matmul.nccl_cublas");
  const int D = args.nranks;
  const int64_t E = t.elem_size(), shard = m * k * E;
  t.set_count(m * D * k);
  t.set_lowering(Lowering::library);
  t.set_all_buffers({.input = shard + k * n * E, .output = m * D * n * E, .scratch = D * shard});
  // Ring all-gather into scratch (row block s = A_s): at step j device d forwards shard (d-j) mod D
  // to d+1.
  std::vector<std::vector<OpId>> arrived(D);  // ops that wrote device d's gathered blocks
  std::vector<OpId> have(D, kNoOp), next(D, kNoOp);
  t.set_step(0);
  for (int d = 0; d < D; ++d) {
    have[d] = t.copy(d, in(d), scratch(d, d * shard), shard, {}, kSendChannel);
    arrived[d].push_back(have[d]);
  }
  for (int j = 0; j + 1 < D; ++j) {
    t.set_step(j);
    for (int d = 0; d < D; ++d) {
      const int s = adv::mod(d - j, D), to = (d + 1) % D;
      next[to] = t.put(d, scratch(d, s * shard), scratch(to, s * shard), shard, {have[d]}, kSendChannel);
      arrived[to].push_back(next[to]);
    }
    have.swap(next);
  }
  t.set_step(D);
  for (int d = 0; d < D; ++d)
    t.compute(d, matmul(scratch(d), in(d, shard), out(d), m * D, k, n, false), arrived[d], kComputeChannel);
}

void build_matmul_reducescatter_ring(const AlgoArgs& args, Transport& t) {
  const auto [m, k, n] = checked_shape(args, "matmul_reducescatter.ring");
  const int D = args.nranks;
  const int64_t E = t.elem_size(), block = m * n * E;
  t.set_count(m * D * k);
  t.set_all_buffers({.input = m * D * k * E + k * n * E, .output = block, .scratch = (D - 1) * block});
  // Where device d's partial of step i lives: scratch slot i, the output at the last step.
  auto partial = [&](int d, int i) { return i == D - 1 ? out(d) : scratch(d, i * block); };
  const int64_t B_off = m * D * k * E;
  std::vector<OpId> arrived(D, kNoOp), next(D, kNoOp);
  for (int i = 0; i < D; ++i) {
    t.set_step(i);
    for (int d = 0; d < D; ++d) {
      const int b = (d + i + 1) % D;
      const OpId mm = t.compute(d, matmul(in(d, b * m * k * E), in(d, B_off), partial(d, i), m, k, n, i > 0),
                                {arrived[d]}, kComputeChannel);
      if (i + 1 < D) {
        const int prev = adv::mod(d - 1, D);
        next[prev] = t.put(d, partial(d, i), partial(prev, i + 1), block, {mm}, kSendChannel);
      }
    }
    arrived.swap(next);
  }
}

}  // namespace cclab
