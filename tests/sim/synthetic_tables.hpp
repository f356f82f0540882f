// Synthetic measured tables for the executor path-model tests (tests/sim/test_paths*.cpp).
#pragma once

#include <cstdint>

#include "model/params.hpp"

namespace cclab::sim::test {

constexpr int64_t kMiB = 1 << 20;

// t(S) = a + S / r at powers of two from 8 B to `max` (1 GiB by default).
inline model::PathTable line_table(double a, double r, int64_t max = int64_t(1) << 30) {
  model::PathTable t;
  for (int64_t b = 8; b <= max; b *= 2) t.points.push_back({b, a + double(b) / r});
  t.source = "synthetic";
  return t;
}

}  // namespace cclab::sim::test
