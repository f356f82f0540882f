#include "reference/reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "reference/compute.hpp"

namespace cclab::ref {

namespace {

std::vector<uint8_t>& buffer(HostBuffers& b, Ref r) {
  RankBuffers& rb = b[size_t(r.rank)];
  return r.buf == Buf::input ? rb.input : r.buf == Buf::output ? rb.output : rb.scratch;
}

// splitmix64: a small, fast, well-mixed generator whose sequence is the same on every platform.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t uniform(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
};

// 2^(mantissa bits + 1): every integer of smaller magnitude is exact in the dtype.
int64_t exact_integer_limit(DType t) {
  switch (t) {
    case DType::f32:
      return int64_t(1) << 24;
    case DType::f16:
      return int64_t(1) << 11;
    case DType::bf16:
      return int64_t(1) << 8;
  }
  return 1;
}

template <RedOp Op>
float combine(float a, float b) {
  if constexpr (Op == RedOp::sum || Op == RedOp::avg) return a + b;  // avg: summed here, divided once at the end
  if constexpr (Op == RedOp::prod) return a * b;
  if constexpr (Op == RedOp::min) return std::fmin(a, b);
  if constexpr (Op == RedOp::max) return std::fmax(a, b);
}

// z[i] = T(float(x[i]) op float(y[i])); z may equal x or y (element i is read before it is written).
template <DType T, RedOp Op>
void reduce_elements(const uint8_t* x, const uint8_t* y, uint8_t* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    store_from_float(T, z, i, combine<Op>(load_as_float(T, x, i), load_as_float(T, y, i)));
}

template <DType T>
void reduce_elements(RedOp op, const uint8_t* x, const uint8_t* y, uint8_t* z, int64_t n) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return reduce_elements<T, RedOp::sum>(x, y, z, n);
    case RedOp::prod:
      return reduce_elements<T, RedOp::prod>(x, y, z, n);
    case RedOp::min:
      return reduce_elements<T, RedOp::min>(x, y, z, n);
    case RedOp::max:
      return reduce_elements<T, RedOp::max>(x, y, z, n);
  }
}

void execute(const Schedule& s, const Op& op, HostBuffers& b) {
  switch (op.kind) {
    case OpKind::put:
    case OpKind::get:
    case OpKind::copy:
      if (op.bytes > 0) std::memmove(at(s, b, op.dst, op.bytes), at(s, b, op.src, op.bytes), size_t(op.bytes));
      return;
    case OpKind::reduce: {
      const int64_t n = op.bytes / dtype_size(s.dtype);
      const uint8_t* x = at(s, b, op.src, op.bytes);
      const uint8_t* y = at(s, b, op.src2, op.bytes);
      uint8_t* z = at(s, b, op.dst, op.bytes);
      switch (s.dtype) {
        case DType::f32:
          return reduce_elements<DType::f32>(s.redop, x, y, z, n);
        case DType::f16:
          return reduce_elements<DType::f16>(s.redop, x, y, z, n);
        case DType::bf16:
          return reduce_elements<DType::bf16>(s.redop, x, y, z, n);
      }
      return;
    }
    case OpKind::compute:
      run_compute(s, s.computes[size_t(op.compute)], b);
      return;
  }
}

}  // namespace

HostBuffers allocate(const Schedule& s, uint8_t poison) {
  HostBuffers b(static_cast<size_t>(s.nranks));
  for (int r = 0; r < s.nranks; ++r) {
    const BufferSizes& sz = s.buffers[size_t(r)];
    b[size_t(r)].input.assign(size_t(sz.input), poison);
    b[size_t(r)].output.assign(size_t(sz.output), poison);
    b[size_t(r)].scratch.assign(size_t(sz.scratch), poison);
  }
  return b;
}

uint8_t* at(const Schedule& s, HostBuffers& b, Ref r, int64_t bytes) {
  const Ref x = s.resolve(r);
  CCLAB_ASSERT(x.rank >= 0 && x.rank < int(b.size()), "reference: rank out of range");
  std::vector<uint8_t>& v = buffer(b, x);
  CCLAB_ASSERT(x.offset >= 0 && x.offset + bytes <= int64_t(v.size()),
               "reference: region outside rank " + std::to_string(x.rank) + "'s " + std::string(buf_name(x.buf)));
  return v.data() + x.offset;
}

