// CUDA graph capture (kernels/cuda/graph.h through engine/graph_step.h): a replayed step draws the same random
// numbers as the eager steps would (the generator's device offset shift), allocates nothing, and work that a replay
// could not repeat fails the capture with its name. The trainer's whole step under train.cuda_graph is compared with
// eager training in test_training_cuda.cpp.
#include <string>
#include <vector>

#include "core/rng.h"
#include "cuda/device_test_util.h"
#include "engine/graph_step.h"
#include "kernels/cuda/device_memory.h"
#include "ops/ops.h"
#include "ops/random.h"

namespace vt::test {
namespace {

std::vector<std::vector<double>> dropout_steps(bool use_graph, int steps, const Tensor& x) {
  default_generator().set_state(7, 100);
  Tensor y;
  engine::GraphStep step(kGpu, use_graph, 1, nullptr, [&] { y = ops::dropout(ops::mul(x, 2.0), 0.5, true); });
  std::vector<std::vector<double>> out;
  for (int i = 0; i < steps; ++i) {
    step.run();
    out.push_back(y.to_vector());
  }
  EXPECT_EQ(step.captured(), use_graph);
  return out;
}

TEST(CudaGraph, ReplaysDrawFreshMasksEqualToTheEagerSteps) {
  VT_REQUIRE_DEVICE();
  const Tensor x = randn_cpu({333, 5}, 1).to(kGpu);
  const auto eager = dropout_steps(false, 5, x);
  const uint64_t eager_offset = default_generator().offset();
  const auto replayed = dropout_steps(true, 5, x);
  EXPECT_EQ(default_generator().offset(), eager_offset);
  ASSERT_EQ(replayed.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(replayed[i], eager[i]) << "step " << i;
  EXPECT_NE(eager[2], eager[3]) << "the masks must differ between steps";
}

TEST(CudaGraph, ReplaysAllocateNothing) {
  VT_REQUIRE_DEVICE();
  const Tensor x = randn_cpu({1000}, 2).to(kGpu);
  Tensor y;
  engine::GraphStep step(kGpu, true, 1, nullptr, [&] { y = ops::add(ops::mul(x, 3.0), x); });
  step.run();  // eager
  step.run();  // capture and run
  EXPECT_GT(step.graph_nodes(), 0u);
  const auto before = kernels::cuda::memory_stats(kGpu.index);
  for (int i = 0; i < 3; ++i) step.run();
  const auto after = kernels::cuda::memory_stats(kGpu.index);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.raw_allocations, before.raw_allocations);
  const auto got = y.to_vector(), in = x.to_vector();
  for (size_t i = 0; i < in.size(); ++i) ASSERT_FLOAT_EQ(static_cast<float>(got[i]), static_cast<float>(4 * in[i]));
}

TEST(CudaGraph, AHostCopyInTheCapturedStepIsNamed) {
  VT_REQUIRE_DEVICE();
  Tensor y;
  engine::GraphStep step(kGpu, true, 1, nullptr, [&] {
    y = Tensor::from_vector({1.0, 2.0, 3.0}, {3}, DType::f32).to(kGpu);
  });
  step.run();  // eager: fine
  try {
    step.run();
    FAIL() << "a host-to-device copy was captured";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host-to-device copy"), std::string::npos) << e.what();
  }
  // The device still works after the failed capture.
  EXPECT_EQ(ops::add(Tensor::ones({2}, DType::f32, kGpu), 1.0).to_vector(), (std::vector<double>{2.0, 2.0}));
}

}  // namespace
}  // namespace vt::test
