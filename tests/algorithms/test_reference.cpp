// The reference backend's arithmetic: reductions round like a GPU kernel doing T(float(a) op float(b)),
// avg divides the sum once at the end, and inputs are integer-valued within the exact range.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/transport.hpp"
#include "reference/reference.hpp"

namespace cclab {
namespace {

// Two ranks; rank 1 reduces its input with rank 0's (a remote source) into its output.
Schedule one_reduce(DType dt, RedOp op, int64_t count) {
  Schedule s;
  s.algo = "test";
  s.collective = "custom";
  s.nranks = 2;
  s.count = count;
  s.dtype = dt;
  s.redop = op;
  const int64_t bytes = count * dtype_size(dt);
  s.buffers.assign(2, BufferSizes{bytes, bytes, 0});
  Transport t(s);
  t.reduce(1, in(1), in(0), out(1), bytes);
  validate_dataflow(s);
  return s;
}

float reduce_pair(DType dt, RedOp op, float a, float b) {
  const Schedule s = one_reduce(dt, op, 1);
  ref::HostBuffers buf = ref::allocate(s);
  store_from_float(dt, buf[0].input.data(), 0, a);
  store_from_float(dt, buf[1].input.data(), 0, b);
  ref::run(s, buf);
  return load_as_float(dt, buf[1].output.data(), 0);
}

TEST(Reference, ReductionsRoundLikeTheGpu) {
  // 1 + 2^-8 lies halfway between two bfloat16 values (8 significant bits): round to even gives 1.
  EXPECT_EQ(reduce_pair(DType::bf16, RedOp::sum, 1.0f, std::ldexp(1.0f, -8)), 1.0f);
  // 1 + 3*2^-9 rounds up to 1 + 2^-7 in bfloat16.
  EXPECT_EQ(reduce_pair(DType::bf16, RedOp::sum, 1.0f, 3 * std::ldexp(1.0f, -9)), 1.0f + std::ldexp(1.0f, -7));
  // half: 2048 + 1 is not representable (11 significant bits), ties to even -> 2048.
  EXPECT_EQ(reduce_pair(DType::f16, RedOp::sum, 2048.0f, 1.0f), 2048.0f);
  EXPECT_EQ(reduce_pair(DType::f16, RedOp::sum, 2048.0f, 3.0f), 2052.0f);
  // float accumulates in float: 2^24 + 1 -> 2^24.
  EXPECT_EQ(reduce_pair(DType::f32, RedOp::sum, 16777216.0f, 1.0f), 16777216.0f);
  EXPECT_EQ(reduce_pair(DType::f32, RedOp::prod, -3.0f, 5.0f), -15.0f);
  EXPECT_EQ(reduce_pair(DType::f16, RedOp::min, -3.0f, 5.0f), -3.0f);
  EXPECT_EQ(reduce_pair(DType::bf16, RedOp::max, -3.0f, 5.0f), 5.0f);
}

TEST(Reference, AvgSumsThenDividesTheResultOnce) {
  // allreduce on 3 ranks by hand: rank 0 gathers the sum, then hands it out; each result / 3.
  Schedule s;
  s.algo = "test";
  s.collective = "allreduce";
  s.nranks = 3;
  s.count = 2;
  s.redop = RedOp::avg;
  s.buffers.assign(3, BufferSizes{8, 8, 0});
  Transport t(s);
  const OpId a = t.reduce(0, in(0), in(1), out(0), 8);
  const OpId b = t.reduce(0, out(0), in(2), out(0), 8, {a});
  t.put(0, out(0), out(1), 8, {b});
  t.put(0, out(0), out(2), 8, {b});
  validate_dataflow(s);
  ref::HostBuffers buf = ref::allocate(s);
  const float x[3][2] = {{1, 2}, {4, 2}, {7, 3}};
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 2; ++i) store_from_float(DType::f32, buf[size_t(r)].input.data(), i, x[r][i]);
  const ref::HostBuffers initial = buf;
  ref::run(s, buf);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(load_as_float(DType::f32, buf[size_t(r)].output.data(), 0), 4.0f);  // 12 / 3, exact
    EXPECT_EQ(load_as_float(DType::f32, buf[size_t(r)].output.data(), 1), 7.0f / 3.0f);
  }
  EXPECT_EQ(ref::count_wrong(s, buf, ref::expected_result(s, initial)), 0);
}

TEST(Reference, InputsAreIntegersInTheExactRange) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Schedule s = one_reduce(dt, RedOp::sum, 4096);
    s.collective = "allreduce";
    ref::HostBuffers b = ref::allocate(s);
    ref::fill_inputs(s, b, 42);
    const float bound = dt == DType::bf16 ? 128 : dt == DType::f16 ? 1024 : float(1 << 23);
    bool some_nonzero = false;
    for (int r = 0; r < 2; ++r)
      for (int64_t i = 0; i < 4096; ++i) {
        const float v = load_as_float(dt, b[size_t(r)].input.data(), i);
        ASSERT_EQ(v, std::round(v));
        ASSERT_LE(std::fabs(v), bound);
        some_nonzero |= v != 0;
      }
    EXPECT_TRUE(some_nonzero);
    // The same seed draws the same inputs; another seed others.
    ref::HostBuffers again = ref::allocate(s), other = ref::allocate(s);
    ref::fill_inputs(s, again, 42);
    ref::fill_inputs(s, other, 43);
    EXPECT_EQ(b[0].input, again[0].input);
    EXPECT_NE(b[0].input, other[0].input);
  }
}

TEST(Reference, UnwrittenOutputIsPoison) {
  const Schedule s = one_reduce(DType::f32, RedOp::sum, 4);
  const ref::HostBuffers b = ref::allocate(s);
  const float v = load_as_float(DType::f32, b[0].output.data(), 0);
  EXPECT_NE(v, std::round(v));
  EXPECT_NE(load_as_float(DType::f16, b[0].output.data(), 0),
            std::round(load_as_float(DType::f16, b[0].output.data(), 0)));
}

}  // namespace
}  // namespace cclab
