// The dtype promotion rule of binary element-wise ops on the CPU: bf16 ⊕ f32 computes in f32 and returns f32 (the
// bf16 operand is widened exactly, so results equal the all-f32 op bit for bit); the backward returns each input's
// gradient in that input's dtype; other mixed pairs and an in-place add that would need promotion are errors.
#include <gtest/gtest.h>

#include "ops/op_harness.h"
#include "test_util.h"

namespace vt::test {
namespace {

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

struct Named {
  const char* name;
  BinaryFn fn;
};
const Named kOps[] = {{"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}};

TEST(Promotion, Bf16WithF32GivesF32EqualToTheF32Op) {
  Tensor a = random_tensor({7, 5}, 1, 0.5, 2.0, DType::bf16);
  Tensor b = random_tensor({5}, 2, 0.5, 2.0, DType::f32);
  for (const auto& op : kOps) {
    Tensor ab = op.fn(a, b), ba = op.fn(b, a);
    EXPECT_EQ(ab.dtype(), DType::f32) << op.name;
    EXPECT_EQ(ba.dtype(), DType::f32) << op.name;
    EXPECT_EQ(ab.to_vector(), op.fn(a.to(DType::f32), b).to_vector()) << op.name;
    EXPECT_EQ(ba.to_vector(), op.fn(b, a.to(DType::f32)).to_vector()) << op.name;
  }
}

TEST(Promotion, BackwardReturnsEachGradientInItsInputsDtype) {
  Tensor w = random_tensor({7, 5}, 3, -1.0, 1.0, DType::f32);
  for (const auto& op : kOps) {
    Tensor a = random_tensor({7, 5}, 4, 0.5, 2.0, DType::bf16).set_requires_grad(true);
    Tensor b = random_tensor({5}, 5, 0.5, 2.0, DType::f32).set_requires_grad(true);
    ops::sum(ops::mul(op.fn(a, b), w)).backward();
    ASSERT_TRUE(a.grad().defined() && b.grad().defined()) << op.name;
    EXPECT_EQ(a.grad().dtype(), DType::bf16) << op.name;
    EXPECT_EQ(b.grad().dtype(), DType::f32) << op.name;

    // The same graph with a widened f32 copy of a: its gradient, rounded to bf16, is a's gradient.
    Tensor a32 = a.detach().to(DType::f32).set_requires_grad(true);
    Tensor b32 = b.detach().clone().set_requires_grad(true);
    ops::sum(ops::mul(op.fn(a32, b32), w)).backward();
    EXPECT_EQ(a.grad().to_vector(), a32.grad().to(DType::bf16).to_vector()) << op.name;
    EXPECT_EQ(b.grad().to_vector(), b32.grad().to_vector()) << op.name;
  }
}

// matmul promotes too: the result equals the f32 product, and the bf16 operand's gradient comes back in bf16.
TEST(Promotion, MatmulOfBf16AndF32IsTheF32Product) {
  Tensor a = random_tensor({3, 4}, 6, -1.0, 1.0, DType::bf16).set_requires_grad(true);
  Tensor b = random_tensor({4, 2}, 7, -1.0, 1.0, DType::f32).set_requires_grad(true);
  Tensor out = ops::matmul(a, b);
  ASSERT_EQ(out.dtype(), DType::f32);
  EXPECT_EQ(out.to_vector(), ops::matmul(a.detach().to(DType::f32), b.detach()).to_vector());
  ops::sum(out).backward();
  EXPECT_EQ(a.grad().dtype(), DType::bf16);
  EXPECT_EQ(b.grad().dtype(), DType::f32);
}

TEST(Promotion, OtherMixedPairsAndNarrowingInPlaceAddAreErrors) {
  expect_error([] { ops::add(Tensor::zeros({2}, DType::f64), Tensor::zeros({2}, DType::f32)); }, "dtypes differ");
  expect_error([] { ops::mul(Tensor::zeros({2}, DType::bf16), Tensor::zeros({2}, DType::f64)); }, "dtypes differ");
  expect_error([] { ops::add_(Tensor::zeros({2}, DType::bf16), Tensor::zeros({2}, DType::f32)); }, "[add_]");

  Tensor acc = Tensor::from_vector({1, 2, 3}, {3}, DType::f32);
  ops::add_(acc, Tensor::from_vector({0.5, 0.25, -1}, {3}, DType::bf16));
  EXPECT_EQ(acc.to_vector(), (std::vector<double>{1.5, 2.25, 2}));
}

}  // namespace
}  // namespace vt::test
