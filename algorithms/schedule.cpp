// Schedule checks (structural and happens-before), JSON dump and per-rank traffic.
#include "algorithms/schedule.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "algorithms/adv_sparse.hpp"
#include "algorithms/registry.hpp"
#include "core/error.hpp"

namespace cclab {

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::put:
      return "put";
    case OpKind::get:
      return "get";
    case OpKind::copy:
      return "copy";
    case OpKind::reduce:
      return "reduce";
    case OpKind::compute:
      return "compute";
  }
  return "?";
}

std::string_view buf_name(Buf b) {
  switch (b) {
    case Buf::input:
      return "input";
    case Buf::output:
      return "output";
    case Buf::scratch:
      return "scratch";
  }
  return "?";
}

namespace {

std::string_view compute_kind_name(ComputeKind k) {
  switch (k) {
    case ComputeKind::matmul:
      return "matmul";
    case ComputeKind::sort_unique:
      return "sort_unique";
    case ComputeKind::union_merge:
      return "union_merge";
    case ComputeKind::index_match:
      return "index_match";
    case ComputeKind::scatter_rows:
      return "scatter_rows";
    case ComputeKind::gather_rows:
      return "gather_rows";
  }
  return "?";
}

std::string_view lowering_name(Lowering l) {
  switch (l) {
    case Lowering::automatic:
      return "automatic";
    case Lowering::copy_engine:
      return "copy_engine";
    case Lowering::kernel:
      return "kernel";
    case Lowering::flash:
      return "flash";
    case Lowering::stream:
      return "stream";
    case Lowering::library:
      return "library";
  }
  return "?";
}

int64_t buffer_size(const Schedule& s, int rank, Buf b) {
  const BufferSizes& sz = s.buffers[size_t(rank)];
  return b == Buf::input ? sz.input : b == Buf::output ? sz.output : sz.scratch;
}

// "op 12 (rank 3, channel 0, put, step 2)": how every error names an op.
std::string describe(const Schedule& s, OpId id) {
  const Op& op = s.ops[size_t(id)];
  return "op " + std::to_string(id) + " (rank " + std::to_string(op.rank) + ", channel " + std::to_string(op.channel) +
         ", " + std::string(op_kind_name(op.kind)) + ", step " + std::to_string(op.step) + ")";
}

std::string describe_region(Ref r, int64_t bytes) {
  return "rank " + std::to_string(r.rank) + " " + std::string(buf_name(r.buf)) + "[" + std::to_string(r.offset) + ", " +
         std::to_string(r.offset + bytes) + ")";
}

[[noreturn]] void fail(const Schedule& s, OpId id, const std::string& what) {
  throw Error(ErrorKind::internal, s.algo + ": invalid schedule: " + describe(s, id) + ": " + what);
}

// Bounds of a ref both as written (its own buffer) and after resolving the in-place alias.
void check_ref(const Schedule& s, OpId id, const char* role, Ref r, int64_t bytes) {
  if (r.rank < 0 || r.rank >= s.nranks)
    fail(s, id, std::string(role) + " names rank " + std::to_string(r.rank) + " of " + std::to_string(s.nranks));
  if (r.offset < 0) fail(s, id, std::string(role) + " has a negative offset");
  for (Ref x : {r, s.resolve(r)}) {
    const int64_t size = buffer_size(s, x.rank, x.buf);
    if (x.offset + bytes > size)
      fail(s, id,
           std::string(role) + " " + describe_region(x, bytes) + " is outside the " + std::to_string(size) +
               "-byte buffer");
  }
}

bool overlaps(Ref a, Ref b, int64_t bytes) {
  return a.rank == b.rank && a.buf == b.buf && a.offset < b.offset + bytes && b.offset < a.offset + bytes;
}
bool same(Ref a, Ref b) { return a.rank == b.rank && a.buf == b.buf && a.offset == b.offset; }

void add_rows(std::vector<Region>& out, Ref base, int64_t rows, int64_t cols, int64_t ld, int64_t es) {
  if (rows <= 0 || cols <= 0) return;
  if (ld == cols) {
    out.push_back({base, rows * cols * es});
    return;
  }
  for (int64_t i = 0; i < rows; ++i) out.push_back({Ref{base.rank, base.buf, base.offset + i * ld * es}, cols * es});
}

}  // namespace

