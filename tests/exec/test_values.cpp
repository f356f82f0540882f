#include <gtest/gtest.h>

#include <set>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "exec/runtime/values.hpp"

namespace cclab::exec {
namespace {

// Every reduction of the check inputs is exact in every dtype, for up to 8 ranks, so any order
// of evaluation (and any backend) must produce the same bits.
TEST(Values, ReductionsAreExactInEveryDtype) {
  for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max}) {
    for (int n : {1, 2, 3, 8}) {
      for (int64_t i = 0; i < 2000; ++i) {
        double exact = input_value(op, 0, i);
        for (int p = 1; p < n; ++p) {
          const double v = input_value(op, p, i);
          exact = op == RedOp::sum    ? exact + v
                  : op == RedOp::prod ? exact * v
                  : op == RedOp::min  ? std::min(exact, v)
                                      : std::max(exact, v);
        }
        const float f = reduced_value(op, n, i);
        EXPECT_EQ(double(f), exact);
        EXPECT_EQ(half_to_float(float_to_half(f)), f);
        EXPECT_EQ(bf16_to_float(float_to_bf16(f)), f);
        // Reverse order gives the same float.
        float rev = input_value(op, n - 1, i);
        for (int p = n - 2; p >= 0; --p) rev = combine(op, rev, input_value(op, p, i));
        EXPECT_EQ(rev, f);
      }
    }
  }
}

TEST(Values, InputsVaryAcrossRanksAndIndices) {
  std::set<float> seen;
  for (int64_t i = 0; i < 100; ++i) seen.insert(input_value(RedOp::sum, 0, i));
  EXPECT_GE(seen.size(), 5u);
  int differ = 0;
  for (int64_t i = 0; i < 100; ++i) differ += input_value(RedOp::sum, 0, i) != input_value(RedOp::sum, 1, i);
  EXPECT_GT(differ, 50);
}

TEST(Values, ExpectedOutputsPerCollective) {
  const int n = 4;
  const int64_t count = 40, per = 10;
  EXPECT_EQ(expected_value(Coll::allgather, RedOp::sum, n, count, 2, 0, 25), input_value(RedOp::sum, 2, 5));
  EXPECT_EQ(expected_value(Coll::reducescatter, RedOp::sum, n, count, 3, 0, 1), reduced_value(RedOp::sum, n, 31));
  EXPECT_EQ(expected_value(Coll::alltoall, RedOp::sum, n, count, 1, 0, 23), input_value(RedOp::sum, 2, 13));
  EXPECT_EQ(expected_value(Coll::scatter, RedOp::sum, n, count, 3, 2, 4), input_value(RedOp::sum, 2, 34));
  EXPECT_EQ(expected_value(Coll::broadcast, RedOp::sum, n, count, 3, 1, 7), input_value(RedOp::sum, 1, 7));
  EXPECT_EQ(expected_value(Coll::exchange, RedOp::sum, 2, count, 1, 0, 7), input_value(RedOp::sum, 0, 7));
  EXPECT_EQ(coll_shape(Coll::allgather, n, count, 0, 0).in_elems, per);
  EXPECT_EQ(coll_shape(Coll::reduce, n, count, 1, 0).out_elems, 0);
  EXPECT_EQ(coll_shape(Coll::gather, n, count, 0, 0).out_elems, count);
  // avg: the float sum divided once.
  EXPECT_EQ(reduced_value(RedOp::avg, 2, 5), (input_value(RedOp::avg, 0, 5) + input_value(RedOp::avg, 1, 5)) / 2.f);
}

TEST(Values, CollectiveNames) {
  EXPECT_EQ(parse_coll("reducescatter"), Coll::reducescatter);
  EXPECT_EQ(coll_name(Coll::alltoall), "alltoall");
  EXPECT_THROW(parse_coll("allgather_matmul"), Error);
}

}  // namespace
}  // namespace cclab::exec