const uint8_t* at(const Schedule& s, const HostBuffers& b, Ref r, int64_t bytes) {
  return at(s, const_cast<HostBuffers&>(b), r, bytes);
}

bool collective_reduces(const Schedule& s) {
  return s.collective == "allreduce" || s.collective == "reduce" || s.collective == "reducescatter";
}

void fill_inputs(const Schedule& s, HostBuffers& b, uint64_t seed) {
  const DType t = s.dtype;
  const int64_t es = dtype_size(t), limit = exact_integer_limit(t);
  const bool reduces = collective_reduces(s);
  SplitMix rng{seed};
  for (int r = 0; r < s.nranks; ++r) {
    const int64_t bytes = s.buffers[size_t(r)].input, n = bytes / es;
    uint8_t* p = at(s, b, Ref{r, Buf::input, 0}, bytes);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v;
      if (reduces && s.redop == RedOp::prod) {
        const bool twos = t == DType::f16 ? s.nranks <= 15 : s.nranks <= 126;
        v = twos ? std::array<int64_t, 4>{-2, -1, 1, 2}[rng.next() % 4] : (rng.next() % 2 ? 1 : -1);
      } else if (reduces && (s.redop == RedOp::sum || s.redop == RedOp::avg)) {
        const int64_t bound = std::max<int64_t>(1, limit / s.nranks);
        v = rng.uniform(-bound, bound);
      } else {
        const int64_t bound = std::min<int64_t>(limit / 2, 1000);
        v = rng.uniform(-bound, bound);
      }
      store_from_float(t, p, i, float(v));
    }
  }
}

void run(const Schedule& s, HostBuffers& b, const RunOptions& options) {
  CCLAB_ASSERT(int(b.size()) == s.nranks, "reference: buffers for a different rank count");
  const OpId nops = OpId(s.ops.size());
  if (!options.randomize) {
    for (const Op& op : s.ops) execute(s, op, b);  // emission order respects every dependency
  } else {
    // Kahn's algorithm over deps plus same-(rank, channel) order, picking a random ready op each time.
    std::vector<int32_t> pending(size_t(nops), 0);
    std::vector<int32_t> first(size_t(nops) + 1, 0);  // successors in CSR form
    std::vector<OpId> prev_of(size_t(nops), kNoOp), last(size_t(s.nranks) * 256, kNoOp);
    for (OpId i = 0; i < nops; ++i) {
      const Op& op = s.ops[size_t(i)];
      OpId& l = last[size_t(op.rank) * 256 + op.channel];
      prev_of[size_t(i)] = l;
      l = i;
      if (prev_of[size_t(i)] != kNoOp) ++first[size_t(prev_of[size_t(i)]) + 1];
      for (OpId d : s.deps(op)) ++first[size_t(d) + 1];
    }
    for (OpId i = 0; i < nops; ++i) first[size_t(i) + 1] += first[size_t(i)];
    std::vector<OpId> succ(static_cast<size_t>(first[size_t(nops)]));
    std::vector<int32_t> fill(first.begin(), first.end() - 1);
    for (OpId i = 0; i < nops; ++i) {
      auto link = [&](OpId p) {
        succ[size_t(fill[size_t(p)]++)] = i;
        ++pending[size_t(i)];
      };
      if (prev_of[size_t(i)] != kNoOp) link(prev_of[size_t(i)]);
      for (OpId d : s.deps(s.ops[size_t(i)])) link(d);
    }
    std::vector<OpId> ready;
    for (OpId i = 0; i < nops; ++i)
      if (pending[size_t(i)] == 0) ready.push_back(i);
    SplitMix rng{options.seed};
    OpId done = 0;
    while (!ready.empty()) {
      const size_t pick = size_t(rng.next() % ready.size());
      const OpId i = ready[pick];
      ready[pick] = ready.back();
      ready.pop_back();
      execute(s, s.ops[size_t(i)], b);
      ++done;
      for (int32_t k = first[size_t(i)]; k < first[size_t(i) + 1]; ++k)
        if (--pending[size_t(succ[size_t(k)])] == 0) ready.push_back(succ[size_t(k)]);
    }
    CCLAB_ASSERT(done == nops, "reference: dependency cycle");
  }
  if (s.redop == RedOp::avg && collective_reduces(s)) {
    for (int r = 0; r < s.nranks; ++r) {
      const int64_t bytes = result_bytes(s, r), n = bytes / dtype_size(s.dtype);
      if (bytes == 0) continue;
      uint8_t* p = at(s, b, Ref{r, Buf::output, 0}, bytes);
      for (int64_t i = 0; i < n; ++i) store_from_float(s.dtype, p, i, load_as_float(s.dtype, p, i) / float(s.nranks));
    }
  }
}

