// The reference backend: executes a Schedule exactly on host memory. It is the ground truth for
// correctness in CI: every algorithm's schedule runs here and is compared, bit for bit, with the
// collective computed directly from the inputs (expected_result).
//
// Reductions work as a GPU kernel doing dst = T(float(a) op float(b)) does: both operands are
// loaded as float, combined in float and stored back in the dtype (round to nearest even).
// RedOp::avg follows the contract in schedule.hpp: reduce ops sum, then each rank's result is
// divided by nranks in float once all ops ran.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "algorithms/schedule.hpp"

namespace cclab::ref {

struct RankBuffers {
  std::vector<uint8_t> input, output, scratch;
};
using HostBuffers = std::vector<RankBuffers>;  // one per rank

// Output and scratch start as this byte: 0xA5A5A5A5 is about -2.9e-16 as float, 0xA5A5 about -0.0226
// as half and -2.9e-16 as bfloat16, none an integer, so a region nobody wrote never passes a check.
constexpr uint8_t kPoison = 0xA5;

// Buffers of the sizes the schedule names, all bytes set to `poison`.
HostBuffers allocate(const Schedule& s, uint8_t poison = kPoison);

// The bytes at `r` (after resolving the in-place alias); throws an internal error when [r, r + bytes)
// is not inside the buffer.
uint8_t* at(const Schedule& s, HostBuffers& b, Ref r, int64_t bytes);
const uint8_t* at(const Schedule& s, const HostBuffers& b, Ref r, int64_t bytes);

// Fills each rank's input (buffers[r].input bytes at resolve(in(r, 0))) with integer-valued elements
// drawn from `seed`, as nccl-tests does, chosen so that every partial result the collective can form
// is exact in the dtype, whatever the order of the reduction:
//  - sum, avg: |x| <= max(1, L / n) where L = 2^(mantissa bits + 1) is the largest integer range the
//    dtype holds exactly (2^24 float, 2^11 half, 2^8 bfloat16); exact for n <= L;
//  - prod: x in {-2, -1, 1, 2} (products are ±2^k, exact while 2^n stays finite: n <= 15 for half),
//    else x in {-1, 1};
//  - min, max and collectives that do not reduce: |x| <= min(L / 2, 1000), so misplaced blocks show.
void fill_inputs(const Schedule& s, HostBuffers& b, uint64_t seed);

struct RunOptions {
  // Execute in a random order among those the dependencies allow (seeded), instead of emission
  // order, so that a missing dependency shows up as a wrong result.
  bool randomize = false;
  uint64_t seed = 0;
};
void run(const Schedule& s, HostBuffers& b, const RunOptions& options = {});

// Whether the collective reduces (allreduce, reduce, reducescatter): where redop applies.
bool collective_reduces(const Schedule& s);

// Each rank's result (result_bytes(s, r) bytes at resolve(out(r, 0))), computed directly from the
// inputs in `initial` (the buffers before run), for the classic collectives; std::nullopt where the
// collective leaves the rank's output undefined. Throws an input error for other collectives.
using Expected = std::vector<std::optional<std::vector<uint8_t>>>;
Expected expected_result(const Schedule& s, const HostBuffers& initial);

// Elements of the defined results that differ bit-wise from `expected` (nccl-tests' #wrong).
int64_t count_wrong(const Schedule& s, const HostBuffers& after, const Expected& expected);

}  // namespace cclab::ref
