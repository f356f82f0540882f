// Units in the types: a latency cannot be passed where a bandwidth is expected.
// Sizes are plain int64_t byte counts named *_bytes; times and rates are these wrappers.
#pragma once

#include <compare>  // defaulted operator<=> needs std::partial_ordering (clang errors without it)
#include <cstdint>

namespace cclab {

struct Seconds {
  double value = 0;
  constexpr Seconds() = default;
  constexpr explicit Seconds(double v) : value(v) {}
  constexpr double us() const { return value * 1e6; }
  friend constexpr Seconds operator+(Seconds a, Seconds b) { return Seconds(a.value + b.value); }
  friend constexpr Seconds operator-(Seconds a, Seconds b) { return Seconds(a.value - b.value); }
  friend constexpr Seconds operator*(double k, Seconds a) { return Seconds(k * a.value); }
  friend constexpr Seconds operator*(Seconds a, double k) { return Seconds(k * a.value); }
  friend constexpr Seconds operator/(Seconds a, double k) { return Seconds(a.value / k); }
  constexpr Seconds& operator+=(Seconds o) {
    value += o.value;
    return *this;
  }
  friend constexpr auto operator<=>(Seconds, Seconds) = default;
};

// Bytes per second. GB/s in output means 1e9 bytes per second (nccl-tests convention).
struct BytesPerSec {
  double value = 0;
  constexpr BytesPerSec() = default;
  constexpr explicit BytesPerSec(double v) : value(v) {}
  constexpr double gbps() const { return value / 1e9; }
  friend constexpr BytesPerSec operator*(double k, BytesPerSec a) { return BytesPerSec(k * a.value); }
  friend constexpr BytesPerSec operator*(BytesPerSec a, double k) { return BytesPerSec(k * a.value); }
  friend constexpr BytesPerSec operator+(BytesPerSec a, BytesPerSec b) { return BytesPerSec(a.value + b.value); }
  friend constexpr auto operator<=>(BytesPerSec, BytesPerSec) = default;
};

constexpr BytesPerSec GBps(double gb_per_s) { return BytesPerSec(gb_per_s * 1e9); }
constexpr Seconds microseconds(double us) { return Seconds(us * 1e-6); }

// Time to move `bytes` at `bw`.
constexpr Seconds transfer_time(double bytes, BytesPerSec bw) { return Seconds(bytes / bw.value); }
// Rate achieved moving `bytes` in `t`.
constexpr BytesPerSec rate(double bytes, Seconds t) { return BytesPerSec(bytes / t.value); }

}  // namespace cclab
