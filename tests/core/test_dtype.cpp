#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace cclab {

TEST(DType, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << "half bits " << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 2048)), 1.0f);                // tie -> even (down)
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even (up)
  EXPECT_EQ(half_to_float(float_to_half(65520.0f)), INFINITY);
  EXPECT_EQ(half_to_float(float_to_half(5.96046448e-8f)), 5.96046448e-8f);  // smallest subnormal
}

TEST(DType, Bf16RoundTripsAndRounds) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bf16_to_float(uint16_t(b));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16(f), b);
  }
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);  // tie -> even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
}

TEST(DType, ParseNamesAndErrors) {
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(dtype_size(DType::f32), 4);
  EXPECT_THROW(parse_dtype("double"), Error);
  EXPECT_EQ(parse_redop("max"), RedOp::max);
  EXPECT_THROW(parse_redop("xor"), Error);
}

}  // namespace cclab
