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

const Algorithm& find_algorithm(std::string_view name) {
  for (const auto& a : algorithms())
    if (a.name == name) return a;
  // Suggest names of the same collective.
  std::string collective(name.substr(0, name.find('.')));
  std::string known;
  for (const auto& a : algorithms())
    if (a.collective == collective) known += (known.empty() ? "" : ", ") + a.name;
  throw_input("unknown algorithm '" + std::string(name) + "'" +
              (known.empty() ? std::string(" (see cclab list)") : " (did you mean one of: " + known + "?)"));
}

}  // namespace cclab