Expected expected_result(const Schedule& s, const HostBuffers& initial) {
  const int n = s.nranks;
  const DType t = s.dtype;
  const int64_t es = dtype_size(t), total = s.count * es, block = s.count / n * es;
  const std::string& c = s.collective;
  auto input = [&](int r, int64_t offset, int64_t bytes) { return at(s, initial, Ref{r, Buf::input, offset}, bytes); };
  // The reduction over ranks of elements [offset, offset + bytes) of every input, computed in double
  // (exact for the inputs fill_inputs draws), then stored in the dtype as every backend does.
  auto reduction = [&](int64_t offset, int64_t bytes) {
    std::vector<uint8_t> res(static_cast<size_t>(bytes));
    std::vector<const uint8_t*> src(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) src[size_t(r)] = input(r, offset, bytes);
    for (int64_t i = 0; i < bytes / es; ++i) {
      double acc = load_as_float(t, src[0], i);
      for (int r = 1; r < n; ++r) {
        const double x = load_as_float(t, src[size_t(r)], i);
        switch (s.redop) {
          case RedOp::sum:
          case RedOp::avg:
            acc += x;
            break;
          case RedOp::prod:
            acc *= x;
            break;
          case RedOp::min:
            acc = std::min(acc, x);
            break;
          case RedOp::max:
            acc = std::max(acc, x);
            break;
        }
      }
      float v = float(acc);
      if (s.redop == RedOp::avg) v = v / float(n);
      store_from_float(t, res.data(), i, v);
    }
    return res;
  };
  auto bytes_of = [](const uint8_t* p, int64_t bytes) { return std::vector<uint8_t>(p, p + bytes); };

  Expected e(static_cast<size_t>(n));
  if (c == "broadcast") {
    for (int r = 0; r < n; ++r) e[size_t(r)] = bytes_of(input(s.root, 0, total), total);
  } else if (c == "reduce") {
    e[size_t(s.root)] = reduction(0, total);
  } else if (c == "allreduce") {
    const std::vector<uint8_t> all = reduction(0, total);
    for (int r = 0; r < n; ++r) e[size_t(r)] = all;
  } else if (c == "reducescatter") {
    for (int r = 0; r < n; ++r) e[size_t(r)] = reduction(r * block, block);
  } else if (c == "allgather" || c == "gather") {
    std::vector<uint8_t> all;
    for (int r = 0; r < n; ++r) {
      const uint8_t* p = input(r, 0, block);
      all.insert(all.end(), p, p + block);
    }
    for (int r = 0; r < n; ++r)
      if (c == "allgather" || r == s.root) e[size_t(r)] = all;
  } else if (c == "scatter") {
    for (int r = 0; r < n; ++r) e[size_t(r)] = bytes_of(input(s.root, r * block, block), block);
  } else if (c == "alltoall") {
    for (int r = 0; r < n; ++r) {
      std::vector<uint8_t> mine;
      for (int from = 0; from < n; ++from) {
        const uint8_t* p = input(from, r * block, block);
        mine.insert(mine.end(), p, p + block);
      }
      e[size_t(r)] = std::move(mine);
    }
  } else {
    throw_input("reference: no direct result for collective '" + c + "'");
  }
  return e;
}

int64_t count_wrong(const Schedule& s, const HostBuffers& after, const Expected& expected) {
  const int64_t es = dtype_size(s.dtype);
  int64_t wrong = 0;
  for (int r = 0; r < s.nranks; ++r) {
    const auto& want = expected[size_t(r)];
    if (!want) continue;
    const int64_t bytes = int64_t(want->size());
    const uint8_t* got = at(s, after, Ref{r, Buf::output, 0}, bytes);
    for (int64_t i = 0; i < bytes / es; ++i)
      if (std::memcmp(got + i * es, want->data() + i * es, size_t(es)) != 0) ++wrong;
  }
  return wrong;
}

}  // namespace cclab::ref