ComputeFootprint compute_footprint(const Compute& c, DType dtype) {
  ComputeFootprint f;
  if (c.kind != ComputeKind::matmul) return sparse::sparse_compute_footprint(c, dtype);  // operands: adv_sparse.hpp
  const int64_t es = dtype_size(dtype);
  f.known = true;
  add_rows(f.reads, c.a, c.m, c.k, c.lda, es);
  add_rows(f.reads, c.b, c.k, c.n, c.ldb, es);
  if (c.accumulate) add_rows(f.reads, c.c, c.m, c.n, c.ldc, es);
  add_rows(f.writes, c.c, c.m, c.n, c.ldc, es);
  return f;
}

void validate(const Schedule& s) {
  auto fail_schedule = [&](const std::string& what) {
    throw Error(ErrorKind::internal, s.algo + ": invalid schedule: " + what);
  };
  if (s.nranks < 1) fail_schedule("rank count " + std::to_string(s.nranks));
  if (s.buffers.size() != size_t(s.nranks))
    fail_schedule(std::to_string(s.buffers.size()) + " buffer sizes for " + std::to_string(s.nranks) + " ranks");
  for (int r = 0; r < s.nranks; ++r) {
    const BufferSizes& b = s.buffers[size_t(r)];
    if (b.input < 0 || b.output < 0 || b.scratch < 0)
      fail_schedule("negative buffer size on rank " + std::to_string(r));
  }
  const int64_t es = dtype_size(s.dtype);
  for (OpId id = 0; id < OpId(s.ops.size()); ++id) {
    const Op& op = s.ops[size_t(id)];
    if (op.rank < 0 || op.rank >= s.nranks) fail(s, id, "rank out of range");
    if (op.bytes < 0) fail(s, id, "negative byte count");
    if (uint64_t(op.dep_begin) + op.dep_count > s.dep_pool.size()) fail(s, id, "dependency list outside dep_pool");
    for (OpId d : s.deps(op))
      if (d < 0 || d >= id) fail(s, id, "depends on op " + std::to_string(d) + ", which is not an earlier op");
    const bool local_src = op.src.rank == op.rank, local_dst = op.dst.rank == op.rank;
    switch (op.kind) {
      case OpKind::put:
        if (!local_src || local_dst) fail(s, id, "a put reads a local region and writes a peer's");
        break;
      case OpKind::get:
        if (local_src || !local_dst) fail(s, id, "a get reads a peer's region and writes a local one");
        break;
      case OpKind::copy:
        if (!local_src || !local_dst) fail(s, id, "a copy is local");
        break;
      case OpKind::reduce:
        if (!local_dst) fail(s, id, "a reduce writes a local region");
        if (!local_src && op.src2.rank != op.rank) fail(s, id, "a reduce reads at most one peer's region");
        if (op.bytes % es != 0) fail(s, id, std::to_string(op.bytes) + " bytes is not a whole number of elements");
        for (Ref x : {op.src, op.src2, op.dst})
          if (s.resolve(x).offset % es != 0) fail(s, id, "an operand is not aligned to the element size");
        break;
      case OpKind::compute: {
        if (op.compute < 0 || op.compute >= int32_t(s.computes.size())) fail(s, id, "compute index out of range");
        const ComputeFootprint f = compute_footprint(s.computes[size_t(op.compute)], s.dtype);
        for (const auto* list : {&f.reads, &f.writes})
          for (const Region& r : *list) {
            if (r.ref.rank != op.rank) fail(s, id, "a compute op works on local regions");
            check_ref(s, id, "operand", r.ref, r.bytes);
          }
        continue;
      }
    }
    check_ref(s, id, "src", op.src, op.bytes);
    check_ref(s, id, "dst", op.dst, op.bytes);
    const Ref src = s.resolve(op.src), dst = s.resolve(op.dst);
    if (op.kind == OpKind::reduce) {
      check_ref(s, id, "src2", op.src2, op.bytes);
      const Ref src2 = s.resolve(op.src2);
      if ((overlaps(dst, src, op.bytes) && !same(dst, src)) || (overlaps(dst, src2, op.bytes) && !same(dst, src2)))
        fail(s, id, "the destination overlaps a source without being equal to it");
    } else if (op.bytes > 0 && overlaps(src, dst, op.bytes)) {
      fail(s, id, "source and destination overlap");
    }
  }
}

namespace {

// Happens-before over the op graph. Emission order is a topological order (deps point backwards and
// channel order is emission order), so a happens before b only if a < b; the search walks backwards
// from b and prunes every op older than a. Reaching any op of a's own (rank, channel) at or after a
// proves the order, which keeps most searches a few steps long.
class HappensBefore {
 public:
  explicit HappensBefore(const Schedule& s) : s_(s), prev_(s.ops.size(), kNoOp), stamp_(s.ops.size(), 0) {
    std::vector<OpId> last(size_t(s.nranks) * 256, kNoOp);
    for (OpId i = 0; i < OpId(s.ops.size()); ++i) {
      OpId& l = last[timeline(i)];
      prev_[size_t(i)] = l;
      l = i;
    }
  }

