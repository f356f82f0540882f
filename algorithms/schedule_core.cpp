// The parts of the Schedule contract every backend relies on: in-place aliasing, and make_schedule.
#include <algorithm>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"
#include "core/error.hpp"

namespace cclab {

namespace {
// Collectives whose input is one rank's slice of the output (and the reverse).
bool input_is_slice_of_output(std::string_view c) { return c == "allgather" || c == "gather"; }
bool output_is_slice_of_input(std::string_view c) { return c == "reducescatter" || c == "scatter"; }
}  // namespace

int64_t Schedule::in_place_offset(int rank) const {
  const int64_t slice = count / std::max(nranks, 1) * dtype_size(dtype);
  if (input_is_slice_of_output(collective) || output_is_slice_of_input(collective)) return rank * slice;
  return 0;
}

Ref Schedule::resolve(Ref r) const {
  if (!in_place) return r;
  if (output_is_slice_of_input(collective)) {
    if (r.buf == Buf::output) return Ref{r.rank, Buf::input, r.offset + in_place_offset(r.rank)};
    return r;
  }
  if (r.buf == Buf::input) return Ref{r.rank, Buf::output, r.offset + in_place_offset(r.rank)};
  return r;
}

Schedule record_schedule(const Algorithm& algo, const AlgoArgs& args) {
  if (args.nranks < 1) throw_input("rank count must be at least 1 (got " + std::to_string(args.nranks) + ")");
  if (args.count < 0) throw_input("count must not be negative");
  if (algo.rooted && (args.root < 0 || args.root >= args.nranks))
    throw_input("root " + std::to_string(args.root) + " is not a rank of " + std::to_string(args.nranks));
  if (algo.needs_shape && !args.shape.valid()) throw_input(algo.name + " needs --shape M,K,N");
  Schedule s;
  s.algo = algo.name;
  s.collective = algo.collective;
  s.nranks = args.nranks;
  s.count = args.count;
  s.dtype = args.dtype;
  s.redop = args.redop;
  s.root = args.root;
  s.in_place = args.in_place;
  s.buffers.assign(args.nranks, BufferSizes{});
  Transport t(s);
  algo.build(args, t);
  return s;
}

Schedule make_schedule(const Algorithm& algo, const AlgoArgs& args) {
  Schedule s = record_schedule(algo, args);
  validate(s);
  return s;
}

}  // namespace cclab
