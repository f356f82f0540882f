// Shared by the algorithm tests: build a schedule, check it, run it on the reference backend in
// several orders and compare with the direct result.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"
#include "reference/reference.hpp"

namespace cclab::test {

// A fresh seed per test run (printed by every failing case); CCLAB_TEST_SEED=N replays one.
inline uint64_t session_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("CCLAB_TEST_SEED")) return uint64_t(std::strtoull(env, nullptr, 10));
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  return seed;
}

inline std::string describe(const Algorithm& algo, const AlgoArgs& a) {
  return algo.name + " n=" + std::to_string(a.nranks) + " count=" + std::to_string(a.count) + " " +
         std::string(dtype_name(a.dtype)) + " " + std::string(redop_name(a.redop)) + " root=" + std::to_string(a.root) +
         (a.in_place ? " in-place" : " out-of-place") + " channels=" + std::to_string(a.channels) +
         " chunk=" + std::to_string(a.chunk_bytes);
}

// Runs one case: the schedule must pass the happens-before check, and the reference backend must
// produce the direct result bit for bit in emission order and in `orders` random orders; an
// out-of-place run must leave every input untouched.
// emission_order == false skips the run in emission order (large cases: one random order suffices).
inline void check_case(const Algorithm& algo, const AlgoArgs& a, uint64_t seed, int orders = 2, bool dataflow = true,
                       bool emission_order = true) {
  SCOPED_TRACE(describe(algo, a) + " seed=" + std::to_string(seed) +
               " (replay the run: CCLAB_TEST_SEED=" + std::to_string(session_seed()) + ")");
  Schedule s;
  ASSERT_NO_THROW(s = make_schedule(algo, a));
  if (dataflow) {
    ASSERT_NO_THROW(validate_dataflow(s));
  }
  ref::HostBuffers initial = ref::allocate(s);
  ref::fill_inputs(s, initial, seed);
  const ref::Expected want = ref::expected_result(s, initial);
  for (int order = emission_order ? 0 : 1; order <= orders; ++order) {
    ref::HostBuffers b = initial;
    ref::run(s, b, {.randomize = order > 0, .seed = seed + uint64_t(order)});
    ASSERT_EQ(ref::count_wrong(s, b, want), 0) << "execution order " << order;
    if (!a.in_place) {
      for (int r = 0; r < a.nranks; ++r)
        ASSERT_EQ(b[size_t(r)].input, initial[size_t(r)].input) << "rank " << r << "'s input was modified";
    }
  }
}

}  // namespace cclab::test