  bool operator()(OpId a, OpId b) {
    if (a < 0) return true;  // the initial contents of the input
    if (a >= b) return false;
    if (timeline(a) == timeline(b)) return true;
    ++generation_;
    stack_.clear();
    stack_.push_back(b);
    while (!stack_.empty()) {
      const OpId x = stack_.back();
      stack_.pop_back();
      auto visit = [&](OpId p) {
        if (p < a || stamp_[size_t(p)] == generation_) return false;
        if (timeline(p) == timeline(a)) return true;  // p >= a on a's channel: a precedes p
        stamp_[size_t(p)] = generation_;
        stack_.push_back(p);
        return false;
      };
      for (OpId d : s_.deps(s_.ops[size_t(x)]))
        if (visit(d)) return true;
      if (prev_[size_t(x)] != kNoOp && visit(prev_[size_t(x)])) return true;
    }
    return false;
  }

 private:
  size_t timeline(OpId i) const {
    const Op& op = s_.ops[size_t(i)];
    return size_t(op.rank) * 256 + op.channel;
  }
  const Schedule& s_;
  std::vector<OpId> prev_;  // previous op of the same (rank, channel)
  std::vector<uint32_t> stamp_;
  uint32_t generation_ = 0;
  std::vector<OpId> stack_;
};

constexpr OpId kInitial = -2;  // "written" by the caller before the schedule runs (the input)

// Who last wrote each byte of one buffer, and who read it since: disjoint segments keyed by start.
struct Segment {
  int64_t end;
  OpId writer;
  std::vector<OpId> readers;
};
using SegmentMap = std::map<int64_t, Segment>;

void split_at(SegmentMap& m, int64_t pos) {
  auto it = m.upper_bound(pos);
  if (it == m.begin()) return;
  --it;
  if (it->first < pos && pos < it->second.end) {
    Segment tail = it->second;
    it->second.end = pos;
    m.emplace(pos, std::move(tail));
  }
}

}  // namespace

namespace {

// One read or write of a byte range [a, b) of one buffer (after resolving the in-place alias).
struct Access {
  OpId op;
  enum Kind : uint8_t { read, write, clobber } kind;  // clobber: a compute op with unknown operands
  int64_t a, b;
};

// The first hazard found in one buffer, if any.
struct Violation {
  OpId op = std::numeric_limits<OpId>::max();
  std::string what;
};

// Replays one buffer's accesses in emission order against its interval map; stops at the first hazard.
Violation check_buffer(const Schedule& s, HappensBefore& hb, int rank, Buf buf, const std::vector<Access>& accesses,
                       int64_t init_a, int64_t init_b) {
  auto region = [&](int64_t a, int64_t b) { return describe_region(Ref{rank, buf, a}, b - a); };
  auto who = [&](OpId w) { return w == kInitial ? std::string("the initial input") : describe(s, w); };
  // A buffer nobody writes: every read must fall inside the initial input.
  if (std::none_of(accesses.begin(), accesses.end(), [](const Access& x) { return x.kind != Access::read; })) {
    for (const Access& x : accesses) {
      if (init_a <= x.a && x.b <= init_b) continue;
      const int64_t gap_a = x.a < init_a ? x.a : std::max(x.a, init_b),
                    gap_b = x.a < init_a ? std::min(x.b, init_a) : x.b;
      return {x.op, "reads " + region(gap_a, gap_b) + " before any op wrote it (read before write)"};
    }
    return {};
  }
  SegmentMap m;
  if (init_b > init_a) m.emplace(init_a, Segment{init_b, kInitial, {}});
  for (const Access& x : accesses) {
    const OpId id = x.op;
    if (x.kind == Access::clobber) {
      m.clear();
      m.emplace(x.a, Segment{x.b, id, {}});
      continue;
    }
    split_at(m, x.a);
    split_at(m, x.b);
    if (x.kind == Access::read) {
      int64_t cursor = x.a;
      for (auto it = m.lower_bound(x.a); it != m.end() && it->first < x.b && it->first == cursor; ++it) {
        Segment& seg = it->second;
        if (seg.writer != id && !hb(seg.writer, id))
          return {id, "reads " + region(it->first, seg.end) + " written by " + who(seg.writer) +
                          ", which does not happen before it (missing dependency)"};
        if (seg.readers.empty() || seg.readers.back() != id) seg.readers.push_back(id);
        cursor = seg.end;
      }
      if (cursor < x.b) return {id, "reads " + region(cursor, x.b) + " before any op wrote it (read before write)"};
      continue;
    }
    auto first = m.lower_bound(x.a), it = first;
    for (; it != m.end() && it->first < x.b; ++it) {
      const Segment& seg = it->second;
      if (seg.writer != id && !hb(seg.writer, id))
        return {id, "overwrites " + region(it->first, seg.end) + " written by " + who(seg.writer) +
                        " without waiting for it (write after write)"};
      for (OpId reader : seg.readers)
        if (reader != id && !hb(reader, id))
          return {id, "overwrites " + region(it->first, seg.end) + " before " + describe(s, reader) +
                          " read it (missing write-after-read dependency)"};
    }
    m.erase(first, it);
    m.emplace(x.a, Segment{x.b, id, {}});
  }
  return {};
}

}  // namespace

