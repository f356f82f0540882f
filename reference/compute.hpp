// The compute ops of the reference backend (matmul and the sparse kinds), on small data.
// Implemented in reference/compute.cpp (owner: the advanced-algorithms engineer); run() calls it for
// every OpKind::compute op, after the op's dependencies ran.
#pragma once

#include "algorithms/schedule.hpp"
#include "reference/reference.hpp"

namespace cclab::ref {

// Executes `c` (an element of s.computes) on rank buffers `b`. Operand refs resolve through
// s.resolve(); element type s.dtype, accumulation in float as the GPU does.
void run_compute(const Schedule& s, const Compute& c, HostBuffers& b);

}  // namespace cclab::ref
