#include "algorithms/families.hpp"

namespace cclab {
void add_library_baselines(std::vector<Algorithm>&) {}
}  // namespace cclab