// The accesses are bucketed per buffer and each buffer is replayed on its own: hazards never cross
// buffers, and one interval map at a time stays in cache (a million-op schedule checks in seconds).
void validate_dataflow(const Schedule& s) {
  validate(s);
  HappensBefore hb(s);
  const size_t nbuf = size_t(s.nranks) * 3;
  auto index = [](Ref r) { return size_t(r.rank) * 3 + size_t(r.buf); };
  std::vector<std::vector<Access>> accesses(nbuf);
  auto add = [&](OpId id, Access::Kind kind, Ref ref, int64_t bytes) {
    if (bytes == 0) return;
    const Ref r = s.resolve(ref);
    accesses[index(r)].push_back(Access{id, kind, r.offset, r.offset + bytes});
  };
  for (OpId id = 0; id < OpId(s.ops.size()); ++id) {
    const Op& op = s.ops[size_t(id)];
    if (op.kind == OpKind::compute) {
      const ComputeFootprint f = compute_footprint(s.computes[size_t(op.compute)], s.dtype);
      if (!f.known) {  // unknown operands: every buffer of the rank counts as freshly written
        for (Buf b : {Buf::input, Buf::output, Buf::scratch})
          if (buffer_size(s, op.rank, b) > 0)
            accesses[index(Ref{op.rank, b, 0})].push_back(Access{id, Access::clobber, 0, buffer_size(s, op.rank, b)});
        continue;
      }
      for (const Region& r : f.reads) add(id, Access::read, r.ref, r.bytes);
      for (const Region& r : f.writes) add(id, Access::write, r.ref, r.bytes);
      continue;
    }
    add(id, Access::read, op.src, op.bytes);
    if (op.kind == OpKind::reduce) add(id, Access::read, op.src2, op.bytes);
    add(id, Access::write, op.dst, op.bytes);
  }
  // The input is written before the schedule starts (in place: inside the output).
  std::vector<int64_t> init_a(nbuf, 0), init_b(nbuf, 0);
  for (int r = 0; r < s.nranks; ++r) {
    const Ref base = s.resolve(Ref{r, Buf::input, 0});
    init_a[index(base)] = base.offset;
    init_b[index(base)] = base.offset + s.buffers[size_t(r)].input;
  }
  Violation first;
  for (size_t k = 0; k < nbuf; ++k) {
    if (accesses[k].empty()) continue;
    Violation v = check_buffer(s, hb, int(k / 3), Buf(k % 3), accesses[k], init_a[k], init_b[k]);
    if (v.op < first.op) first = std::move(v);
    std::vector<Access>().swap(accesses[k]);
  }
  if (first.op != std::numeric_limits<OpId>::max()) fail(s, first.op, first.what);
}

int64_t count_for_bytes(std::string_view collective, int64_t bytes, DType dtype, int nranks) {
  const int64_t count = bytes / dtype_size(dtype), n = std::max(nranks, 1);
  if (collective == "allgather" || collective == "reducescatter" || collective == "alltoall" ||
      collective == "gather" || collective == "scatter")
    return count / n * n;
  return count;
}

int64_t result_bytes(const Schedule& s, int rank) {
  const int64_t es = dtype_size(s.dtype), n = std::max(s.nranks, 1);
  const std::string& c = s.collective;
  if (c == "broadcast" || c == "allreduce" || c == "allgather" || c == "alltoall") return s.count * es;
  if (c == "reduce" || c == "gather") return rank == s.root ? s.count * es : 0;
  if (c == "reducescatter" || c == "scatter") return s.count / n * es;
  return s.buffers[size_t(rank)].output;
}

