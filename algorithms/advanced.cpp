#include "algorithms/families.hpp"

namespace cclab {
void add_advanced_algorithms(std::vector<Algorithm>&) {}
}  // namespace cclab
