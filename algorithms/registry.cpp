#include "algorithms/registry.hpp"

#include "core/error.hpp"

namespace cclab {

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> all = {};
  return all;
}

const Algorithm& find_algorithm(std::string_view name) {
  for (const auto& a : algorithms())
    if (a.name == name) return a;
  throw_input("unknown algorithm '" + std::string(name) + "' (see cclab list)");
}

}  // namespace cclab