std::vector<RankTraffic> traffic(const Schedule& s) {
  std::vector<RankTraffic> t(size_t(s.nranks));
  auto move = [&](int from, int to, int64_t bytes) {
    t[size_t(from)].sends += 1;
    t[size_t(from)].send_bytes += bytes;
    t[size_t(to)].recvs += 1;
    t[size_t(to)].recv_bytes += bytes;
  };
  for (const Op& op : s.ops) {
    switch (op.kind) {
      case OpKind::put:
        move(op.rank, op.dst.rank, op.bytes);
        break;
      case OpKind::get:
        move(op.src.rank, op.rank, op.bytes);
        break;
      case OpKind::reduce:
        if (op.src.rank != op.rank) move(op.src.rank, op.rank, op.bytes);
        if (op.src2.rank != op.rank) move(op.src2.rank, op.rank, op.bytes);
        break;
      case OpKind::copy:
      case OpKind::compute:
        break;
    }
  }
  return t;
}

namespace {
void append_ref(std::string& o, Ref r) {
  o += '[';
  o += std::to_string(r.rank);
  o += ",\"";
  o += buf_name(r.buf);
  o += "\",";
  o += std::to_string(r.offset);
  o += ']';
}
}  // namespace

std::string to_json(const Schedule& s) {
  std::string o;
  o.reserve(256 + s.ops.size() * 120);
  auto field = [&](const char* key, const std::string& value, bool quote) {
    o += "  \"";
    o += key;
    o += "\": ";
    if (quote) o += '"';
    o += value;
    if (quote) o += '"';
    o += ",\n";
  };
  o += "{\n";
  field("algo", s.algo, true);
  field("collective", s.collective, true);
  field("nranks", std::to_string(s.nranks), false);
  field("count", std::to_string(s.count), false);
  field("dtype", std::string(dtype_name(s.dtype)), true);
  field("redop", std::string(redop_name(s.redop)), true);
  field("root", std::to_string(s.root), false);
  field("in_place", s.in_place ? "true" : "false", false);
  field("lowering", std::string(lowering_name(s.lowering)), true);
  field("phase", std::to_string(s.phase), false);
  o += "  \"buffers\": [";
  for (size_t r = 0; r < s.buffers.size(); ++r) {
    const BufferSizes& b = s.buffers[r];
    o += r ? ", " : "";
    o += "{\"input\": " + std::to_string(b.input) + ", \"output\": " + std::to_string(b.output) +
         ", \"scratch\": " + std::to_string(b.scratch) + "}";
  }
  o += "],\n  \"computes\": [";
  for (size_t i = 0; i < s.computes.size(); ++i) {
    const Compute& c = s.computes[i];
    o += i ? ",\n    " : "\n    ";
    o += "{\"kind\": \"" + std::string(compute_kind_name(c.kind)) + "\", \"m\": " + std::to_string(c.m) +
         ", \"k\": " + std::to_string(c.k) + ", \"n\": " + std::to_string(c.n) + ", \"lda\": " + std::to_string(c.lda) +
         ", \"ldb\": " + std::to_string(c.ldb) + ", \"ldc\": " + std::to_string(c.ldc) +
         ", \"accumulate\": " + (c.accumulate ? "true" : "false") + ", \"a\": ";
    append_ref(o, c.a);
    o += ", \"b\": ";
    append_ref(o, c.b);
    o += ", \"c\": ";
    append_ref(o, c.c);
    o += '}';
  }
  o += s.computes.empty() ? "],\n" : "\n  ],\n";
  o += "  \"ops\": [";
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    o += i ? ",\n    " : "\n    ";
    o += "{\"id\": " + std::to_string(i) + ", \"rank\": " + std::to_string(op.rank) +
         ", \"channel\": " + std::to_string(op.channel) + ", \"step\": " + std::to_string(op.step) + ", \"kind\": \"";
    o += op_kind_name(op.kind);
    o += '"';
    if (op.kind == OpKind::compute) {
      o += ", \"compute\": " + std::to_string(op.compute);
    } else {
      o += ", \"src\": ";
      append_ref(o, op.src);
      if (op.kind == OpKind::reduce) {
        o += ", \"src2\": ";
        append_ref(o, op.src2);
      }
      o += ", \"dst\": ";
      append_ref(o, op.dst);
      o += ", \"bytes\": " + std::to_string(op.bytes);
    }
    o += ", \"deps\": [";
    bool first = true;
    for (OpId d : s.deps(op)) {
      o += first ? "" : ", ";
      o += std::to_string(d);
      first = false;
    }
    o += "]}";
  }
  o += s.ops.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return o;
}

}  // namespace cclab
