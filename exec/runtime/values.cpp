#include "exec/runtime/values.hpp"

#include <string>

#include "core/error.hpp"

namespace cclab::exec {

namespace {
constexpr std::pair<Coll, std::string_view> kNames[] = {
    {Coll::allreduce, "allreduce"},
    {Coll::broadcast, "broadcast"},
    {Coll::reduce, "reduce"},
    {Coll::allgather, "allgather"},
    {Coll::reducescatter, "reducescatter"},
    {Coll::alltoall, "alltoall"},
    {Coll::gather, "gather"},
    {Coll::scatter, "scatter"},
    {Coll::exchange, "exchange"},
};
}  // namespace

Coll parse_coll(std::string_view collective) {
  for (const auto& [c, name] : kNames)
    if (name == collective) return c;
  throw_input("the executor cannot run or check collective '" + std::string(collective) + "'");
}

Coll checked_coll(std::string_view collective) { return collective == "sol" ? Coll::exchange : parse_coll(collective); }

std::string_view coll_name(Coll c) {
  for (const auto& [k, name] : kNames)
    if (k == c) return name;
  return "?";
}

bool coll_reduces(Coll c) { return c == Coll::allreduce || c == Coll::reduce || c == Coll::reducescatter; }

}  // namespace cclab::exec
