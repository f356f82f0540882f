#include "algorithms/families.hpp"

namespace cclab {
void add_classic_algorithms(std::vector<Algorithm>&) {}
}  // namespace cclab
