#include "lower/general.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "core/error.hpp"

namespace cclab::lower {

namespace {

StepKind step_kind(const Op& op, Engine copies) {
  switch (op.kind) {
    case OpKind::put:
    case OpKind::get:
    case OpKind::copy:
      return copies == Engine::copy_engine ? StepKind::memcpy : StepKind::copy_kernel;
    case OpKind::reduce:
      return StepKind::reduce_kernel;
    case OpKind::compute:
      return StepKind::compute;
  }
  return StepKind::memcpy;
}

}  // namespace

Plan lower(const Schedule& s, const LowerOptions& options) {
  Plan p;
  p.nranks = s.nranks;
  p.rank_device = options.rank_device;
  if (p.rank_device.empty())
    for (int r = 0; r < s.nranks; ++r) p.rank_device.push_back(r);
  if (int(p.rank_device.size()) != s.nranks)
    throw_input("lowering: " + std::to_string(p.rank_device.size()) + " devices given for " + std::to_string(s.nranks) +
                " ranks");
  const int per_rank = std::max(1, options.max_streams_per_rank);
  Engine copies = options.copies;
  if (s.lowering == Lowering::copy_engine) copies = Engine::copy_engine;
  if (s.lowering == Lowering::kernel) copies = Engine::kernel;

  // Streams: one per (rank, channel % per_rank), created in first-use order within each rank.
  std::vector<std::vector<int32_t>> stream_of(size_t(s.nranks), std::vector<int32_t>(size_t(per_rank), -1));
  std::vector<int32_t> op_stream(s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    CCLAB_ASSERT(op.rank >= 0 && op.rank < s.nranks, "op rank out of range");
    int32_t& id = stream_of[size_t(op.rank)][op.channel % per_rank];
    if (id < 0) {
      id = int32_t(p.streams.size());
      p.streams.push_back({op.rank, op.channel, p.rank_device[size_t(op.rank)]});
    }
    op_stream[i] = id;
  }
  const size_t nstreams = p.streams.size();

  // Position of each op within its stream.
  std::vector<int32_t> pos(s.ops.size()), stream_len(nstreams, 0);
  for (size_t i = 0; i < s.ops.size(); ++i) pos[i] = stream_len[size_t(op_stream[i])]++;

  // Pass 1: ops some op on another stream depends on (candidates for an event).
  std::vector<char> candidate(s.ops.size(), 0);
  for (size_t i = 0; i < s.ops.size(); ++i)
    for (OpId d : s.deps(s.ops[i])) {
      if (d < 0 || size_t(d) >= i)
        throw_internal(__FILE__, __LINE__,
                       "op " + std::to_string(i) + " depends on op " + std::to_string(d) + ", not an earlier op");
      if (op_stream[size_t(d)] != op_stream[i]) candidate[size_t(d)] = 1;
    }

  // Pass 2: vector clocks. clock[s][t] = the last position of stream t known to be done before the
  // current point of stream s; a dependency already implied (same stream, or transitively through
  // an earlier wait) costs no event.
  std::vector<std::vector<int32_t>> clock(nstreams, std::vector<int32_t>(nstreams, -1));
  std::vector<std::vector<int32_t>> snapshot(s.ops.size());  // only for candidates
  std::vector<int32_t> event_of(s.ops.size(), -1);
  std::vector<std::vector<OpId>> waits_of(s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const size_t st = size_t(op_stream[i]);
    auto deps = s.deps(s.ops[i]);
    std::vector<OpId> sorted(deps.begin(), deps.end());
    // Latest first: an op's snapshot covers everything that happened before it, so waiting on the
    // latest dependencies first makes the earlier ones implied (same stream or transitively).
    std::sort(sorted.begin(), sorted.end(), std::greater<OpId>());
    for (OpId d : sorted) {
      const size_t ds = size_t(op_stream[size_t(d)]);
      if (ds == st || clock[st][ds] >= pos[size_t(d)]) continue;
      const auto& snap = snapshot[size_t(d)];
      for (size_t t = 0; t < nstreams; ++t) clock[st][t] = std::max(clock[st][t], snap[t]);
      waits_of[i].push_back(d);
    }
    clock[st][st] = pos[i];
    if (candidate[i]) snapshot[i] = clock[st];
  }

  // Pass 3: events for the ops actually waited on, then the steps.
  for (size_t i = 0; i < s.ops.size(); ++i)
    for (OpId d : waits_of[i])
      if (event_of[size_t(d)] < 0) {
        event_of[size_t(d)] = int32_t(p.event_stream.size());
        p.event_stream.push_back(op_stream[size_t(d)]);
      }
  p.steps.reserve(s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    PlanStep step;
    step.op = OpId(i);
    step.kind = step_kind(op, copies);
    step.stream = op_stream[i];
    step.dst = s.resolve(op.dst);
    step.src = s.resolve(op.src);
    step.src2 = s.resolve(op.src2);
    step.bytes = op.bytes;
    step.compute = op.compute;
    step.wait_begin = uint32_t(p.wait_pool.size());
    for (OpId d : waits_of[i]) {
      const int32_t e = event_of[size_t(d)];
      p.wait_pool.push_back(e);
      if (p.streams[size_t(p.event_stream[size_t(e)])].device != p.streams[size_t(step.stream)].device)
        ++p.cross_device_waits;
    }
    step.wait_count = uint32_t(p.wait_pool.size() - step.wait_begin);
    step.record = event_of[i];
    p.steps.push_back(step);
  }
  if (options.coalesce) {
    std::vector<PlanStep> kept;
    kept.reserve(p.steps.size());
    std::vector<int64_t> last(nstreams, -1);  // index in `kept` of each stream's last step
    // A copy whose source and destination regions meet would read what it wrote if merged.
    auto overlap = [](Ref src, Ref dst, int64_t bytes) {
      return src.rank == dst.rank && src.buf == dst.buf && src.offset < dst.offset + bytes &&
             dst.offset < src.offset + bytes;
    };
    auto follows = [](Ref a, int64_t bytes, Ref b) {
      return a.rank == b.rank && a.buf == b.buf && a.offset + bytes == b.offset;
    };
    for (const auto& st : p.steps) {
      const int64_t li = last[size_t(st.stream)];
      if (li >= 0) {
        PlanStep& prev = kept[size_t(li)];
        if (prev.kind == st.kind && (st.kind == StepKind::memcpy || st.kind == StepKind::copy_kernel) &&
            prev.record < 0 && st.wait_count == 0 && follows(prev.src, prev.bytes, st.src) &&
            follows(prev.dst, prev.bytes, st.dst) && !overlap(prev.src, prev.dst, prev.bytes + st.bytes)) {
          prev.bytes += st.bytes;
          prev.record = st.record;
          prev.merged += st.merged;
          continue;
        }
      }
      last[size_t(st.stream)] = int64_t(kept.size());
      kept.push_back(st);
    }
    p.steps = std::move(kept);
  }
  return p;
}

Schedule plan_schedule(const Schedule& s, const Plan& p) {
  Schedule out = s;
  out.in_place = false;  // the steps' refs are resolved already
  out.ops.clear();
  out.dep_pool.clear();
  std::vector<OpId> recorder(size_t(p.num_events()), kNoOp);  // the step that records each event
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& st = p.steps[i];
    Op op = s.ops[size_t(st.op)];
    op.rank = p.streams[size_t(st.stream)].rank;
    op.channel = uint8_t(p.streams[size_t(st.stream)].channel);  // distinct per stream of a rank
    op.dst = st.dst;
    op.src = st.src;
    op.src2 = st.src2;
    op.bytes = st.bytes;
    op.dep_begin = uint32_t(out.dep_pool.size());
    for (int32_t e : p.waits(st))
      if (recorder[size_t(e)] != kNoOp) out.dep_pool.push_back(recorder[size_t(e)]);
    op.dep_count = uint32_t(out.dep_pool.size() - op.dep_begin);
    if (st.record >= 0) recorder[size_t(st.record)] = OpId(i);
    out.ops.push_back(op);
  }
  return out;
}

std::string describe(const Schedule& s, const Plan& p) {
  static const char* kinds[] = {"memcpy", "copy_kernel", "reduce_kernel", "compute"};
  auto ref = [](Ref r) {
    return "r" + std::to_string(r.rank) + "." + std::string(buf_name(r.buf)) + "+" + std::to_string(r.offset);
  };
  std::ostringstream os;
  for (const auto& st : p.steps) {
    const auto& stream = p.streams[size_t(st.stream)];
    os << "op " << st.op << " " << op_kind_name(s.ops[size_t(st.op)].kind) << " -> " << kinds[int(st.kind)] << " rank "
       << stream.rank << " gpu " << stream.device << " stream " << st.stream << " " << ref(st.src);
    if (st.kind == StepKind::reduce_kernel) os << " , " << ref(st.src2);
    os << " -> " << ref(st.dst) << " " << st.bytes << " B";
    if (st.wait_count) {
      os << " waits";
      for (int32_t e : p.waits(st)) os << " e" << e;
    }
    if (st.record >= 0) os << " records e" << st.record;
    os << "\n";
  }
  return os.str();
}

}  // namespace cclab::lower
