// Element types and reduction operators shared by every backend, with exact host conversions for
// the 16-bit formats (round to nearest even, as the GPU's __float2half_rn / __float2bfloat16_rn do).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cclab {

enum class DType : uint8_t { f32, f16, bf16 };
enum class RedOp : uint8_t { sum, prod, min, max, avg };

int dtype_size(DType t);
std::string_view dtype_name(DType t);   // nccl-tests spelling: float, half, bfloat16
std::string_view redop_name(RedOp op);  // sum, prod, min, max, avg
DType parse_dtype(std::string_view s);  // float|f32|half|f16|bfloat16|bf16; throws input error
RedOp parse_redop(std::string_view s);  // throws input error

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = int32_t((x >> 23) & 0xff);
  uint32_t mant = x & 0x7fffffu;
  if (exp == 255) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / nan
  int32_t e = exp - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {                                  // subnormal or zero
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return uint16_t(sign | half_mant);
  }
  uint32_t h = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry into the exponent: correct
  return uint16_t(h);
}

inline float bf16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

// Read / write one element of type t at p, through float (the accumulation type of every backend).
inline float load_as_float(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::f16:
      return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  return 0;
}

inline void store_from_float(DType t, void* p, int64_t i, float v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(p)[i] = v;
      break;
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_half(v);
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16(v);
      break;
  }
}

}  // namespace cclab
