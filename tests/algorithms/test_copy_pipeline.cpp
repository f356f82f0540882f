// The copy-engine all-reduce pipeline (algorithms/copy_pipeline.hpp), which the executor runs and the
// simulator predicts: exact on the reference backend in every shape, and the tail split as documented.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/copy_pipeline.hpp"
#include "algorithms/transport.hpp"
#include "reference/reference.hpp"

namespace cclab {
namespace {

std::vector<int64_t> reduce_lengths_on(const Schedule& s, int rank) {
  std::vector<int64_t> v;
  for (const auto& op : s.ops)
    if (op.kind == OpKind::reduce && op.rank == rank) v.push_back(op.bytes);
  return v;
}

int64_t wrong_after_reference_run(const Schedule& s, uint64_t seed) {
  ref::HostBuffers b = ref::allocate(s);
  ref::fill_inputs(s, b, seed);
  const ref::Expected want = ref::expected_result(s, b);
  ref::run(s, b, {.randomize = true, .seed = seed});
  return ref::count_wrong(s, b, want);
}

TEST(CopyPipeline, ChunksEachPartAndReducesItOnItsOwner) {
  CopyPipeline p;
  p.chunk = 512;
  p.slots = 2;
  // 1000 floats on 2 ranks: parts of 2000 B = 512 + 512 + 512 + 464.
  const Schedule s = copy_pipeline_allreduce(2, 1000, DType::f32, RedOp::sum, false, p);
  validate(s);
  validate_dataflow(s);
  EXPECT_EQ(reduce_lengths_on(s, 0), (std::vector<int64_t>{512, 512, 512, 464}));
  EXPECT_EQ(reduce_lengths_on(s, 1), (std::vector<int64_t>{512, 512, 512, 464}));
}

TEST(CopyPipeline, ExactOnTheReferenceBackend) {
  for (int n : {2, 3, 4})
    for (bool in_place : {false, true})
      for (int64_t chunk : {int64_t(256), int64_t(1000)})
        for (bool split : {true, false}) {
          CopyPipeline p;
          p.chunk = chunk;
          p.slots = 2;
          p.split = split;
          const Schedule s = copy_pipeline_allreduce(n, 1001, DType::f32, RedOp::sum, in_place, p);
          validate(s);
          validate_dataflow(s);
          EXPECT_EQ(wrong_after_reference_run(s, 7 + uint64_t(n)), 0)
              << "n=" << n << " in_place=" << in_place << " chunk=" << chunk << " split=" << split;
        }
}

}  // namespace
}  // namespace cclab
