#include "algorithms/registry.hpp"

#include <algorithm>

#include "algorithms/families.hpp"
#include "core/error.hpp"

namespace cclab {

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> list;
    add_classic_algorithms(list);
    add_advanced_algorithms(list);
    add_library_baselines(list);
    return list;
  }();
  return all;
}

const std::vector<ExecutorBaseline>& executor_baselines() {
  static const std::vector<ExecutorBaseline> all = {
      {"allreduce.sparse_hoststaged", "allreduce",
       "baseline: allreduce.sparse with its index and row exchange staged through host memory"},
      {"index_match.quadratic", "index_match", "baseline kernel: every local index compared with every union index"},
      {"index_match.binsearch", "index_match", "baseline kernel: a binary search of each local index in the union"},
      {"index_match.window", "index_match", "the matching allreduce.sparse runs: a windowed search in the union"},
  };
  return all;
}

const Algorithm& find_algorithm(std::string_view name) {
  for (const auto& a : algorithms())
    if (a.name == name) return a;
  for (const auto& b : executor_baselines())
    if (b.name == name)
      throw_input("'" + std::string(name) +
                  "' is an executor baseline (cclab run --rows, beside allreduce.sparse): no schedule describes it, "
                  "so neither the reference nor the simulator runs it (see cclab list)");
  // Suggest names of the same collective.
  std::string collective(name.substr(0, name.find('.')));
  std::string known;
  for (const auto& a : algorithms())
    if (a.collective == collective) known += (known.empty() ? "" : ", ") + a.name;
  throw_input("unknown algorithm '" + std::string(name) + "'" +
              (known.empty() ? std::string(" (see cclab list)") : " (did you mean one of: " + known + "?)"));
}

}  // namespace cclab
