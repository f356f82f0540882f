#include "sim/trace.hpp"

#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "core/record.hpp"

namespace cclab::sim {

namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

void appendf(std::string& out, const char* fmt, auto... args) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  out.append(buf, size_t(std::max(0, std::min(n, int(sizeof buf) - 1))));
}

std::string human_bytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 30))
    std::snprintf(buf, sizeof buf, "%.3gGiB", double(b) / (1 << 30));
  else if (b >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%.3gMiB", double(b) / (1 << 20));
  else if (b >= (1 << 10))
    std::snprintf(buf, sizeof buf, "%.3gKiB", double(b) / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%lldB", (long long)b);
  return buf;
}

}  // namespace

std::string chrome_trace_json(const std::vector<TraceRun>& runs) {
  std::string out;
  out.reserve(1 << 20);
  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  double offset_us = 0;
  int pid_base = 0;
  for (const TraceRun& run : runs) {
    const Schedule& s = *run.schedule;
    const SimResult& r = *run.result;
    CCLAB_ASSERT(r.ops.size() == s.ops.size(), "trace needs per-op times (record_ops)");
    const int links_pid = pid_base + s.nranks;
    for (int rank = 0; rank < s.nranks; ++rank) {
      sep();
      appendf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"%s rank %d\"}}",
              pid_base + rank, escape(run.name).c_str(), rank);
      sep();
      appendf(out, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
              pid_base + rank, pid_base + rank);
    }
    sep();
    appendf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"%s links\"}}", links_pid,
            escape(run.name).c_str());
    std::vector<uint8_t> named(size_t(s.nranks) * 256, 0);
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      uint8_t& nm = named[size_t(op.rank) * 256 + op.channel];
      if (!nm) {
        nm = 1;
        sep();
        appendf(out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"channel %d\"}}",
                pid_base + op.rank, int(op.channel), int(op.channel));
      }
      std::string name(op_kind_name(op.kind));
      int peer = -1;
      if (op.kind == OpKind::put) peer = op.dst.rank;
      if (op.kind == OpKind::get) peer = op.src.rank;
      if (op.kind == OpKind::reduce)
        peer = op.src.rank != op.rank ? op.src.rank : op.src2.rank != op.rank ? op.src2.rank : -1;
      if (peer >= 0) name += (op.kind == OpKind::put ? " ->r" : " <-r") + std::to_string(peer);
      if (op.kind != OpKind::compute) name += " " + human_bytes(op.bytes);
      const double ts = offset_us + r.ops[i].start * 1e6, dur = (r.ops[i].end - r.ops[i].start) * 1e6;
      sep();
      appendf(out,
              "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,"
              "\"args\":{\"op\":%zu,\"step\":%d,\"bytes\":%lld}}",
              name.c_str(), std::string(op_kind_name(op.kind)).c_str(), pid_base + op.rank, int(op.channel), ts, dur, i,
              op.step, (long long)op.bytes);
    }
    // Resource load counters: GB/s (TFLOP/s for tensor cores).
    std::vector<uint8_t> used(r.resource_names.size(), 0);
    for (const auto& smp : r.timeline) used[size_t(smp.resource)] = 1;
    for (const auto& smp : r.timeline) {
      const std::string& rn = r.resource_names[size_t(smp.resource)];
      const bool tensor = rn.size() > 7 && rn.compare(rn.size() - 7, 7, ".tensor") == 0;
      sep();
      appendf(out, "{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"%s\":%.6g}}", escape(rn).c_str(),
              links_pid, offset_us + smp.t * 1e6, tensor ? "TFLOP/s" : "GB/s", smp.load / (tensor ? 1e12 : 1e9));
    }
    offset_us += r.time.us() * 1.05 + 1.0;  // a small gap between runs
    pid_base += s.nranks + 1;
  }
  out += "\n]}\n";
  return out;
}

void write_chrome_trace(const std::string& path, const std::vector<TraceRun>& runs) {
  // Perfetto loads a few million slices at most; beyond that the file is of no use.
  size_t ops = 0;
  for (const auto& r : runs) ops += r.schedule->ops.size();
  if (ops > kMaxTraceOps)
    throw_input("--trace " + path + ": " + std::to_string(ops) + " ops is more than a trace viewer can open (" +
                std::to_string(kMaxTraceOps) + "); trace fewer ranks (-g) or a smaller size (-e)");
  write_file_atomic(path, chrome_trace_json(runs));
}

}  // namespace cclab::sim
